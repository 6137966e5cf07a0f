//===- Generate.cpp - Autoregressive generation ---------------------------===//

#include "runtime/generate/Generate.h"
#include "runtime/core/Tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace tfmc::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

/// The error of a step whose logits leave nothing to choose.
std::string noFiniteLogit(int64_t newToken, int64_t prompt) {
  return fmt::format("new token {} of prompt {}: no logit is finite (every "
                     "token is banned by --bad-words or the config's "
                     "bad_words_ids, or the model's logits are NaN or "
                     "infinite); nothing to choose from",
                     newToken, prompt);
}

/// One row of a batch: a prompt (or source) and what it generated.
struct Row {
  int64_t index = 0;            // the prompt's place in the request
  std::vector<int64_t> history; // decoder-only: prompt + new tokens
  bool done = false;
};

/// One generate() call: its request, its result, and the batches it runs.
class Generation {
public:
  Generation(Model &model, const GenerateRequest &request,
             const TokenCallback &onToken, GenerateResult &result)
      : model(model), plan(model.plan()), request(request), onToken(onToken),
        result(result), start(Clock::now()) {}

  bool run(std::string &error);

private:
  /// Greedy or sampled decoding of the prompts `members` as one batch.
  bool runBatch(const std::vector<int64_t> &members, std::string &error);
  /// Beam search of prompt `index`, its beams the rows of one batch.
  bool runBeams(int64_t index, std::string &error);

  /// The prefill's inputs for `members` (padded as the header says), into
  /// the vectors the views point at.
  std::vector<InputView> prefillInputs(const std::vector<int64_t> &members,
                                       int64_t rows);
  /// The decode step's inputs: `tokens` [rows, 1], cache row r holding
  /// batch member order[r] (empty: one prompt's beams), and the
  /// decoder-only batch's positions and mask over the `cached` positions
  /// plus the new one, or the sources' masks.
  std::vector<InputView> stepInputs(const std::vector<int64_t> &tokens,
                                    int64_t cached,
                                    const std::vector<int64_t> &order);
  /// Runs `entry` and checks that its logits are [rows, 1, vocab].
  std::optional<OutputView> runEntry(const std::string &entry,
                                     const std::vector<InputView> &inputs,
                                     int64_t rows, std::string &error);
  /// The prefill of one prompt (`inputs`, prompt `index`): at once, or
  /// --prefill-chunk tokens at a time.
  std::optional<OutputView> runPrompt(const std::vector<InputView> &inputs,
                                      int64_t index, std::string &error);
  /// Checks that `entry`'s logits are [rows, 1, vocab].
  bool checkLogits(const std::string &entry, const OutputView &logits,
                   int64_t rows, std::string &error) const;
  /// Records token `token` of sequence `index` and tells the callback;
  /// false when the sequence (or, with cancelled, the call) ends here.
  bool deliver(int64_t index, int64_t token,
               const TokenLogprobs *logprobs = nullptr);
  bool isEos(int64_t token) const {
    return std::find(request.eos.begin(), request.eos.end(), token) !=
           request.eos.end();
  }
  double now() const { return secondsBetween(start, Clock::now()); }

  Model &model;
  const Plan &plan;
  const GenerateRequest &request;
  const TokenCallback &onToken;
  GenerateResult &result;
  const Clock::time_point start;

  // The current batch's input vectors (the InputViews point into them).
  std::vector<int64_t> ids, mask, positions, decoderIds, decoderMask;
  std::vector<int64_t> stepPositions, stepMask;
  /// Decoder-only: each row's left padding and prompt length.
  std::vector<int64_t> padding, promptLength;
  int64_t columns = 0; // the prefill's padded length
  /// Whether the model takes what padded rows need (see run()).
  bool canPad = false;
};

