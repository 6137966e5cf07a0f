//===- GenerateCommand.cpp - NAME generate ---------------------------------===//
//
//   NAME generate --weights W --prompt 1,2,3 --max-new-tokens N [--eos E]...
//   NAME generate --weights W --source 5,6,7 --bos 1 --max-new-tokens N
//   NAME generate ... --prompts-file F | --source-file F   (one per line)
//   NAME generate ... --tokenizer DIR --text "..." | --text-file F
//                 [--temperature T] [--top-k K] [--top-p P] [--seed S]
//                 [--repetition-penalty R] [--num-beams N]
//                 [--length-penalty L] [--early-stopping] [--stop S]...
//                 [--bad-words 5,6]...
//                 [--stats] [--threads N] [--dump-logits OUT]
//                 [--prefill-chunk N]
//
// Everything that can be checked is checked before the model loads: the
// options, the prompts, the tokenizer and the --dump-logits file. The
// output is one line per prompt, in input order; with a tokenizer and one
// prompt, text is printed as each token is decoded.
//
//===----------------------------------------------------------------------===//

#include "support/FileIO.h"
#include "runtime/generate/Generate.h"
#include "support/Text.h"
#include "runtime/tokenizers/TextStream.h"
#include "runtime/tokenizers/Tokenizer.h"
#include "runtime/cli/Cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>

