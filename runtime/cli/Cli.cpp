//===- Cli.cpp - Option parsing, loading, outputs, the dispatcher ---------===//
//
//   NAME run --weights W --input IN --output OUT [--threads N]
//   NAME run --weights W --ids 5,6,7 [--decoder-ids 1,5,9] [--output OUT]
//            [--threads N]
//   NAME generate --weights W --prompt 1,2,3 --max-new-tokens N ...
//   NAME init-weights --seed N --output W
//   NAME bench --weights W [--seq S] [--batch B] [--repeat N] [--warmup K]
//              [--threads N] [--entry forward|prefill|decode_step|extend] [--json]
//   NAME info
//   NAME help | --help
//
// It is a separate library from the runtime because `--emit lib` must not
// contain a main().
//
//===----------------------------------------------------------------------===//

#include "runtime/cli/Cli.h"
#include "runtime/core/Safetensors.h"
#include "support/Text.h"
#include "runtime/core/WeightFiles.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <exception>
#include <new>

namespace tfmc::runtime::cli {
namespace {

std::string program = "model";

/// As early as the program can note the time: before main() and the other
/// static constructors (the dynamic loader has run; `generate --stats`
/// measures start-up from here).
std::chrono::steady_clock::time_point startTime;
__attribute__((constructor(101))) void noteStartTime() {
  startTime = std::chrono::steady_clock::now();
}

} // namespace

double secondsSinceStart() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       startTime)
      .count();
}

const std::string &programName() { return program; }

[[noreturn]] void fail(std::string message) {
  throw CliError{std::move(message)};
}

