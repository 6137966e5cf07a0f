//===- Main.cpp - The command line of a compiled model --------------------===//
//
// `tfmc MODEL -o NAME` links this file's main() with the model's kernels and
// plan, giving the executable NAME:
//
//   NAME run --weights W --input IN --output OUT [--threads N]
//   NAME run --weights W --ids 5,6,7 [--decoder-ids 1,5,9] [--output OUT]
//            [--threads N]
//   NAME init-weights --seed N --output W
//   NAME bench --weights W [--seq S] [--batch B] [--repeat N] [--warmup K]
//              [--threads N] [--entry forward|prefill|decode_step] [--json]
//   NAME info
//   NAME help | --help
//
// Every failure is one line on stderr, `NAME: error: ...`, and exit code 1.
// It is a separate library from the runtime because `--emit lib` must not
// contain a main().
//
//===----------------------------------------------------------------------===//

#include "runtime/Generate.h"
#include "runtime/Model.h"
#include "runtime/Safetensors.h"
#include "runtime/Tokenizer.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

using namespace tfmc::runtime;

namespace {

std::string programName = "model";

/// A failure that ends the program: one line, exit code 1.
struct CliError {
  std::string message;
};

[[noreturn]] void fail(std::string message) {
  throw CliError{std::move(message)};
}

void printUsage(std::FILE *out) {
  const char *name = programName.c_str();
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
      "  generate --weights W --prompt 1,2,3 --max-new-tokens N [--eos E]\n"
      "  generate --weights W --source 5,6,7 --bos 1 [--eos 2] --max-new-tokens N\n"
      "      [--stats] [--threads N] [--dump-logits OUT.safetensors]\n"
      "      [--tokenizer DIR --text \"...\" | --text-file F]  (GPT-2 BPE: text\n"
      "      in, text out)\n"
      "      greedy decoding with a KV cache (decoder-only: --prompt;\n"
      "      encoder-decoder: --source and --bos); prints the new token ids\n"
      "      (eos included when reached) on one line; --stats prints prefill\n"
      "      time and decode tokens/s to stderr\n"
      "  init-weights --seed N --output W.safetensors\n"
      "      write deterministic random weights for this model\n"
      "  bench --weights W [--seq S] [--batch B] [--repeat N] [--warmup K]\n"
      "      [--threads N] [--entry forward|prefill|decode_step] [--json]\n"
      "      time the model on random ids (fixed seed; masks all ones) of\n"
      "      shape [B, S] (defaults: S = min(128, max seq), B = 1, N = 10,\n"
      "      K = 2): K warm-up runs, then N timed runs; prints the median, min\n"
      "      and max milliseconds of the whole entry and of each kernel, and\n"
      "      the sum of medians per op; decode_step prefills S tokens and\n"
      "      times N decode steps (batch 1, S + N <= max_len); --json prints\n"
      "      one JSON object a line\n"
      "  info\n"
      "      describe the compiled model: inputs, output, weights, memory\n"
      "  help\n"
      "      show this message\n",
      name);
}

/// The options of one subcommand: `--name value` or `--name=value`.
class Options {
public:
  Options(std::string command, std::set<std::string> allowed, int argc,
          char **argv, int first, std::set<std::string> flags = {})
      : command_(std::move(command)) {
    for (int i = first; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        helpRequested_ = true;
        continue;
      }
      if (arg.rfind("--", 0) != 0 || arg.size() == 2)
        fail(fmt::format("{}: unexpected argument '{}'", command_, arg));
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
        fail(fmt::format("{}: unknown option '{}'", command_, name));
      if (!hasValue) {
        if (i + 1 >= argc)
          fail(fmt::format("{} needs a value", name));
        value = argv[++i];
      }
      if (values_.count(name))
        fail(fmt::format("{} is given twice", name));
      values_[name] = value;
    }
  }

  bool helpRequested() const { return helpRequested_; }
  bool has(const std::string &name) const { return values_.count(name) > 0; }
  const std::string &get(const std::string &name) const {
    auto it = values_.find(name);
    if (it == values_.end())
      fail(fmt::format("{} needs {}", command_, name));
    return it->second;
  }

private:
  std::string command_;
  std::map<std::string, std::string> values_;
  bool helpRequested_ = false;
};

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

