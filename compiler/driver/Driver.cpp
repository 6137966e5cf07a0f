//===- Driver.cpp - The compile pipeline as a library call ----------------===//

#include "compiler/driver/Driver.h"

#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/KernelKey.h"
#include "passes/target/TilePlan.h"
#include "compiler/frontend/AST.h"
#include "compiler/frontend/ModelFile.h"
#include "support/Text.h"
#include "compiler/frontend/TfmBuilder.h"
#include "dialects/tfm/TfmDialect.h"
#include "passes/Passes.h"
#include "support/PlanFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <cstdlib>

namespace tfmc::driver {
namespace {

/// The largest --max-batch (docs/user-guide.md, "Limits"); the memory plan also bounds
/// each buffer at the batch and sequence it is compiled for.
constexpr int64_t kMaxBatch = 1 << 20;
/// Longer messages (and file names) are cut: every message is one line of
/// bounded length.
constexpr size_t kMaxMessageChars = 400;

/// What --stats reports about a compiled module.
struct ModuleStats {
  int64_t arenaBytes = 0;
  /// Each entry point's own plan ("forward", ...); the program's arena is
  /// the largest.
  std::vector<std::pair<std::string, int64_t>> entryArenaBytes;
  int64_t weightBytes = 0;
  int64_t kernels = 0;
  int64_t distinctKernels = 0;
};

/// The statistics of a module after the middle end; fails (with a one-line
/// error) if the weight bytes leave int64, which the frontend's limits
/// (docs/user-guide.md, "Limits") rule out for any model it accepts.
mlir::FailureOr<ModuleStats> collectStats(mlir::ModuleOp module) {
  ModuleStats stats;
  llvm::StringSet<> weights, kernelKeys;
  bool overflow = false;
  module.walk([&](mlir::Operation *op) {
    if (auto weight = llvm::dyn_cast<tfm::WeightOp>(op)) {
      if (!weights.insert(weight.getName()).second)
        return;
      // Within int64: the frontend's limits bound every tensor's elements.
      std::optional<int64_t> bytes = weight.getStorageBytes();
      std::optional<int64_t> total =
          bytes ? llvm::checkedAdd(stats.weightBytes, *bytes) : std::nullopt;
      overflow |= !total;
      stats.weightBytes = total.value_or(0);
    } else if (llvm::isa<tfm::KernelOpInterface>(op)) {
      ++stats.kernels;
      kernelKeys.insert(codegen::kernelKey(op));
    }
  });
  if (overflow) {
    llvm::errs() << "tfmc: error: the weights' size in bytes overflows 64 "
                    "bits\n";
    return mlir::failure();
  }
  stats.distinctKernels = kernelKeys.size();
  module.walk([&](mlir::func::FuncOp func) {
    if (auto size = func->getAttrOfType<mlir::IntegerAttr>("tfm.arena_size")) {
      stats.arenaBytes = std::max(stats.arenaBytes, size.getInt());
      stats.entryArenaBytes.emplace_back(func.getSymName().str(),
                                         size.getInt());
    }
  });
  return stats;
}

/// MLIR's diagnostics as tfmc's other errors: `file:line:col: error: ...`
/// (the .tfm position the op was built from), one line of bounded length,
/// and only the first error: a pass that fails on each entry point would
/// otherwise say the same thing three times. Notes are dropped.
void printDiagnostic(mlir::Diagnostic &diag, bool &errorShown) {
  const char *severity = "error";
  switch (diag.getSeverity()) {
  case mlir::DiagnosticSeverity::Error:
    if (errorShown)
      return;
    errorShown = true;
    break;
  case mlir::DiagnosticSeverity::Warning:
    severity = "warning";
    break;
  case mlir::DiagnosticSeverity::Remark:
    severity = "remark";
    break;
  case mlir::DiagnosticSeverity::Note:
    return;
  }
  std::string where = "tfmc";
  if (auto file = diag.getLocation()->findInstanceOf<mlir::FileLineColLoc>())
    where = (file.getFilename().str() + ":" + llvm::Twine(file.getLine()) +
             ":" + llvm::Twine(file.getColumn()))
                .str();
  llvm::errs() << support::escapeText(where, kMaxMessageChars) << ": "
               << severity << ": "
               << support::escapeText(diag.str(), kMaxMessageChars) << "\n";
}

/// --embed-weights: an executable, and one weights file that the runtime
/// can read (a safetensors file: an 8-byte header length, then a JSON
/// object; or a GGUF file); a checkpoint directory or index is not one
/// file (convert-weights writes one).
bool checkEmbeddedWeights(const CompileOptions &options) {
  auto refuse = [&](const std::string &why) {
    llvm::errs() << "tfmc: error: --embed-weights "
                 << support::quote(options.embedWeights) << ": " << why
                 << "\n";
    return false;
  };
  if (options.emit && *options.emit != Emit::Exe)
    return refuse("only an executable carries its weights (not --emit obj, "
                  "lib or text)");
  std::error_code code;
  llvm::sys::fs::file_status status;
  if ((code = llvm::sys::fs::status(options.embedWeights, status)))
    return refuse("cannot read: " + code.message());
  if (status.type() == llvm::sys::fs::file_type::directory_file)
    return refuse("a directory, not one weights file (a sharded checkpoint "
                  "is one file after `NAME convert-weights`)");
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return refuse("not a regular file");
  std::ifstream in(options.embedWeights, std::ios::binary);
  char head[9] = {};
  in.read(head, sizeof head);
  const bool gguf = in.gcount() >= 4 && std::memcmp(head, "GGUF", 4) == 0;
  const bool safetensors = in.gcount() == 9 && head[8] == '{';
  if (!gguf && !safetensors)
    return refuse("neither a safetensors nor a GGUF file");
  return true;
}

/// Checks the options that depend on the model, with one-line errors;
/// returns the targets they name, widest first (resolved once: `host`
/// reads the CPU).
mlir::FailureOr<std::vector<target::TargetDescription>>
checkOptions(const CompileOptions &options, const frontend::Model &model) {
  std::string error;
  std::optional<std::vector<target::TargetDescription>> descriptions =
      target::lookupTargets(options.target, error);
  if (!descriptions) {
    llvm::errs() << "tfmc: error: " << error << "\n";
    return mlir::failure();
  }
  if (descriptions->size() > 1 && options.emit &&
      (*options.emit == Emit::MlirOpt || *options.emit == Emit::Halide)) {
    llvm::errs() << "tfmc: error: --emit "
                 << (*options.emit == Emit::MlirOpt ? "mlir-opt" : "halide")
                 << " shows one target's plan; --target '"
                 << support::escapeText(options.target, 64)
                 << "' names " << descriptions->size() << "\n";
    return mlir::failure();
  }
  if (options.maxBatch <= 0) {
    llvm::errs() << "tfmc: error: --max-batch must be positive, got "
                 << options.maxBatch << "\n";
    return mlir::failure();
  }
  if (options.maxBatch > kMaxBatch) {
    llvm::errs() << "tfmc: error: --max-batch " << options.maxBatch
                 << " is too large (maximum " << kMaxBatch << ")\n";
    return mlir::failure();
  }
  if (!llvm::is_contained(tfmc::plan::dtype::kWidestFirst,
                          options.weightDtype)) {
    llvm::errs() << "tfmc: error: --weight-dtype must be f32, bf16, int8, "
                    "int4, q4_k, q5_k or q6_k, got '"
                 << support::escapeText(options.weightDtype, 64) << "'\n";
    return mlir::failure();
  }
  if (options.activations != "f32" && options.activations != "int8" &&
      options.activations != "bf16") {
    llvm::errs() << "tfmc: error: --activations must be f32, int8 or bf16, "
                    "got '"
                 << support::escapeText(options.activations, 64) << "'\n";
    return mlir::failure();
  }
  if (options.activations == "int8" && options.weightDtype != "int8" &&
      options.weightDtype != "int4" &&
      !tfmc::plan::dtype::isKQuant(options.weightDtype)) {
    llvm::errs() << "tfmc: error: --activations int8 needs --weight-dtype "
                    "int8, int4 or a K-quant (integer products multiply "
                    "integer weights)\n";
    return mlir::failure();
  }
  if (options.activations == "bf16") {
    if (options.weightDtype != "bf16") {
      llvm::errs() << "tfmc: error: --activations bf16 needs --weight-dtype "
                      "bf16 (bf16 products multiply bf16 weights)\n";
      return mlir::failure();
    }
    // CPU targets only. One without the bf16 dot product computes the same
    // rounded products as f32 FMAs (no faster than bf16 weights alone):
    // said once, since the user asked for the speed as much as the
    // numbers.
    std::string without;
    for (const target::TargetDescription &description : *descriptions) {
      if (description.isGpu()) {
        llvm::errs() << "tfmc: error: --activations bf16 runs on CPU targets "
                        "only; target '"
                     << description.name << "' multiplies f32\n";
        return mlir::failure();
      }
      if (!description.hasBf16Dot())
        without += (without.empty() ? "" : ", ") +
                   (description.hostOf.empty()
                        ? description.name
                        : "host (" + description.hostOf + ")");
    }
    if (!without.empty())
      llvm::errs() << "tfmc: note: --activations bf16: " << without
                   << " has no bf16 dot product; its kernels multiply the "
                      "rounded values as f32 (the same products, no faster "
                      "than bf16 weights); --target x86-64-avx512-bf16 "
                      "uses vdpbf16ps\n";
  }
  if (!llvm::is_contained(tfmc::plan::cache_dtype::kWidestFirst,
                          options.kvCacheDtype)) {
    llvm::errs() << "tfmc: error: --kv-cache-dtype must be f32, bf16 or f16, "
                    "got '"
                 << support::escapeText(options.kvCacheDtype, 64) << "'\n";
    return mlir::failure();
  }
  if (options.kvCacheDtype != "f32") {
    for (const target::TargetDescription &description : *descriptions)
      if (description.isGpu()) {
        llvm::errs() << "tfmc: error: --kv-cache-dtype " << options.kvCacheDtype
                     << " runs on CPU targets only; target '"
                     << description.name << "' keeps an f32 KV cache\n";
        return mlir::failure();
      }
  }
  if (options.weightLayout != "panels" && options.weightLayout != "rows") {
    llvm::errs() << "tfmc: error: --weight-layout must be panels or rows, got '"
                 << support::escapeText(options.weightLayout, 64) << "'\n";
    return mlir::failure();
  }
  if (options.autoschedule && descriptions->front().isGpu()) {
    llvm::errs() << "tfmc: error: --scheduler adams2019 schedules CPU kernels "
                    "only (Halide 14 has no GPU autoscheduler); CUDA targets "
                    "use their tile plans\n";
    return mlir::failure();
  }
  if (!options.embedWeights.empty() && !checkEmbeddedWeights(options))
    return mlir::failure();
  if (options.maxSeq < 0 || options.maxSeq > model.maxLen) {
    llvm::errs() << "tfmc: error: --max-seq " << options.maxSeq
                 << " is outside 1.." << model.maxLen << " (max_len of model "
                 << support::quote(model.name) << ")\n";
    return mlir::failure();
  }
  return *descriptions;
}

} // namespace

const char *version() { return TFMC_VERSION; }

bool isTextual(Emit emit) {
  return emit == Emit::Ast || emit == Emit::Mlir || emit == Emit::MlirOpt ||
         emit == Emit::Halide;
}

mlir::LogicalResult compile(const CompileOptions &given,
                            llvm::raw_ostream &os, llvm::raw_ostream &statsOs) {
  frontend::ParseResult parsed = frontend::parseModelFile(given.inputPath);
  if (!parsed) {
    llvm::errs() << parsed.error->str() << "\n";
    return mlir::failure();
  }
  const frontend::Model &model = *parsed.model;
  if (given.emit == Emit::Ast) {
    os << frontend::dumpModel(model);
    return mlir::success();
  }
  bool runPipeline = given.stats ||
                     (given.emit && *given.emit != Emit::Mlir);
  // The weights as the model file stores them (a GGUF file's tensor types)
  // where the user did not choose: never silently narrower than the file.
  CompileOptions options = given;
  const frontend::Model::FileWeights &fileWeights = model.fileWeights;
  bool fromFile = !given.weightDtypeGiven && !fileWeights.dtype.empty();
  if (fromFile)
    options.weightDtype = fileWeights.dtype;
  if (options.int8Group == 0)
    options.int8Group = fileWeights.int8Group ? fileWeights.int8Group : 64;
  // With the file's dtype, a tensor of another type keeps the storage that
  // holds it exactly (a Q4_0 file's Q8_0 or Q6_K output head).
  // CUDA kernels read no K-quant: such a program converts them to int8
  // (groups of 32), the closest format (docs/gguf.md).
  mlir::FailureOr<std::vector<target::TargetDescription>> targets;
  if (runPipeline) {
    targets = checkOptions(options, model);
    if (failed(targets))
      return mlir::failure();
  }
  const bool gpu = succeeded(targets) &&
                   llvm::any_of(*targets, [](const auto &t) { return t.isGpu(); });
  auto stored = [&](const std::string &dtype) {
    return gpu && tfmc::plan::dtype::isKQuant(dtype) ? std::string("int8")
                                                      : dtype;
  };
  if (fromFile)
    options.weightDtype = stored(options.weightDtype);
  std::vector<std::string> overrides;
  if (fromFile)
    for (const auto &[name, dtype] : fileWeights.tensorDtypes)
      if (stored(dtype) != options.weightDtype)
        overrides.push_back(name + "=" + stored(dtype));
  if (fromFile && runPipeline && options.weightDtype != "f32")
    llvm::errs() << "tfmc: note: "
                 << support::escapeText(given.inputPath, 200)
                 << ": its weights are mostly " << fileWeights.dominantType
                 << ": compiling with --weight-dtype " << options.weightDtype
                 << (options.weightDtype == "int8"
                         ? " (groups of " + std::to_string(options.int8Group) +
                               ")"
                         : std::string())
                 << "; --weight-dtype f32 keeps every weight exact in f32\n";

  mlir::DialectRegistry registry;
  tfm::registerDialects(registry);
  mlir::MLIRContext context(registry);
  bool errorShown = false;
  mlir::ScopedDiagnosticHandler diagnostics(
      &context, [&](mlir::Diagnostic &diag) {
        printDiagnostic(diag, errorShown);
        return mlir::success();
      });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      frontend::buildTfmModule(context, model, options.maxSeq);
  if (!module)
    return mlir::failure();
  if (options.emit == Emit::Mlir) {
    module->print(os);
    os << "\n";
  }
  if (!runPipeline)
    return mlir::success();
  // Read by codegen (compiler/codegen/Lowering.cpp): f32 leaves the module
  // as it was.
  if (options.kvCacheDtype != "f32")
    (*module)->setAttr(tfm::kKvCacheDtypeAttrName,
                       mlir::StringAttr::get(&context, options.kvCacheDtype));

  // Each target runs the middle end on its own copy of the module: tile
  // plans (and so kernels and arenas) are the target's own.
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> variantModules;
  std::vector<codegen::TargetModule> variants;
  std::vector<double> pipelineSeconds;
  for (const target::TargetDescription &description : *targets) {
    auto start = std::chrono::steady_clock::now();
    mlir::OwningOpRef<mlir::ModuleOp> variant = module->clone();
    mlir::PassManager pm(&context);
    if (options.configurePassManager &&
        failed(options.configurePassManager(pm)))
      return mlir::failure();
    // Adams2019's schedules may compute an output element twice
    // (ShiftInwards tails): no kernel may then write over its own input.
    PipelineOptions pipeline;
    pipeline.target = description.name;
    pipeline.maxBatch = options.maxBatch;
    pipeline.maxSeq = options.maxSeq;
    pipeline.inPlace = !options.autoschedule;
    pipeline.weightDtype = options.weightDtype;
    pipeline.int8Group = options.int8Group;
    pipeline.weightOverrides = overrides;
    pipeline.activations = options.activations;
    // Adams2019 schedules the algorithm of row-major weights, as before
    // panels existed (it is the tile plans' benchmark peer).
    pipeline.weightLayout =
        options.autoschedule ? std::string("rows") : options.weightLayout;
    buildDefaultPipeline(pm, pipeline);
    if (failed(pm.run(*variant)))
      return mlir::failure();
    pipelineSeconds.push_back(std::chrono::duration<double>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
    variants.push_back({*variant, description});
    variantModules.push_back(std::move(variant));
  }
  if (options.emit == Emit::MlirOpt) {
    variants.front().module.print(os);
    os << "\n";
  }
  std::vector<codegen::VariantCost> costs;
  if ((options.emit && !isTextual(*options.emit)) ||
      options.emit == Emit::Halide) {
    codegen::CodegenOptions codegenOptions;
    switch (*options.emit) {
    case Emit::Halide:
      codegenOptions.artifact = codegen::Artifact::Halide;
      break;
    case Emit::Obj:
      codegenOptions.artifact = codegen::Artifact::Object;
      break;
    case Emit::Lib:
      codegenOptions.artifact = codegen::Artifact::Library;
      break;
    default:
      codegenOptions.artifact = codegen::Artifact::Executable;
      break;
    }
    codegenOptions.outputPath =
        options.outputPath == "-" ? model.name : options.outputPath;
    codegenOptions.cacheDir = codegen::defaultCacheDir();
    const char *runtimeDir = std::getenv("TFMC_RUNTIME_DIR");
    codegenOptions.runtimeDir =
        runtimeDir && *runtimeDir ? runtimeDir : TFMC_RUNTIME_DIR;
    bool buildTree = codegenOptions.runtimeDir == TFMC_RUNTIME_DIR;
    codegenOptions.runtimeHeader =
        buildTree ? TFMC_RUNTIME_HEADER : codegenOptions.runtimeDir + "/tfmc.h";
    codegenOptions.generateHeader =
        buildTree ? TFMC_GENERATE_HEADER
                  : codegenOptions.runtimeDir + "/tfmc_generate.h";
#ifdef TFMC_RUNTIME_LINK_FLAGS
    // The runtime archives are instrumented (TFMC_SANITIZE).
    llvm::SmallVector<llvm::StringRef> linkFlags;
    llvm::StringRef(TFMC_RUNTIME_LINK_FLAGS).split(linkFlags, ' ', -1, false);
    for (llvm::StringRef flag : linkFlags)
      codegenOptions.runtimeLinkFlags.push_back(flag.str());
#endif
    codegenOptions.verbose = options.verbose;
    codegenOptions.autoschedule = options.autoschedule;
    codegenOptions.embedWeights = options.embedWeights;
    if (failed(codegen::emitArtifact(variants, codegenOptions, os, &costs)))
      return mlir::failure();
  }
  if (options.stats) {
    mlir::FailureOr<ModuleStats> collected =
        collectStats(variants.front().module);
    if (failed(collected))
      return mlir::failure();
    const ModuleStats &stats = *collected;
    const target::TargetDescription &widest = variants.front().target;
    int64_t maxSeq = options.maxSeq ? options.maxSeq : model.maxLen;
    statsOs << "model " << model.name << ", target " << options.target
                 << ", max batch " << options.maxBatch << ", max seq "
                 << maxSeq << "\n";
    if (!widest.narrowDotFeatures.empty())
      statsOs << "narrow dot products (found, not used): "
              << llvm::join(widest.narrowDotFeatures, " ") << "\n";
    statsOs << "peak arena bytes: " << stats.arenaBytes << "\n";
    if (stats.entryArenaBytes.size() > 1) {
      statsOs << "arena bytes by entry:";
      for (auto [index, entry] : llvm::enumerate(stats.entryArenaBytes))
        statsOs << (index ? ", " : " ") << entry.first << " " << entry.second;
      statsOs << "\n";
    }
    statsOs << "weight dtype: " << options.weightDtype
            << (options.weightDtype == "int8"
                    ? " (groups of " + std::to_string(options.int8Group) + ")"
                : options.weightDtype == "int4" ? std::string(" (Q4_0 blocks of 32)")
                : tfmc::plan::dtype::isKQuant(options.weightDtype)
                    ? std::string(fromFile
                                      ? " (llama.cpp's super-blocks of 256, as "
                                        "the file holds them)"
                                      : " (llama.cpp's super-blocks of 256, "
                                        "quantised by ggml's reference "
                                        "quantiser at load)")
                    : std::string())
            << " for linear and embedding weights"
            << (fromFile ? ", chosen by the file's weights" : "") << "\n"
            << (fileWeights.types.empty()
                    ? std::string()
                    : "file weights (2-D tensors): " + fileWeights.types + "\n")
            << (overrides.empty()
                    ? std::string()
                    : "weights stored as their file type (where a linear or "
                      "embedding reads them): " +
                          llvm::join(overrides, ", ") + "\n")
            << (options.activations == "int8"
                    ? "activations: int8 (linears with integer weights quantise "
                      "each input row per group and multiply integers)\n"
                : options.activations == "bf16"
                    ? "activations: bf16 (linears with bf16 weights round "
                      "their input to bf16 and multiply bf16 values)\n"
                    : "")
            << (options.kvCacheDtype != "f32"
                    ? "kv cache dtype: " + options.kvCacheDtype +
                          " (keys and values rounded to nearest even)\n"
                    : std::string())
            << "weight bytes: " << stats.weightBytes << "\n"
            << "kernels: " << stats.kernels << "\n"
            << "distinct kernels: " << stats.distinctKernels << "\n";
    // One line per variant (the widest first, as a program tries them):
    // what each target of the list costs in compile time and code.
    for (auto [index, variant] : llvm::enumerate(variants)) {
      statsOs << "variant " << variant.target.name;
      if (!variant.target.isGpu())
        statsOs << " (needs " << variant.target.featureList() << ")";
      double seconds = pipelineSeconds[index];
      if (index < costs.size()) {
        seconds += costs[index].seconds;
        statsOs << ": kernel code " << costs[index].kernelCodeBytes
                << " bytes, " << costs[index].compiledKernels
                << " kernels compiled (the rest cached)";
      }
      statsOs << ", " << llvm::format("%.2f", seconds) << " s\n";
    }
  }
  return mlir::success();
}

} // namespace tfmc::driver
