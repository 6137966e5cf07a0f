//===- Cli.h - What the subcommands of a compiled model share --*- C++ -*-===//
//
// `tfmc MODEL -o NAME` links libtfmc_runtime_main.a (this folder) with the
// model's kernels and plan, giving the executable NAME with the subcommands
// run, generate, bench, init-weights and info, one file each. This header is
// what they share: option parsing, id lists, model loading and output files.
//
// Every failure is one line on stderr, `NAME: error: ...`, and exit code 1:
// the subcommands throw CliError (through fail()) and main() prints it.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_CLI_CLI_H
#define TFMC_RUNTIME_CLI_CLI_H

#include "support/FileIO.h"
#include "runtime/core/Model.h"
#include "runtime/tokenizers/Tokenizer.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tfmc::runtime::cli {

/// A failure that ends the program: one line, exit code 1.
struct CliError {
  std::string message;
};

[[noreturn]] void fail(std::string message);

/// NAME, as argv[0] without its directory: errors and warnings start with
/// it.
const std::string &programName();

/// The usage text (`NAME help`).
void printUsage(std::FILE *out);

/// The options of one subcommand: `--name value` or `--name=value`; `flags`
/// take no value.
class Options {
public:
  /// `repeatable` options may be given several times: their values are
  /// joined with commas.
  Options(std::string command, std::set<std::string> allowed, int argc,
          char **argv, int first, std::set<std::string> flags = {},
          std::set<std::string> repeatable = {});

  bool helpRequested() const { return helpRequested_; }
  bool has(const std::string &name) const { return values_.count(name) > 0; }
  /// The value of `name`; a one-line error when it was not given.
  const std::string &get(const std::string &name) const;
  /// Every value a repeatable option was given, in order (empty when
  /// absent): for values that may hold commas themselves.
  std::vector<std::string> all(const std::string &name) const;

private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> lists_;
  bool helpRequested_ = false;
};

/// A whole-string decimal integer, or nothing (also on overflow).
std::optional<int64_t> parseInteger(const std::string &text);

/// A whole-string finite decimal number (as strtod reads it), or nothing.
std::optional<double> parseReal(const std::string &text);

/// `flag`'s value as an integer in [least, most]; `fallback` when absent.
int64_t integerOption(const Options &options, const std::string &flag,
                      int64_t fallback, int64_t least, int64_t most);

/// --threads, when given, sizes Halide's thread pool.
void applyThreads(const Options &options);

/// `5,6,7`, or `@FILE` holding ids separated by commas or whitespace.
std::vector<int64_t> parseIdList(const std::string &flag,
                                 const std::string &argument);

/// The plan linked into this program.
const Plan &requirePlan();

/// The message for a text that gives no token: "is empty" only when it is
/// (whitespace, or what a Split with `Removed` drops, gives no tokens
/// either, and was once reported as an empty file).
std::string noTokensMessage(const std::string &where, std::string_view text);

/// Fails (one line naming `where`) when `text` is longer than that bound.
void checkTextLength(const std::string &where, std::string_view text);

/// The model with the weights at `weightsPath` ("": the program's
/// embedded weights, WeightFiles.h).
std::unique_ptr<Model> loadModel(const std::string &weightsPath);

/// --weights, or "" (the embedded weights) when it is absent and the program
/// carries its weights (`tfmc --embed-weights`); fails as a missing option
/// does otherwise, and on an empty --weights.
std::string weightsPath(const Options &options);

/// Seconds since the process started (before main(), as early as a static
/// constructor runs).
double secondsSinceStart();

/// "load: 412.0 ms (map, page-in and check 3.3 ms, conversion 380.1 ms (49
/// tensors); weights 163.2 MiB)": what loading the weights took.
void printLoadStats(std::FILE *out, const LoadStats &stats);

/// Writes `output` to `file` (checked by checkOutputs before any work) as a
/// safetensors file, atomically.
void writeOutputs(support::OutputFile &file, const std::vector<OutputView> &outputs);

/// The output files of a command, checked before it does any work: each
/// must be a new path or a regular file that is none of `inputs` (the
/// weights, input and id files the command reads). `outputs` are pairs of
/// flag and path; returns them in the same order.
std::vector<support::OutputFile>
checkOutputs(const std::vector<std::pair<std::string, std::string>> &outputs,
             const std::vector<std::pair<std::string, std::string>> &inputs);

/// The inputs a command reads from files, for checkOutputs: `--weights W`,
/// `--input IN`, `--ids @FILE`, ...
std::vector<std::pair<std::string, std::string>>
inputFiles(const Options &options, const std::vector<std::string> &flags);

/// splitmix64: init-weights' and bench's random numbers, the same on every
/// machine.
uint64_t splitmix64(uint64_t &state);

int runCommand(int argc, char **argv);
int generateCommand(int argc, char **argv);
int benchCommand(int argc, char **argv);
int initWeightsCommand(int argc, char **argv);
int infoCommand(int argc, char **argv);
int convertWeightsCommand(int argc, char **argv);
int serveCommand(int argc, char **argv);

} // namespace tfmc::runtime::cli

#endif // TFMC_RUNTIME_CLI_CLI_H
