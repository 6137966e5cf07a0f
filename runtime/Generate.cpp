//===- Generate.cpp - Greedy autoregressive decoding ----------------------===//

#include "runtime/Generate.h"
#include "runtime/Tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace tfmc::runtime {
namespace {

/// Index of the largest of `count` floats; the first one on ties.
int64_t argmax(const float *values, int64_t count) {
  int64_t best = 0;
  for (int64_t i = 1; i < count; ++i)
    if (values[i] > values[best])
      best = i;
  return best;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

} // namespace

std::optional<GenerateResult> generate(Model &model,
                                       const GenerateRequest &request,
                                       std::string &error) {
  const Plan &plan = model.plan();
  if (!model.hasEntry("prefill") || !model.hasEntry("decode_step")) {
    error = fmt::format("model '{}' cannot generate: it has no decoder "
                        "(or its masks have no decode step)",
                        plan.model);
    return std::nullopt;
  }
  if (plan.output.name != "logits") {
    error = fmt::format("model '{}' cannot generate: it outputs {}, not "
                        "logits (output = none)",
                        plan.model, plan.output.name);
    return std::nullopt;
  }
  const char *what = request.encoderDecoder ? "--source" : "--prompt";
  if (request.prompt.empty()) {
    error = fmt::format("{} is empty", what);
    return std::nullopt;
  }
  if (request.maxNewTokens < 1) {
    error = fmt::format("--max-new-tokens must be at least 1, got {}",
                        request.maxNewTokens);
    return std::nullopt;
  }
  auto checkToken = [&](int64_t id, const std::string &name) {
    if (id >= 0 && id < plan.vocab)
      return true;
    error = fmt::format("{} = {} is not a token id (vocab {})", name, id,
                        plan.vocab);
    return false;
  };
  for (std::size_t i = 0; i < request.prompt.size(); ++i)
    if (!checkToken(request.prompt[i], fmt::format("{}[{}]", what, i)))
      return std::nullopt;
  if (request.encoderDecoder && !checkToken(request.bos, "--bos"))
    return std::nullopt;
  for (int64_t eos : request.eos)
    if (!checkToken(eos, "--eos"))
      return std::nullopt;
  // The decoder's sequence: the prompt (or bos) and the new tokens.
  int64_t decoderStart = request.encoderDecoder
                             ? 1
                             : static_cast<int64_t>(request.prompt.size());
  if (request.encoderDecoder &&
      static_cast<int64_t>(request.prompt.size()) > plan.maxLen) {
    error = fmt::format("--source has {} tokens, more than max_len {}",
                        request.prompt.size(), plan.maxLen);
    return std::nullopt;
  }
  // Checked: --max-new-tokens can be any 64-bit count.
  int64_t decoderEnd = 0;
  if (__builtin_add_overflow(decoderStart, request.maxNewTokens, &decoderEnd) ||
      decoderEnd > plan.maxLen) {
    error = fmt::format("{} plus --max-new-tokens {} is more than max_len {}",
                        request.encoderDecoder
                            ? fmt::format("the start token {}", request.bos)
                            : fmt::format("a prompt of {} tokens",
                                          request.prompt.size()),
                        request.maxNewTokens, plan.maxLen);
    return std::nullopt;
  }

  GenerateResult result;
  result.vocab = plan.vocab;
  const int64_t length = static_cast<int64_t>(request.prompt.size());
  std::vector<int64_t> ones(static_cast<std::size_t>(length), 1);
  std::vector<int64_t> bos{request.bos}, bosMask{1};
  std::vector<InputView> inputs;
  if (request.encoderDecoder) {
    inputs = {{"input_ids", {1, length}, request.prompt.data()},
              {"attention_mask", {1, length}, ones.data()},
              {"decoder_input_ids", {1, 1}, bos.data()},
              {"decoder_attention_mask", {1, 1}, bosMask.data()}};
  } else {
    inputs = {{"input_ids", {1, length}, request.prompt.data()}};
  }
  // Inputs the entry does not take (a model without padding masks) are
  // left out rather than rejected.
  auto takes = [&](const std::string &entry, const std::string &name) {
    for (const PlanInput &input : model.entry(entry)->inputs)
      if (input.name == name)
        return true;
    return false;
  };
  std::vector<InputView> prefillInputs;
  for (const InputView &input : inputs)
    if (takes("prefill", input.name))
      prefillInputs.push_back(input);

  auto start = std::chrono::steady_clock::now();
  std::optional<OutputView> logits = model.run("prefill", prefillInputs, error);
  if (!logits)
    return std::nullopt;
  result.prefillSeconds = secondsSince(start);
  // [1, 1, vocab]: the prompt's last position only. A plan whose prefill
  // returns every position would have its first row read here.
  if (logits->shape.size() != 3 || logits->shape[1] != 1) {
    error = fmt::format("plan: prefill returns logits {}, not its last "
                        "position's [1, 1, {}]",
                        formatShape(logits->shape), plan.vocab);
    return std::nullopt;
  }
  const int64_t vocab = logits->shape.back();
  if (request.keepLogits)
    result.logits.assign(logits->data, logits->data + vocab);
  int64_t next = argmax(logits->data, vocab);
  result.tokens.push_back(next);

  start = std::chrono::steady_clock::now();
  std::vector<int64_t> token(1);
  while (static_cast<int64_t>(result.tokens.size()) < request.maxNewTokens &&
         std::find(request.eos.begin(), request.eos.end(), next) ==
             request.eos.end()) {
    token[0] = next;
    std::vector<InputView> step;
    if (request.encoderDecoder) {
      step.push_back({"decoder_input_ids", {1, 1}, token.data()});
      if (takes("decode_step", "attention_mask"))
        step.push_back({"attention_mask", {1, length}, ones.data()});
    } else {
      step.push_back({"input_ids", {1, 1}, token.data()});
    }
    logits = model.run("decode_step", step, error);
    if (!logits)
      return std::nullopt;
    ++result.decodeSteps;
    if (request.keepLogits)
      result.logits.insert(result.logits.end(), logits->data,
                           logits->data + vocab);
    next = argmax(logits->data, vocab);
    result.tokens.push_back(next);
  }
  result.decodeSeconds = secondsSince(start);
  return result;
}

} // namespace tfmc::runtime
