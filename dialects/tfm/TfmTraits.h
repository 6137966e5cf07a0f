//===- TfmTraits.h - The C++ side of TfmInterfaces.td's traits --*- C++ -*-===//

#ifndef TFMC_DIALECTS_TFM_TFMTRAITS_H
#define TFMC_DIALECTS_TFM_TFMTRAITS_H

#include "dialects/tfm/KernelKind.h"

#include "mlir/IR/OpDefinition.h"

namespace tfmc::tfm {

/// `Tfm_Kernel<"Kind">`: the op's kernel kind, which KernelOpInterface's
/// getKernelKind returns.
template <KernelKind Kind>
struct KernelOfKind {
  template <typename ConcreteOp>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteOp, Impl> {
  public:
    static KernelKind getKernelKind() { return Kind; }
  };
};

/// Checks that `op`'s result has the shape of its first operand.
mlir::LogicalResult verifySameShapeAsInput(mlir::Operation *op);

/// `Tfm_SameShapeAsInput`: the result has the first operand's shape.
template <typename ConcreteOp>
class SameShapeAsInput
    : public mlir::OpTrait::TraitBase<ConcreteOp, SameShapeAsInput> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifySameShapeAsInput(op);
  }
};

/// `Tfm_ElementwiseInPlace`: result element i reads operand elements i only.
template <typename ConcreteOp>
class ElementwiseInPlace
    : public mlir::OpTrait::TraitBase<ConcreteOp, ElementwiseInPlace> {};

/// `Tfm_MemoryView`: a view of the weights or the KV cache, not a kernel.
template <typename ConcreteOp>
class MemoryView : public mlir::OpTrait::TraitBase<ConcreteOp, MemoryView> {};

} // namespace tfmc::tfm

#endif // TFMC_DIALECTS_TFM_TFMTRAITS_H
