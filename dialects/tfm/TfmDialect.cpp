//===- TfmDialect.cpp - The tfm dialect -----------------------------------===//

#include "dialects/tfm/TfmDialect.h"

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
