//===- Target.cpp - The registry of tfmc's targets ------------------------===//

#include "passes/target/Target.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
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
/// Rows per panel of an f32 linear weight (TargetDescription::weightPanel).
constexpr int64_t kWeightPanel = 16;

// The measured figures of Tile.cpp's cost model (TargetDescription::CpuTuning;
// Tile.cpp gives each one's measurements and reasons). All were measured on
// a 2-core Intel Xeon (Sapphire Rapids, AVX-512) with GPT-2 small, BERT-base
// and the linear benchmarks of bench/run.py; an entry that re-measures one
// on its own CPU kind says so (bench/results.md records which machine gave
// which figure).
TargetDescription::CpuTuning xeonTuning() {
  TargetDescription::CpuTuning tuning;
  tuning.decodeTileRows = 2;
  tuning.packedColumnVectors = 2;
  tuning.packedMaxRows = 8;
  tuning.packedBlockRows = 16;
  tuning.packedTaskRows = 512;
  tuning.packedDepthBlock = 256;
  tuning.packedSmallRows = 32;
  tuning.packedMaxColumns = 16384;
  tuning.measuredOn = "Intel Xeon (Sapphire Rapids), 2 cores";
  return tuning;
}

// Halide's x86 feature strings. Halide 14's avx512_skylake is AVX-512 F, CD,
// BW, DQ and VL: what every AVX-512 server CPU since Skylake has.
constexpr const char *kAvx2Halide = "x86-64-linux-sse41-avx-f16c-fma-avx2";
constexpr const char *kAvx512Halide =
    "x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake";

TargetDescription avx2() {
  TargetDescription t;
  t.name = "x86-64-avx2";
  t.summary = "x86-64 with AVX2 and FMA (8 f32 lanes, 16 ymm registers)";
  // Every feature of its Halide string: the CPU check of a compiled
  // program (runtime/core/CpuFeatures.cpp) reads this list.
  t.hostFeatures = {"sse4.1", "avx", "f16c", "fma", "avx2"};
  t.halideTarget = kAvx2Halide;
  t.vectorLanes = 8;      // 256-bit ymm / 32-bit floats
  t.vectorRegisters = 16; // ymm0..ymm15
  t.l1Bytes = 32 * 1024;
  t.l2Bytes = 512 * 1024; // Zen 2/3; Intel client cores have 256 KB to 1.25 MB
  t.l3Bytes = 16 * 1024 * 1024;
  t.cores = kNominalCores;
  t.weightPanel = kWeightPanel;
  t.tuning = xeonTuning();
  t.integerMicrokernels = "avx2";
  // Block panels for int8 and int4 weights read by int8 activations
  // (runtime/ukernels/IntegerPanels256.h has the figures).
  t.integerPanels = true;
  // GPT-2 small's prefill 7-20 % faster than Halide's packed form
  // (docs/performance.md, "Microkernels (f32)").
  t.floatMicrokernels = "avx2";
  return t;
}

TargetDescription avx512() {
  TargetDescription t;
  t.name = "x86-64-avx512";
  t.summary = "x86-64 with AVX-512 F/CD/BW/DQ/VL (16 f32 lanes, 32 zmm registers)";
  t.hostFeatures = {"sse4.1",  "avx",      "f16c",     "fma",     "avx2",
                    "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"};
  t.halideTarget = kAvx512Halide;
  t.vectorLanes = 16;     // 512-bit zmm
  t.vectorRegisters = 32; // zmm0..zmm31
  t.l1Bytes = 48 * 1024;  // Ice Lake and later server cores
  t.l2Bytes = 1280 * 1024;
  t.l3Bytes = 16 * 1024 * 1024;
  t.cores = kNominalCores;
  t.weightPanel = kWeightPanel;
  t.tuning = xeonTuning();
  // vpdpbusd where the CPU has AVX512-VNNI, chosen at run time (the
  // target does not require it: Skylake-X has none).
  t.integerMicrokernels = "avx512";
  t.integerPanels = true;
  // The f32 microkernel (12 x 2 zmm; docs/performance.md, "Microkernels
  // (f32)"): GPT-2 small's prefill of 128 on a 2-core Sapphire Rapids 3-10 %
  // faster than Halide's packed form at one thread, 4-7 % at two; on a
  // Zen 5 that form had run as fast at one thread and 5 % faster at two.
  t.floatMicrokernels = "avx512";
  return t;
}