void printUsage(std::FILE *out) {
  const char *name = program.c_str();
  std::fprintf(
      out,
      "usage: %s <command> [options]\n"
      "\n"
      "commands:\n"
      "  run --weights W.safetensors --input IN.safetensors --output "
      "OUT.safetensors [--threads N]\n"
      "      run the model on the inputs in IN (input_ids, attention_mask, "
      "...)\n"
      "      and write its output to OUT\n"
      "  run --weights W.safetensors --ids 5,6,7|@FILE [--decoder-ids 1,5,9] "
      "[--output OUT.safetensors] [--threads N]\n"
      "      run on one sequence; print the output shape and, for logits,\n"
      "      the most likely next token at each position\n"
      "  run --weights W --tokenizer DIR --text \"...\" [--text \"...\"]...\n"
      "      [--text-pair \"...\"] [--pooling mean|cls] [--output OUT]\n"
      "      run on texts (a batch, right-padded; BERT: [CLS] A [SEP] B [SEP]\n"
      "      with token types); --pooling prints one sentence embedding per\n"
      "      text: the mean of last_hidden_state over its tokens, or [CLS]'s\n"
      "  generate --weights W --prompt 1,2,3 --max-new-tokens N [--eos E]...\n"
      "  generate --weights W --source 5,6,7 --bos 1 [--eos 2] --max-new-tokens N\n"
      "      [--prompts-file F | --source-file F]  (one prompt per line, run in\n"
      "      batches of up to the compiled --max-batch; one output line each)\n"
      "      [--tokenizer DIR --text \"...\" | --text-file F]  (text in, text\n"
      "      out: DIR's tokenizer.json, tokenizer.model, or vocab.json and\n"
      "      merges.txt; BOS and EOS from DIR's JSON files; with one prompt\n"
      "      the text is printed as it is generated)\n"
      "      [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
      "      [--repetition-penalty R]  (sampling; temperature 0, the default,\n"
      "      is greedy decoding)\n"
      "      [--num-beams N] [--length-penalty L] [--early-stopping]  (beam\n"
      "      search)\n"
      "      [--stop TEXT]...  (with --tokenizer: end a sequence whose text\n"
      "      ends with TEXT)\n"
      "      [--bad-words 5,6]...  (never generate these ids in this order;\n"
      "      default: the tokenizer directory's bad_words_ids)\n"
      "      [--stats] [--threads N] [--dump-logits OUT.safetensors]\n"
      "      [--prefill-chunk N]  (one decoder-only prompt: run it N tokens\n"
      "      at a time, as serve --prefill-chunk does)\n"
      "      --eos may be repeated or a comma list: stop at any\n"
      "      generation with a KV cache (decoder-only: --prompt; encoder-\n"
      "      decoder: --source and --bos); prints the new token ids (eos\n"
      "      included when reached) or text, one line per prompt; --stats\n"
      "      prints load time, prefill time, the time to the first token and\n"
      "      decode tokens/s (batch and per sequence) to stderr\n"
      "  serve --weights W [--tokenizer DIR] [--host 127.0.0.1] [--port 8080]\n"
      "      [--threads N] [--api-key KEY] [--model-id ID] [--max-queue 64]\n"
      "      [--max-body-bytes 1048576] [--read-timeout 30]\n"
      "      [--shutdown-timeout 30] [--pooling mean|cls] [--prefill-chunk 64]\n"
      "      [--prefix-cache 512]\n"
      "      an OpenAI-compatible HTTP server: /v1/completions,\n"
      "      /v1/chat/completions (with DIR's chat_template), /v1/models,\n"
      "      /v1/embeddings (encoder-only models, pooled as --pooling says),\n"
      "      /health, /metrics; requests join one continuously batched\n"
      "      generation (up to the compiled --max-batch), newcomers' prompts\n"
      "      at most --prefill-chunk tokens between steps (0: whole prompts);\n"
      "      up to --prefix-cache MiB of prompts' KV-cache blocks are kept, and\n"
      "      a prompt starting with cached blocks runs only the rest (0: none);\n"
      "      --port 0 picks a free port; SIGTERM finishes the requests in\n"
      "      flight and exits 0\n"
      "  init-weights --seed N --output W.safetensors\n"
      "      write deterministic random weights for this model\n"
      "  bench --weights W [--seq S] [--batch B] [--repeat N] [--warmup K]\n"
      "      [--threads N] [--entry forward|prefill|decode_step|extend] [--json]\n"
      "      time the model on random ids (fixed seed; masks all ones) of\n"
      "      shape [B, S] (defaults: S = min(128, max seq), B = 1, N = 10,\n"
      "      K = 2): K warm-up runs, then N timed runs; prints the median, min\n"
      "      and max milliseconds of the whole entry and of each kernel, and\n"
      "      the sum of medians per op; decode_step prefills S tokens and\n"
      "      times N decode steps (B sequences, S + N <= max_len); extend\n"
      "      prefills S tokens and times an extend of S more (batch 1,\n"
      "      2S <= max_len); --json prints\n"
      "      one JSON object a line\n"
      "  convert-weights --weights W.safetensors --output W2.safetensors\n"
      "      (a bf16, int8 or int4 program) write the weights as this program\n"
      "      stores them: W2 loads by mmap, with no conversion\n"
      "  info [--weights W.safetensors]\n"
      "      describe the compiled model: inputs, output, weights (dtype,\n"
      "      bytes), memory; with --weights, the time loading W takes\n"
      "  help\n"
      "      show this message\n"
      "\n"
      "W (--weights) is a safetensors file, a Hugging Face checkpoint\n"
      "directory (its model.safetensors, else model.safetensors.index.json\n"
      "and its shards) or such an index; tensors F32, BF16 or F16, converted\n"
      "at load to the program's weight dtype\n",
      name);
}

Options::Options(std::string command, std::set<std::string> allowed, int argc,
                 char **argv, int first, std::set<std::string> flags,
                 std::set<std::string> repeatable)
    : command_(std::move(command)) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      helpRequested_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      fail(fmt::format("{}: unexpected argument {}", command_, support::quote(arg)));
    std::string name = arg, value;
    bool hasValue = false;
    if (std::size_t equals = arg.find('='); equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      hasValue = true;
    }
    if (flags.count(name)) {
      if (hasValue)
        fail(fmt::format("{} takes no value", name));
      values_[name] = "1";
      continue;
    }
    if (!allowed.count(name))
      fail(fmt::format("{}: unknown option {}", command_, support::quote(name)));
    if (!hasValue) {
      if (i + 1 >= argc)
        fail(fmt::format("{} needs a value", name));
      value = argv[++i];
    }
    lists_[name].push_back(value);
    if (values_.count(name) && repeatable.count(name)) {
      values_[name] += "," + value;
      continue;
    }
    if (values_.count(name))
      fail(fmt::format("{} is given twice", name));
    values_[name] = value;
  }
}

const std::string &Options::get(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    fail(fmt::format("{} needs {}", command_, name));
  return it->second;
}

