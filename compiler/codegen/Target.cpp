//===- Target.cpp - What tfmc knows about each target ---------------------===//

#include "compiler/codegen/Target.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <thread>
#include <unistd.h>

namespace tfmc::codegen {
namespace {

// Named CPU targets plan for 8 cores: enough tasks for a typical server
// socket slice, and still fine (a few tasks per core) on the 2-core machines
// tfmc is developed on. `host` uses the real count.
constexpr int64_t kNominalCores = 8;

TargetDescription avx2() {
  TargetDescription t;
  t.name = "x86-64-avx2";
  t.vectorLanes = 8;      // 256-bit ymm / 32-bit floats
  t.vectorRegisters = 16; // ymm0..ymm15
  t.l1Bytes = 32 * 1024;
  t.l2Bytes = 512 * 1024; // Zen 2/3; Intel client cores have 256 KB to 1.25 MB
  t.cores = kNominalCores;
  return t;
}

TargetDescription avx512() {
  TargetDescription t;
  t.name = "x86-64-avx512";
  t.vectorLanes = 16;     // 512-bit zmm
  t.vectorRegisters = 32; // zmm0..zmm31
  t.l1Bytes = 48 * 1024;  // Ice Lake and later server cores
  t.l2Bytes = 1280 * 1024;
  t.cores = kNominalCores;
  return t;
}

// CUDA limits from NVIDIA's tables for compute capability 8.0 (A100) and
// 9.0 (H100). Shared memory is the 48 KB a block gets without the dynamic
// opt-in, which Halide 14's CUDA backend does not request.
TargetDescription cuda(int64_t capability) {
  TargetDescription t;
  t.name = capability == 90 ? "cuda-sm90" : "cuda-sm80";
  t.kind = TargetKind::Gpu;
  t.computeCapability = capability;
  t.warpSize = 32;
  t.maxThreadsPerBlock = 1024;
  t.sharedBytesPerBlock = 48 * 1024;
  // 64K registers per SM over 2048 threads: 32 each keeps full occupancy;
  // plans may use up to 128 at half occupancy or less.
  t.registersPerThread = capability == 90 ? 128 : 96;
  t.multiprocessors = capability == 90 ? 132 : 108;
  return t;
}

int64_t sysconfOr(int name, int64_t fallback) {
  long value = sysconf(name);
  return value > 0 ? value : fallback;
}

std::optional<TargetDescription> detectHost(std::string &error) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto has = [&](const char *feature) {
    auto it = features.find(feature);
    return it != features.end() && it->second;
  };
  TargetDescription t;
  if (has("avx512f")) {
    t = avx512();
  } else if (has("avx2") && has("fma")) {
    t = avx2();
  } else {
    error = "the host CPU has neither AVX-512F nor AVX2+FMA; name a target "
            "with --target";
    return std::nullopt;
  }
  t.name = "host";
  t.l1Bytes = sysconfOr(_SC_LEVEL1_DCACHE_SIZE, t.l1Bytes);
  t.l2Bytes = sysconfOr(_SC_LEVEL2_CACHE_SIZE, t.l2Bytes);
  t.cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  return t;
}

} // namespace

std::vector<std::string> knownTargetNames() {
  return {"host", "x86-64-avx2", "x86-64-avx512", "cuda", "cuda-sm80",
          "cuda-sm90"};
}

std::optional<TargetDescription> lookupTarget(const std::string &name,
                                              std::string &error) {
  if (name == "host")
    return detectHost(error);
  if (name == "x86-64-avx2")
    return avx2();
  if (name == "x86-64-avx512")
    return avx512();
  if (name == "cuda" || name == "cuda-sm80")
    return cuda(80);
  if (name == "cuda-sm90")
    return cuda(90);
  error = "unknown target '" + name + "'; known targets are";
  for (const std::string &known : knownTargetNames())
    error += " " + known;
  return std::nullopt;
}

} // namespace tfmc::codegen
