//===- FakeHalide.h - Test double of the runtime's Halide hooks -*- C++ -*-===//
//
// The runtime's unit tests run the plan executor over fake kernels written
// in C++ with Halide's argv ABI, without Halide's compiler or runtime:
// FakeHalide.cpp defines HalideHooks.h's functions (errors, threads, and a
// fake GPU whose device memory is host memory this double owns, poisoned
// with 0xff bytes so that what the executor does not upload reads as NaN),
// plus the buffer checks every fake kernel starts with.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_UNIT_FAKEHALIDE_H
#define TFMC_TEST_UNIT_FAKEHALIDE_H

#include <HalideRuntime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

/// The error a fake kernel reports (takeHalideError's answer).
extern std::string fakeHalideError;
extern int fakeThreads;
extern bool fakeHandlerInstalled;

extern halide_device_interface_t fakeDeviceInterface;
extern std::string fakeDeviceOpenError; // openCudaDevice's answer when set
extern std::string fakeDownloadError;   // deviceDownload's answer when set
extern std::map<std::uint64_t, std::vector<uint8_t>> fakeDeviceMemory;
extern int fakeUploads, fakeDownloads, fakeSyncs;

/// Whether [address, address + bytes) lies inside one fake allocation.
bool fakeDeviceHolds(std::uint64_t address, std::size_t bytes);

/// Checks that `buffer` is a dense, min-0 buffer of `rank` dims and the
/// given type; records Halide-style errors like a real kernel would.
bool checkBuffer(const halide_buffer_t *buffer, const char *name, int rank,
                 halide_type_code_t code, int bits);

/// Where a buffer's elements are: device memory on the fake GPU.
uint8_t *dataOf(const halide_buffer_t *buffer);

/// Argument `i` of a kernel's argv.
halide_buffer_t *arg(void **args, int i);

#endif // TFMC_TEST_UNIT_FAKEHALIDE_H
