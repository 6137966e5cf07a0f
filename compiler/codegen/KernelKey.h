//===- KernelKey.h - Structural identity of kernels -------------*- C++ -*-===//

#ifndef TFMC_CODEGEN_KERNELKEY_H
#define TFMC_CODEGEN_KERNELKEY_H

#include "mlir/IR/Operation.h"

#include <string>

namespace tfmc::codegen {

/// A string that two kernels share exactly when one compiled kernel can
/// serve both: the op, its operand and result types, and every attribute
/// but where its result lives in the arena (`tfm.arena`) and its location.
/// Every layer of a stack has the same keys, so a stack compiles once.
std::string kernelKey(mlir::Operation *op);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_KERNELKEY_H
