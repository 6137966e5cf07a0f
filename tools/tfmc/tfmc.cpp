//===- tfmc.cpp - The tfmc compiler driver --------------------------------===//

#include "passes/target/Target.h"
#include "compiler/driver/Driver.h"
#include "compiler/driver/OutputFile.h"
#include "support/Text.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

#include <sys/mman.h>
#include <unistd.h>

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

// The targets, from the registry (passes/target/Target.cpp).
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

static cl::opt<std::string> weightDtype(
    "weight-dtype",
    cl::desc("Storage of linear and embedding weights (default: f32, or "
             "what a GGUF file's tensors are: docs/gguf.md); norms, "
             "biases, positions and activations stay f32"),
    cl::value_desc("f32|bf16|int8|int4|q4_k|q5_k|q6_k"), cl::init("f32"),
    cl::cat(tfmcCategory));

static cl::opt<std::string> activations(
    "activations",
    cl::desc("What linear layers with narrow weights multiply (default: "
             "f32): int8 quantises each input row per group of the weight's "
             "features (int8: 64, int4: 32) and multiplies integers (needs "
             "--weight-dtype int8, int4 or a K-quant); bf16 rounds each "
             "input to bf16 "
             "and multiplies bf16 values (needs --weight-dtype bf16; "
             "vdpbf16ps with --target x86-64-avx512-bf16, f32 FMAs "
             "elsewhere)"),
    cl::value_desc("f32|int8|bf16"), cl::init("f32"), cl::cat(tfmcCategory));

static cl::opt<std::string> kvCacheDtype(
    "kv-cache-dtype",
    cl::desc("Element type of the KV cache (default: f32): bf16 or f16 "
             "round keys and values to nearest even as they are cached and "
             "halve the cache's bytes (CPU targets)"),
    cl::value_desc("f32|bf16|f16"), cl::init("f32"), cl::cat(tfmcCategory));

static cl::opt<std::string> weightLayout(
    "weight-layout",
    cl::desc("How a CPU program stores its f32 linear weights, and with "
             "--activations int8 on x86-64-avx512 its int8 and int4 ones "
             "(default: panels): panels of 16 rows, laid out once at load (a private "
             "copy), which the linear kernels read without packing; rows "
             "keeps the file's layout, mapped in place and shared between "
             "processes, with slower prefill and decode"),
    cl::value_desc("panels|rows"), cl::init("panels"), cl::cat(tfmcCategory));

enum class Scheduler { Tfmc, Adams2019 };
static cl::opt<Scheduler> scheduler(
    "scheduler", cl::desc("Who schedules the Halide kernels:"),
    cl::values(clEnumValN(Scheduler::Tfmc, "tfmc", "the tile plans (default)"),
               clEnumValN(Scheduler::Adams2019, "adams2019",
                          "Halide's Adams2019 autoscheduler (a benchmark peer)")),
    cl::init(Scheduler::Tfmc), cl::cat(tfmcCategory));

static cl::opt<std::string> embedWeights(
    "embed-weights",
    cl::desc("Write an executable that carries this weights file (safetensors "
             "or GGUF) and maps it from its own file when run without "
             "--weights: a deployment of one file"),
    cl::value_desc("file"), cl::cat(tfmcCategory));

static cl::opt<bool> verbose(
    "v", cl::desc("Say which kernels are compiled and which come from the cache"),
    cl::cat(tfmcCategory));

