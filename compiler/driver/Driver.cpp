//===- Driver.cpp - The compile pipeline as a library call ----------------===//

#include "compiler/driver/Driver.h"

#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/KernelKey.h"
#include "compiler/target/TilePlan.h"
#include "compiler/frontend/AST.h"
#include "compiler/frontend/TfmBuilder.h"
#include "dialects/tfm/TfmDialect.h"
#include "compiler/passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cstdlib>

namespace tfmc::driver {
namespace {

/// What --stats reports about a compiled module.
struct ModuleStats {
  int64_t arenaBytes = 0;
  int64_t weightBytes = 0;
  int64_t kernels = 0;
  int64_t distinctKernels = 0;
};

ModuleStats collectStats(mlir::ModuleOp module) {
  ModuleStats stats;
  llvm::StringSet<> weights, kernelKeys;
  module.walk([&](mlir::Operation *op) {
    if (auto weight = llvm::dyn_cast<tfm::WeightOp>(op)) {
      if (weights.insert(weight.getName()).second)
        stats.weightBytes += weight.getType().getNumElements() * 4;
    } else if (target::kernelKindOf(op)) {
      ++stats.kernels;
      kernelKeys.insert(codegen::kernelKey(op));
    }
  });
  stats.distinctKernels = kernelKeys.size();
  module.walk([&](mlir::func::FuncOp func) {
    if (auto size = func->getAttrOfType<mlir::IntegerAttr>("tfm.arena_size"))
      stats.arenaBytes = std::max(stats.arenaBytes, size.getInt());
  });
  return stats;
}

/// Checks the options that depend on the model, with one-line errors.
mlir::LogicalResult checkOptions(const CompileOptions &options,
                                 const frontend::Model &model) {
  std::string error;
  if (!target::lookupTarget(options.target, error)) {
    llvm::errs() << "tfmc: error: " << error << "\n";
    return mlir::failure();
  }
  if (options.maxBatch <= 0) {
    llvm::errs() << "tfmc: error: --max-batch must be positive, got "
                 << options.maxBatch << "\n";
    return mlir::failure();
  }
  if (options.autoschedule && target::lookupTarget(options.target, error)->isGpu()) {
    llvm::errs() << "tfmc: error: --scheduler adams2019 schedules CPU kernels "
                    "only (Halide 14 has no GPU autoscheduler); CUDA targets "
                    "use their tile plans\n";
    return mlir::failure();
  }
  if (options.maxSeq < 0 || options.maxSeq > model.maxLen) {
    llvm::errs() << "tfmc: error: --max-seq " << options.maxSeq
                 << " is outside 1.." << model.maxLen << " (max_len of model '"
                 << model.name << "')\n";
    return mlir::failure();
  }
  return mlir::success();
}

} // namespace

const char *version() { return TFMC_VERSION; }

bool isTextual(Emit emit) {
  return emit == Emit::Ast || emit == Emit::Mlir || emit == Emit::MlirOpt ||
         emit == Emit::Halide;
}

mlir::LogicalResult compile(const CompileOptions &options,
                            llvm::raw_ostream &os) {
  frontend::ParseResult parsed = frontend::parseModelFile(options.inputPath);
  if (!parsed) {
    llvm::errs() << parsed.error->str() << "\n";
    return mlir::failure();
  }
  const frontend::Model &model = *parsed.model;
  if (options.emit == Emit::Ast) {
    os << frontend::dumpModel(model);
    return mlir::success();
  }
  bool runPipeline = options.stats ||
                     (options.emit && *options.emit != Emit::Mlir);
  if (runPipeline && failed(checkOptions(options, model)))
    return mlir::failure();

  mlir::DialectRegistry registry;
  tfm::registerDialects(registry);
  mlir::MLIRContext context(registry);
  // Diagnostics of the passes and codegen: one line each, at the .tfm
  // position of the op (or the model) they concern.
  mlir::ScopedDiagnosticHandler oneLine(&context, [](mlir::Diagnostic &diag) {
    std::string message = diag.str();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::string where = "tfmc";
    if (auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(diag.getLocation()))
      where = (loc.getFilename().str() + ":" + std::to_string(loc.getLine()) +
               ":" + std::to_string(loc.getColumn()));
    const char *severity = diag.getSeverity() == mlir::DiagnosticSeverity::Error
                               ? "error"
                           : diag.getSeverity() == mlir::DiagnosticSeverity::Warning
                               ? "warning"
                               : diag.getSeverity() == mlir::DiagnosticSeverity::Remark
                                     ? "remark"
                                     : "note";
    llvm::errs() << where << ": " << severity << ": " << message << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      frontend::buildTfmModule(context, model);
  if (!module)
    return mlir::failure();
  if (options.emit == Emit::Mlir) {
    module->print(os);
    os << "\n";
  }
  if (!runPipeline)
    return mlir::success();

  mlir::PassManager pm(&context);
  if (options.configurePassManager &&
      failed(options.configurePassManager(pm)))
    return mlir::failure();
  // Adams2019's schedules may compute an output element twice (ShiftInwards
  // tails): no kernel may then write over its own input.
  buildDefaultPipeline(pm, {options.target, options.maxBatch, options.maxSeq,
                            /*inPlace=*/!options.autoschedule});
  if (failed(pm.run(*module)))
    return mlir::failure();
  if (options.emit == Emit::MlirOpt) {
    module->print(os);
    os << "\n";
  }
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
    std::string error;
    codegenOptions.target = *target::lookupTarget(options.target, error);
    codegenOptions.cacheDir = codegen::defaultCacheDir();
    const char *runtimeDir = std::getenv("TFMC_RUNTIME_DIR");
    codegenOptions.runtimeDir =
        runtimeDir && *runtimeDir ? runtimeDir : TFMC_RUNTIME_DIR;
    codegenOptions.runtimeHeader = codegenOptions.runtimeDir == TFMC_RUNTIME_DIR
                                       ? TFMC_RUNTIME_HEADER
                                       : codegenOptions.runtimeDir + "/tfmc.h";
    codegenOptions.verbose = options.verbose;
    codegenOptions.autoschedule = options.autoschedule;
    if (failed(codegen::emitArtifact(*module, codegenOptions, os)))
      return mlir::failure();
  }
  if (options.stats) {
    ModuleStats stats = collectStats(*module);
    int64_t maxSeq = options.maxSeq ? options.maxSeq : model.maxLen;
    llvm::outs() << "model " << model.name << ", target " << options.target
                 << ", max batch " << options.maxBatch << ", max seq "
                 << maxSeq << "\n"
                 << "peak arena bytes: " << stats.arenaBytes << "\n"
                 << "weight bytes: " << stats.weightBytes << "\n"
                 << "kernels: " << stats.kernels << "\n"
                 << "distinct kernels: " << stats.distinctKernels << "\n";
  }
  return mlir::success();
}

} // namespace tfmc::driver
