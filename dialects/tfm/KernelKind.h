//===- KernelKind.h - The kernels tfmc compiles -----------------*- C++ -*-===//
//
// The kinds of kernel codegen builds, one Halide generator each (a kernel
// file may build several: compiler/codegen/kernels/). Each tfm op that is a
// kernel names its kind in ODS (`Tfm_Kernel<"Kind">` in TfmInterfaces.td),
// and every pass reads it through the op (KernelOpInterface), so no pass
// keeps its own list of ops.
//
// Plain C++, no MLIR: the kernels, the tile plans and the unit tests read
// it without the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_DIALECTS_TFM_KERNELKIND_H
#define TFMC_DIALECTS_TFM_KERNELKIND_H

namespace tfmc::tfm {

/// The kernels tfmc compiles. After fusion every op of an entry point is
/// one of these, or a view of memory (weights, their slices, the KV cache).
enum class KernelKind {
  Embedding,
  Positions,
  Scale,
  Activation,
  Add,
  Linear,
  LayerNorm,
  Attention,
  LastPosition,
  FirstPosition,
  GatedLinear,
  Mul,
  RmsNorm,
  Rope,
  Softcap,
  Quantize // the last kind: kLastKernelKind
};

/// The last kind of the enum, for code that visits every kind (the kernel
/// registry's test).
constexpr KernelKind kLastKernelKind = KernelKind::Quantize;

} // namespace tfmc::tfm

#endif // TFMC_DIALECTS_TFM_KERNELKIND_H
