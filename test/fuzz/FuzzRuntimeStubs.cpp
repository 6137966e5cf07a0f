//===- FuzzRuntimeStubs.cpp - What a compiled program adds to the runtime ===//
//
// The fuzz targets link the runtime's executor without a model: no Halide
// runtime object (their kernels are stand-ins that read their buffers), so
// this replaces runtime/core/HalideHooks.cpp (no thread pool, no GPU), and no
// glue, so the linked plan and kernel table are empty (the targets build
// their models with Model::create instead).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/HalideHooks.h"
#include "runtime/core/Model.h"

extern "C" {
extern const struct tfmc_variant tfmc_variants[];
extern const int tfmc_num_variants;
extern const struct tfmc_cpu_target tfmc_cpu_targets[];
extern const int tfmc_num_cpu_targets;
static const struct tfmc_kernel_entry noKernels[] = {{"none", nullptr}};
const struct tfmc_variant tfmc_variants[] = {{"none", "", noKernels, 0, "[]"}};
const int tfmc_num_variants = 1;
const struct tfmc_cpu_target tfmc_cpu_targets[] = {{"none", ""}};
const int tfmc_num_cpu_targets = 0;
}

namespace tfmc::runtime {

void installHalideErrorHandler() {}
std::string takeHalideError() { return "a kernel failed"; }
void setHalideThreads(int) {}
bool openCudaDevice(std::string &error) {
  error = "no CUDA device in the fuzz targets";
  return false;
}
bool deviceAllocate(std::size_t, std::uint64_t &, std::string &error) {
  error = "no CUDA device in the fuzz targets";
  return false;
}
void deviceFree(std::uint64_t) {}
bool deviceUpload(std::uint64_t, const void *, std::size_t, std::string &error) {
  error = "no CUDA device in the fuzz targets";
  return false;
}
bool deviceDownload(void *, std::uint64_t, std::size_t, std::string &error) {
  error = "no CUDA device in the fuzz targets";
  return false;
}
bool deviceWrap(halide_buffer_t &, std::uint64_t, std::string &error) {
  error = "no CUDA device in the fuzz targets";
  return false;
}
void deviceDetach(halide_buffer_t &) {}
bool deviceSynchronize(halide_buffer_t &, std::string &) { return true; }

} // namespace tfmc::runtime
