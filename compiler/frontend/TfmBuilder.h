//===- TfmBuilder.h - AST -> tfm dialect ------------------------*- C++ -*-===//

#ifndef TFMC_FRONTEND_TFMBUILDER_H
#define TFMC_FRONTEND_TFMBUILDER_H

#include "compiler/frontend/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tfmc::frontend {

/// Writes `model` as a module holding `func.func @forward`, attention step by
/// step, every parameter a `tfm.weight` under docs/language.md's names. Arguments
/// and the result carry their safetensors names in `tfm.input` / `tfm.output`
/// attributes. Ops are located at the .tfm line that produced them. Returns
/// null (after emitting a diagnostic) if the result does not verify, which
/// would be a bug in the builder since the AST is validated. `maxSeq` is the
/// program's longest sequence (`--max-seq`; 0: the model's max_len), which
/// picks a longrope scaling's factors.
mlir::OwningOpRef<mlir::ModuleOp> buildTfmModule(mlir::MLIRContext &context,
                                                 const Model &model,
                                                 int64_t maxSeq = 0);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_TFMBUILDER_H