bool Generation::run(std::string &error) {
  const int64_t count = static_cast<int64_t>(request.prompts.size());
  result.sequences.resize(static_cast<std::size_t>(count));
  result.vocab = plan.vocab;
  if (request.beams.numBeams > 1) {
    for (int64_t index = 0; index < count && !result.cancelled; ++index)
      if (!runBeams(index, error))
        return false;
    return true;
  }
  // Batches in input order, of up to max_batch prompts; a model that cannot
  // pad (no padding mask or position_ids) batches prompts of one length.
  canPad =
      request.encoderDecoder
          ? entryTakes(model, "prefill", "attention_mask")
          : entryTakes(model, "prefill", "attention_mask") &&
                entryTakes(model, "prefill", "position_ids") &&
                entryTakes(model, "decode_step", "attention_mask") &&
                entryTakes(model, "decode_step", "position_ids");
  std::vector<int64_t> members;
  for (int64_t index = 0; index < count && !result.cancelled; ++index) {
    const std::size_t length = request.prompts[index].size();
    if (!members.empty() &&
        (static_cast<int64_t>(members.size()) == plan.maxBatch ||
         (!canPad && request.prompts[members.front()].size() != length))) {
      if (!runBatch(members, error))
        return false;
      members.clear();
    }
    members.push_back(index);
  }
  if (!members.empty() && !result.cancelled && !runBatch(members, error))
    return false;
  return true;
}

std::vector<InputView>
Generation::prefillInputs(const std::vector<int64_t> &members, int64_t rows) {
  // Beams run their prompt once (one row); a batch runs each member once.
  const int64_t batch = static_cast<int64_t>(members.size());
  (void)rows;
  columns = 0;
  for (int64_t index : members)
    columns = std::max<int64_t>(columns, request.prompts[index].size());
  const std::size_t cells = static_cast<std::size_t>(batch * columns);
  ids.assign(cells, 0);
  mask.assign(cells, 0);
  positions.assign(cells, 0);
  padding.assign(static_cast<std::size_t>(batch), 0);
  promptLength.assign(static_cast<std::size_t>(batch), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int64_t> &prompt = request.prompts[members[b]];
    const int64_t length = static_cast<int64_t>(prompt.size());
    // Decoder-only: padded on the left; encoder-decoder: on the right.
    const int64_t pad = request.encoderDecoder ? 0 : columns - length;
    padding[b] = pad;
    promptLength[b] = length;
    for (int64_t s = 0; s < length; ++s) {
      const std::size_t cell = static_cast<std::size_t>(b * columns + pad + s);
      ids[cell] = prompt[s];
      mask[cell] = 1;
      positions[cell] = s;
    }
  }
  std::vector<InputView> inputs = {
      {"input_ids", {batch, columns}, ids.data()},
      {"attention_mask", {batch, columns}, mask.data()}};
  if (request.encoderDecoder) {
    decoderIds.assign(static_cast<std::size_t>(batch), request.bos);
    decoderMask.assign(static_cast<std::size_t>(batch), 1);
    inputs.push_back({"decoder_input_ids", {batch, 1}, decoderIds.data()});
    inputs.push_back({"decoder_attention_mask", {batch, 1}, decoderMask.data()});
  } else {
    inputs.push_back({"position_ids", {batch, columns}, positions.data()});
  }
  // Inputs the entry does not take (a model without padding masks) are
  // left out rather than rejected: its rows are unpadded.
  std::vector<InputView> taken;
  for (InputView &input : inputs)
    if (entryTakes(model, "prefill", input.name))
      taken.push_back(std::move(input));
  return taken;
}

std::vector<InputView>
Generation::stepInputs(const std::vector<int64_t> &tokens, int64_t cached,
                       const std::vector<int64_t> &order) {
  const int64_t rows = static_cast<int64_t>(tokens.size());
  std::vector<InputView> inputs;
  if (request.encoderDecoder) {
    inputs.push_back({"decoder_input_ids", {rows, 1}, tokens.data()});
    // Cross-attention reads each row's source padding mask.
    if (entryTakes(model, "decode_step", "attention_mask")) {
      stepMask.clear();
      for (int64_t member : order)
        stepMask.insert(stepMask.end(), mask.begin() + member * columns,
                        mask.begin() + (member + 1) * columns);
      inputs.push_back({"attention_mask", {rows, columns}, stepMask.data()});
    }
    return inputs;
  }
  inputs.push_back({"input_ids", {rows, 1}, tokens.data()});
  // Unpadded rows (one length, or one prompt's beams) need neither: the
  // runtime's defaults (all ones, positions P) are theirs.
  if (!canPad || order.empty())
    return inputs;
  const int64_t length = cached + 1;
  stepPositions.assign(static_cast<std::size_t>(rows), 0);
  stepMask.assign(static_cast<std::size_t>(rows * length), 1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pad = padding[order[r]];
    stepPositions[r] = cached - pad;
    std::fill_n(stepMask.begin() + r * length, pad, 0);
  }
  if (entryTakes(model, "decode_step", "position_ids"))
    inputs.push_back({"position_ids", {rows, 1}, stepPositions.data()});
  if (entryTakes(model, "decode_step", "attention_mask"))
    inputs.push_back({"attention_mask", {rows, length}, stepMask.data()});
  return inputs;
}

