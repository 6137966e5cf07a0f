//===- Main.cpp - The command line of a compiled model --------------------===//
//
// `tfmc MODEL -o NAME` links this file's main() with the model's kernels and
// plan, giving the executable NAME:
//
//   NAME run --weights W --input IN --output OUT [--threads N]
//   NAME run --weights W --ids 5,6,7 [--decoder-ids 1,5,9] [--output OUT]
//            [--threads N]
//   NAME init-weights --seed N --output W
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

std::string dimsText(const Plan &plan, const std::vector<DimExpr> &dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i)
      text += ", ";
    if (dims[i].empty())
      text += "1";
    for (std::size_t t = 0; t < dims[i].size(); ++t) {
      if (t)
        text += "*";
      text += dims[i][t].isSymbol ? plan.symbols[dims[i][t].value]
                                  : std::to_string(dims[i][t].value);
    }
  }
  return text + "]";
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
  for (const PlanInput &input : plan.inputs)
    std::printf("input: %s %s (%s%s)\n", input.name.c_str(),
                dimsText(plan, input.dims).c_str(),
                input.kind == InputKind::Ids ? "token ids" : "mask",
                input.optional ? ", optional" : "");
  std::printf("output: %s %s f32\n", plan.output.name.c_str(),
              dimsText(plan, plan.output.dims).c_str());
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
