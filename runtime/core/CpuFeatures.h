//===- CpuFeatures.h - What the CPU this program runs on can execute ------===//
//
// A compiled program carries its kernels for one or more CPU targets, each
// with the instruction-set features it needs (LLVM's names: "avx2",
// "avx512f", ...). Before any kernel runs, the runtime picks the first
// variant whose features this CPU has, and a CPU that has none of them is a
// one-line error, never SIGILL. The check is CPUID plus the operating
// system's enabled register state (XGETBV): a CPU with AVX-512 under an OS
// that does not save zmm registers cannot run AVX-512 code either.
//
// This file is compiled for baseline x86-64 like the rest of the runtime:
// it must run on the CPUs it refuses.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_CPUFEATURES_H
#define TFMC_RUNTIME_CPUFEATURES_H

#include <functional>
#include <string>
#include <vector>

namespace tfmc::runtime {

/// Whether this CPU (and its OS) can execute instructions of `feature`, an
/// LLVM feature name. Names this runtime does not know are reported absent.
bool cpuHasFeature(const std::string &feature);

/// The features of the space-separated list `features` this CPU lacks, in
/// their order.
std::vector<std::string> missingCpuFeatures(const std::string &features);

/// A target and the CPU features it needs (space-separated LLVM names).
struct CpuTargetFeatures {
  std::string target;
  std::string features;
};

/// Which of a program's variants runs on a CPU.
struct VariantChoice {
  int index = -1;    // into the variants; -1: none runs
  std::string error; // when none: one line, see chooseVariant
};

/// The first of `variants` (widest first) whose features `has` all. Where
/// none is, the error names each variant and what the CPU lacks for it, and
/// the first of `registry` (the compiler's CPU targets, widest first) that
/// it has all of as the `tfmc --target` to rebuild with.
VariantChoice chooseVariant(const std::vector<CpuTargetFeatures> &variants,
                            const std::vector<CpuTargetFeatures> &registry,
                            const std::function<bool(const std::string &)> &has);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_CPUFEATURES_H
