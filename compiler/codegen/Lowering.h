//===- Lowering.h - tfm kernels to kernel specs and plans -------*- C++ -*-===//
//
// After the middle end every kernel op carries its tile plan and its arena
// slot. Lowering gives every tensor a symbolic shape, turns each kernel op
// into a KernelSpec (the one place that maps tfm ops to kernel kinds'
// parameters and argument layouts), dedups kernels by their symbol (every
// layer of a stack shares its kernels), and describes each entry point's
// calls as its runtime plan.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_LOWERING_H
#define TFMC_CODEGEN_LOWERING_H

#include "compiler/codegen/PlanWriter.h"
#include "compiler/codegen/kernels/Kernel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <map>
#include <string>
#include <vector>

namespace tfmc::codegen {

/// A distinct kernel: its spec, and an op it was lowered from (for the
/// location --emit halide prints).
struct LoweredKernel {
  KernelSpec spec;
  mlir::Operation *op = nullptr;
};

/// Every entry point's plan (`forward` first) and the union of their
/// kernels, by symbol name.
struct LoweredModule {
  std::vector<json> plans;
  std::map<std::string, LoweredKernel> kernels;
};

/// Lowers every entry point of `module`. Errors are reported at the op (or
/// the module) through MLIR's diagnostics.
mlir::FailureOr<LoweredModule> lowerModule(mlir::ModuleOp module,
                                           const target::TargetDescription &target,
                                           bool autoschedule);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_LOWERING_H
