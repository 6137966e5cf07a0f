//===- tfmc.cpp - The tfmc compiler driver --------------------------------===//

#include "compiler/target/Target.h"
#include "compiler/driver/Driver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;
using tfmc::driver::Emit;

static cl::OptionCategory tfmcCategory("tfmc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.tfm>"),
                                      cl::cat(tfmcCategory));

static cl::opt<Emit> emit(
    "emit", cl::desc("What to produce:"),
    cl::values(
        clEnumValN(Emit::Ast, "ast", "the parsed description, defaults filled in"),
        clEnumValN(Emit::Mlir, "mlir",
                   "the frontend's tfm module, attention step by step"),
        clEnumValN(Emit::MlirOpt, "mlir-opt",
                   "after the middle end: fused, tiled, memory-planned"),
        clEnumValN(Emit::Halide, "halide",
                   "each distinct kernel's lowered Halide pipeline and schedule"),
        clEnumValN(Emit::Obj, "obj",
                   "NAME.o: kernels, Halide runtime and entry point"),
        clEnumValN(Emit::Lib, "lib", "libNAME.a + NAME.h: the C API"),
        clEnumValN(Emit::Exe, "exe",
                   "NAME: an executable with run, init-weights, info (default)")),
    cl::cat(tfmcCategory));

static cl::opt<std::string> outputPath("o", cl::desc("Output: a file for text (default: stdout); the program's path for obj/lib/exe (default: the model's name)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(tfmcCategory));

// The targets, from the registry (compiler/target/Target.cpp).
static const std::string targetDescription =
    "Target to compile for (default: host):\n" + tfmc::target::targetHelp();
static const std::string targetNames = tfmc::target::targetNameList("|");
static cl::opt<std::string> target("target", cl::desc(targetDescription),
                                   cl::value_desc(targetNames),
                                   cl::init("host"), cl::cat(tfmcCategory));

static cl::opt<int64_t> maxBatch(
    "max-batch", cl::desc("Largest batch the memory plan holds (default: 1)"),
    cl::value_desc("N"), cl::init(1), cl::cat(tfmcCategory));

static cl::opt<int64_t> maxSeq(
    "max-seq",
    cl::desc("Longest sequence the memory plan holds (default: max_len)"),
    cl::value_desc("N"), cl::init(0), cl::cat(tfmcCategory));

enum class Scheduler { Tfmc, Adams2019 };
static cl::opt<Scheduler> scheduler(
    "scheduler", cl::desc("Who schedules the Halide kernels:"),
    cl::values(clEnumValN(Scheduler::Tfmc, "tfmc", "the tile plans (default)"),
               clEnumValN(Scheduler::Adams2019, "adams2019",
                          "Halide's Adams2019 autoscheduler (a benchmark peer)")),
    cl::init(Scheduler::Tfmc), cl::cat(tfmcCategory));

static cl::opt<bool> verbose(
    "v", cl::desc("Say which kernels are compiled and which come from the cache"),
    cl::cat(tfmcCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // mlir-opt's IR printing and pass-manager flags (--mlir-print-debuginfo,
  // --mlir-print-ir-after-all, --mlir-timing, ...) work here too.
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  // LLVM owns `-stats` ("enable statistics output"): tfmc's --stats means
  // the same, so it adopts that option rather than registering a clash.
  // LLVM's own counters are compiled out of Debian's release build.
  cl::Option *stats = cl::getRegisteredOptions().lookup("stats");
  stats->setDescription("Print peak arena bytes, weight bytes, kernels and "
                        "distinct kernels after the middle end");
  stats->addCategory(tfmcCategory);
  stats->setHiddenFlag(cl::NotHidden);
  cl::HideUnrelatedOptions(tfmcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tfmc " << tfmc::driver::version() << " (MLIR 19, Halide 14)\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "tfmc: an ahead-of-time compiler for Transformer models\n\n"
      "  tfmc MODEL.tfm [-o NAME] [--emit ast|mlir|mlir-opt|halide|obj|lib|exe]\n"
      "       [--target T] [--max-batch N] [--max-seq N] [--stats] [-v]\n\n"
      "Compiled kernels are cached in $TFMC_CACHE_DIR (default ~/.cache/tfmc).\n"
      "mlir-opt's IR printing flags work too, e.g. --mlir-print-debuginfo\n"
      "(each op's .tfm line) and --mlir-print-ir-after-all (each stage of\n"
      "the middle end); --help-hidden lists them.\n");

  bool printStats = llvm::AreStatisticsEnabled();
  tfmc::driver::CompileOptions options;
  options.inputPath = inputPath;
  // With no --emit, tfmc builds an executable, unless only --stats is asked.
  if (emit.getNumOccurrences())
    options.emit = emit;
  else if (!printStats)
    options.emit = Emit::Exe;
  options.outputPath = outputPath;
  bool textual = options.emit && tfmc::driver::isTextual(*options.emit);
  std::string error;
  auto output = mlir::openOutputFile(textual ? outputPath.getValue() : "-", &error);
  if (!output) {
    llvm::errs() << "tfmc: error: " << error << "\n";
    return 1;
  }
  options.target = target;
  options.maxBatch = maxBatch;
  options.maxSeq = maxSeq;
  options.stats = printStats;
  options.verbose = verbose;
  options.autoschedule = scheduler == Scheduler::Adams2019;
  options.configurePassManager = [](mlir::PassManager &pm) {
    return mlir::applyPassManagerCLOptions(pm);
  };
  if (mlir::failed(tfmc::driver::compile(options, output->os())))
    return 1;
  output->keep();
  return 0;
}
