//===- HalideHooks.cpp - The runtime's calls into Halide's runtime --------===//
//
// Links against the Halide runtime object of a compiled model (never
// libHalide). Halide's error handler is process-wide; the message lands in a
// thread-local string so that concurrent models on different threads each
// see their own failure, with a process-wide copy as the fallback for errors
// raised on Halide's worker threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/HalideHooks.h"
#include "runtime/core/HalideScratch.h"

#include <HalideRuntime.h>

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

// Halide's CUDA runtime (HalideRuntimeCuda.h), present only in the runtime
// object of a CUDA build: weak, so that CPU builds link without it.
extern "C" {
__attribute__((weak)) const struct halide_device_interface_t *
halide_cuda_device_interface();
__attribute__((weak)) int halide_cuda_wrap_device_ptr(void *user_context,
                                                      halide_buffer_t *buf,
                                                      uint64_t device_ptr);
__attribute__((weak)) int halide_cuda_detach_device_ptr(void *user_context,
                                                        halide_buffer_t *buf);
}

namespace tfmc::runtime {
namespace {

thread_local std::string lastThreadError;
std::mutex lastAnyErrorMutex;
std::string lastAnyError;

/// Halide's message on one line, without its "Error: " prefix.
std::string halideErrorLine(const char *message) {
  std::string text = message ? message : "";
  while (!text.empty() &&
         (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  std::string line;
  for (char c : text)
    line += (c == '\n' || c == '\r') ? std::string("; ") : std::string(1, c);
  if (line.rfind("Error: ", 0) == 0)
    line.erase(0, 7);
  return line;
}

extern "C" void tfmcHalideErrorHandler(void *, const char *message) {
  // No allocation may escape into Halide's C code as an exception.
  try {
    std::string line = halideErrorLine(message);
    {
      std::lock_guard<std::mutex> lock(lastAnyErrorMutex);
      lastAnyError = line;
    }
    lastThreadError = std::move(line);
  } catch (...) {
  }
}

} // namespace

void installHalideErrorHandler() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    halide_set_error_handler(tfmcHalideErrorHandler);
    installHalideScratchAllocator();
  });
}

std::string takeHalideError() {
  std::string message;
  message.swap(lastThreadError);
  std::lock_guard<std::mutex> lock(lastAnyErrorMutex);
  if (message.empty())
    message = lastAnyError;
  lastAnyError.clear();
  return message;
}

void setHalideThreads(int threads) { halide_set_num_threads(threads); }

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

namespace {

/// Copies move at most this many bytes per halide_buffer_t (extents are
/// 32-bit).
constexpr std::size_t kChunkBytes = std::size_t(1) << 30;

/// What deviceAllocate made, kept for halide_device_free.
struct DeviceAllocation {
  halide_buffer_t buffer{};
  halide_dimension_t dims[2];
};
std::mutex allocationsMutex;
std::map<std::uint64_t, std::unique_ptr<DeviceAllocation>> allocations;

/// Halide's last message, or `fallback` with the result code.
std::string halideMessage(int result, const char *fallback) {
  std::string message = takeHalideError();
  if (message.empty())
    message = std::string(fallback) + " failed (Halide error " +
              std::to_string(result) + ")";
  return message;
}

const halide_device_interface_t *cudaInterface() {
  return halide_cuda_device_interface ? halide_cuda_device_interface()
                                      : nullptr;
}

/// A 1-D byte buffer over `bytes` of host memory (or none).
halide_buffer_t byteBuffer(halide_dimension_t &dim, void *host,
                           std::size_t bytes) {
  halide_buffer_t buffer{};
  dim = halide_dimension_t(0, static_cast<int32_t>(bytes), 1);
  buffer.dimensions = 1;
  buffer.dim = &dim;
  buffer.type = halide_type_t(halide_type_uint, 8);
  buffer.host = static_cast<uint8_t *>(host);
  return buffer;
}

/// Copies `bytes` between host and device memory, in chunks.
bool copyBytes(std::uint64_t address, void *host, std::size_t bytes,
               bool toDevice, std::string &error) {
  for (std::size_t offset = 0; offset < bytes; offset += kChunkBytes) {
    std::size_t chunk = std::min(kChunkBytes, bytes - offset);
    halide_dimension_t dim;
    halide_buffer_t buffer =
        byteBuffer(dim, static_cast<uint8_t *>(host) + offset, chunk);
    int result =
        halide_cuda_wrap_device_ptr(nullptr, &buffer, address + offset);
    if (result != 0) {
      error = halideMessage(result, "halide_cuda_wrap_device_ptr");
      return false;
    }
    if (toDevice) {
      buffer.set_host_dirty(true);
      result = halide_copy_to_device(nullptr, &buffer, cudaInterface());
    } else {
      buffer.set_device_dirty(true);
      result = halide_copy_to_host(nullptr, &buffer);
    }
    buffer.set_host_dirty(false);
    buffer.set_device_dirty(false);
    halide_cuda_detach_device_ptr(nullptr, &buffer);
    if (result != 0) {
      error = halideMessage(result, toDevice ? "cuMemcpyHtoD" : "cuMemcpyDtoH");
      return false;
    }
  }
  return true;
}

using CuInitFn = int (*)(unsigned int);
using CuDeviceGetCountFn = int (*)(int *);
using CuGetErrorNameFn = int (*)(int, const char **);

std::string driverError(CuGetErrorNameFn name, int code) {
  const char *text = nullptr;
  if (name && name(code, &text) == 0 && text)
    return std::string(text) + " (" + std::to_string(code) + ")";
  return "CUDA error " + std::to_string(code);
}

} // namespace

