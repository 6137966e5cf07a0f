//===- TfmInterfaces.td - What each op tells the compiler ---*- tablegen -*-===//
//
// Op knowledge lives with the op: which kernel it is, whether its result has
// its input's shape, which operands are a norm's gain and bias, whether a
// residual add folds into it, whether it is a view of memory. The passes and
// codegen ask the op (KernelOpInterface, NormOpInterface, the traits below)
// instead of each keeping a list of ops, so a new op states these facts once,
// here and in TfmOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_INTERFACES_TD
#define TFM_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tfm_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::tfmc::tfm";
  let description = [{
    An op that codegen compiles as one kernel: after fusion, every op of an
    entry point is a kernel or a view of memory (`Tfm_MemoryView`), which
    tfm-check-kernels enforces. The kernel kind (dialects/tfm/KernelKind.h)
    names the Halide generator that builds it (one registration per kind in
    compiler/codegen/kernels/) and the tile plan family tfm-tile gives it.
    Several ops may share a kind only if the kernel reads no op-specific
    attribute; an op states its kind with `Tfm_Kernel<"Kind">`.
  }];
  let methods = [
    StaticInterfaceMethod<
      "The kind of kernel that codegen builds for this op.",
      "::tfmc::tfm::KernelKind", "getKernelKind">,
    InterfaceMethod<[{
        Whether the kernel reads `operand` as a weight that it widens to f32
        in registers as it loads it (codegen's WeightInput), so that
        tfm-weight-storage may store that weight in bf16, int8 or int4.
        Default: false (the linear, gated linear and embedding ops say which
        of their operands).
      }], "bool", "widensWeight", (ins "::mlir::OpOperand &":$operand),
      /*methodBody=*/"", /*defaultImplementation=*/"return false;">
  ];
}

def Tfm_NormOpInterface : OpInterface<"NormOpInterface"> {
  let cppNamespace = "::tfmc::tfm";
  let description = [{
    A normalisation over the last dimension with a learned gain (`gamma`)
    and optionally a bias (`beta`), whose kernel adds an optional `residual`
    to the input before it normalises: norm(x + residual).

    - tfm-fuse-epilogues folds a single-use `tfm.add` that feeds the input
      into the residual operand (post-norm's LN(x + f(x))), and leaves such a
      sum to the norm rather than to the producing linear.
    - `init-weights` (the runtime plan's `init`, chosen by codegen) fills a
      gain with ones and a bias with zeros, as in a freshly initialised
      model, instead of random values.
    - Codegen passes input, residual, gamma and beta to the norm kernel, with
      `eps`.
  }];
  let methods = [
    InterfaceMethod<"The tensor normalised (with the residual added).",
      "::mlir::Value", "getInput">,
    InterfaceMethod<"The input operand, which a residual fusion replaces.",
      "::mlir::OpOperand &", "getInputMutable">,
    InterfaceMethod<"The residual added to the input, or null.",
      "::mlir::Value", "getResidual">,
    InterfaceMethod<"The optional residual operand, which a residual fusion "
      "fills.", "::mlir::MutableOperandRange", "getResidualMutable">,
    InterfaceMethod<"The gain, one value per feature: ones at init.",
      "::mlir::Value", "getGamma">,
    InterfaceMethod<"The bias, one value per feature (zeros at init), or "
      "null for a norm without one (the default).", "::mlir::Value", "getBeta",
      (ins),
      /*methodBody=*/"", /*defaultImplementation=*/"return nullptr;">,
    InterfaceMethod<"The epsilon added under the square root.",
      "::llvm::APFloat", "getEps">
  ];
}

// The kernel kind of an op: `Tfm_Kernel<"LayerNorm">` in its traits.
class Tfm_KernelOfKind<string kind>
    : ParamNativeOpTrait<"KernelOfKind", "::tfmc::tfm::KernelKind::" # kind> {
  let cppNamespace = "::tfmc::tfm";
}
class Tfm_Kernel<string kind>
    : TraitList<[Tfm_KernelOfKind<kind>, Tfm_KernelOpInterface]>;

// The result has the shape of the first operand (the input): codegen gives
// the result the input's symbolic dimensions. Verified.
def Tfm_SameShapeAsInput : NativeOpTrait<"SameShapeAsInput"> {
  let cppNamespace = "::tfmc::tfm";
}

// Each element of the result depends only on the same element of the
// operands: tfm-plan-memory may let the result overwrite an operand that
// dies at the op.
def Tfm_ElementwiseInPlace : NativeOpTrait<"ElementwiseInPlace"> {
  let cppNamespace = "::tfmc::tfm";
}

// A view of memory, not a computation: the weights and their slices (views
// of the weights file), the KV cache (runtime-owned memory). No kernel,
// tile plan or arena slot.
def Tfm_MemoryView : NativeOpTrait<"MemoryView"> {
  let cppNamespace = "::tfmc::tfm";
}

#endif // TFM_INTERFACES_TD
