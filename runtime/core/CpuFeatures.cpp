//===- CpuFeatures.cpp - CPUID and XGETBV, read once ----------------------===//

#include "runtime/core/CpuFeatures.h"

#include <cpuid.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <sstream>

namespace tfmc::runtime {
namespace {

enum Register { Eax, Ebx, Ecx, Edx };

/// Register state the OS must save for a feature's instructions (XCR0).
constexpr uint64_t kXmm = 1u << 1, kYmm = 1u << 2;
constexpr uint64_t kAvxState = kXmm | kYmm;
constexpr uint64_t kAvx512State = kAvxState | (1u << 5) | (1u << 6) | (1u << 7);
constexpr uint64_t kAmxState = (uint64_t(1) << 17) | (uint64_t(1) << 18);

struct FeatureBit {
  const char *name; // LLVM's name, as the target registry writes it
  unsigned leaf, subleaf;
  Register reg;
  unsigned bit;
  uint64_t osState; // XCR0 bits that must be set (0: none)
};

// Intel SDM vol. 2A, CPUID leaves 1 and 7; AMD's CPUs report the same bits.
constexpr FeatureBit kFeatures[] = {
    {"sse4.1", 1, 0, Ecx, 19, 0},
    {"sse4.2", 1, 0, Ecx, 20, 0},
    {"fma", 1, 0, Ecx, 12, kAvxState},
    {"avx", 1, 0, Ecx, 28, kAvxState},
    {"f16c", 1, 0, Ecx, 29, kAvxState},
    {"avx2", 7, 0, Ebx, 5, kAvxState},
    {"avx512f", 7, 0, Ebx, 16, kAvx512State},
    {"avx512dq", 7, 0, Ebx, 17, kAvx512State},
    {"avx512cd", 7, 0, Ebx, 28, kAvx512State},
    {"avx512bw", 7, 0, Ebx, 30, kAvx512State},
    {"avx512vl", 7, 0, Ebx, 31, kAvx512State},
    {"avx512ifma", 7, 0, Ebx, 21, kAvx512State},
    {"avx512vbmi", 7, 0, Ecx, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, Ecx, 6, kAvx512State},
    {"gfni", 7, 0, Ecx, 8, 0},
    {"vaes", 7, 0, Ecx, 9, kAvxState},
    {"vpclmulqdq", 7, 0, Ecx, 10, kAvxState},
    {"avx512vnni", 7, 0, Ecx, 11, kAvx512State},
    {"avx512bitalg", 7, 0, Ecx, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, Ecx, 14, kAvx512State},
    {"avx512bf16", 7, 1, Eax, 5, kAvx512State},
    {"avx512fp16", 7, 0, Edx, 23, kAvx512State},
    {"avxvnni", 7, 1, Eax, 4, kAvxState},
    {"amx-bf16", 7, 0, Edx, 22, kAmxState},
    {"amx-tile", 7, 0, Edx, 24, kAmxState},
    {"amx-int8", 7, 0, Edx, 25, kAmxState},
};

/// XCR0, or 0 where the OS has not enabled XSAVE (then no AVX state).
uint64_t enabledOsState() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27)))
    return 0; // no OSXSAVE: XGETBV would fault
  uint32_t low, high;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}

bool readFeature(const FeatureBit &feature, uint64_t osState) {
  unsigned regs[4] = {0, 0, 0, 0};
  if (__get_cpuid_max(0, nullptr) < feature.leaf)
    return false;
  __cpuid_count(feature.leaf, feature.subleaf, regs[Eax], regs[Ebx], regs[Ecx],
                regs[Edx]);
  return (regs[feature.reg] >> feature.bit & 1) &&
         (osState & feature.osState) == feature.osState;
}

constexpr std::size_t kFeatureCount = sizeof kFeatures / sizeof kFeatures[0];

/// Every known feature, read once per process (CPUID exits to the
/// hypervisor in a VM: the check at load must not repeat it per query).
const std::array<bool, kFeatureCount> &cpuFeatures() {
  static const std::array<bool, kFeatureCount> present = [] {
    const uint64_t osState = enabledOsState();
    std::array<bool, kFeatureCount> read{};
    for (std::size_t i = 0; i < kFeatureCount; ++i)
      read[i] = readFeature(kFeatures[i], osState);
    return read;
  }();
  return present;
}

} // namespace

bool cpuHasFeature(const std::string &feature) {
  for (std::size_t i = 0; i < kFeatureCount; ++i)
    if (feature == kFeatures[i].name)
      return cpuFeatures()[i];
  return false;
}

namespace {
std::vector<std::string>
missingFeatures(const std::string &features,
                const std::function<bool(const std::string &)> &has) {
  std::vector<std::string> missing;
  std::istringstream words(features);
  for (std::string feature; words >> feature;)
    if (!has(feature))
      missing.push_back(feature);
  return missing;
}
} // namespace

std::vector<std::string> missingCpuFeatures(const std::string &features) {
  return missingFeatures(features, cpuHasFeature);
}

VariantChoice chooseVariant(const std::vector<CpuTargetFeatures> &variants,
                            const std::vector<CpuTargetFeatures> &registry,
                            const std::function<bool(const std::string &)> &has) {
  VariantChoice choice;
  for (size_t i = 0; i < variants.size(); ++i)
    if (missingFeatures(variants[i].features, has).empty()) {
      choice.index = int(i);
      return choice;
    }
  std::string lacks;
  for (const CpuTargetFeatures &variant : variants) {
    lacks += (lacks.empty() ? "" : "; ") + variant.target + " needs";
    for (const std::string &feature : missingFeatures(variant.features, has))
      lacks += " " + feature;
  }
  std::string rebuild;
  for (const CpuTargetFeatures &target : registry)
    if (missingFeatures(target.features, has).empty()) {
      rebuild = "rebuild it with `tfmc --target " + target.target + "`";
      break;
    }
  if (rebuild.empty())
    rebuild = registry.empty()
                  ? "no tfmc target runs on it"
                  : "no tfmc target runs on it (" + registry.back().target +
                        " needs " + registry.back().features + ")";
  choice.error = "this CPU cannot run the program's kernels (" + lacks +
                 ", which it lacks); " + rebuild;
  return choice;
}

} // namespace tfmc::runtime
