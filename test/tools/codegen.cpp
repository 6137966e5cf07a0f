//===- codegen.cpp - Codegen on a planned tfm module, for lit tests -------===//
//
// tfmc-codegen FILE.mlir [--target T] [--adams2019] [--split-input-file]
//              [--verify-diagnostics]
//
// Lowers a tfm module that has been through the middle end (hand-written
// or from `tfmc --emit mlir-opt`) to each distinct kernel's Halide
// description, as `tfmc --emit halide` does, and prints them. Codegen's
// errors are MLIR diagnostics at the op or the module, so with
// --verify-diagnostics they are checked against `expected-error` comments.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/Codegen.h"
#include "passes/target/Target.h"
#include "dialects/tfm/TfmDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<planned.mlir>"));
static cl::opt<std::string> target("target", cl::desc("tfmc target"),
                                   cl::init("x86-64-avx2"));
static cl::opt<bool> adams2019("adams2019",
                               cl::desc("schedule with Adams2019"));
static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("check diagnostics against expected-* comments"));

static cl::opt<bool> splitInputFile(
    "split-input-file", cl::desc("process each '// -----' chunk on its own"));

/// Codegen on one module; with --verify-diagnostics, its result is whether
/// the diagnostics were the expected ones.
static mlir::LogicalResult processBuffer(
    std::unique_ptr<llvm::MemoryBuffer> buffer, llvm::raw_ostream &os) {
  mlir::DialectRegistry registry;
  tfmc::tfm::registerDialects(registry);
  mlir::MLIRContext context(registry);
  // Codegen's errors name the op by their location alone.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  std::unique_ptr<mlir::SourceMgrDiagnosticVerifierHandler> verifier;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> printer;
  if (verifyDiagnostics)
    verifier = std::make_unique<mlir::SourceMgrDiagnosticVerifierHandler>(
        sourceMgr, &context);
  else
    printer = std::make_unique<mlir::SourceMgrDiagnosticHandler>(sourceMgr,
                                                                &context);
  // Counts the errors reported, then lets the handlers above see them.
  int errors = 0;
  mlir::ScopedDiagnosticHandler counter(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errors;
    return mlir::failure();
  });
  bool ok = false;
  if (auto module =
          mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context)) {
    std::string error;
    std::optional<tfmc::target::TargetDescription> description =
        tfmc::target::lookupTarget(target, error);
    if (!description) {
      module->emitError(error);
    } else {
      tfmc::codegen::CodegenOptions options;
      options.artifact = tfmc::codegen::Artifact::Halide;
      options.autoschedule = adams2019;
      tfmc::codegen::TargetModule variant{*module, *description};
      ok = mlir::succeeded(tfmc::codegen::emitArtifact(variant, options, os));
    }
  }
  // A failure must say why: codegen failing with no error is itself one.
  if (!ok && errors == 0) {
    llvm::errs() << "tfmc-codegen: codegen failed without an error\n";
    return mlir::failure();
  }
  if (verifyDiagnostics)
    return verifier->verify();
  return mlir::success(ok);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "tfmc codegen test driver\n");
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputPath);
  if (!buffer) {
    llvm::errs() << "tfmc-codegen: cannot read " << inputPath << "\n";
    return 1;
  }
  if (!splitInputFile)
    return mlir::failed(processBuffer(std::move(*buffer), llvm::outs()));
  return mlir::failed(mlir::splitAndProcessBuffer(
      std::move(*buffer), processBuffer, llvm::outs()));
}