// x86-64-avx512 plus the AVX512-BF16 dot product, for --activations bf16.
// Halide 14 reaches vdpbf16ps only through its avx512_sapphirerapids
// feature, which makes LLVM compile for `-mcpu=sapphirerapids` (with
// avx512_cannonlake: its IFMA and VBMI; docs/precision.md, "bf16
// activations"). Only the
// kernels that multiply bf16 pairs get it (bf16DotFeatures), the others
// and Halide's runtime stay x86-64-avx512's; still, such a kernel may use
// any instruction LLVM's Sapphire Rapids model has for ordinary vector
// code, so the CPU check asks for every one of those: the Ice Lake AVX-512
// extensions, GFNI, VAES and VPCLMULQDQ besides BF16 and VNNI, and
// AVX512-FP16, whose vmovw LLVM uses to load a 16-bit value (Llama's
// kernels with an f16 KV cache had 16 of them). So Sapphire Rapids and
// later Xeons run it; AMD Zen 4 and Zen 5 (BF16 without FP16) and Cooper
// Lake (BF16 without VBMI) do not: a fleet list runs x86-64-avx512 there.
// Explicit only: `host` and x86-64-all keep x86-64-avx512, whose kernels
// are the same for every other program.
TargetDescription avx512Bf16() {
  TargetDescription t = avx512();
  t.name = "x86-64-avx512-bf16";
  t.summary = "x86-64-avx512 with AVX512-BF16, VNNI and FP16 (Sapphire "
              "Rapids and later Xeons), for --activations bf16; never chosen "
              "by host or x86-64-all";
  t.hostFeatures.insert(t.hostFeatures.end(),
                        {"avx512ifma", "avx512vbmi", "avx512vbmi2",
                         "avx512bitalg", "avx512vpopcntdq", "avx512vnni",
                         "avx512bf16", "avx512fp16", "gfni", "vaes",
                         "vpclmulqdq"});
  t.bf16DotFeatures = "-avx512_cannonlake-avx512_sapphirerapids";
  t.explicitOnly = true;
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
  t.hostFeatures = {"sse4.1"}; // the host side's Halide string
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

/// The name that stands for every CPU target: a program for a fleet.
constexpr const char *kAllCpus = "x86-64-all";

TargetDescription allCpusPlaceholder() {
  TargetDescription t;
  t.name = kAllCpus;
  t.summary = "every x86-64 target above, in one program that runs the "
              "widest its CPU has";
  return t;
}

TargetDescription hostPlaceholder() {
  TargetDescription t;
  t.name = "host";
  t.summary = "the CPU tfmc runs on: the best of the CPU targets it supports, "
              "with its own caches and cores";
  return t;
}

/// The order a fleet program tries its variants in: wider vectors first,
/// then the target that needs more features (x86-64-avx512-bf16 before
/// x86-64-avx512).
bool widerFirst(const TargetDescription *a, const TargetDescription *b) {
  if (a->vectorLanes != b->vectorLanes)
    return a->vectorLanes > b->vectorLanes;
  return a->hostFeatures.size() > b->hostFeatures.size();
}

int64_t sysconfOr(int name, int64_t fallback) {
  long value = sysconf(name);
  return value > 0 ? value : fallback;
}

std::optional<TargetDescription> detectHost(std::string &error) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  // The most capable CPU target first.
  for (const TargetDescription *candidate : cpuTargets()) {
    if (!hostHasFeatures(*candidate))
      continue;
    TargetDescription t = *candidate;
    t.name = "host";
    t.hostOf = candidate->name;
    t.l1Bytes = sysconfOr(_SC_LEVEL1_DCACHE_SIZE, t.l1Bytes);
    t.l2Bytes = sysconfOr(_SC_LEVEL2_CACHE_SIZE, t.l2Bytes);
    t.l3Bytes = sysconfOr(_SC_LEVEL3_CACHE_SIZE, t.l3Bytes);
    t.cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    for (const char *feature : {"avx512bf16", "avx512vnni", "amx-bf16", "amx-int8"})
      if (features.lookup(feature))
        t.narrowDotFeatures.push_back(feature);
    return t;
  }
  error = "the host CPU has the features of no CPU target (it needs AVX2 and "
          "FMA at least); name a target with --target";
  return std::nullopt;
}

} // namespace

