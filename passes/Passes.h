//===- Passes.h - tfmc's middle end -----------------------------*- C++ -*-===//

#ifndef TFMC_PASSES_PASSES_H
#define TFMC_PASSES_PASSES_H

#include "dialects/tfm/TfmDialect.h"
#include "passes/target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace tfmc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// The registry's description of the target a pass was given, or null
/// after an error on `op` naming what is wrong (the passes that take a
/// `target` option).
inline std::optional<target::TargetDescription>
lookupTargetOrEmit(mlir::Operation *op, const std::string &name) {
  std::string error;
  std::optional<target::TargetDescription> description =
      target::lookupTarget(name, error);
  if (!description)
    op->emitError(error);
  return description;
}

/// Options of the default pipeline (`tfm-default-pipeline` in tfm-opt).
struct PipelineOptions {
  std::string target = "host";
  int64_t maxBatch = 1;
  int64_t maxSeq = 0; // 0: each function's tfm.max_len
  /// Elementwise kernels may write over an operand that dies there (false
  /// for Adams2019's schedules, which compute some elements twice).
  bool inPlace = true;
  /// How linear and embedding weights are stored: f32, bf16 or int8
  /// (tfm-weight-storage).
  std::string weightDtype = "f32";
  /// int8's group of input features per f16 scale (tfm-weight-storage's
  /// `group`).
  int64_t int8Group = 64;
  /// NAME=DTYPE: single weights' own storage (tfm-weight-storage's
  /// `overrides`).
  std::vector<std::string> weightOverrides;
  /// f32, or int8: linears with int8 weights quantise their input and
  /// multiply integers (tfm-weight-storage marks them).
  std::string activations = "f32";
  /// panels: f32 linear weights stored in the target's panels
  /// (tfm-weight-layout); rows: row-major, as the file holds them.
  std::string weightLayout = "panels";
};

/// fuse masked attention -> fuse epilogues -> check kernels -> weight
/// storage -> weight layout -> tile -> plan memory.
void buildDefaultPipeline(mlir::OpPassManager &pm,
                          const PipelineOptions &options);

/// What tfm-tile does once it has its target's description: a `tfm.tile`
/// plan on every kernel of `module`, from `target` (any description, not
/// only a registered one: the unit tests plan for synthetic CPUs).
/// `maxSeq` 0 takes each function's tfm.max_len. Fails, with an error on
/// the function, where neither gives a sequence bound.
mlir::LogicalResult tileModule(mlir::ModuleOp module,
                               const target::TargetDescription &target,
                               int64_t maxSeq, int64_t maxBatch);

/// Registers every tfmc pass and the named pipeline with MLIR's registry.
void registerPasses();

} // namespace tfmc

#endif // TFMC_PASSES_PASSES_H
