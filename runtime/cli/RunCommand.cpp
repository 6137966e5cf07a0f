//===- RunCommand.cpp - NAME run: one forward pass ------------------------===//
//
//   NAME run --weights W --input IN --output OUT [--threads N]
//   NAME run --weights W --ids 5,6,7|@FILE [--decoder-ids ...] [--output OUT]
//   NAME run --weights W --tokenizer DIR --text "..." [--text ...]
//            [--text-pair "..."] [--pooling mean|cls] [--output OUT]
//
// The output file is checked (and its temporary created) before anything
// is read or run, and written atomically after the forward pass.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Safetensors.h"
#include "support/Text.h"
#include "runtime/tokenizers/Tokenizer.h"
#include "runtime/cli/Cli.h"
#include "runtime/serve/Embeddings.h"
#include "runtime/tokenizers/WordPieceTokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace tfmc::runtime::cli {
namespace {

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

/// The inputs of `--input IN`: every tensor must be one the plan takes.
std::map<std::string, IntegerTensor> readInputFile(const Plan &plan,
                                                   const std::string &path) {
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  if (!file)
    fail(error);
  std::string names;
  for (const PlanInput &input : plan.inputs)
    names += (names.empty() ? "" : ", ") + input.name;
  std::map<std::string, IntegerTensor> inputs;
  for (const TensorView &tensor : file->tensors()) {
    const PlanInput *input = nullptr;
    for (const PlanInput &candidate : plan.inputs)
      if (candidate.name == tensor.name)
        input = &candidate;
    if (!input)
      fail(fmt::format("{}: unknown input {}; this model takes {}",
                       file->path(), support::quote(tensor.name), names));
    std::optional<IntegerTensor> values = readIntegerTensor(
        *file, tensor.name,
        input->kind == InputKind::Mask ? IntegerInputKind::Mask
                                       : IntegerInputKind::Ids,
        error);
    if (!values)
      fail(error);
    inputs[tensor.name] = std::move(*values);
  }
  return inputs;
}

/// The inputs of `--ids` and `--decoder-ids`: one sequence each.
std::map<std::string, IntegerTensor> readIdOptions(const Options &options) {
  std::map<std::string, IntegerTensor> inputs;
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
  return inputs;
}

/// The inputs of `--text` (repeatable: a batch, right-padded with id 0 and
/// masked) and `--text-pair` (the second text of one pair): BERT's
/// WordPiece gives [CLS] A [SEP] (B [SEP]) and token types, truncated to
/// max_len with a warning; another tokenizer the ids its files ask for
/// (PromptTokens).
std::map<std::string, IntegerTensor> readTextOptions(const Options &options,
                                                     const Plan &plan) {
  std::vector<std::string> texts = options.all("--text");
  if (!options.has("--tokenizer"))
    fail("--text needs --tokenizer DIR (tokenizer.json, tokenizer.model, "
         "vocab.json and merges.txt, or vocab.txt)");
  bool encoderDecoder = false, takesMask = false, takesTypes = false;
  for (const PlanInput &input : plan.inputs) {
    encoderDecoder |= input.name == "decoder_input_ids";
    takesMask |= input.name == "attention_mask";
    takesTypes |= input.name == "token_type_ids";
  }
  if (encoderDecoder)
    fail(fmt::format("model '{}' is an encoder-decoder: translate text with "
                     "generate --tokenizer DIR --text",
                     plan.model));
  if (options.has("--text-pair") && texts.size() != 1)
    fail(fmt::format("--text-pair is the second text of one pair: give one "
                     "--text with it, not {}",
                     texts.size()));
  if (texts.size() > 1 && !takesMask)
    fail(fmt::format("model '{}' takes no attention_mask: give one --text, "
                     "not {} (a batch pads its shorter rows)",
                     plan.model, texts.size()));
  std::string error;
  const std::string &dir = options.get("--tokenizer");
  std::unique_ptr<Tokenizer> tokenizer = loadTokenizer(dir, error);
  PromptTokens promptTokens;
  if (!tokenizer || !readPromptTokens(dir, *tokenizer, promptTokens, error))
    fail(error);
  auto *wordPiece = dynamic_cast<WordPieceTokenizer *>(
      tokenizer.get());
  if (options.has("--text-pair") && !wordPiece)
    fail(fmt::format("--text-pair needs BERT's WordPiece tokenizer (with "
                     "token types); {} has another",
                     dir));

  if (options.has("--text-pair"))
    checkTextLength("--text-pair", options.get("--text-pair"));
  std::vector<std::vector<int64_t>> rows, types;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    std::string where =
        texts.size() == 1 ? "--text" : fmt::format("--text {}", i + 1);
    std::vector<int64_t> ids, typeIds;
    checkTextLength(where, texts[i]);
    std::string pair =
        options.has("--text-pair") ? options.get("--text-pair") : "";
    std::string_view second = pair;
    if (!encodeModelText(*tokenizer, promptTokens, texts[i],
                         options.has("--text-pair") ? &second : nullptr,
                         plan.maxLen, ids, typeIds, error))
      fail(where + ": " + error);
    if (ids.empty())
      fail(noTokensMessage(where, texts[i]));
    if (static_cast<int64_t>(ids.size()) > plan.maxLen)
      fail(fmt::format("{} is {} tokens, more than max_len {}", where,
                       ids.size(), plan.maxLen));
    for (int64_t id : ids)
      if (id >= plan.vocab)
        fail(fmt::format("{}: token id {} is outside the model's vocabulary "
                         "({}): {} is not this model's tokenizer",
                         where, id, plan.vocab, dir));
    rows.push_back(std::move(ids));
    types.push_back(std::move(typeIds));
  }
  std::size_t length = 0;
  for (const std::vector<int64_t> &row : rows)
    length = std::max(length, row.size());
  const int64_t batch = static_cast<int64_t>(rows.size());
  auto padded = [&](const std::vector<std::vector<int64_t>> &values,
                    bool mask) {
    IntegerTensor tensor;
    tensor.shape = {batch, static_cast<int64_t>(length)};
    tensor.values.assign(static_cast<std::size_t>(batch) * length, 0);
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (std::size_t s = 0; s < rows[r].size(); ++s)
        tensor.values[r * length + s] =
            mask ? 1 : (s < values[r].size() ? values[r][s] : 0);
    return tensor;
  };
  std::map<std::string, IntegerTensor> inputs;
  inputs["input_ids"] = padded(rows, false);
  if (takesMask)
    inputs["attention_mask"] = padded(rows, true);
  if (takesTypes && wordPiece)
    inputs["token_type_ids"] = padded(types, false);
  return inputs;
}

