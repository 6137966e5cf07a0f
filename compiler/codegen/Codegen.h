//===- Codegen.h - From a planned tfm module to native code -----*- C++ -*-===//
//
// Codegen in three steps, a file each: Lowering (tfm kernels -> kernel specs
// and the runtime plans), kernels/ (specs -> Halide pipelines -> objects)
// and Link (cached objects + glue + runtime -> the artifact).
//

#ifndef TFMC_CODEGEN_CODEGEN_H
#define TFMC_CODEGEN_CODEGEN_H

#include "passes/target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tfmc::codegen {

enum class Artifact {
  Halide,     // print each distinct kernel's lowered pipeline and schedule
  Object,     // NAME.o: kernels, Halide runtime and the plan, relocatable
  Library,    // libNAME.a + NAME.h: the C API
  Executable, // NAME: run / init-weights / info
};

struct CodegenOptions {
  Artifact artifact = Artifact::Executable;
  /// Path of the output without extension: `out/gpt` gives out/gpt,
  /// out/gpt.o, or out/libgpt.a + out/gpt.h.
  std::string outputPath;
  /// Compiled kernels by structural hash; see defaultCacheDir().
  std::string cacheDir;
  /// Where the runtime's archives are (the build tree by default), and its
  /// C headers: tfmc.h, and tfmc_generate.h, which NAME.h appends for a
  /// model with a decoder.
  std::string runtimeDir;
  std::string runtimeHeader;
  std::string generateHeader;
  /// Extra flags for linking the runtime archives (the sanitizers' runtimes
  /// when tfmc was built with TFMC_SANITIZE); also named in NAME.h.
  std::vector<std::string> runtimeLinkFlags;
  /// An executable that carries this weights file after its code
  /// (support/EmbeddedWeights.h); empty: none.
  std::string embedWeights;
  /// Print what was compiled and what came from the cache to stderr.
  bool verbose = false;
  /// Schedule kernels with Halide's Adams2019 autoscheduler instead of the
  /// tile plans: a benchmark peer for tfmc's tile pass.
  bool autoschedule = false;
};

/// $TFMC_CACHE_DIR, else $XDG_CACHE_HOME/tfmc, else ~/.cache/tfmc.
std::string defaultCacheDir();

/// The model after the default pipeline for one target: a program holds
/// one such variant per target of its --target list.
struct TargetModule {
  mlir::ModuleOp module;
  target::TargetDescription target;
};

/// What one variant cost (--stats): its kernels' code, and the seconds
/// codegen spent on it (lowering, and compiling the kernels the cache did
/// not have).
struct VariantCost {
  int64_t kernelCodeBytes = 0;
  int64_t compiledKernels = 0;
  double seconds = 0;
};

/// Lowers each variant (widest first; all lowered from one model) to one
/// artifact that runs the first variant its CPU has the features of.
/// Textual output (--emit halide, one variant only) goes to `os`. Errors
/// are MLIR diagnostics at the op or the module. `costs`, when given,
/// receives one entry per variant.
mlir::LogicalResult emitArtifact(llvm::ArrayRef<TargetModule> variants,
                                 const CodegenOptions &options,
                                 llvm::raw_ostream &os,
                                 std::vector<VariantCost> *costs = nullptr);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_CODEGEN_H