bool hostHasFeatures(const TargetDescription &target) {
  static const llvm::StringMap<bool> features =
      llvm::sys::getHostCPUFeatures();
  return std::all_of(
      target.hostFeatures.begin(), target.hostFeatures.end(),
      [](const std::string &feature) { return features.lookup(feature); });
}

const std::vector<TargetDescription> &registeredTargets() {
  static const std::vector<TargetDescription> targets = {
      hostPlaceholder(),
      avx2(),
      avx512(),
      avx512Bf16(),
      allCpusPlaceholder(),
      alias("cuda", "cuda-sm80"),
      cuda("cuda-sm80", 80),
      cuda("cuda-sm90", 90)};
  return targets;
}

std::vector<const TargetDescription *> cpuTargets() {
  std::vector<const TargetDescription *> cpus;
  for (const TargetDescription &t : registeredTargets())
    if (!t.isGpu() && t.aliasOf.empty() && !t.hostFeatures.empty() &&
        !t.explicitOnly)
      cpus.push_back(&t);
  std::stable_sort(cpus.begin(), cpus.end(), widerFirst);
  return cpus;
}

std::string TargetDescription::featureList() const {
  std::string list;
  for (const std::string &feature : hostFeatures)
    list += (list.empty() ? "" : " ") + feature;
  return list;
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
  if (name == kAllCpus || name.find(',') != std::string::npos) {
    error = "'" + name + "' names several targets; here one is expected";
    return std::nullopt;
  }
  for (const TargetDescription &t : registeredTargets())
    if (t.name == name)
      return t.aliasOf.empty() ? t : lookupTarget(t.aliasOf, error);
  error = "unknown target '" + name + "'; known targets are " +
          targetNameList(" ");
  return std::nullopt;
}

std::optional<std::vector<TargetDescription>>
lookupTargets(const std::string &list, std::string &error) {
  std::vector<TargetDescription> targets;
  auto add = [&](const TargetDescription &t) {
    for (const TargetDescription &known : targets)
      if (known.name == t.name)
        return;
    targets.push_back(t);
  };
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(list).split(names, ',');
  for (llvm::StringRef name : names) {
    if (name == kAllCpus) {
      for (const TargetDescription *t : cpuTargets())
        add(*t);
      continue;
    }
    std::optional<TargetDescription> t = lookupTarget(name.str(), error);
    if (!t)
      return std::nullopt;
    add(*t);
  }
  if (targets.size() > 1)
    for (const TargetDescription &t : targets)
      if (t.isGpu() || t.name == "host") {
        error = "--target '" + list + "': " +
                (t.isGpu() ? "a CUDA target" : std::string("host")) +
                " cannot be part of a list; a list names CPU targets (" +
                kAllCpus + " for all of them)";
        return std::nullopt;
      }
  // The order a program tries them at load: the widest first.
  std::stable_sort(targets.begin(), targets.end(),
                   [](auto &a, auto &b) { return widerFirst(&a, &b); });
  return targets;
}

} // namespace tfmc::target