void applyThreads(const Options &options) {
  if (!options.has("--threads"))
    return;
  const std::string &text = options.get("--threads");
  std::optional<int64_t> threads = parseInteger(text);
  if (!threads)
    fail(fmt::format("--threads expects a positive integer, got '{}'", text));
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
    std::ifstream in(text.substr(1));
    if (!in)
      fail(fmt::format("{}: cannot read '{}'", flag, text.substr(1)));
    std::stringstream contents;
    contents << in.rdbuf();
    text.clear();
    for (char c : contents.str())
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
      fail(fmt::format("{} expects comma-separated token ids, got '{}'", flag,
                       text));
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

std::unique_ptr<Model> loadModel(const std::string &weightsPath) {
  std::string error;
  std::unique_ptr<Model> model = Model::createLinked(weightsPath, error);
  if (!model)
    fail(error);
  return model;
}

/// `batch 2 x 37 tokens`, `batch 2 x 37 + 29 tokens` (encoder-decoder).
std::string describeBatch(const Plan &plan,
                          const std::map<std::string, IntegerTensor> &inputs) {
  int64_t batch = 0;
  std::string lengths;
  for (const PlanInput &input : plan.inputs) {
    auto it = inputs.find(input.name);
    if (input.kind != InputKind::Ids || it == inputs.end() ||
        it->second.shape.size() != 2)
      continue;
    batch = it->second.shape[0];
    lengths +=
        fmt::format("{}{}", lengths.empty() ? "" : " + ", it->second.shape[1]);
  }
  return fmt::format("batch {} x {} tokens", batch, lengths);
}

OutputView runTimed(Model &model,
                    const std::map<std::string, IntegerTensor> &inputs) {
  std::string error;
  auto start = std::chrono::steady_clock::now();
  std::optional<OutputView> output = model.forward(inputs, error);
  auto stop = std::chrono::steady_clock::now();
  if (!output)
    fail(error);
  double ms = std::chrono::duration<double, std::milli>(stop - start).count();
  std::fprintf(stderr, "forward: %s in %.1f ms\n",
               describeBatch(model.plan(), inputs).c_str(), ms);
  return *output;
}

void writeOutput(const std::string &path, const OutputView &output) {
  TensorView view;
  view.name = output.name;
  view.dtype = DType::F32;
  view.shape = output.shape;
  view.data = output.data;
  view.bytes = static_cast<std::size_t>(output.numElements()) * sizeof(float);
  std::string error;
  if (!writeSafetensors(path, {view}, error))
    fail(error);
}

int runCommand(int argc, char **argv) {
  Options options("run",
                  {"--weights", "--input", "--output", "--ids", "--decoder-ids",
                   "--threads"},
                  argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const std::string &weights = options.get("--weights");
  bool fromFile = options.has("--input");
  bool fromIds = options.has("--ids") || options.has("--decoder-ids");
  if (fromFile && fromIds)
    fail("run takes either --input or --ids, not both");
  if (!fromFile && !fromIds)
    fail("run needs --input (with --output) or --ids");
  if (fromFile && !options.has("--output"))
    fail("run needs --output");
  applyThreads(options);

  const Plan &plan = requirePlan();
  std::map<std::string, IntegerTensor> inputs;
  if (fromFile) {
    std::string error;
    std::optional<SafetensorsFile> file =
        SafetensorsFile::open(options.get("--input"), error);
    if (!file)
      fail(error);
    std::string names;
    for (const PlanInput &input : plan.inputs)
      names += (names.empty() ? "" : ", ") + input.name;
    for (const TensorView &tensor : file->tensors()) {
      const PlanInput *input = nullptr;
      for (const PlanInput &candidate : plan.inputs)
        if (candidate.name == tensor.name)
          input = &candidate;
      if (!input)
        fail(fmt::format("{}: unknown input '{}'; this model takes {}",
                         file->path(), tensor.name, names));
      std::optional<IntegerTensor> values = readIntegerTensor(
          *file, tensor.name,
          input->kind == InputKind::Mask ? IntegerInputKind::Mask
                                         : IntegerInputKind::Ids,
          error);
      if (!values)
        fail(error);
      inputs[tensor.name] = std::move(*values);
    }
  } else {
    const char *flags[] = {"--ids", "--decoder-ids"};
    const char *names[] = {"input_ids", "decoder_input_ids"};
    for (int i = 0; i < 2; ++i) {
      if (!options.has(flags[i]))
        continue;
      IntegerTensor tensor;
      tensor.values = parseIdList(flags[i], options.get(flags[i]));
      tensor.shape = {1, static_cast<int64_t>(tensor.values.size())};
      inputs[names[i]] = std::move(tensor);
    }
  }

  std::unique_ptr<Model> model = loadModel(weights);
  OutputView output = runTimed(*model, inputs);
  if (options.has("--output"))
    writeOutput(options.get("--output"), output);
  if (fromIds) {
    std::printf("%s: %s\n", output.name.c_str(),
                formatShape(output.shape).c_str());
    if (output.name == "logits" && output.shape.size() == 3) {
      int64_t rows = output.shape[0] * output.shape[1];
      int64_t vocab = output.shape[2];
      std::string line = "argmax:";
      for (int64_t r = 0; r < rows; ++r) {
        const float *row = output.data + r * vocab;
        int64_t best = 0;
        for (int64_t v = 1; v < vocab; ++v)
          if (row[v] > row[best])
            best = v;
        line += fmt::format(" {}", best);
      }
      std::printf("%s\n", line.c_str());
    }
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// init-weights: deterministic N(0, 0.02^2) weights, LayerNorm gains 1 and
// biases 0. splitmix64 and Box-Muller in double, rounded once to float, so the
// file is the same on every machine.
//===----------------------------------------------------------------------===//

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string &text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// LayerNorm parameters: nn.Transformer's norm1..3 and final norm, and
/// GPT-2's ln_1, ln_2, ln_f (gains 1, biases 0).
std::optional<float> layerNormConstant(const std::string &name) {
  for (const char *norm :
       {"norm1", "norm2", "norm3", "norm", "ln_1", "ln_2", "ln_f"}) {
    if (endsWith(name, std::string(norm) + ".weight"))
      return 1.0f;
    if (endsWith(name, std::string(norm) + ".bias"))
      return 0.0f;
  }
  return std::nullopt;
}

void fillWeight(const std::string &name, uint64_t seed,
                std::vector<float> &values) {
  if (std::optional<float> constant = layerNormConstant(name)) {
    std::fill(values.begin(), values.end(), *constant);
    return;
  }
  uint64_t state = seed ^ fnv1a(name);
  const double twoPi = 6.283185307179586476925286766559;
  for (std::size_t i = 0; i < values.size(); i += 2) {
    // u1 in (0, 1] keeps the log finite.
    double u1 = static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    double radius = std::sqrt(-2.0 * std::log(u1));
    values[i] = static_cast<float>(0.02 * radius * std::cos(twoPi * u2));
    if (i + 1 < values.size())
      values[i + 1] = static_cast<float>(0.02 * radius * std::sin(twoPi * u2));
  }
}

int generateCommand(int argc, char **argv) {
  Options options("generate",
                  {"--weights", "--prompt", "--source", "--bos", "--eos",
                   "--max-new-tokens", "--threads", "--dump-logits",
                   "--tokenizer", "--text", "--text-file"},
                  argc, argv, 2, {"--stats"});
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &plan = requirePlan();
  bool encoderDecoder = false;
  for (const PlanInput &input : plan.inputs)
    encoderDecoder |= input.name == "decoder_input_ids";
  auto integer = [&](const std::string &flag) {
    std::optional<int64_t> value = parseInteger(options.get(flag));
    if (!value)
      fail(fmt::format("{} expects an integer, got '{}'", flag,
                       options.get(flag)));
    return *value;
  };

  // With --tokenizer, --text is encoded (GPT-2 byte-level BPE) into the
  // prompt (or source), and the new tokens are printed as text.
  std::optional<Gpt2Tokenizer> tokenizer;
  if (options.has("--tokenizer")) {
    std::string error;
    tokenizer = Gpt2Tokenizer::load(options.get("--tokenizer"), error);
    if (!tokenizer)
      fail(error);
  } else if (options.has("--text") || options.has("--text-file")) {
    fail("--text needs --tokenizer DIR (vocab.json and merges.txt)");
  }
  std::vector<int64_t> textIds;
  if (options.has("--text") || options.has("--text-file")) {
    if (options.has("--prompt") || options.has("--source") ||
        (options.has("--text") && options.has("--text-file")))
      fail("--text (or --text-file) replaces --prompt/--source: give one");
    std::string text;
    if (options.has("--text-file")) {
      std::ifstream in(options.get("--text-file"), std::ios::binary);
      if (!in)
        fail(fmt::format("--text-file: cannot read '{}'",
                         options.get("--text-file")));
      std::stringstream contents;
      contents << in.rdbuf();
      text = contents.str();
    } else {
      text = options.get("--text");
    }
    std::string error;
    if (!tokenizer->encode(text, textIds, error))
      fail(error);
    if (textIds.empty())
      fail("--text is empty");
  }

  GenerateRequest request;
  request.encoderDecoder = encoderDecoder;
  if (!textIds.empty()) {
    request.prompt = textIds;
    if (encoderDecoder)
      request.bos = integer("--bos");
  } else if (encoderDecoder) {
    if (options.has("--prompt"))
      fail(fmt::format("model '{}' is an encoder-decoder: give --source and "
                       "--bos, not --prompt",
                       plan.model));
    request.prompt = parseIdList("--source", options.get("--source"));
    request.bos = integer("--bos");
  } else {
    if (options.has("--source") || options.has("--bos"))
      fail(fmt::format("model '{}' is decoder-only: give --prompt, not "
                       "--source/--bos",
                       plan.model));
    request.prompt = parseIdList("--prompt", options.get("--prompt"));
  }
  if (options.has("--eos"))
    request.eos = integer("--eos");
  request.maxNewTokens = integer("--max-new-tokens");
  request.keepLogits = options.has("--dump-logits");

  std::unique_ptr<Model> model = loadModel(options.get("--weights"));
  applyThreads(options);
  std::string error;
  std::optional<GenerateResult> result = generate(*model, request, error);
  if (!result)
    fail(error);

  std::string line;
  if (tokenizer) {
    line = Gpt2Tokenizer::toValidUtf8(tokenizer->decode(result->tokens));
  } else {
    for (int64_t token : result->tokens)
      line += fmt::format("{}{}", line.empty() ? "" : " ", token);
  }
  std::printf("%s\n", line.c_str());
  if (options.has("--stats")) {
    std::fprintf(stderr, "prefill: %zu tokens in %.1f ms\n",
                 request.encoderDecoder ? std::size_t(1) + request.prompt.size()
                                        : request.prompt.size(),
                 result->prefillSeconds * 1e3);
    double perSecond = result->decodeSeconds > 0
                           ? double(result->decodeSteps) / result->decodeSeconds
                           : 0.0;
    std::fprintf(stderr, "decode: %lld steps in %.1f ms, %.1f tokens/s\n",
                 static_cast<long long>(result->decodeSteps),
                 result->decodeSeconds * 1e3, perSecond);
  }
  if (request.keepLogits) {
    OutputView view;
    view.name = "logits";
    view.shape = {1,
                  static_cast<int64_t>(result->logits.size()) / result->vocab,
                  result->vocab};
    view.data = result->logits.data();
    writeOutput(options.get("--dump-logits"), view);
  }
  return 0;
}

int initWeightsCommand(int argc, char **argv) {
  Options options("init-weights", {"--seed", "--output"}, argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const std::string &seedText = options.get("--seed");
  std::optional<int64_t> seed = parseInteger(seedText);
  if (!seed || *seed < 0)
    fail(fmt::format("--seed expects a non-negative integer, got '{}'",
                     seedText));
  const std::string &path = options.get("--output");
  const Plan &plan = requirePlan();

  std::vector<std::vector<float>> storage;
  std::vector<TensorView> views;
  std::size_t bytes = 0;
  storage.reserve(plan.weights.size());
  for (const PlanWeight &weight : plan.weights) {
    int64_t count = elementCount(weight.shape).value_or(0);
    storage.emplace_back(static_cast<std::size_t>(count));
    fillWeight(weight.name, static_cast<uint64_t>(*seed), storage.back());
    TensorView view;
    view.name = weight.name;
    view.dtype = DType::F32;
    view.shape = weight.shape;
    if (weight.transposed) // stored as the file would hold it (Conv1D)
      std::reverse(view.shape.begin(), view.shape.end());
    view.data = storage.back().data();
    view.bytes = storage.back().size() * sizeof(float);
    bytes += view.bytes;
    views.push_back(std::move(view));
  }
  std::string error;
  if (!writeSafetensors(
          path, views, error,
          {{"tfmc", fmt::format("init-weights --seed {}", *seed)}}))
    fail(error);
  std::fprintf(stderr, "init-weights: wrote %zu %s (%.1f MiB) to %s\n",
               views.size(), views.size() == 1 ? "tensor" : "tensors",
               static_cast<double>(bytes) / (1 << 20), path.c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// bench: the model's own kernels, timed. Inputs are random ids (a fixed
// seed) and all-ones masks; each figure is the median, min and max over the
// timed runs, after warm-up runs that are not counted.
//===----------------------------------------------------------------------===//

/// Median, min and max of some timings, in milliseconds.
struct Summary {
  double median = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> seconds) {
  Summary summary;
  if (seconds.empty())
    return summary;
  std::sort(seconds.begin(), seconds.end());
  std::size_t n = seconds.size();
  double median = n % 2 ? seconds[n / 2]
                        : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  summary.median = median * 1e3;
  summary.min = seconds.front() * 1e3;
  summary.max = seconds.back() * 1e3;
  return summary;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", static_cast<char>(c));
    else if (c < 0x20)
      out += fmt::format("\\u{:04x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

/// The extents of a step argument with the symbols bound, innermost first
/// (-1 for a symbol without a value).
std::vector<int64_t> resolveDims(const Plan &plan,
                                 const std::vector<DimExpr> &dims,
                                 const std::map<std::string, int64_t> &bound) {
  std::vector<int64_t> extents;
  for (const DimExpr &dim : dims) {
    int64_t extent = 1;
    for (const DimTerm &term : dim) {
      if (!term.isSymbol) {
        extent *= term.value;
        continue;
      }
      auto it = bound.find(plan.symbols[term.value]);
      if (it == bound.end()) {
        extent = -1;
        break;
      }
      extent *= it->second;
    }
    extents.push_back(extent);
  }
  return extents;
}

int benchCommand(int argc, char **argv) {
  Options options("bench",
                  {"--weights", "--seq", "--batch", "--repeat", "--warmup",
                   "--threads", "--entry"},
                  argc, argv, 2, {"--json"});
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &forwardPlan = requirePlan();
  auto integer = [&](const std::string &flag, int64_t fallback,
                     int64_t least) {
    if (!options.has(flag))
      return fallback;
    std::optional<int64_t> value = parseInteger(options.get(flag));
    if (!value || *value < least)
      fail(fmt::format("{} expects an integer of at least {}, got '{}'", flag,
                       least, options.get(flag)));
    return *value;
  };
  const std::string entryName =
      options.has("--entry") ? options.get("--entry") : "forward";
  if (entryName != "forward" && entryName != "prefill" &&
      entryName != "decode_step")
    fail(fmt::format("--entry expects forward, prefill or decode_step, got "
                     "'{}'",
                     entryName));
  const bool decode = entryName == "decode_step";
  const int64_t seq =
      integer("--seq", std::min<int64_t>(128, forwardPlan.maxSeq), 1);
  const int64_t batch = integer("--batch", 1, 1);
  int64_t repeat = integer("--repeat", 10, 1);
  const int64_t warmup = integer("--warmup", 2, 0);
  const bool json = options.has("--json");
  if (seq > forwardPlan.maxSeq)
    fail(fmt::format("--seq {} is more than the compiled max seq {}", seq,
                     forwardPlan.maxSeq));
  if (batch > forwardPlan.maxBatch && !decode)
    fail(fmt::format("--batch {} is more than the compiled max batch {}",
                     batch, forwardPlan.maxBatch));
  if (decode && batch != 1)
    fail("--entry decode_step runs batch 1 (generation is one sequence)");

  std::unique_ptr<Model> model = loadModel(options.get("--weights"));
  applyThreads(options);
  const Plan *timedPlan = model->entry(entryName);
  if (!timedPlan)
    fail(fmt::format("model '{}' has no entry point '{}'{}", forwardPlan.model,
                     entryName,
                     entryName == "forward"
                         ? ""
                         : " (it has no decoder, or its masks have no "
                           "decode step)"));
  bool encoderDecoder = false;
  for (const PlanInput &input : forwardPlan.inputs)
    encoderDecoder |= input.name == "decoder_input_ids";

  // Random in-range ids, the same on every run of every build.
  uint64_t state = 0x7466'6d63'6265'6e63ull; // "tfmcbenc"
  auto randomIds = [&](int64_t count) {
    std::vector<int64_t> ids(static_cast<std::size_t>(count));
    for (int64_t &id : ids)
      id = static_cast<int64_t>(splitmix64(state) %
                                static_cast<uint64_t>(forwardPlan.vocab));
    return ids;
  };
  // Storage for every input, keyed by entry and name, that the views point
  // into.
  std::map<std::string, std::vector<int64_t>> storage;
  std::map<std::string, int64_t> bound; // symbol values, for reports
  // How many tokens each input of an entry gets (0: left out): [B, S] for
  // a forward or prefill; in a decode run the prefill takes the prompt (an
  // encoder-decoder: the source and one start token) and each decode step
  // one token, as `generate` feeds them.
  auto lengthOf = [&](const Plan &plan, const PlanInput &input) -> int64_t {
    if (!decode)
      return seq;
    bool decoderSide = input.name.rfind("decoder_", 0) == 0;
    if (plan.entry != "decode_step")
      return encoderDecoder && decoderSide ? 1 : seq;
    if (encoderDecoder)
      return input.name == "decoder_input_ids" ? 1
             : input.name == "attention_mask"  ? seq
                                               : 0;
    return input.name == "input_ids" ? 1 : 0;
  };
  auto inputsFor = [&](const Plan &plan, int64_t rows) {
    std::vector<InputView> views;
    for (const PlanInput &input : plan.inputs) {
      int64_t n = lengthOf(plan, input);
      if (n == 0)
        continue;
      std::vector<int64_t> &values = storage[plan.entry + "/" + input.name];
      values = input.kind == InputKind::Mask
                   ? std::vector<int64_t>(static_cast<std::size_t>(rows * n), 1)
                   : randomIds(rows * n);
      views.push_back({input.name, {rows, n}, values.data()});
    }
    return views;
  };

  std::vector<double> stepSeconds;
  model->setStepTimes(&stepSeconds);
  std::vector<double> totals;
  std::vector<std::vector<double>> perStep(timedPlan->steps.size());
  std::string error;
  auto runOnce = [&](const Plan &plan, const std::vector<InputView> &inputs,
                     bool record) {
    auto start = std::chrono::steady_clock::now();
    std::optional<OutputView> output = model->run(plan.entry, inputs, error);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (!output)
      fail(error);
    if (!record)
      return;
    totals.push_back(seconds);
    for (std::size_t s = 0; s < perStep.size() && s < stepSeconds.size(); ++s)
      perStep[s].push_back(stepSeconds[s]);
  };

  int64_t past = 0;
  std::string shape;
  if (!decode) {
    std::vector<InputView> inputs = inputsFor(*timedPlan, batch);
    for (int64_t i = 0; i < warmup; ++i)
      runOnce(*timedPlan, inputs, false);
    for (int64_t i = 0; i < repeat; ++i)
      runOnce(*timedPlan, inputs, true);
    bound = {{"B", batch}, {"S", seq}, {"T", seq}, {"P", 0}, {"L", seq}};
    shape = fmt::format("batch {} x {} tokens", batch, seq);
  } else {
    const Plan *prefillPlan = model->entry("prefill");
    if (!prefillPlan)
      fail(fmt::format("model '{}' has no prefill entry point",
                       forwardPlan.model));
    // The decoder's rows after the prefill: the prompt, or the start token.
    const int64_t start = encoderDecoder ? 1 : seq;
    if (start + 1 > forwardPlan.maxLen)
      fail(fmt::format("--seq {} leaves no room for a decode step (max_len "
                       "{})",
                       seq, forwardPlan.maxLen));
    // Each step appends a row: stop before max_len.
    int64_t room = forwardPlan.maxLen - start;
    if (repeat > room) {
      std::fprintf(stderr,
                   "bench: %lld decode steps after %lld rows reach max_len "
                   "%lld: timing %lld\n",
                   static_cast<long long>(repeat),
                   static_cast<long long>(start),
                   static_cast<long long>(forwardPlan.maxLen),
                   static_cast<long long>(room));
      repeat = room;
    }
    std::vector<InputView> prefillInputs = inputsFor(*prefillPlan, 1);
    auto decodeSteps = [&](int64_t steps, bool record) {
      runOnce(*prefillPlan, prefillInputs, false);
      for (int64_t i = 0; i < steps; ++i) {
        std::vector<InputView> stepInputs = inputsFor(*timedPlan, 1);
        runOnce(*timedPlan, stepInputs, record);
      }
    };
    // Warm-up steps from a prefill, then a fresh prefill for the timed
    // ones, so that they cover decoder rows start .. start + N - 1.
    decodeSteps(std::min(warmup, room), false);
    decodeSteps(repeat, true);
    past = start + repeat - 1;
    bound = {{"B", 1}, {"S", encoderDecoder ? seq : 1}, {"T", 1},
             {"P", past}, {"L", past + 1}};
    shape = fmt::format("{} decode steps after {} {}", repeat, start,
                        encoderDecoder ? "decoder row (source " +
                                             std::to_string(seq) + ")"
                                       : "prompt tokens");
  }
  model->setStepTimes(nullptr);

  const Summary total = summarize(totals);
  double wallSeconds = 0;
  for (double t : totals)
    wallSeconds += t;
  int threads = 0;
  if (options.has("--threads"))
    threads = static_cast<int>(*parseInteger(options.get("--threads")));

  std::vector<Summary> steps;
  double kernelSum = 0;
  std::vector<std::string> opOrder;
  std::map<std::string, std::pair<int, double>> perOp;
  for (std::size_t s = 0; s < perStep.size(); ++s) {
    steps.push_back(summarize(perStep[s]));
    kernelSum += steps.back().median;
    std::string op = timedPlan->steps[s].op.empty() ? "?" : timedPlan->steps[s].op;
    if (!perOp.count(op))
      opOrder.push_back(op);
    perOp[op].first += 1;
    perOp[op].second += steps.back().median;
  }
  auto argsText = [&](const PlanStep &step) {
    std::string text;
    for (const PlanArg &arg : step.args) {
      std::vector<int64_t> extents = resolveDims(*timedPlan, arg.dims, bound);
      std::string dims;
      for (int64_t e : extents)
        dims += fmt::format("{}{}", dims.empty() ? "" : ",", e);
      text += fmt::format("{}[{}]", text.empty() ? "" : " ", dims);
    }
    return text;
  };

  if (json) {
    std::printf(
        "{\"type\": \"total\", \"model\": %s, \"entry\": %s, \"target\": %s, "
        "\"batch\": %lld, \"seq\": %lld, \"threads\": %d, \"repeat\": %lld, "
        "\"warmup\": %lld, \"median_ms\": %.6f, \"min_ms\": %.6f, "
        "\"max_ms\": %.6f, \"kernel_median_sum_ms\": %.6f, "
        "\"runs_per_s\": %.6f}\n",
        jsonString(forwardPlan.model).c_str(), jsonString(entryName).c_str(),
        jsonString(forwardPlan.target).c_str(), static_cast<long long>(batch),
        static_cast<long long>(seq), threads, static_cast<long long>(repeat),
        static_cast<long long>(warmup), total.median, total.min, total.max,
        kernelSum, wallSeconds > 0 ? double(totals.size()) / wallSeconds : 0.0);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const PlanStep &step = timedPlan->steps[s];
      std::string args;
      for (const PlanArg &arg : step.args) {
        std::vector<int64_t> extents = resolveDims(*timedPlan, arg.dims, bound);
        std::string dims;
        for (int64_t e : extents)
          dims += fmt::format("{}{}", dims.empty() ? "" : ", ", e);
        args += fmt::format("{}[{}]", args.empty() ? "" : ", ", dims);
      }
      std::printf("{\"type\": \"step\", \"index\": %zu, \"kernel\": %s, "
                  "\"op\": %s, \"loc\": %s, \"dims\": [%s], "
                  "\"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f}\n",
                  s, jsonString(step.kernel).c_str(),
                  jsonString(step.op).c_str(), jsonString(step.loc).c_str(),
                  args.c_str(), steps[s].median, steps[s].min, steps[s].max);
    }
    for (const std::string &op : opOrder)
      std::printf("{\"type\": \"op\", \"op\": %s, \"steps\": %d, "
                  "\"median_sum_ms\": %.6f}\n",
                  jsonString(op).c_str(), perOp[op].first, perOp[op].second);
    return 0;
  }

  std::printf("bench: model %s, entry %s, %s, %s, %lld runs after %lld "
              "warm-up\n",
              forwardPlan.model.c_str(), entryName.c_str(), shape.c_str(),
              threads ? fmt::format("{} threads", threads).c_str()
                      : "default threads",
              static_cast<long long>(repeat), static_cast<long long>(warmup));
  std::printf("%s: median %.3f ms, min %.3f, max %.3f (kernels: %.3f ms)\n",
              entryName.c_str(), total.median, total.min, total.max,
              kernelSum);
  if (decode)
    std::printf("decode: %.1f tokens/s\n",
                wallSeconds > 0 ? double(totals.size()) / wallSeconds : 0.0);
  std::printf("\n%4s  %-22s %10s %10s %10s  %-24s %s\n", "step", "op",
              "median ms", "min", "max", "loc", "dims (innermost first)");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const PlanStep &step = timedPlan->steps[s];
    // loc("dir/model.tfm":8:5) -> model.tfm:8:5
    std::string loc = step.loc;
    if (loc.rfind("loc(", 0) == 0 && loc.back() == ')')
      loc = loc.substr(4, loc.size() - 5);
    loc.erase(std::remove(loc.begin(), loc.end(), '"'), loc.end());
    if (std::size_t slash = loc.rfind('/'); slash != std::string::npos)
      loc = loc.substr(slash + 1);
    if (loc.size() > 24)
      loc = "..." + loc.substr(loc.size() - 21);
    std::printf("%4zu  %-22s %10.3f %10.3f %10.3f  %-24s %s\n", s + 1,
                step.op.empty() ? "?" : step.op.c_str(), steps[s].median,
                steps[s].min, steps[s].max, loc.c_str(),
                argsText(step).c_str());
  }
  std::printf("\n%-22s %6s %14s %7s\n", "op", "steps", "sum of medians",
              "share");
  for (const std::string &op : opOrder)
    std::printf("%-22s %6d %11.3f ms %6.1f%%\n", op.c_str(), perOp[op].first,
                perOp[op].second,
                kernelSum > 0 ? 100.0 * perOp[op].second / kernelSum : 0.0);
  return 0;
}

int infoCommand(int argc, char **argv) {
  Options options("info", {}, argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &plan = requirePlan();
  int64_t parameters = 0;
  for (const PlanWeight &weight : plan.weights)
    parameters += elementCount(weight.shape).value_or(0);
  std::set<std::string> kernels;
  for (const PlanStep &step : plan.steps)
    kernels.insert(step.kernel);

  std::printf("model: %s\n", plan.model.c_str());
  std::printf("entry: %s\n", plan.entry.c_str());
  std::printf("target: %s\n", plan.target.c_str());
  std::printf("device: %s\n", plan.device == "cuda"
                                  ? "cuda (weights, arena and KV cache in "
                                    "GPU memory)"
                                  : "host");
  for (const PlanInput &input : plan.inputs)
    std::printf("input: %s %s (%s%s)\n", input.name.c_str(),
                formatDims(plan, input.dims).c_str(),
                input.kind == InputKind::Ids ? "token ids" : "mask",
                input.optional ? ", optional" : "");
  std::printf("output: %s %s f32\n", plan.output.name.c_str(),
              formatDims(plan, plan.output.dims).c_str());
  std::printf("weights: %zu tensors, %lld parameters, %lld bytes (%.1f MiB)\n",
              plan.weights.size(), static_cast<long long>(parameters),
              static_cast<long long>(parameters * 4),
              static_cast<double>(parameters) * 4 / (1 << 20));
  std::printf("arena: %lld bytes (%.1f MiB)\n",
              static_cast<long long>(plan.arenaBytes),
              static_cast<double>(plan.arenaBytes) / (1 << 20));
  std::printf(
      "limits: vocab %lld, max_len %lld, max batch %lld, max seq %lld\n",
      static_cast<long long>(plan.vocab), static_cast<long long>(plan.maxLen),
      static_cast<long long>(plan.maxBatch),
      static_cast<long long>(plan.maxSeq));
  std::printf("kernels: %zu steps, %zu distinct kernels\n", plan.steps.size(),
              kernels.size());
  return 0;
}

int dispatch(int argc, char **argv) {
  if (argc < 2)
    fail(fmt::format("missing command (run, init-weights, info); see '{} "
                     "--help'",
                     programName));
  std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    if (argc > 2)
      fail(fmt::format("{}: unexpected argument '{}'", command, argv[2]));
    printUsage(stdout);
    return 0;
  }
  if (command == "run")
    return runCommand(argc, argv);
  if (command == "generate")
    return generateCommand(argc, argv);
  if (command == "init-weights")
    return initWeightsCommand(argc, argv);
  if (command == "info")
    return infoCommand(argc, argv);
  if (command == "bench")
    return benchCommand(argc, argv);
  if (command.rfind("-", 0) == 0)
    fail(fmt::format("unknown option '{}'; the command comes first (run, "
                     "init-weights, info, help)",
                     command));
  fail(fmt::format("unknown command '{}' (run, init-weights, info, help)",
                   command));
}

/// One line whatever a message holds.
std::string oneLine(std::string text) {
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return text;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 0 && argv[0] && *argv[0]) {
    programName = argv[0];
    if (std::size_t slash = programName.rfind('/'); slash != std::string::npos)
      programName = programName.substr(slash + 1);
  }
  try {
    return dispatch(argc, argv);
  } catch (const CliError &e) {
    std::fprintf(stderr, "%s: error: %s\n", programName.c_str(),
                 oneLine(e.message).c_str());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of memory\n", programName.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", programName.c_str(),
                 oneLine(e.what()).c_str());
  }
  return 1;
}
