//===- KernelKey.h - Structural identity of kernels -------------*- C++ -*-===//

#ifndef TFMC_CODEGEN_KERNELKEY_H
#define TFMC_CODEGEN_KERNELKEY_H

#include "mlir/IR/Operation.h"

#include <string>

namespace tfmc::target {
struct TargetDescription;
} // namespace tfmc::target

namespace tfmc::codegen {

struct KernelSpec;

/// A string that two kernels share exactly when one compiled kernel can
/// serve both: the op, its operand and result types, and every attribute
/// but where its result lives in the arena (`tfm.arena`) and its location.
/// Every layer of a stack has the same keys, so a stack compiles once.
std::string kernelKey(mlir::Operation *op);

/// A content hash of everything that generates kernels: the sources of
/// compiler/codegen (the op -> kernel mapping, the kernels) and
/// passes/target (targets, tile plans), Halide's header and tfmc's
/// version. The same sources give the same hash; any edit changes it.
const char *kernelGeneratorHash();

/// The kernel's symbol, `tfmc_` and a digest of its structural key, the
/// target's Halide string, the generator hash and, for Adams2019's kernels,
/// the estimates it scheduled for. It names the kernel's object in the
/// disk cache: one symbol, one object.
std::string kernelSymbol(mlir::Operation *op, const KernelSpec &spec,
                         const target::TargetDescription &target);

/// The first 20 hex digits of the SHA-1 of `text`.
std::string hexDigest(llvm::StringRef text);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_KERNELKEY_H
