//===- HalideHooks.h - The runtime's calls into Halide's runtime -*- C++
//-*-===//
//
// The only functions of Halide's runtime that the executor calls. They are
// defined by the standalone Halide runtime object that codegen links into
// every compiled model; unit tests, which have no such object, link a test
// double of this header instead of HalideHooks.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_HALIDEHOOKS_H
#define TFMC_RUNTIME_HALIDEHOOKS_H

#include <cstddef>
#include <cstdint>
#include <string>

struct halide_buffer_t;

namespace tfmc::runtime {

/// Routes Halide's runtime errors (halide_error) into a per-thread "last
/// message" instead of stderr. Idempotent and thread-safe.
void installHalideErrorHandler();

/// The last message Halide reported on this thread, on one line, and clears
/// it. When the failure was reported on one of Halide's worker threads, the
/// last message of any thread. Empty when there is none.
std::string takeHalideError();

/// Sets the size of Halide's thread pool (threads >= 1).
void setHalideThreads(int threads);

//===----------------------------------------------------------------------===//
// Device memory, for plans compiled for CUDA ("device": "cuda"), through
// Halide's CUDA runtime (which loads the driver, libcuda, at run time: a
// CPU build never touches any of this). Addresses are device pointers
// (CUdeviceptr). On failure each returns false and sets `error` to one line
// that names the driver call (Halide's message, e.g. "CUDA: cuMemAlloc
// failed: CUDA_ERROR_OUT_OF_MEMORY").
//===----------------------------------------------------------------------===//

/// Loads the CUDA driver and checks that it sees a GPU, once per process.
/// Fails with "no CUDA device: ..." (no driver, cuInit failed, no GPU), or
/// when the program's Halide runtime has no CUDA support.
bool openCudaDevice(std::string &error);

/// `bytes` (> 0) of device memory, freed by deviceFree.
bool deviceAllocate(std::size_t bytes, std::uint64_t &address,
                    std::string &error);
void deviceFree(std::uint64_t address);

/// Copies between host memory and device memory (synchronous).
bool deviceUpload(std::uint64_t address, const void *host, std::size_t bytes,
                  std::string &error);
bool deviceDownload(void *host, std::uint64_t address, std::size_t bytes,
                    std::string &error);

/// Points a kernel argument (host null) at device memory; deviceDetach
/// undoes it after the call.
bool deviceWrap(halide_buffer_t &buffer, std::uint64_t address,
                std::string &error);
void deviceDetach(halide_buffer_t &buffer);

/// Waits until every kernel launched so far has finished. `wrapped` is any
/// buffer deviceWrap wrapped: Halide synchronises through a buffer's device
/// interface and rejects one with no device memory.
bool deviceSynchronize(halide_buffer_t &wrapped, std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_HALIDEHOOKS_H
