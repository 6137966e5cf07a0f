//===- TfmDialect.cpp - The tfm dialect -----------------------------------===//

#include "dialects/tfm/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tfmc::tfm;

#include "dialects/tfm/TfmDialect.cpp.inc"

void TfmDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/tfm/TfmOps.cpp.inc"
      >();
}

void tfmc::tfm::registerDialects(DialectRegistry &registry) {
  registry.insert<TfmDialect, func::FuncDialect>();
}