bool openCudaDevice(std::string &error) {
  static std::once_flag opened;
  static std::string openError;
  std::call_once(opened, [] {
    if (!cudaInterface() || !halide_cuda_wrap_device_ptr ||
        !halide_cuda_detach_device_ptr) {
      openError = "this program's Halide runtime has no CUDA support, but "
                  "its plan runs on CUDA";
      return;
    }
    // Halide's runtime looks for libcuda.so; driver installs without the
    // CUDA toolkit often have only libcuda.so.1. Loaded globally, its
    // symbols are what Halide's runtime finds first.
    void *driver = nullptr;
    std::string loadError;
    for (const char *name : {"libcuda.so.1", "libcuda.so"}) {
      driver = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (driver)
        break;
      const char *text = dlerror();
      if (loadError.empty() && text)
        loadError = text;
    }
    if (!driver) {
      openError = "no CUDA device: cannot load the CUDA driver (" +
                  loadError + ")";
      return;
    }
    auto cuInit = reinterpret_cast<CuInitFn>(dlsym(driver, "cuInit"));
    auto cuDeviceGetCount =
        reinterpret_cast<CuDeviceGetCountFn>(dlsym(driver, "cuDeviceGetCount"));
    auto cuGetErrorName =
        reinterpret_cast<CuGetErrorNameFn>(dlsym(driver, "cuGetErrorName"));
    if (!cuInit || !cuDeviceGetCount) {
      openError = "no CUDA device: the CUDA driver has no cuInit or "
                  "cuDeviceGetCount";
      return;
    }
    if (int result = cuInit(0); result != 0) {
      openError = "no CUDA device: cuInit failed: " +
                  driverError(cuGetErrorName, result);
      return;
    }
    int count = 0;
    if (int result = cuDeviceGetCount(&count); result != 0) {
      openError = "no CUDA device: cuDeviceGetCount failed: " +
                  driverError(cuGetErrorName, result);
      return;
    }
    if (count <= 0)
      openError = "no CUDA device: the CUDA driver sees no GPU";
  });
  if (openError.empty())
    return true;
  error = openError;
  return false;
}

bool deviceAllocate(std::size_t bytes, std::uint64_t &address,
                    std::string &error) {
  auto allocation = std::make_unique<DeviceAllocation>();
  halide_buffer_t &buffer = allocation->buffer;
  // Megabyte rows past 1 GiB: every extent stays within 32 bits.
  constexpr std::size_t kRow = std::size_t(1) << 20;
  if (bytes <= kChunkBytes) {
    allocation->dims[0] =
        halide_dimension_t(0, static_cast<int32_t>(std::max<std::size_t>(bytes, 1)), 1);
    buffer.dimensions = 1;
  } else {
    allocation->dims[0] = halide_dimension_t(0, kRow, 1);
    allocation->dims[1] = halide_dimension_t(
        0, static_cast<int32_t>((bytes + kRow - 1) / kRow), kRow);
    buffer.dimensions = 2;
  }
  buffer.dim = allocation->dims;
  buffer.type = halide_type_t(halide_type_uint, 8);
  int result = halide_device_malloc(nullptr, &buffer, cudaInterface());
  if (result != 0 || buffer.device == 0) {
    error = halideMessage(result, "cuMemAlloc");
    return false;
  }
  address = buffer.device;
  std::lock_guard<std::mutex> lock(allocationsMutex);
  allocations[address] = std::move(allocation);
  return true;
}

void deviceFree(std::uint64_t address) {
  std::unique_ptr<DeviceAllocation> allocation;
  {
    std::lock_guard<std::mutex> lock(allocationsMutex);
    auto it = allocations.find(address);
    if (it == allocations.end())
      return;
    allocation = std::move(it->second);
    allocations.erase(it);
  }
  halide_device_free(nullptr, &allocation->buffer);
}

bool deviceUpload(std::uint64_t address, const void *host, std::size_t bytes,
                  std::string &error) {
  return copyBytes(address, const_cast<void *>(host), bytes,
                   /*toDevice=*/true, error);
}

bool deviceDownload(void *host, std::uint64_t address, std::size_t bytes,
                    std::string &error) {
  return copyBytes(address, host, bytes, /*toDevice=*/false, error);
}

bool deviceWrap(halide_buffer_t &buffer, std::uint64_t address,
                std::string &error) {
  int result = halide_cuda_wrap_device_ptr(nullptr, &buffer, address);
  if (result != 0) {
    error = halideMessage(result, "halide_cuda_wrap_device_ptr");
    return false;
  }
  return true;
}

void deviceDetach(halide_buffer_t &buffer) {
  buffer.set_device_dirty(false);
  halide_cuda_detach_device_ptr(nullptr, &buffer);
}

bool deviceSynchronize(halide_buffer_t &wrapped, std::string &error) {
  // Halide's CUDA device_sync synchronises the context's stream, whatever
  // the buffer.
  int result = halide_device_sync(nullptr, &wrapped);
  if (result != 0) {
    error = halideMessage(result, "cuCtxSynchronize");
    return false;
  }
  return true;
}

} // namespace tfmc::runtime