std::vector<std::string> Options::all(const std::string &name) const {
  auto it = lists_.find(name);
  return it == lists_.end() ? std::vector<std::string>() : it->second;
}

std::optional<double> parseReal(const std::string &text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  // ERANGE is also underflow: a number such as 5e-324 (subnormal) is still
  // the number written, to the last bit a double holds; only overflow
  // (infinity) is not.
  if (end != text.c_str() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

/// A whole-string decimal integer, or nothing.
std::optional<int64_t> parseInteger(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  std::size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size())
    return std::nullopt;
  int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return std::nullopt;
    int digit = text[i] - '0';
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, text[0] == '-' ? -digit : digit, &value))
      return std::nullopt;
  }
  return value;
}

int64_t integerOption(const Options &options, const std::string &flag,
                      int64_t fallback, int64_t least, int64_t most) {
  if (!options.has(flag))
    return fallback;
  const std::string &text = options.get(flag);
  std::optional<int64_t> value = parseInteger(text);
  if (!value || *value < least || *value > most)
    fail(fmt::format("{} expects an integer from {} to {}, got {}", flag,
                     least, most, support::quote(text)));
  return *value;
}

void applyThreads(const Options &options) {
  if (!options.has("--threads"))
    return;
  const std::string &text = options.get("--threads");
  std::optional<int64_t> threads = parseInteger(text);
  if (!threads)
    fail(fmt::format("--threads expects a positive integer, got {}",
                     support::quote(text)));
  if (*threads < 1 || *threads > 1024)
    fail(fmt::format("--threads must be between 1 and 1024, got {}", *threads));
  std::string error;
  if (!Model::setThreads(static_cast<int>(*threads), error))
    fail(error);
}

std::vector<int64_t> parseIdList(const std::string &flag,
                                 const std::string &argument) {
  // `@FILE` reads the list from a file (commas or whitespace between ids).
  std::string text = argument;
  if (!text.empty() && text[0] == '@') {
    std::string contents, error;
    if (!support::readRegularFile(text.substr(1), contents, error))
      fail(fmt::format("{}: {}", flag, error));
    text.clear();
    for (char c : contents)
      text += std::isspace(static_cast<unsigned char>(c)) ? ',' : c;
    while (!text.empty() && text.back() == ',')
      text.pop_back();
    while (!text.empty() && text.front() == ',')
      text.erase(0, 1);
  }
  std::vector<int64_t> ids;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string item = text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    std::optional<int64_t> id = parseInteger(item);
    if (!id)
      fail(fmt::format("{} expects comma-separated token ids, got {}", flag,
                       support::quote(text)));
    ids.push_back(*id);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return ids;
}

const Plan &requirePlan() {
  std::string error;
  const Plan *plan = linkedPlan(error);
  if (!plan)
    fail(error);
  return *plan;
}

std::string noTokensMessage(const std::string &where, std::string_view text) {
  if (text.empty())
    return where + " is empty";
  return fmt::format("{} gives no tokens: the tokenizer keeps none of its {} "
                     "bytes (whitespace, or text its pre-tokenizer removes)",
                     where, text.size());
}

void checkTextLength(const std::string &where, std::string_view text) {
  const Plan &plan = requirePlan();
  const int64_t limit = plan.maxLen * kMaxTextBytesPerPosition;
  if (static_cast<int64_t>(text.size()) > limit)
    fail(fmt::format("{} is {} bytes, more than this program tokenizes ({} "
                     "bytes: {} per position of max_len {})",
                     where, text.size(), limit, kMaxTextBytesPerPosition,
                     plan.maxLen));
}

std::string weightsPath(const Options &options) {
  if (options.has("--weights")) {
    const std::string &path = options.get("--weights");
    if (path.empty())
      fail("--weights is empty");
    return path;
  }
  if (WeightFiles::embedded())
    return "";
  return options.get("--weights"); // "COMMAND needs --weights"
}

std::unique_ptr<Model> loadModel(const std::string &weightsPath) {
  std::string error;
  std::unique_ptr<Model> model = Model::createLinked(weightsPath, error);
  if (!model)
    fail(error);
  return model;
}