std::optional<OutputView>
Generation::runPrompt(const std::vector<InputView> &inputs, int64_t index,
                      std::string &error) {
  if (request.prefillChunk == 0)
    return runEntry("prefill", inputs, 1, error);
  const std::vector<int64_t> &prompt = request.prompts[index];
  std::optional<OutputView> logits;
  for (int64_t done = 0; done < static_cast<int64_t>(prompt.size());
       done += request.prefillChunk)
    if (!(logits = runPromptChunk(model, prompt, done, request.prefillChunk,
                                  error)) ||
        !checkLogits(done == 0 ? "prefill" : "extend", *logits, 1, error))
      return std::nullopt;
  return logits;
}

std::optional<OutputView>
Generation::runEntry(const std::string &entry,
                     const std::vector<InputView> &inputs, int64_t rows,
                     std::string &error) {
  std::optional<OutputView> logits = model.run(entry, inputs, error);
  if (!logits || !checkLogits(entry, *logits, rows, error))
    return std::nullopt;
  return logits;
}

bool Generation::checkLogits(const std::string &entry,
                             const OutputView &logits, int64_t rows,
                             std::string &error) const {
  // [rows, 1, vocab]: each row's last position only.
  if (logits.shape.size() != 3 || logits.shape[0] != rows ||
      logits.shape[1] != 1 || logits.shape[2] != plan.vocab) {
    error = fmt::format("plan: {} returns logits {}, not each row's last "
                        "position's [{}, 1, {}]",
                        entry, formatShape(logits.shape), rows, plan.vocab);
    return false;
  }
  return true;
}

bool Generation::deliver(int64_t index, int64_t token,
                         const TokenLogprobs *logprobs) {
  SequenceResult &sequence = result.sequences[index];
  const double at = now();
  if (sequence.tokens.empty())
    sequence.firstTokenSeconds = at;
  else
    sequence.decodeSeconds = at - sequence.firstTokenSeconds;
  sequence.tokens.push_back(token);
  if (onToken) {
    TokenAction action = onToken(index, token, logprobs);
    if (action == TokenAction::Cancel) {
      result.cancelled = true;
      return false;
    }
    if (action == TokenAction::StopSequence)
      return false;
  }
  return !isEos(token) &&
         static_cast<int64_t>(sequence.tokens.size()) < request.maxNewTokens;
}

