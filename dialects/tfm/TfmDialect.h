//===- TfmDialect.h - The tfm dialect ---------------------------*- C++ -*-===//

#ifndef TFMC_DIALECTS_TFM_TFMDIALECT_H
#define TFMC_DIALECTS_TFM_TFMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/tfm/KernelKind.h"
#include "dialects/tfm/TfmTraits.h"
#include "support/WeightFormat.h"

#include "dialects/tfm/TfmDialect.h.inc"
#include "dialects/tfm/TfmEnums.h.inc"
#include "dialects/tfm/TfmInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tfm/TfmAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/tfm/TfmOps.h.inc"

namespace tfmc::tfm {

/// Whether `op` is a view of memory rather than a computation
/// (`Tfm_MemoryView`): weights and their slices (tfm.split) are views of the
/// weights file, the KV cache ops views of runtime-owned memory. Every other
/// tfm op computes a tensor; the kernels among them implement
/// KernelOpInterface.
inline bool isMemoryView(mlir::Operation *op) {
  return op->hasTrait<MemoryView>();
}

/// The kernel kind of `op`, or nullopt when `op` is not a kernel (a view, or
/// an op the middle end should have fused away).
inline std::optional<KernelKind> kernelKindOf(mlir::Operation *op) {
  if (auto kernel = llvm::dyn_cast<KernelOpInterface>(op))
    return kernel.getKernelKind();
  return std::nullopt;
}

/// Whether `op` is a tfm op that computes a tensor (not a view).
inline bool computesTensor(mlir::Operation *op) {
  return llvm::isa<TfmDialect>(op->getDialect()) && !isMemoryView(op);
}

/// The weight a kernel operand reads: a tfm.weight, or a row split of one
/// (the packed in_proj_weight); null for any other value.
inline WeightOp sourceWeight(mlir::Value value) {
  if (auto split = value.getDefiningOp<SplitOp>())
    value = split.getInput();
  return value.getDefiningOp<WeightOp>();
}

/// The storage of the weight `value` reads (none: f32, or not a weight).
inline std::optional<WeightStorage> weightStorageOf(mlir::Value value) {
  WeightOp weight = sourceWeight(value);
  return weight ? weight.getStorage() : std::nullopt;
}

/// Whether `storage` is one of llama.cpp's K-quants (q4_k, q5_k, q6_k).
inline bool isKQuant(WeightStorage storage) {
  return storage == WeightStorage::q4_k || storage == WeightStorage::q5_k ||
         storage == WeightStorage::q6_k;
}

/// Whether `storage` multiplies int8 activations (`--activations int8`):
/// int8, int4 and the K-quants.
inline bool isIntegerStorage(WeightStorage storage) {
  return storage == WeightStorage::int8 || storage == WeightStorage::int4 ||
         isKQuant(storage);
}

/// Bytes of a K-quant super-block (support/WeightFormat.h); 0 otherwise.
inline int64_t kQuantBlockBytes(WeightStorage storage) {
  switch (storage) {
  case WeightStorage::q4_k: return format::kQ4KBlockBytes;
  case WeightStorage::q5_k: return format::kQ5KBlockBytes;
  case WeightStorage::q6_k: return format::kQ6KBlockBytes;
  default: return 0;
  }
}

/// The discardable attribute tfm-weight-storage puts on a linear or gated
/// linear whose int8 weights multiply int8 activations (`--activations
/// int8`): `tfm.activations = "int8"`; or whose bf16 weights multiply
/// activations rounded to bf16 (`--activations bf16`): "bf16".
constexpr llvm::StringLiteral kActivationsAttrName = "tfm.activations";

/// The module's KV cache element type (`tfmc --kv-cache-dtype`): "bf16" or
/// "f16"; absent, f32. Codegen stores the cache slots in it (Lowering.cpp).
constexpr llvm::StringLiteral kKvCacheDtypeAttrName = "tfm.kv_cache_dtype";

/// What `op` multiplies its input as (kActivationsAttrName): "int8",
/// "bf16", or empty for f32.
inline llvm::StringRef activationsOf(mlir::Operation *op) {
  auto attr = op->getAttrOfType<mlir::StringAttr>(kActivationsAttrName);
  return attr ? attr.getValue() : llvm::StringRef();
}

/// Whether `op` quantises its input to int8.
inline bool hasInt8Activations(mlir::Operation *op) {
  return activationsOf(op) == "int8";
}

/// Whether `op` rounds its input to bf16.
inline bool hasBf16Activations(mlir::Operation *op) {
  return activationsOf(op) == "bf16";
}

/// The cache slot a kernel writes its result into (the operand of a
/// tfm.kv_append), or null: such a result lives in the cache, not the arena.
inline KvAppendOp cacheWriteOf(mlir::Operation *op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  return llvm::dyn_cast<KvAppendOp>(*op->getResult(0).getUsers().begin());
}

/// Registers the dialects tfm programs use (tfm and func).
void registerDialects(mlir::DialectRegistry &registry);

} // namespace tfmc::tfm

#endif // TFMC_DIALECTS_TFM_TFMDIALECT_H
