//===- FakeHalide.cpp - Test double of HalideHooks.cpp --------------------===//
//
// Stands in for the Halide runtime object in the runtime's unit tests (see
// FakeHalide.h), and checks buffers as a real kernel would.
//
//===----------------------------------------------------------------------===//

#include "FakeHalide.h"
#include "runtime/core/HalideHooks.h"

#include <cstring>
#include <utility>

using namespace tfmc::runtime;

//===----------------------------------------------------------------------===//
// Test double of HalideHooks.cpp
//===----------------------------------------------------------------------===//

std::string fakeHalideError;
int fakeThreads = 0;
bool fakeHandlerInstalled = false;

namespace tfmc::runtime {
void installHalideErrorHandler() { fakeHandlerInstalled = true; }
std::string takeHalideError() { return std::exchange(fakeHalideError, {}); }
void setHalideThreads(int threads) { fakeThreads = threads; }
} // namespace tfmc::runtime

// A fake GPU for plans with "device": "cuda": device memory is host memory
// this double owns, so the executor's device path (uploads at load, device
// buffers for every kernel argument, one input upload and one output
// download per call) runs and is checked without CUDA.
halide_device_interface_t fakeDeviceInterface{};
std::string fakeDeviceOpenError;     // openCudaDevice's answer when set
std::string fakeDownloadError;       // deviceDownload's answer when set
std::map<std::uint64_t, std::vector<uint8_t>> fakeDeviceMemory;
int fakeUploads = 0, fakeDownloads = 0, fakeSyncs = 0;

/// Whether [address, address + bytes) lies inside one fake allocation.
bool fakeDeviceHolds(std::uint64_t address, std::size_t bytes) {
  auto it = fakeDeviceMemory.upper_bound(address);
  if (it == fakeDeviceMemory.begin())
    return false;
  --it;
  return address + bytes <= it->first + it->second.size();
}

namespace tfmc::runtime {
bool openCudaDevice(std::string &error) {
  if (fakeDeviceOpenError.empty())
    return true;
  error = fakeDeviceOpenError;
  return false;
}
bool deviceAllocate(std::size_t bytes, std::uint64_t &address,
                    std::string &error) {
  // Poisoned: what the executor does not upload reads as NaN.
  std::vector<uint8_t> memory(bytes, 0xff);
  address = reinterpret_cast<std::uint64_t>(memory.data());
  fakeDeviceMemory[address] = std::move(memory);
  return true;
}
void deviceFree(std::uint64_t address) { fakeDeviceMemory.erase(address); }
bool deviceUpload(std::uint64_t address, const void *host, std::size_t bytes,
                  std::string &error) {
  if (!fakeDeviceHolds(address, bytes)) {
    error = "upload outside device memory";
    return false;
  }
  ++fakeUploads;
  std::memcpy(reinterpret_cast<void *>(address), host, bytes);
  return true;
}
bool deviceDownload(void *host, std::uint64_t address, std::size_t bytes,
                    std::string &error) {
  if (!fakeDownloadError.empty()) {
    error = fakeDownloadError;
    return false;
  }
  if (!fakeDeviceHolds(address, bytes)) {
    error = "download outside device memory";
    return false;
  }
  ++fakeDownloads;
  std::memcpy(host, reinterpret_cast<const void *>(address), bytes);
  return true;
}
bool deviceWrap(halide_buffer_t &buffer, std::uint64_t address,
                std::string &error) {
  if (buffer.device) {
    error = "buffer already wrapped";
    return false;
  }
  buffer.device = address;
  buffer.device_interface = &fakeDeviceInterface;
  return true;
}
void deviceDetach(halide_buffer_t &buffer) {
  buffer.device = 0;
  buffer.device_interface = nullptr;
  buffer.flags = 0;
}
bool deviceSynchronize(halide_buffer_t &wrapped, std::string &error) {
  // As Halide's halide_device_sync: a buffer with device memory.
  if (wrapped.device == 0 || wrapped.device_interface != &fakeDeviceInterface) {
    error = "device sync through a buffer with no device memory";
    return false;
  }
  ++fakeSyncs;
  return true;
}
} // namespace tfmc::runtime

// Helpers of the fake kernels.


/// Checks that `buffer` is a dense, min-0 buffer of `rank` dims and the
/// given type; records Halide-style errors like a real kernel would.
bool checkBuffer(const halide_buffer_t *buffer, const char *name, int rank,
                 halide_type_code_t code, int bits) {
  auto failWith = [&](const std::string &what) {
    fakeHalideError = std::string("buffer ") + name + " " + what;
    return false;
  };
  // On the fake GPU, a buffer is device memory only; on the host, host
  // memory only.
  const bool onDevice = buffer && buffer->device_interface == &fakeDeviceInterface;
  if (!buffer || !(onDevice ? buffer->device != 0 : buffer->host != nullptr))
    return failWith("is null");
  if (buffer->dimensions != rank)
    return failWith("has " + std::to_string(buffer->dimensions) + " dims");
  if (buffer->type.code != code || buffer->type.bits != bits ||
      buffer->type.lanes != 1)
    return failWith("has the wrong type");
  if (onDevice ? (buffer->host || buffer->flags)
               : (buffer->device || buffer->device_interface || buffer->flags))
    return failWith(onDevice ? "has host state" : "has device state");
  int32_t stride = 1;
  for (int d = 0; d < rank; ++d) {
    if (buffer->dim[d].min != 0 || buffer->dim[d].stride != stride ||
        buffer->dim[d].flags != 0)
      return failWith("is not dense in dim " + std::to_string(d));
    stride *= buffer->dim[d].extent;
  }
  if (onDevice &&
      !fakeDeviceHolds(buffer->device, std::size_t(stride) * (bits / 8)))
    return failWith("is outside device memory");
  return true;
}

/// Where a buffer's elements are: device memory on the fake GPU.
uint8_t *dataOf(const halide_buffer_t *buffer) {
  return buffer->device ? reinterpret_cast<uint8_t *>(buffer->device)
                        : buffer->host;
}

halide_buffer_t *arg(void **args, int i) {
  return static_cast<halide_buffer_t *>(args[i]);
}


