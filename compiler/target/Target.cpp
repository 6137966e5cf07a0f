//===- Target.cpp - The registry of tfmc's targets ------------------------===//

#include "compiler/target/Target.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <thread>
#include <unistd.h>

namespace tfmc::target {
namespace {

// Named CPU targets plan for 8 cores: enough tasks for a typical server
// socket slice, and still fine (a few tasks per core) on the 2-core machines
// tfmc is developed on. `host` uses the real count.
constexpr int64_t kNominalCores = 8;

// Halide's x86 feature strings. Halide 14's avx512_skylake is AVX-512 F, CD,
// BW, DQ and VL: what every AVX-512 server CPU since Skylake has.
constexpr const char *kAvx2Halide = "x86-64-linux-sse41-avx-f16c-fma-avx2";
constexpr const char *kAvx512Halide =
    "x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake";

TargetDescription avx2() {
  TargetDescription t;
  t.name = "x86-64-avx2";
  t.summary = "x86-64 with AVX2 and FMA (8 f32 lanes, 16 ymm registers)";
  t.hostFeatures = {"avx2", "fma"};
  t.halideTarget = kAvx2Halide;
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
  t.summary = "x86-64 with AVX-512 F/CD/BW/DQ/VL (16 f32 lanes, 32 zmm registers)";
  t.hostFeatures = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"};
  t.halideTarget = kAvx512Halide;
  t.vectorLanes = 16;     // 512-bit zmm
  t.vectorRegisters = 32; // zmm0..zmm31
  t.l1Bytes = 48 * 1024;  // Ice Lake and later server cores
  t.l2Bytes = 1280 * 1024;
  t.cores = kNominalCores;
  return t;
}

// CUDA limits from NVIDIA's tables for compute capability 8.0 (A100) and
// 9.0 (H100). Shared memory is the 48 KB a block gets without the dynamic
// opt-in, which Halide 14's CUDA backend does not request. PTX for
// capability N runs on GPUs of capability >= N only, so sm_80 GPUs get
// capability 80; Halide 14 generates at most 86, which sm_90 GPUs
// JIT-compile from the PTX. The host side only launches kernels: baseline
// x86-64.
TargetDescription cuda(const char *name, int64_t capability) {
  TargetDescription t;
  t.name = name;
  t.kind = TargetKind::Gpu;
  t.computeCapability = capability;
  t.summary = capability == 90
                  ? "NVIDIA GPUs of compute capability 9.0 (H100; PTX for 8.6)"
                  : "NVIDIA GPUs of compute capability 8.0 and later (A100)";
  t.halideTarget = capability == 90
                       ? "x86-64-linux-sse41-cuda-cuda_capability_86"
                       : "x86-64-linux-sse41-cuda-cuda_capability_80";
  t.warpSize = 32;
  t.maxThreadsPerBlock = 1024;
  t.sharedBytesPerBlock = 48 * 1024;
  // 64K registers per SM over 2048 threads: 32 each keeps full occupancy;
  // plans may use up to 128 at half occupancy or less.
  t.registersPerThread = capability == 90 ? 128 : 96;
  t.multiprocessors = capability == 90 ? 132 : 108;
  return t;
}

TargetDescription alias(const char *name, const char *of) {
  TargetDescription t;
  t.name = name;
  t.aliasOf = of;
  t.summary = std::string("the same as ") + of;
  return t;
}

TargetDescription hostPlaceholder() {
  TargetDescription t;
  t.name = "host";
  t.summary = "the CPU tfmc runs on: the best of the CPU targets it supports, "
              "with its own caches and cores";
  return t;
}

int64_t sysconfOr(int name, int64_t fallback) {
  long value = sysconf(name);
  return value > 0 ? value : fallback;
}

std::optional<TargetDescription> detectHost(std::string &error) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto has = [&](const std::string &feature) {
    auto it = features.find(feature);
    return it != features.end() && it->second;
  };
  // The most capable CPU target first.
  std::vector<const TargetDescription *> cpus;
  for (const TargetDescription &t : registeredTargets())
    if (!t.isGpu() && t.aliasOf.empty() && !t.hostFeatures.empty())
      cpus.push_back(&t);
  std::stable_sort(cpus.begin(), cpus.end(), [](auto *a, auto *b) {
    return a->vectorLanes > b->vectorLanes;
  });
  for (const TargetDescription *candidate : cpus) {
    if (!std::all_of(candidate->hostFeatures.begin(),
                     candidate->hostFeatures.end(), has))
      continue;
    TargetDescription t = *candidate;
    t.name = "host";
    t.l1Bytes = sysconfOr(_SC_LEVEL1_DCACHE_SIZE, t.l1Bytes);
    t.l2Bytes = sysconfOr(_SC_LEVEL2_CACHE_SIZE, t.l2Bytes);
    t.cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    for (const char *feature : {"avx512bf16", "avx512vnni", "amx-bf16", "amx-int8"})
      if (has(feature))
        t.narrowDotFeatures.push_back(feature);
    return t;
  }
  error = "the host CPU has the features of no CPU target (it needs AVX2 and "
          "FMA at least); name a target with --target";
  return std::nullopt;
}

} // namespace

const std::vector<TargetDescription> &registeredTargets() {
  static const std::vector<TargetDescription> targets = {
      hostPlaceholder(), avx2(),
      avx512(),          alias("cuda", "cuda-sm80"),
      cuda("cuda-sm80", 80), cuda("cuda-sm90", 90)};
  return targets;
}

std::string targetNameList(const char *separator) {
  std::string list;
  for (const TargetDescription &t : registeredTargets())
    list += (list.empty() ? "" : separator) + t.name;
  return list;
}

std::string targetHelp() {
  size_t width = 0;
  for (const TargetDescription &t : registeredTargets())
    width = std::max(width, t.name.size());
  std::string help;
  for (const TargetDescription &t : registeredTargets())
    help += "  " + t.name + std::string(width + 2 - t.name.size(), ' ') +
            t.summary + "\n";
  return help;
}

std::optional<TargetDescription> lookupTarget(const std::string &name,
                                              std::string &error) {
  if (name == "host")
    return detectHost(error);
  for (const TargetDescription &t : registeredTargets())
    if (t.name == name)
      return t.aliasOf.empty() ? t : lookupTarget(t.aliasOf, error);
  error = "unknown target '" + name + "'; known targets are " +
          targetNameList(" ");
  return std::nullopt;
}

} // namespace tfmc::target