/// `--pooling`'s sentence embeddings, one line per text.
void printPooled(const std::string &pooling, const OutputView &output,
                 const IntegerTensor &mask) {
  if (output.name != "last_hidden_state" || output.shape.size() != 3)
    fail(fmt::format("--pooling needs a model whose output is "
                     "last_hidden_state [B, S, d], not {} {}",
                     output.name, formatShape(output.shape)));
  for (int64_t b = 0; b < output.shape[0]; ++b) {
    std::string line = fmt::format("embedding {}:", b);
    for (float value : serve::pooledRow(pooling, output, mask.values, b))
      line += fmt::format(" {:.7g}", value);
    std::printf("%s\n", line.c_str());
  }
}

/// `--ids`' report: the output's shape and, for logits, each position's
/// most likely next token.
void printArgmax(const OutputView &output) {
  std::printf("%s: %s\n", output.name.c_str(),
              formatShape(output.shape).c_str());
  if (output.name != "logits" || output.shape.size() != 3)
    return;
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

} // namespace

int runCommand(int argc, char **argv) {
  Options options("run",
                  {"--weights", "--input", "--output", "--ids", "--decoder-ids",
                   "--threads", "--tokenizer", "--text", "--text-pair",
                   "--pooling"},
                  argc, argv, 2, {}, {"--text"});
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const std::string weights = weightsPath(options);
  bool fromFile = options.has("--input");
  bool fromIds = options.has("--ids") || options.has("--decoder-ids");
  bool fromText = options.has("--text");
  if (int(fromFile) + int(fromIds) + int(fromText) > 1)
    fail("run takes one of --input, --ids and --text");
  if (!fromFile && !fromIds && !fromText)
    fail("run needs --input (with --output), --ids or --text");
  if (!fromText)
    for (const char *flag : {"--tokenizer", "--text-pair", "--pooling"})
      if (options.has(flag))
        fail(fmt::format("{} is for --text", flag));
  std::string pooling;
  if (options.has("--pooling")) {
    pooling = options.get("--pooling");
    if (pooling != "mean" && pooling != "cls")
      fail(fmt::format("--pooling expects mean or cls, got {}",
                       support::quote(pooling)));
  }
  if (fromFile && !options.has("--output"))
    fail("run needs --output");
  applyThreads(options);

  const Plan &plan = requirePlan();
  std::map<std::string, IntegerTensor> inputs =
      fromFile   ? readInputFile(plan, options.get("--input"))
      : fromText ? readTextOptions(options, plan)
                 : readIdOptions(options);

  // Before any work: an output that cannot be written, or that would
  // replace an input, fails now rather than after the forward pass. The
  // files read so far (the input, ids, a tokenizer's) are on FileIO's list
  // of inputs; the weights, mapped later, are named here.
  std::vector<support::OutputFile> outputs;
  if (options.has("--output"))
    outputs = checkOutputs(
        {{"--output", options.get("--output")}},
        inputFiles(options, {"--weights", "--input", "--ids", "--decoder-ids"}));
  if (!pooling.empty() && plan.output().name != "last_hidden_state")
    fail(fmt::format("--pooling needs a model whose output is "
                     "last_hidden_state; model '{}' outputs {}",
                     plan.model, plan.output().name));
  std::unique_ptr<Model> model = loadModel(weights);
  OutputView output = runTimed(*model, inputs);
  if (!outputs.empty())
    writeOutputs(outputs.front(), model->outputs());
  if (!pooling.empty()) {
    // Without an attention_mask input every token counts.
    IntegerTensor mask = inputs.at("input_ids");
    if (inputs.count("attention_mask"))
      mask = inputs.at("attention_mask");
    else
      std::fill(mask.values.begin(), mask.values.end(), 1);
    printPooled(pooling, output, mask);
  } else if (fromIds || fromText) {
    for (const OutputView &each : model->outputs())
      printArgmax(each);
  }
  return 0;
}

} // namespace tfmc::runtime::cli
