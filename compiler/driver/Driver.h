//===- Driver.h - The compile pipeline as a library call --------*- C++ -*-===//

#ifndef TFMC_DRIVER_DRIVER_H
#define TFMC_DRIVER_DRIVER_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace tfmc::driver {

/// How far the pipeline runs, named as on the command line (`--emit`).
enum class Emit { Ast, Mlir, MlirOpt };

struct CompileOptions {
  std::string inputPath;
  /// What to print; none with `stats` alone (the pipeline still runs).
  std::optional<Emit> emit;
  std::string target = "host";
  int64_t maxBatch = 1;
  int64_t maxSeq = 0; // 0: the model's max_len
  /// Print arena, weight and kernel statistics after the middle end.
  bool stats = false;
  /// Applied to the pass manager before it runs (mlir-opt's IR printing
  /// and timing flags).
  std::function<mlir::LogicalResult(mlir::PassManager &)> configurePassManager;
};

/// tfmc's version, as `tfmc --version` prints it; kernel caches key on it.
const char *version();

/// Every dialect that tfmc's modules and pipelines use.
void registerDialects(mlir::DialectRegistry &registry);

/// Runs the pipeline on `options.inputPath` as far as `options` needs and
/// writes the textual result (and statistics) to `os`. Errors are printed to
/// stderr as one line each, `file:line:col: error: ...`, and return failure.
mlir::LogicalResult compile(const CompileOptions &options,
                            llvm::raw_ostream &os);

} // namespace tfmc::driver

#endif // TFMC_DRIVER_DRIVER_H