/// LLVM's command-line errors as one line of bounded length: its parser
/// puts some on two lines ("Not enough positional command line arguments
/// specified!" + "Must specify at least 1 ..."), and cl::Option::error
/// writes others straight to llvm::errs() quoting the argument whole. So
/// stderr is captured while parsing (into a memory file: a pipe could fill
/// and block) and the lines are joined.
static bool parseCommandLine(int argc, char **argv, const char *overview) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  int capture = ::memfd_create("tfmc-cl-errors", MFD_CLOEXEC);
  int savedStderr = capture >= 0 ? ::dup(STDERR_FILENO) : -1;
  if (savedStderr >= 0)
    ::dup2(capture, STDERR_FILENO);
  bool parsed = cl::ParseCommandLineOptions(argc, argv, overview, &errorStream);
  llvm::errs().flush();
  if (savedStderr >= 0) {
    ::dup2(savedStderr, STDERR_FILENO);
    ::close(savedStderr);
    char buffer[4096];
    ssize_t count;
    ::lseek(capture, 0, SEEK_SET);
    while ((count = ::read(capture, buffer, sizeof buffer)) > 0)
      errors.append(buffer, static_cast<size_t>(count));
  }
  if (capture >= 0)
    ::close(capture);
  if (parsed) {
    // Not an error: whatever an option printed while parsing, unchanged.
    llvm::errs() << errors;
    return true;
  }

  std::string programPrefix =
      llvm::sys::path::filename(argv[0]).str() + ": ";
  std::string line;
  llvm::SmallVector<llvm::StringRef> pieces;
  llvm::StringRef(errors).split(pieces, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef piece : pieces) {
    piece.consume_front(programPrefix);
    piece = piece.trim();
    if (piece.empty())
      continue;
    line += (line.empty() ? "" : " ") + piece.str();
  }
  llvm::errs() << "tfmc: error: " << tfmc::support::escapeText(line, 400)
               << "\n";
  return false;
}

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
  if (!parseCommandLine(
      argc, argv,
      "tfmc: an ahead-of-time compiler for Transformer models\n\n"
      "  tfmc MODEL.tfm [-o NAME] [--emit ast|mlir|mlir-opt|halide|obj|lib|exe]\n"
      "       [--target T] [--max-batch N] [--max-seq N] [--stats] [-v]\n\n"
      "Compiled kernels are cached in $TFMC_CACHE_DIR (default ~/.cache/tfmc).\n"
      "mlir-opt's IR printing flags work too, e.g. --mlir-print-debuginfo\n"
      "(each op's .tfm line) and --mlir-print-ir-after-all (each stage of\n"
      "the middle end); --help-hidden lists them.\n"))
    return 1;

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
  // Text is collected and written only when the compile succeeds, so a
  // failure leaves an existing -o file untouched and prints no half module.
  tfmc::driver::OutputFile output(textual ? outputPath.getValue() : "-",
                                  inputPath);
  // An executable's -o, which the linker writes at the end, is checked now
  // too (by the same policy; without -o it is the model's name, not known
  // yet).
  bool executable = options.emit && *options.emit == Emit::Exe;
  tfmc::driver::OutputFile program(
      executable && outputPath != "-" ? outputPath.getValue() : "-", inputPath);
  std::string error;
  // An output's error names its path: escaped, one line.
  auto outputError = [&] {
    llvm::errs() << "tfmc: error: "
                 << tfmc::support::escapeText(error,
                                              tfmc::support::kMaxMessageBytes)
                 << "\n";
    return 1;
  };
  if (!output.open(error) || !program.open(error))
    return outputError();
  options.target = target;
  options.maxBatch = maxBatch;
  options.weightDtype = weightDtype;
  options.weightDtypeGiven = weightDtype.getNumOccurrences() > 0;
  options.activations = activations;
  options.kvCacheDtype = kvCacheDtype;
  options.weightLayout = weightLayout;
  options.maxSeq = maxSeq;
  options.stats = printStats;
  options.embedWeights = embedWeights;
  options.verbose = verbose;
  options.autoschedule = scheduler == Scheduler::Adams2019;
  options.configurePassManager = [](mlir::PassManager &pm) {
    return mlir::applyPassManagerCLOptions(pm);
  };
  std::string text, statsText;
  llvm::raw_string_ostream textStream(text), statsStream(statsText);
  bool statsAfterText = !textual || outputPath == "-";
  if (mlir::failed(tfmc::driver::compile(
          options, textStream, statsAfterText ? textStream : statsStream)))
    return 1;
  if (!output.commit(text, error))
    return outputError();
  llvm::outs() << statsText;
  llvm::outs().flush();
  return 0;
}