bool Generation::runBatch(const std::vector<int64_t> &members,
                          std::string &error) {
  const int64_t rows = static_cast<int64_t>(members.size());
  const int64_t vocab = plan.vocab;
  BatchStats stats;
  stats.sequences = stats.rows = rows;
  std::vector<Row> batch(static_cast<std::size_t>(rows));
  std::vector<Sampler> samplers;
  for (int64_t b = 0; b < rows; ++b) {
    batch[b].index = members[b];
    if (!request.encoderDecoder)
      batch[b].history = request.prompts[members[b]];
    // A decoder-only row's history starts with its prompt.
    samplers.emplace_back(request.sampling, static_cast<uint64_t>(members[b]),
                          batch[b].history.size());
  }
  std::vector<InputView> inputs = prefillInputs(members, rows);
  stats.promptTokens = rows * columns;
  Clock::time_point begin = Clock::now();
  std::optional<OutputView> logits =
      rows == 1 ? runPrompt(inputs, members.front(), error)
                : runEntry("prefill", inputs, rows, error);
  if (!logits)
    return false;
  stats.prefillSeconds = secondsBetween(begin, Clock::now());
  // The decoder's cached positions: the padded prompt, or bos.
  int64_t cached = request.encoderDecoder ? 1 : columns;

  std::vector<float> scratch(static_cast<std::size_t>(vocab));
  // Cache row r holds batch member order[r]; tokens[r] is its newest token.
  std::vector<int64_t> order(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    order[r] = r;
  std::vector<int64_t> tokens(static_cast<std::size_t>(rows), 0);
  // Chooses each row's next token from the logits and delivers it; false
  // (with `error`) when a row has nothing to choose from.
  int64_t choices = 0; // the new token's number, 1 for the first
  auto choose = [&]() -> bool {
    ++choices;
    for (std::size_t r = 0; r < order.size(); ++r) {
      Row &row = batch[order[r]];
      const float *rowLogits = logits->data + r * vocab;
      if (request.keepLogits)
        result.logits.insert(result.logits.end(), rowLogits,
                             rowLogits + vocab);
      std::copy(rowLogits, rowLogits + vocab, scratch.begin());
      const std::vector<int64_t> &history =
          request.encoderDecoder ? result.sequences[row.index].tokens
                                 : row.history;
      int64_t token = samplers[order[r]].next(
          scratch.data(), vocab, history,
          request.encoderDecoder ? request.bos : -1);
      if (token < 0) {
        error = noFiniteLogit(choices, row.index);
        return false;
      }
      tokens[r] = token;
      if (!request.encoderDecoder)
        row.history.push_back(token);
      row.done =
          !deliver(row.index, token, samplers[order[r]].lastLogprobs());
      if (result.cancelled)
        return true;
    }
    return true;
  };
  // A finished sequence stops costing work: the rows still going move into
  // its cache row (the last ones fill the holes; rows before the new end
  // stay where they are), and the batch shrinks.
  auto compact = [&]() -> bool {
    std::vector<int64_t> live;
    for (std::size_t r = 0; r < order.size(); ++r)
      if (!batch[order[r]].done)
        live.push_back(static_cast<int64_t>(r));
    if (live.size() == order.size() || live.empty())
      return true;
    const std::size_t kept = live.size();
    std::vector<int64_t> sources(kept);
    // Holes are filled from the live rows past the new end, in order.
    std::vector<int64_t> movers;
    for (int64_t r : live)
      if (r >= static_cast<int64_t>(kept))
        movers.push_back(r);
    std::size_t next = 0;
    for (std::size_t r = 0; r < kept; ++r)
      sources[r] = batch[order[r]].done ? movers[next++]
                                        : static_cast<int64_t>(r);
    Clock::time_point copyStart = Clock::now();
    if (!model.reorderCache(sources, 0, /*crossToo=*/true, error))
      return false;
    stats.reorderSeconds += secondsBetween(copyStart, Clock::now());
    std::vector<int64_t> newOrder(kept), newTokens(kept);
    for (std::size_t r = 0; r < kept; ++r) {
      newOrder[r] = order[sources[r]];
      newTokens[r] = tokens[sources[r]];
    }
    order = std::move(newOrder);
    tokens = std::move(newTokens);
    return true;
  };
  auto allDone = [&]() {
    return result.cancelled ||
           std::all_of(batch.begin(), batch.end(),
                       [](const Row &row) { return row.done; });
  };
  if (!choose())
    return false;
  stats.firstTokenSeconds = now();
  begin = Clock::now();
  while (!allDone()) {
    if (!compact())
      return false;
    std::vector<InputView> step = stepInputs(tokens, cached, order);
    const int64_t live = static_cast<int64_t>(order.size());
    logits = runEntry("decode_step", step, live, error);
    if (!logits)
      return false;
    ++cached;
    ++stats.decodeSteps;
    stats.decodedTokens += live;
    if (!choose())
      return false;
  }
  stats.decodeSeconds = secondsBetween(begin, Clock::now());
  result.batches.push_back(stats);
  return true;
}

bool Generation::runBeams(int64_t index, std::string &error) {
  const int64_t beams = request.beams.numBeams;
  const int64_t vocab = plan.vocab;
  BatchStats stats;
  stats.sequences = 1;
  stats.rows = beams;
  std::vector<InputView> inputs = prefillInputs({index}, 1);
  stats.promptTokens = columns;
  Clock::time_point begin = Clock::now();
  std::optional<OutputView> logits = runPrompt(inputs, index, error);
  if (!logits)
    return false;
  stats.prefillSeconds = secondsBetween(begin, Clock::now());
  const int64_t promptRows = request.encoderDecoder ? 1 : columns;
  int64_t cached = promptRows;
  const std::vector<int64_t> &prompt = request.prompts[index];
  BeamSearch search(request.beams, request.eos, request.maxNewTokens,
                    request.encoderDecoder ? 1 : columns);
  // Each beam's tokens so far (for the repetition penalty).
  std::vector<std::vector<int64_t>> histories(
      static_cast<std::size_t>(beams),
      request.encoderDecoder ? std::vector<int64_t>() : prompt);
  std::vector<float> logProbs(static_cast<std::size_t>(beams * vocab));
  std::vector<int64_t> parents, tokens;
  bool first = true;
  for (int64_t generated = 0;; ++generated) {
    // The prefill's one row stands for every beam on the first step; only
    // beam 0 is live there (BeamSearch ignores the others).
    for (int64_t b = 0; b < beams; ++b) {
      const float *row = logits->data + (first ? 0 : b) * vocab;
      float *out = logProbs.data() + b * vocab;
      std::copy(row, row + vocab, out);
      logSoftmax(out, vocab);
      applyLogitsProcessors(out, vocab, request.sampling,
                            request.encoderDecoder ? request.bos : -1,
                            histories[b],
                            request.encoderDecoder ? 0 : prompt.size());
      // (On the first step only beam 0 is live.)
      if ((!first || b == 0) && !anyFiniteLogit(out, vocab)) {
        error = noFiniteLogit(generated + 1, index);
        return false;
      }
    }
    if (!search.step(logProbs.data(), vocab, parents, tokens) ||
        generated + 1 >= request.maxNewTokens) {
      int64_t continuations = 0;
      if (search.starved(continuations)) {
        error = fmt::format(
            "new token {} of prompt {}: beam search with --num-beams {} "
            "found only {} token{} that can continue (the others are banned "
            "by --bad-words or the config's bad_words_ids, or the "
            "vocabulary is smaller); use --num-beams {} or fewer, or ban "
            "fewer tokens",
            generated + 1, index, beams, continuations,
            continuations == 1 ? "" : "s", std::max<int64_t>(1, continuations));
        return false;
      }
      break;
    }
    // Beam i continues beam parents[i]: its cache rows are that beam's.
    // Only positions generated since the prompt differ between beams (the
    // first step copies the prompt's, and the source's cross-attention
    // keys and values, to every beam).
    Clock::time_point copyStart = Clock::now();
    if (!model.reorderCache(parents, first ? 0 : promptRows,
                            /*crossToo=*/first, error))
      return false;
    stats.reorderSeconds += secondsBetween(copyStart, Clock::now());
    std::vector<std::vector<int64_t>> next;
    for (int64_t b = 0; b < beams; ++b) {
      next.push_back(histories[parents[b]]);
      next.back().push_back(tokens[b]);
    }
    histories = std::move(next);
    if (first) {
      stats.firstTokenSeconds = now();
      begin = Clock::now();
    }
    first = false;
    // Every beam reads the one source's mask (member 0 of the prefill).
    std::vector<InputView> step = stepInputs(
        tokens, cached,
        request.encoderDecoder ? std::vector<int64_t>(beams, 0)
                               : std::vector<int64_t>());
    logits = runEntry("decode_step", step, beams, error);
    if (!logits)
      return false;
    ++cached;
    ++stats.decodeSteps;
    stats.decodedTokens += beams;
  }
  if (!first)
    stats.decodeSeconds = secondsBetween(begin, Clock::now());
  else
    stats.firstTokenSeconds = now();
  result.batches.push_back(stats);
  // The best hypothesis, delivered token by token as if it had streamed.
  for (int64_t token : search.best())
    if (!deliver(index, token))
      break;
  (void)cached;
  return true;
}

} // namespace

