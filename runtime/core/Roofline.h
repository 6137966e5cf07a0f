//===- Roofline.h - What a kernel could reach on this machine -*- C++ -*-===//
//
// The roofline model that `NAME bench` reports each linear kernel against:
// a kernel that does `ops` arithmetic operations (a multiply-add is 2) on
// `bytes` of operands can at best run at min(peak, bandwidth · ops / bytes)
// operations a second: bound by the memory's read bandwidth when its
// intensity (ops / bytes) is low (a decode step's GEMV streams its weights
// once), by the arithmetic peak when it is high (a prefill's GEMM). The
// fraction of that roof a timed kernel reached says how far it is from the
// machine's limit, whichever limit it has. The machine's figures are
// measured in the same run (runtime/cli/BenchCommand.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_CORE_ROOFLINE_H
#define TFMC_RUNTIME_CORE_ROOFLINE_H

#include "runtime/core/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace tfmc::runtime {

/// The machine's limits, measured with the threads a bench runs on.
struct MachineRoof {
  double readBytesPerSecond = 0;
  double f32OpsPerSecond = 0;  // f32 FMAs, 2 a multiply-add
  double int8OpsPerSecond = 0; // the integer microkernels' products; 0: none
};

/// A kernel's arithmetic and the bytes of its operands.
struct KernelWork {
  double ops = 0, bytes = 0;
  /// Its products are int8 (`--activations int8`): the int8 peak bounds it.
  bool integer = false;
};

/// An argument's extents (Halide order) and element type.
struct ArgExtents {
  std::vector<int64_t> extents;
  ElementType type = ElementType::F32;
};

/// A linear or gated linear step's work (`op` "tfm.linear" or
/// "tfm.gated_linear", args as the plan orders them: x first, the output
/// last): 2 · M · N · K ops (twice that gated), M the output's rows, N its
/// width, K `depth` (0: x's first extent; a linear reading a tfm.quantize's
/// bytes states it, PlanStep::depth); bytes: every argument's (weights as stored, x, bias,
/// residual and the output). Empty for any other op, for bf16 products
/// (`--activations bf16`: their peak, vdpbf16ps's, is not probed) and for
/// an unknown extent (-1).
std::optional<KernelWork> linearWork(const std::string &op,
                                     const std::string &activations,
                                     const std::vector<ArgExtents> &args,
                                     int64_t depth = 0);

/// Where a kernel's roof is, and the fraction of it that `seconds` reached.
struct RoofFraction {
  double fraction = 0;
  bool memoryBound = false;
};
RoofFraction roofFraction(const KernelWork &work, double seconds,
                          const MachineRoof &machine);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_CORE_ROOFLINE_H