std::vector<support::OutputFile>
checkOutputs(const std::vector<std::pair<std::string, std::string>> &outputs,
             const std::vector<std::pair<std::string, std::string>> &inputs) {
  std::vector<support::OutputFile> files;
  for (const auto &[flag, path] : outputs) {
    std::string error;
    std::optional<support::OutputFile> file = support::OutputFile::create(flag, path, inputs,
                                                        /*refuseFilesRead=*/true,
                                                        error);
    if (!file)
      fail(error);
    files.push_back(std::move(*file));
  }
  return files;
}

std::vector<std::pair<std::string, std::string>>
inputFiles(const Options &options, const std::vector<std::string> &flags) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string &flag : flags) {
    if (!options.has(flag))
      continue;
    const std::string &value = options.get(flag);
    // Id lists name a file as @FILE; the other flags are paths.
    if (flag == "--ids" || flag == "--decoder-ids" || flag == "--prompt" ||
        flag == "--source") {
      if (!value.empty() && value[0] == '@')
        files.emplace_back(flag, value.substr(1));
      continue;
    }
    // A checkpoint directory or index stands for its files.
    if (flag == "--weights") {
      for (const std::string &path : WeightFiles::inputPaths(value))
        files.emplace_back(flag, path);
      continue;
    }
    files.emplace_back(flag, value);
  }
  return files;
}

void printLoadStats(std::FILE *out, const LoadStats &stats) {
  std::string conversion =
      stats.convertedTensors == 0
          ? std::string("no conversion")
          : fmt::format("conversion {:.1f} ms ({} {})",
                        stats.convertSeconds * 1e3, stats.convertedTensors,
                        stats.convertedTensors == 1 ? "tensor" : "tensors");
  std::fprintf(out,
               "load: %.1f ms (map, page-in and check %.1f ms, %s; weights "
               "%.1f MiB)\n",
               stats.loadSeconds * 1e3, stats.mapSeconds * 1e3,
               conversion.c_str(),
               static_cast<double>(stats.weightBytes) / (1 << 20));
}

void writeOutputs(support::OutputFile &file, const std::vector<OutputView> &outputs) {
  std::vector<TensorView> views;
  for (const OutputView &output : outputs) {
    TensorView view;
    view.name = output.name;
    view.dtype = DType::F32;
    view.shape = output.shape;
    view.data = output.data;
    view.bytes =
        static_cast<std::size_t>(output.numElements()) * sizeof(float);
    views.push_back(std::move(view));
  }
  std::string error;
  if (!writeSafetensors(file, views, error))
    fail(error);
}

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

/// Every command, in --help's order: the one table dispatch() and its
/// messages read (the messages once named four of the seven).
struct Command {
  const char *name;
  int (*run)(int argc, char **argv);
};
constexpr Command kCommands[] = {
    {"run", runCommand},
    {"generate", generateCommand},
    {"serve", serveCommand},
    {"bench", benchCommand},
    {"init-weights", initWeightsCommand},
    {"convert-weights", convertWeightsCommand},
    {"info", infoCommand},
};

std::string commandList() {
  std::string list;
  for (const Command &command : kCommands)
    list += std::string(command.name) + ", ";
  return list + "help";
}

int dispatch(int argc, char **argv) {
  if (argc < 2)
    fail(fmt::format("missing command ({}); see '{} --help'", commandList(),
                     program));
  std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    if (argc > 2)
      fail(fmt::format("{}: unexpected argument {}", command, support::quote(argv[2])));
    printUsage(stdout);
    return 0;
  }
  for (const Command &known : kCommands)
    if (command == known.name)
      return known.run(argc, argv);
  if (command.rfind("-", 0) == 0)
    fail(fmt::format("unknown option {}; the command comes first ({})",
                     support::quote(command), commandList()));
  fail(fmt::format("unknown command {} ({})", support::quote(command), commandList()));
}

} // namespace
} // namespace tfmc::runtime::cli

int main(int argc, char **argv) {
  using namespace tfmc::runtime;
  using namespace tfmc::runtime::cli;
  if (argc > 0 && argv[0] && *argv[0]) {
    program = argv[0];
    if (std::size_t slash = program.rfind('/'); slash != std::string::npos)
      program = program.substr(slash + 1);
  }
  try {
    return dispatch(argc, argv);
  } catch (const CliError &e) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(),
                 tfmc::support::oneLine(e.message).c_str());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of memory\n", program.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(),
                 tfmc::support::oneLine(e.what()).c_str());
  }
  return 1;
}
