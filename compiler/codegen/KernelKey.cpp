//===- KernelKey.cpp - Structural identity of kernels ---------------------===//

#include "compiler/codegen/KernelKey.h"

#include "mlir/IR/Attributes.h"
#include "llvm/Support/raw_ostream.h"

namespace tfmc::codegen {

std::string kernelKey(mlir::Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << '(';
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ")->(";
  llvm::interleaveComma(op->getResultTypes(), os);
  os << ')';
  for (mlir::NamedAttribute attr : op->getAttrs())
    if (attr.getName() != "tfm.arena")
      os << ' ' << attr.getName().getValue() << '=' << attr.getValue();
  return key;
}

} // namespace tfmc::codegen