std::optional<OutputView> runPromptChunk(Model &model,
                                         const std::vector<int64_t> &prompt,
                                         int64_t done, int64_t chunk,
                                         std::string &error) {
  const int64_t length = static_cast<int64_t>(prompt.size());
  const int64_t count =
      chunk > 0 ? std::min(chunk, length - done) : length - done;
  // One unpadded row: the runtime's defaults (mask all ones, positions
  // from the cached length) are its mask and positions.
  std::vector<InputView> inputs = {
      {"input_ids", {1, count}, prompt.data() + done}};
  return model.run(done == 0 ? "prefill" : "extend", inputs, error);
}

bool entryTakes(const Model &model, const std::string &entry,
           const std::string &name) {
  const Plan *plan = model.entry(entry);
  if (!plan)
    return false;
  for (const PlanInput &input : plan->inputs)
    if (input.name == name)
      return true;
  return false;
}

bool checkGenerateRequest(const Model &model, const GenerateRequest &request,
                          std::string &error) {
  const Plan &plan = model.plan();
  if (!model.hasEntry("prefill") || !model.hasEntry("decode_step")) {
    error = fmt::format("model '{}' cannot generate: it has no decoder "
                        "(or its masks have no decode step)",
                        plan.model);
    return false;
  }
  if (plan.output().name != "logits") {
    error = fmt::format("model '{}' cannot generate: it outputs {}, not "
                        "logits (output = none)",
                        plan.model, plan.output().name);
    return false;
  }
  if (!checkGenerateOptions(request.sampling, request.beams, plan.maxBatch,
                            request.cApiNames, error))
    return false;
  const char *what = request.encoderDecoder ? "--source" : "--prompt";
  if (request.prompts.empty()) {
    error = fmt::format("no {} given", what);
    return false;
  }
  const std::string budget = request.maxNewTokensName.empty()
                                 ? "--max-new-tokens"
                                 : request.maxNewTokensName;
  if (request.maxNewTokens < 1) {
    error = fmt::format("{} must be at least 1, got {}", budget,
                        request.maxNewTokens);
    return false;
  }
  if (request.keepLogits &&
      (request.prompts.size() != 1 || request.beams.numBeams != 1)) {
    error = "--dump-logits takes one prompt and no beam search";
    return false;
  }
  if (request.prefillChunk < 0) {
    error = fmt::format("--prefill-chunk must be 0 (the whole prompt at once) or more, got {}",
                        request.prefillChunk);
    return false;
  }
  if (request.prefillChunk > 0 && !model.hasEntry("extend")) {
    error = fmt::format("--prefill-chunk needs the extend entry point, which "
                        "only decoder-only programs have; model '{}' has none",
                        plan.model);
    return false;
  }
  if (request.prefillChunk > 0 && request.prompts.size() != 1) {
    error = fmt::format("--prefill-chunk runs one prompt, {} are given",
                        request.prompts.size());
    return false;
  }
  auto checkToken = [&](int64_t id, const std::string &name) {
    if (id >= 0 && id < plan.vocab)
      return true;
    error = fmt::format("{} = {} is not a token id (vocab {})", name, id,
                        plan.vocab);
    return false;
  };
  if (request.encoderDecoder &&
      !checkToken(request.bos,
                  request.bosName.empty() ? "--bos" : request.bosName))
    return false;
  for (int64_t eos : request.eos)
    if (!checkToken(eos, request.eosName.empty() ? "--eos" : request.eosName))
      return false;
  for (const std::vector<int64_t> &word : request.sampling.badWords) {
    if (word.empty()) {
      error = "--bad-words holds an empty sequence";
      return false;
    }
    for (int64_t id : word)
      if (!checkToken(id, "--bad-words"))
        return false;
  }
  const bool several = request.prompts.size() > 1;
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    const std::vector<int64_t> &prompt = request.prompts[p];
    // "--prompt" or, for one of several, "prompt 3".
    std::string name =
        several ? fmt::format("{} {}", request.encoderDecoder ? "source"
                                                              : "prompt",
                              p + 1)
        : request.promptName.empty() ? std::string(what)
                                     : request.promptName;
    if (prompt.empty()) {
      error = fmt::format("{} is empty", name);
      return false;
    }
    for (std::size_t i = 0; i < prompt.size(); ++i)
      if (!checkToken(prompt[i], fmt::format("{}[{}]", name, i)))
        return false;
    // The decoder's sequence: the prompt (or bos) and the new tokens.
    int64_t decoderStart = request.encoderDecoder
                               ? 1
                               : static_cast<int64_t>(prompt.size());
    if (request.encoderDecoder &&
        static_cast<int64_t>(prompt.size()) > plan.maxLen) {
      error = fmt::format("{} has {} tokens, more than max_len {}", name,
                          prompt.size(), plan.maxLen);
      return false;
    }
    // Checked: --max-new-tokens can be any 64-bit count.
    int64_t decoderEnd = 0;
    if (__builtin_add_overflow(decoderStart, request.maxNewTokens,
                               &decoderEnd) ||
        decoderEnd > plan.maxLen) {
      error = fmt::format(
          "{} plus {} {} is more than max_len {}",
          request.encoderDecoder
              ? fmt::format("the start token {}", request.bos)
              : fmt::format("{} of {} tokens",
                            several ? name : std::string("a prompt"),
                            prompt.size()),
          budget, request.maxNewTokens, plan.maxLen);
      return false;
    }
  }
  return true;
}

std::optional<GenerateResult> generate(Model &model,
                                       const GenerateRequest &request,
                                       std::string &error,
                                       const TokenCallback &onToken) {
  if (!checkGenerateRequest(model, request, error))
    return std::nullopt;
  GenerateResult result;
  Generation generation(model, request, onToken, result);
  if (!generation.run(error))
    return std::nullopt;
  return result;
}

} // namespace tfmc::runtime
