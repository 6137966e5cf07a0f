//===- TfmInterfaces.cpp - The op interfaces and traits of tfm ------------===//

#include "dialects/tfm/TfmDialect.h"

using namespace mlir;

#include "dialects/tfm/TfmInterfaces.cpp.inc"

LogicalResult tfmc::tfm::verifySameShapeAsInput(Operation *op) {
  if (op->getNumOperands() < 1 || op->getNumResults() != 1)
    return op->emitOpError("must have an input and one result");
  auto input = dyn_cast<ShapedType>(op->getOperand(0).getType());
  auto result = dyn_cast<ShapedType>(op->getResult(0).getType());
  if (!input || !result || !input.hasRank() || !result.hasRank() ||
      input.getShape() != result.getShape())
    return op->emitOpError() << "result type " << op->getResult(0).getType()
                             << " does not match input type "
                             << op->getOperand(0).getType();
  return success();
}
