//===- Driver.h - The compile pipeline as a library call --------*- C++ -*-===//

#ifndef TFMC_DRIVER_DRIVER_H
#define TFMC_DRIVER_DRIVER_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tfmc::driver {

/// How far the pipeline runs, named as on the command line (`--emit`).
enum class Emit { Ast, Mlir };

struct CompileOptions {
  std::string inputPath;
  Emit emit = Emit::Mlir;
};

/// tfmc's version, as `tfmc --version` prints it; kernel caches key on it.
const char *version();

/// Every dialect that tfmc's modules and pipelines use.
void registerDialects(mlir::DialectRegistry &registry);

/// Runs the pipeline on `options.inputPath` up to `options.emit` and writes
/// the textual result to `os`. Errors in the input are printed to stderr as
/// one line each, `file:line:col: error: ...`, and return failure.
mlir::LogicalResult compile(const CompileOptions &options,
                            llvm::raw_ostream &os);

} // namespace tfmc::driver

#endif // TFMC_DRIVER_DRIVER_H
