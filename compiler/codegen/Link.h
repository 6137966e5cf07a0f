//===- Link.h - Kernels to objects, objects to programs ---------*- C++ -*-===//
//
// Compiles each distinct kernel with Halide, or takes it from the disk cache
// (one object per kernel symbol, checked before use), compiles the C glue
// (kernel table and plans), and links glue, kernels, Halide's runtime and
// tfmc's runtime library into an executable, a relocatable object or a
// static library with its C header. Every file is written to a temporary in
// its directory and renamed into place, so a failure leaves no partial file.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_LINK_H
#define TFMC_CODEGEN_LINK_H

#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/Lowering.h"

namespace tfmc::codegen {

/// Builds the artifact `options` asks for (object, library or executable)
/// from the lowered module. Errors are reported at the module.
/// One variant of a program, lowered.
struct LinkVariant {
  mlir::ModuleOp module;
  target::TargetDescription target;
  LoweredModule lowered;
};

/// Compiles (or takes from the cache) every variant's kernels, and links
/// them, the glue and the runtime into the artifact. Adds each variant's
/// kernel code bytes and compile seconds to `costs` (one per variant).
mlir::LogicalResult linkArtifact(llvm::ArrayRef<LinkVariant> variants,
                                 const CodegenOptions &options,
                                 std::vector<VariantCost> &costs);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_LINK_H
