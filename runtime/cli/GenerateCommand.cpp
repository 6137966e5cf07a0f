//===- GenerateCommand.cpp - NAME generate: greedy decoding ---------------===//
//
//   NAME generate --weights W --prompt 1,2,3 --max-new-tokens N [--eos E]...
//   NAME generate --weights W --source 5,6,7 --bos 1 --max-new-tokens N
//   NAME generate ... --tokenizer DIR --text "..." | --text-file F
//                 [--stats] [--threads N] [--dump-logits OUT]
//
// Everything that can be checked is checked before the model loads: the
// options, the prompt, the tokenizer and the --dump-logits file.
//
//===----------------------------------------------------------------------===//

#include "runtime/Generate.h"
#include "runtime/Text.h"
#include "runtime/Tokenizer.h"
#include "runtime/cli/Cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace tfmc::runtime::cli {
namespace {

int64_t integer(const Options &options, const std::string &flag) {
  std::optional<int64_t> value = parseInteger(options.get(flag));
  if (!value)
    fail(fmt::format("{} expects an integer, got {}", flag,
                     quote(options.get(flag))));
  return *value;
}

/// With --tokenizer, the tokenizer in DIR (loadTokenizer picks the kind)
/// and its prompt tokens (BOS, EOS).
std::unique_ptr<Tokenizer> loadTokenizer(const Options &options,
                                         PromptTokens &promptTokens) {
  if (!options.has("--tokenizer")) {
    if (options.has("--text") || options.has("--text-file"))
      fail("--text needs --tokenizer DIR (tokenizer.json, tokenizer.model, "
           "or vocab.json and merges.txt)");
    return nullptr;
  }
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      runtime::loadTokenizer(options.get("--tokenizer"), error);
  if (!tokenizer ||
      !readPromptTokens(options.get("--tokenizer"), *tokenizer, promptTokens,
                        error))
    fail(error);
  return tokenizer;
}

/// The ids of --text or --text-file (empty without either), with the BOS
/// (and suffix) the tokenizer's files ask for.
std::vector<int64_t> encodeText(const Options &options, Tokenizer *tokenizer,
                                const PromptTokens &promptTokens) {
  if (!options.has("--text") && !options.has("--text-file"))
    return {};
  if (options.has("--prompt") || options.has("--source") ||
      (options.has("--text") && options.has("--text-file")))
    fail("--text (or --text-file) replaces --prompt/--source: give one");
  std::string text, error;
  if (options.has("--text-file")) {
    if (!readRegularFile(options.get("--text-file"), text, error))
      fail("--text-file: " + error);
  } else {
    text = options.get("--text");
  }
  std::vector<int64_t> ids;
  if (!tokenizer->encode(text, ids, error))
    fail(error);
  if (ids.empty())
    fail("--text is empty");
  promptTokens.surround(ids);
  return ids;
}

GenerateRequest makeRequest(const Options &options, const Plan &plan,
                            std::vector<int64_t> textIds,
                            const PromptTokens *promptTokens) {
  GenerateRequest request;
  for (const PlanInput &input : plan.inputs)
    request.encoderDecoder |= input.name == "decoder_input_ids";
  if (!textIds.empty()) {
    request.prompt = std::move(textIds);
    if (request.encoderDecoder)
      request.bos = integer(options, "--bos");
  } else if (request.encoderDecoder) {
    if (options.has("--prompt"))
      fail(fmt::format("model '{}' is an encoder-decoder: give --source and "
                       "--bos, not --prompt",
                       plan.model));
    request.prompt = parseIdList("--source", options.get("--source"));
    request.bos = integer(options, "--bos");
  } else {
    if (options.has("--source") || options.has("--bos"))
      fail(fmt::format("model '{}' is decoder-only: give --prompt, not "
                       "--source/--bos",
                       plan.model));
    request.prompt = parseIdList("--prompt", options.get("--prompt"));
  }
  if (options.has("--eos")) {
    request.eos = parseIdList("--eos", options.get("--eos"));
  } else if (promptTokens) {
    // From the tokenizer directory's config: an id the model's vocabulary
    // lacks can never be generated, so it cannot stop anything.
    for (int64_t eos : promptTokens->eos)
      if (eos < plan.vocab)
        request.eos.push_back(eos);
  }
  request.maxNewTokens = integer(options, "--max-new-tokens");
  request.keepLogits = options.has("--dump-logits");
  return request;
}

/// The new tokens as text, with a warning on stderr for ids the tokenizer
/// has no token for (they print as U+FFFD). They are decoded after the
/// prompt, whose text is then cut off: a SentencePiece-style decoder drops
/// the text's first space, which is no first space after a prompt.
std::string decodeText(const Tokenizer &tokenizer,
                       const std::vector<int64_t> &prompt,
                       const std::vector<int64_t> &tokens) {
  std::vector<int64_t> unknown;
  for (int64_t token : tokens)
    if (!tokenizer.hasId(token) &&
        std::find(unknown.begin(), unknown.end(), token) == unknown.end())
      unknown.push_back(token);
  if (!unknown.empty()) {
    std::string ids;
    for (std::size_t i = 0; i < unknown.size() && i < 8; ++i)
      ids += fmt::format("{}{}", i ? ", " : "", unknown[i]);
    if (unknown.size() > 8)
      ids += fmt::format(" and {} more", unknown.size() - 8);
    std::fprintf(stderr,
                 "%s: warning: generated %s %s, which %s no token in %s; "
                 "printed as U+FFFD\n",
                 programName().c_str(), unknown.size() == 1 ? "id" : "ids",
                 ids.c_str(),
                 unknown.size() == 1 ? "has" : "have",
                 oneLine(tokenizer.directory()).c_str());
  }
  std::string before = tokenizer.decode(prompt);
  std::vector<int64_t> all = prompt;
  all.insert(all.end(), tokens.begin(), tokens.end());
  std::string whole = tokenizer.decode(all);
  if (whole.compare(0, before.size(), before) == 0)
    return Tokenizer::toValidUtf8(whole.substr(before.size()));
  return Tokenizer::toValidUtf8(tokenizer.decode(tokens));
}

/// When the steps of a one-shot generate happened, in seconds since the
/// process started.
struct StartUp {
  double loadStart = 0, loadEnd = 0, generateStart = 0;
};

void printStats(const GenerateRequest &request, const GenerateResult &result,
                const Model &model, const StartUp &startUp) {
  printLoadStats(stderr, model.loadStats());
  // The first token is the prefill's argmax: prefill plus one scan of the
  // vocabulary after generate() starts (its checks take microseconds).
  const double firstToken = startUp.generateStart + result.prefillSeconds;
  std::fprintf(stderr,
               "start-up: first token %.1f ms after process start (before "
               "load %.1f ms, load %.1f ms, prefill %.1f ms)\n",
               firstToken * 1e3, startUp.loadStart * 1e3,
               (startUp.loadEnd - startUp.loadStart) * 1e3,
               result.prefillSeconds * 1e3);
  std::fprintf(stderr, "prefill: %zu tokens in %.1f ms\n",
               request.encoderDecoder ? std::size_t(1) + request.prompt.size()
                                      : request.prompt.size(),
               result.prefillSeconds * 1e3);
  double perSecond = result.decodeSeconds > 0
                         ? double(result.decodeSteps) / result.decodeSeconds
                         : 0.0;
  std::fprintf(stderr, "decode: %lld steps in %.1f ms, %.1f tokens/s\n",
               static_cast<long long>(result.decodeSteps),
               result.decodeSeconds * 1e3, perSecond);
}

} // namespace

