//===- Driver.cpp - The compile pipeline as a library call ----------------===//

#include "compiler/driver/Driver.h"

#include "compiler/frontend/AST.h"
#include "compiler/frontend/TfmBuilder.h"
#include "dialects/tfm/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

namespace tfmc::driver {

const char *version() { return TFMC_VERSION; }

void registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<tfm::TfmDialect, mlir::func::FuncDialect>();
}

mlir::LogicalResult compile(const CompileOptions &options,
                            llvm::raw_ostream &os) {
  frontend::ParseResult parsed = frontend::parseModelFile(options.inputPath);
  if (!parsed) {
    llvm::errs() << parsed.error->str() << "\n";
    return mlir::failure();
  }
  if (options.emit == Emit::Ast) {
    os << frontend::dumpModel(*parsed.model);
    return mlir::success();
  }

  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      frontend::buildTfmModule(context, *parsed.model);
  if (!module)
    return mlir::failure();
  module->print(os);
  os << "\n";
  return mlir::success();
}

} // namespace tfmc::driver
