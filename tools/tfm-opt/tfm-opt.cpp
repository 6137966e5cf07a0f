//===- tfm-opt.cpp - mlir-opt with the tfm dialect and tfmc's passes ------===//

#include "passes/Passes.h"
#include "dialects/tfm/TfmDialect.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tfmc::tfm::registerDialects(registry);
  mlir::registerTransformsPasses();
  tfmc::registerPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tfm-opt: runs tfm dialect passes and pipelines\n",
      registry));
}