namespace tfmc::runtime::cli {
namespace {

int64_t integer(const Options &options, const std::string &flag) {
  std::optional<int64_t> value = parseInteger(options.get(flag));
  if (!value)
    fail(fmt::format("{} expects an integer, got {}", flag,
                     support::quote(options.get(flag))));
  return *value;
}

double real(const Options &options, const std::string &flag,
            double fallback) {
  if (!options.has(flag))
    return fallback;
  std::optional<double> value = parseReal(options.get(flag));
  if (!value)
    fail(fmt::format("{} expects a number, got {}", flag,
                     support::quote(options.get(flag))));
  return *value;
}

/// With --tokenizer, the tokenizer in DIR (runtime::loadTokenizer picks the
/// kind) and its prompt tokens (BOS, EOS); without it, nullptr, or an error
/// for the options that need one.
std::unique_ptr<Tokenizer> tokenizerOption(const Options &options,
                                           PromptTokens &promptTokens) {
  if (!options.has("--tokenizer")) {
    if (options.has("--text") || options.has("--text-file"))
      fail("--text needs --tokenizer DIR (tokenizer.json, tokenizer.model, "
           "source.spm, vocab.json and merges.txt, or vocab.txt)");
    if (options.has("--stop"))
      fail("--stop needs --tokenizer DIR: it matches the generated text");
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

/// A text's ids, with the BOS (and suffix) the tokenizer's files ask for;
/// `where` names it in messages.
std::vector<int64_t> encode(const std::string &text, const std::string &where,
                            Tokenizer &tokenizer,
                            const PromptTokens &promptTokens) {
  std::vector<int64_t> ids;
  std::string error;
  checkTextLength(where, text);
  if (!tokenizer.encode(text, ids, error))
    fail(where + ": " + error);
  if (ids.empty())
    fail(noTokensMessage(where, text));
  promptTokens.surround(ids);
  return ids;
}

/// The lines of --prompts-file or --source-file, each a prompt: ids
/// ("1,2,3") without a tokenizer, text with one. An empty line is an
/// error naming the file and line.
std::vector<std::vector<int64_t>> readPromptsFile(const std::string &flag,
                                                  const std::string &path,
                                                  Tokenizer *tokenizer,
                                                  const PromptTokens &tokens) {
  std::string text, error;
  if (!support::readRegularFile(path, text, error))
    fail(flag + ": " + error);
  std::vector<std::vector<int64_t>> prompts;
  std::size_t begin = 0;
  for (int64_t line = 1; begin < text.size(); ++line) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    std::string content = text.substr(begin, end - begin);
    if (!content.empty() && content.back() == '\r')
      content.pop_back();
    std::string where = fmt::format("{}:{}", support::oneLine(path), line);
    if (content.empty())
      fail(fmt::format("{}: empty line ({} holds one prompt per line)", where,
                       flag));
    prompts.push_back(tokenizer ? encode(content, where, *tokenizer, tokens)
                                : parseIdList(where, content));
    begin = end + 1;
  }
  if (prompts.empty())
    fail(fmt::format("{}: {} holds no prompt", flag, support::quote(path)));
  return prompts;
}

GenerateRequest makeRequest(const Options &options, const Plan &plan,
                            Tokenizer *tokenizer,
                            const PromptTokens &promptTokens) {
  GenerateRequest request;
  for (const PlanInput &input : plan.inputs)
    request.encoderDecoder |= input.name == "decoder_input_ids";
  // Exactly one source of prompts.
  const std::vector<std::string> sources = {
      "--prompt", "--source", "--text", "--text-file", "--prompts-file",
      "--source-file"};
  std::vector<std::string> given;
  for (const std::string &flag : sources)
    if (options.has(flag))
      given.push_back(flag);
  if (given.size() > 1)
    fail(fmt::format("{} and {} both give the prompt: give one", given[0],
                     given[1]));
  if (given.empty())
    fail(request.encoderDecoder
             ? "generate needs --source (or --source-file, or --text)"
             : "generate needs --prompt (or --prompts-file, or --text)");
  const std::string &flag = given.front();
  const bool sourceFlag = flag == "--source" || flag == "--source-file";
  const bool promptFlag = flag == "--prompt" || flag == "--prompts-file";
  if (request.encoderDecoder && promptFlag)
    fail(fmt::format("model '{}' is an encoder-decoder: give --source (or "
                     "--source-file) and --bos, not {}",
                     plan.model, flag));
  if (!request.encoderDecoder && (sourceFlag || options.has("--bos")))
    fail(fmt::format("model '{}' is decoder-only: give --prompt (or "
                     "--prompts-file), not {}",
                     plan.model, sourceFlag ? flag : "--bos"));
  if (flag == "--text" || flag == "--text-file") {
    std::string text, error;
    if (flag == "--text-file") {
      if (!support::readRegularFile(options.get(flag), text, error))
        fail("--text-file: " + error);
    } else {
      text = options.get(flag);
    }
    request.prompts.push_back(
        encode(text, flag == "--text" ? flag : options.get(flag), *tokenizer,
               promptTokens));
    // Its tokens' problems name the flag, not --prompt.
    request.promptName = flag == "--text" ? "--text" : "--text-file";
  } else if (flag == "--prompts-file" || flag == "--source-file") {
    request.prompts =
        readPromptsFile(flag, options.get(flag), tokenizer, promptTokens);
  } else {
    request.prompts.push_back(parseIdList(flag, options.get(flag)));
  }
  if (request.encoderDecoder) {
    // With a tokenizer directory, its config's decoder_start_token_id is
    // the default (Marian's), as in Hugging Face's generate.
    if (!options.has("--bos") && tokenizer && promptTokens.decoderStart >= 0) {
      request.bos = promptTokens.decoderStart;
      request.bosName = fmt::format(
          "decoder_start_token_id (config.json or generation_config.json in "
          "{})",
          options.get("--tokenizer"));
    }
    else if (!options.has("--bos") && tokenizer)
      fail(fmt::format("generate needs --bos (the decoder's start token): "
                       "{} gives no decoder_start_token_id in config.json or "
                       "generation_config.json",
                       options.get("--tokenizer")));
    else
      request.bos = integer(options, "--bos");
  }
  if (options.has("--eos")) {
    request.eos = parseIdList("--eos", options.get("--eos"));
  } else if (tokenizer) {
    // From the tokenizer directory's config, within the vocabulary.
    request.eos = promptTokens.eosWithin(plan.vocab);
  }
  // Banned sequences: each --bad-words is one (ids, comma-separated),
  // replacing the tokenizer directory's bad_words_ids; ids outside the
  // vocabulary (only from the files) can never be generated, so their
  // sequences are dropped as the files' eos ids are.
  if (options.has("--bad-words")) {
    for (const std::string &word : options.all("--bad-words"))
      request.sampling.badWords.push_back(parseIdList("--bad-words", word));
  } else if (tokenizer) {
    request.sampling.badWords = promptTokens.badWordsWithin(plan.vocab);
  }
  request.maxNewTokens = integer(options, "--max-new-tokens");
  request.keepLogits = options.has("--dump-logits");
  if (options.has("--prefill-chunk"))
    request.prefillChunk = integer(options, "--prefill-chunk");

  SamplingOptions &sampling = request.sampling;
  sampling.temperature = real(options, "--temperature", 0);
  sampling.topP = real(options, "--top-p", 1);
  sampling.repetitionPenalty = real(options, "--repetition-penalty", 1);
  if (options.has("--top-k"))
    sampling.topK = integer(options, "--top-k");
  if (options.has("--seed")) {
    int64_t seed = integer(options, "--seed");
    if (seed < 0)
      fail(fmt::format("--seed must be at least 0, got {}", seed));
    sampling.seed = static_cast<uint64_t>(seed);
  }
  BeamOptions &beams = request.beams;
  if (options.has("--num-beams"))
    beams.numBeams = integer(options, "--num-beams");
  beams.lengthPenalty = real(options, "--length-penalty", 1);
  beams.earlyStopping = options.has("--early-stopping");
  for (const std::string &stop : options.all("--stop"))
    if (stop.empty())
      fail("--stop is empty: give the text that ends a sequence");
  return request;
}

/// Warns on stderr about new ids the tokenizer has no token for (they print
/// as U+FFFD).
void warnUnknownIds(const Tokenizer &tokenizer, const GenerateResult &result) {
  std::vector<int64_t> unknown;
  for (const SequenceResult &sequence : result.sequences)
    for (int64_t token : sequence.tokens)
      if (!tokenizer.hasId(token) &&
          std::find(unknown.begin(), unknown.end(), token) == unknown.end())
        unknown.push_back(token);
  if (unknown.empty())
    return;
  std::string ids;
  for (std::size_t i = 0; i < unknown.size() && i < 8; ++i)
    ids += fmt::format("{}{}", i ? ", " : "", unknown[i]);
  if (unknown.size() > 8)
    ids += fmt::format(" and {} more", unknown.size() - 8);
  std::fprintf(stderr,
               "%s: warning: generated %s %s, which %s no token in %s; "
               "printed as U+FFFD\n",
               programName().c_str(), unknown.size() == 1 ? "id" : "ids",
               ids.c_str(), unknown.size() == 1 ? "has" : "have",
               support::oneLine(tokenizer.directory()).c_str());
}

/// Prints each sequence's line: text (streamed as it is decoded when there
/// is one prompt) or ids; lines appear in input order, each as soon as it
/// and the ones before it are finished. Several prompts' text has its
/// newlines and backslashes escaped (\n, \\), one line per prompt.
class Printer {
public:
  Printer(const GenerateRequest &request, const Tokenizer *tokenizer,
          std::vector<std::string> stops)
      : request(request), tokenizer(tokenizer),
        streaming(request.prompts.size() == 1 &&
                  request.beams.numBeams == 1),
        lines(request.prompts.size()), finished(request.prompts.size()) {
    if (!tokenizer)
      return;
    for (const std::vector<int64_t> &prompt : request.prompts)
      streams.emplace_back(*tokenizer,
                           request.encoderDecoder ? std::vector<int64_t>()
                                                  : prompt,
                           stops);
  }

  TokenAction onToken(int64_t index, int64_t token) {
    std::string &line = lines[index];
    bool stopped = false;
    if (tokenizer) {
      std::string text = streams[index].push(token, stopped);
      if (streaming) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      } else {
        line += text;
      }
    } else {
      line += fmt::format("{}{}", line.empty() ? "" : " ", token);
    }
    return stopped ? TokenAction::StopSequence : TokenAction::Continue;
  }

  /// Ends sequence `index` (its tokens are all in) and prints what can be.
  void finish(int64_t index) {
    if (finished[index])
      return;
    finished[index] = true;
    if (tokenizer) {
      std::string text = streams[index].finish();
      if (streaming) {
        std::fwrite(text.data(), 1, text.size(), stdout);
      } else {
        lines[index] += text;
      }
    }
    while (next < lines.size() && finished[next]) {
      std::string line = lines[next];
      if (tokenizer && !streaming)
        line = escape(line);
      std::printf("%s\n", line.c_str());
      ++next;
    }
    std::fflush(stdout);
  }

private:
  static std::string escape(const std::string &text) {
    std::string out;
    for (char c : text) {
      if (c == '\n')
        out += "\\n";
      else if (c == '\\')
        out += "\\\\";
      else
        out += c;
    }
    return out;
  }

  const GenerateRequest &request;
  const Tokenizer *tokenizer;
  const bool streaming;
  std::vector<TextStream> streams;
  std::vector<std::string> lines;
  std::vector<bool> finished;
  std::size_t next = 0;
};

/// When the steps of a one-shot generate happened, in seconds since the
/// process started.
struct StartUp {
  double loadStart = 0, loadEnd = 0, generateStart = 0;
};

void printStats(const GenerateResult &result, const Model &model,
                const StartUp &startUp) {
  printLoadStats(stderr, model.loadStats());
  if (result.batches.empty())
    return;
  const BatchStats &first = result.batches.front();
  std::fprintf(stderr,
               "start-up: first token %.1f ms after process start (before "
               "load %.1f ms, load %.1f ms, prefill %.1f ms)\n",
               (startUp.generateStart + first.firstTokenSeconds) * 1e3,
               startUp.loadStart * 1e3,
               (startUp.loadEnd - startUp.loadStart) * 1e3,
               first.prefillSeconds * 1e3);
  for (std::size_t b = 0; b < result.batches.size(); ++b) {
    const BatchStats &batch = result.batches[b];
    std::string prefix =
        result.batches.size() > 1 ? fmt::format("batch {}: ", b + 1) : "";
    std::fprintf(stderr, "%sprefill: %lld prompt%s, %lld tokens in %.1f ms\n",
                 prefix.c_str(), static_cast<long long>(batch.sequences),
                 batch.sequences == 1 ? "" : "s",
                 static_cast<long long>(batch.promptTokens),
                 batch.prefillSeconds * 1e3);
    std::fprintf(stderr, "%sfirst token: %.1f ms after generate started\n",
                 prefix.c_str(), batch.firstTokenSeconds * 1e3);
    double perSecond = batch.decodeSeconds > 0
                           ? double(batch.decodedTokens) / batch.decodeSeconds
                           : 0.0;
    std::fprintf(stderr,
                 "%sdecode: %lld steps in %.1f ms, %.1f tokens/s for the "
                 "batch, %.1f tokens/s per sequence\n",
                 prefix.c_str(), static_cast<long long>(batch.decodeSteps),
                 batch.decodeSeconds * 1e3, perSecond,
                 perSecond / double(batch.rows));
    if (batch.rows > 1 && batch.sequences == 1)
      std::fprintf(stderr,
                   "%sbeams: %lld, KV-cache rows reordered in %.1f ms\n",
                   prefix.c_str(), static_cast<long long>(batch.rows),
                   batch.reorderSeconds * 1e3);
  }
}

} // namespace

int generateCommand(int argc, char **argv) {
  Options options(
      "generate",
      {"--weights", "--prompt", "--source", "--bos", "--eos",
       "--max-new-tokens", "--threads", "--dump-logits", "--tokenizer",
       "--text", "--text-file", "--prompts-file", "--source-file",
       "--temperature", "--top-k", "--top-p", "--seed",
       "--repetition-penalty", "--num-beams", "--length-penalty", "--stop",
       "--bad-words", "--prefill-chunk"},
      argc, argv, 2, {"--stats", "--early-stopping"},
      {"--eos", "--stop", "--bad-words"});
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &plan = requirePlan();

  // With --tokenizer, text is encoded into the prompts (or sources), and
  // the new tokens are printed as text.
  PromptTokens promptTokens;
  std::unique_ptr<Tokenizer> tokenizer = tokenizerOption(options, promptTokens);

  // Before any work: every file read so far (the tokenizer's, the prompts')
  // is on FileIO's list of inputs, which the output check reads; the
  // weights, mapped later, and the id files are named here.
  std::vector<support::OutputFile> outputs;
  if (options.has("--dump-logits"))
    outputs = checkOutputs(
        {{"--dump-logits", options.get("--dump-logits")}},
        inputFiles(options, {"--weights", "--text-file", "--prompt", "--source",
                             "--prompts-file", "--source-file"}));
  GenerateRequest request =
      makeRequest(options, plan, tokenizer.get(), promptTokens);
  std::string error;
  // The options and prompts against the plan, before the weights load.
  {
    std::string optionError;
    if (!checkGenerateOptions(request.sampling, request.beams, plan.maxBatch,
                              /*cApi=*/false, optionError))
      fail(optionError);
  }

  StartUp startUp;
  startUp.loadStart = secondsSinceStart();
  std::unique_ptr<Model> model = loadModel(weightsPath(options));
  startUp.loadEnd = secondsSinceStart();
  applyThreads(options);
  if (!checkGenerateRequest(*model, request, error))
    fail(error);

  Printer printer(request, tokenizer.get(), options.all("--stop"));
  std::vector<int64_t> counts(request.prompts.size(), 0);
  auto onToken = [&](int64_t index, int64_t token, const TokenLogprobs *) {
    TokenAction action = printer.onToken(index, token);
    bool last = ++counts[index] >= request.maxNewTokens ||
                std::find(request.eos.begin(), request.eos.end(), token) !=
                    request.eos.end() ||
                action != TokenAction::Continue;
    if (last)
      printer.finish(index);
    return action;
  };
  startUp.generateStart = secondsSinceStart();
  std::optional<GenerateResult> result =
      generate(*model, request, error, onToken);
  if (!result)
    fail(error);
  for (std::size_t index = 0; index < request.prompts.size(); ++index)
    printer.finish(static_cast<int64_t>(index));
  if (tokenizer)
    warnUnknownIds(*tokenizer, *result);
  if (options.has("--stats"))
    printStats(*result, *model, startUp);
  if (request.keepLogits) {
    OutputView view;
    view.name = "logits";
    view.shape = {1,
                  static_cast<int64_t>(result->logits.size()) / result->vocab,
                  result->vocab};
    view.data = result->logits.data();
    writeOutputs(outputs.front(), {view});
  }
  return 0;
}

} // namespace tfmc::runtime::cli