int generateCommand(int argc, char **argv) {
  Options options("generate",
                  {"--weights", "--prompt", "--source", "--bos", "--eos",
                   "--max-new-tokens", "--threads", "--dump-logits",
                   "--tokenizer", "--text", "--text-file"},
                  argc, argv, 2, {"--stats"}, {"--eos"});
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &plan = requirePlan();
  std::vector<OutputFile> outputs;
  if (options.has("--dump-logits")) {
    std::vector<std::pair<std::string, std::string>> inputs = inputFiles(
        options, {"--weights", "--text-file", "--prompt", "--source"});
    if (options.has("--tokenizer"))
      for (const char *file :
           {"/vocab.json", "/merges.txt", "/tokenizer.json", "/tokenizer.model",
            "/tokenizer_config.json", "/config.json", "/generation_config.json"})
        inputs.emplace_back("--tokenizer", options.get("--tokenizer") + file);
    outputs = checkOutputs({{"--dump-logits", options.get("--dump-logits")}},
                           inputs);
  }

  // With --tokenizer, --text is encoded into the prompt (or source), and
  // the new tokens are printed as text.
  PromptTokens promptTokens;
  std::unique_ptr<Tokenizer> tokenizer = loadTokenizer(options, promptTokens);
  GenerateRequest request = makeRequest(
      options, plan, encodeText(options, tokenizer.get(), promptTokens),
      tokenizer ? &promptTokens : nullptr);

  StartUp startUp;
  startUp.loadStart = secondsSinceStart();
  std::unique_ptr<Model> model = loadModel(options.get("--weights"));
  startUp.loadEnd = secondsSinceStart();
  applyThreads(options);
  std::string error;
  startUp.generateStart = secondsSinceStart();
  std::optional<GenerateResult> result = generate(*model, request, error);
  if (!result)
    fail(error);

  std::string line;
  if (tokenizer) {
    line = decodeText(*tokenizer,
                      request.encoderDecoder ? std::vector<int64_t>()
                                             : request.prompt,
                      result->tokens);
  } else {
    for (int64_t token : result->tokens)
      line += fmt::format("{}{}", line.empty() ? "" : " ", token);
  }
  std::printf("%s\n", line.c_str());
  if (options.has("--stats"))
    printStats(request, *result, *model, startUp);
  if (request.keepLogits) {
    OutputView view;
    view.name = "logits";
    view.shape = {1,
                  static_cast<int64_t>(result->logits.size()) / result->vocab,
                  result->vocab};
    view.data = result->logits.data();
    writeOutput(outputs.front(), view);
  }
  return 0;
}

} // namespace tfmc::runtime::cli
