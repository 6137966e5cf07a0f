//===- tfmc.cpp - The tfmc compiler driver --------------------------------===//

#include "compiler/driver/Driver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;
using tfmc::driver::Emit;

static cl::OptionCategory tfmcCategory("tfmc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.tfm>"),
                                      cl::cat(tfmcCategory));

static cl::opt<Emit> emit(
    "emit", cl::Required, cl::desc("What to produce (required):"),
    cl::values(clEnumValN(Emit::Ast, "ast", "the parsed description, defaults filled in"),
               clEnumValN(Emit::Mlir, "mlir",
                          "the frontend's tfm module, attention step by step")),
    cl::cat(tfmcCategory));

static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(tfmcCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // MLIR's printing flags (--mlir-print-debuginfo, ...) work here as in
  // mlir-opt; --help-hidden lists them.
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions(tfmcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tfmc " << tfmc::driver::version() << " (MLIR 19, Halide 14)\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "tfmc: an ahead-of-time compiler for Transformer models\n\n"
      "  tfmc MODEL.tfm --emit ast|mlir [-o FILE]\n\n"
      "MLIR's IR printing flags (e.g. --mlir-print-debuginfo to show each op's\n"
      ".tfm source line) are accepted too; --help-hidden lists them.\n");

  std::string error;
  auto output = mlir::openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "tfmc: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(tfmc::driver::compile({inputPath, emit}, output->os())))
    return 1;
  output->keep();
  return 0;
}
