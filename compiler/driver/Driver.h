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
enum class Emit { Ast, Mlir, MlirOpt, Halide, Obj, Lib, Exe };

struct CompileOptions {
  std::string inputPath;
  /// What to produce; none with `stats` alone (the middle end still runs).
  std::optional<Emit> emit;
  /// Textual output file ("-": stdout); for obj/lib/exe the path of the
  /// artifact without extension (default: the model's name).
  std::string outputPath = "-";
  std::string target = "host";
  int64_t maxBatch = 1;
  int64_t maxSeq = 0; // 0: the model's max_len
  /// Storage of linear and embedding weights: f32, bf16, int8 or int4.
  std::string weightDtype = "f32";
  /// Whether the user gave weightDtype (tfmc --weight-dtype); if not, a
  /// model file that says how its weights are stored (a GGUF file's tensor
  /// types, Model::fileWeights) chooses it.
  bool weightDtypeGiven = false;
  /// int8's group of input features per scale; 0: the model file's (a GGUF
  /// file's 32), else 64.
  int64_t int8Group = 0;
  /// What linears with int8 weights multiply: f32 (the weights widened) or
  /// int8 (each input row quantised per weight group; integer products).
  std::string activations = "f32";
  /// Element type of the KV cache: f32, bf16 or f16 (keys and values
  /// rounded to nearest even as written, widened as attention reads them).
  std::string kvCacheDtype = "f32";
  /// How a CPU program stores its f32 linear weights: panels (laid out at
  /// load, read without packing; tfm-weight-layout) or rows (the file's).
  std::string weightLayout = "panels";
  /// An executable that carries this weights file (a safetensors or GGUF
  /// file), mapped from the program's own file when run without --weights;
  /// empty: none.
  std::string embedWeights;
  /// Print arena, weight and kernel statistics after the middle end.
  bool stats = false;
  /// Print which kernels were compiled and which came from the cache.
  bool verbose = false;
  /// Schedule kernels with Halide's Adams2019 instead of the tile plans.
  bool autoschedule = false;
  /// Applied to the pass manager before it runs (mlir-opt's IR printing
  /// and timing flags).
  std::function<mlir::LogicalResult(mlir::PassManager &)> configurePassManager;
};

/// tfmc's version, as `tfmc --version` prints it; kernel caches key on it.
const char *version();

/// Whether `emit` writes text (to -o or stdout) rather than a binary.
bool isTextual(Emit emit);

/// Runs the pipeline on `options.inputPath` as far as `options` needs.
/// Textual results go to `os`, --stats to `statsOs`; binaries to
/// `options.outputPath`. Errors are printed to stderr as one line each and
/// return failure; what was written to the streams is then incomplete, so a
/// caller that writes files buffers them (OutputFile.h).
mlir::LogicalResult compile(const CompileOptions &options,
                            llvm::raw_ostream &os, llvm::raw_ostream &statsOs);

} // namespace tfmc::driver

#endif // TFMC_DRIVER_DRIVER_H
