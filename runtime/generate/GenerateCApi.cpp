//===- GenerateCApi.cpp - The C API of generation (tfmc_generate.h) ------===//
//
// tfmc_generate, tfmc_generate_options_init and tfmc_generate_batch over
// Generate.h, and tfmc_batcher over ContinuousBatcher.h, with the C API's error discipline (core/CApiImpl.h). In
// libtfmc_generate.a: linked into programs and libraries of models with a
// decoder only.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/CApiImpl.h"
#include "runtime/core/tfmc.h"
#include "runtime/generate/ContinuousBatcher.h"
#include "runtime/generate/Generate.h"
#include "runtime/generate/tfmc_generate.h"

#include <fmt/format.h>

using namespace tfmc::runtime;
using tfmc::runtime::capi::failWith;
using tfmc::runtime::capi::guarded;

extern "C" int tfmc_generate(tfmc_model *model, const int64_t *prompt,
                             int64_t length, int64_t bos, int64_t eos,
                             int64_t max_new_tokens, int64_t *out,
                             int64_t *count) {
  return guarded("tfmc_generate", [&]() -> int {
    if (!model || !model->model)
      return failWith("tfmc_generate: model is null");
    if (!out || !count || (length > 0 && !prompt))
      return failWith("tfmc_generate: prompt, out and count must not be null");
    if (length < 1)
      return failWith("tfmc_generate: the prompt is empty");
    *count = 0;
    GenerateRequest request;
    request.prompts.emplace_back(prompt, prompt + length);
    for (const PlanInput &input : model->model->plan().inputs)
      request.encoderDecoder |= input.name == "decoder_input_ids";
    request.bos = bos;
    if (eos != -1)
      request.eos.push_back(eos);
    request.maxNewTokens = max_new_tokens;
    std::string error;
    std::optional<GenerateResult> result =
        generate(*model->model, request, error);
    if (!result)
      return failWith(error);
    const std::vector<int64_t> &tokens = result->sequences.front().tokens;
    std::copy(tokens.begin(), tokens.end(), out);
    *count = static_cast<int64_t>(tokens.size());
    return 0;
  });
}

extern "C" void tfmc_generate_options_init(tfmc_generate_options *options) {
  if (!options)
    return;
  *options = tfmc_generate_options();
  options->bos = -1;
  options->top_p = 1;
  options->repetition_penalty = 1;
  options->num_beams = 1;
  options->length_penalty = 1;
}

extern "C" int tfmc_generate_batch(tfmc_model *model,
                                   const int64_t *const *prompts,
                                   const int64_t *lengths, int64_t count,
                                   const tfmc_generate_options *options,
                                   tfmc_token_callback callback, void *user,
                                   int64_t *out, int64_t *out_counts) {
  return guarded("tfmc_generate_batch", [&]() -> int {
    if (!model || !model->model)
      return failWith("tfmc_generate_batch: model is null");
    if (!prompts || !lengths || !options || !out || !out_counts)
      return failWith("tfmc_generate_batch: prompts, lengths, options, out "
                      "and out_counts must not be null");
    if (count < 1)
      return failWith(fmt::format(
          "tfmc_generate_batch: count must be at least 1, got {}", count));
    if (options->eos_count < 0 || (options->eos_count > 0 && !options->eos))
      return failWith("tfmc_generate_batch: eos_count is negative, or eos "
                      "is null with eos_count > 0");
    GenerateRequest request;
    request.cApiNames = true;
    for (int64_t i = 0; i < count; ++i) {
      if (lengths[i] < 1 || !prompts[i])
        return failWith(fmt::format(
            "tfmc_generate_batch: prompt {} is empty (length {})", i,
            lengths[i]));
      request.prompts.emplace_back(prompts[i], prompts[i] + lengths[i]);
    }
    for (const PlanInput &input : model->model->plan().inputs)
      request.encoderDecoder |= input.name == "decoder_input_ids";
    request.bos = options->bos;
    request.eos.assign(options->eos, options->eos + options->eos_count);
    request.maxNewTokens = options->max_new_tokens;
    request.sampling.temperature = options->temperature;
    request.sampling.topK = options->top_k;
    request.sampling.topP = options->top_p;
    request.sampling.seed = options->seed;
    request.sampling.repetitionPenalty = options->repetition_penalty;
    request.beams.numBeams = options->num_beams;
    request.beams.lengthPenalty = options->length_penalty;
    request.beams.earlyStopping = options->early_stopping != 0;
    std::fill(out_counts, out_counts + count, 0);
    const int64_t stride = std::max<int64_t>(options->max_new_tokens, 0);
    TokenCallback onToken = [&](int64_t sequence, int64_t token,
                                const TokenLogprobs *) {
      out[sequence * stride + out_counts[sequence]++] = token;
      if (!callback)
        return TokenAction::Continue;
      int action = callback(user, sequence, token);
      return action == TFMC_CANCEL          ? TokenAction::Cancel
             : action == TFMC_STOP_SEQUENCE ? TokenAction::StopSequence
                                            : TokenAction::Continue;
    };
    std::string error;
    std::optional<GenerateResult> result =
        generate(*model->model, request, error, onToken);
    if (!result)
      return failWith(error);
    return result->cancelled ? TFMC_CANCEL : 0;
  });
}

struct tfmc_batcher {
  std::unique_ptr<ContinuousBatcher> batcher;
};

extern "C" int tfmc_batcher_create(tfmc_model *model, int64_t max_queue,
                                   tfmc_batcher **batcher) {
  return guarded("tfmc_batcher_create", [&]() -> int {
    if (!model || !model->model || !batcher)
      return failWith("tfmc_batcher_create: model and batcher must not be "
                      "null");
    *batcher = nullptr;
    if (max_queue < 1)
      return failWith(fmt::format(
          "tfmc_batcher_create: max_queue must be at least 1, got {}",
          max_queue));
    std::string error;
    auto created = std::make_unique<tfmc_batcher>();
    created->batcher = ContinuousBatcher::create(*model->model, max_queue, error);
    if (!created->batcher)
      return failWith(error);
    *batcher = created.release();
    return 0;
  });
}

extern "C" int tfmc_batcher_set_prefill_chunk(tfmc_batcher *batcher,
                                              int64_t tokens) {
  return guarded("tfmc_batcher_set_prefill_chunk", [&]() -> int {
    if (!batcher || !batcher->batcher)
      return failWith("tfmc_batcher_set_prefill_chunk: batcher must not be "
                      "null");
    if (tokens < 0)
      return failWith(fmt::format("tfmc_batcher_set_prefill_chunk: tokens "
                                  "must be 0 or more, got {}",
                                  tokens));
    batcher->batcher->setPrefillChunk(tokens);
    return 0;
  });
}

extern "C" int tfmc_batcher_submit(tfmc_batcher *batcher,
                                   const int64_t *prompt, int64_t length,
                                   const tfmc_generate_options *options,
                                   tfmc_sequence_token_callback on_token,
                                   tfmc_sequence_done_callback on_done,
                                   void *user) {
  return guarded("tfmc_batcher_submit", [&]() -> int {
    if (!batcher || !batcher->batcher || !options || (length > 0 && !prompt))
      return failWith("tfmc_batcher_submit: batcher, prompt and options "
                      "must not be null");
    if (length < 1)
      return failWith("tfmc_batcher_submit: the prompt is empty");
    if (options->eos_count < 0 || (options->eos_count > 0 && !options->eos))
      return failWith("tfmc_batcher_submit: eos_count is negative, or eos "
                      "is null with eos_count > 0");
    if (options->num_beams != 1)
      return failWith(fmt::format("num_beams must be 1 in a batcher (beam "
                                  "search: tfmc_generate_batch), got {}",
                                  options->num_beams));
    auto job = std::make_shared<Job>();
    job->prompt.assign(prompt, prompt + length);
    job->bos = options->bos;
    job->eos.assign(options->eos, options->eos + options->eos_count);
    job->maxTokens = options->max_new_tokens;
    job->sampling.temperature = options->temperature;
    job->sampling.topK = options->top_k;
    job->sampling.topP = options->top_p;
    job->sampling.seed = options->seed;
    job->sampling.repetitionPenalty = options->repetition_penalty;
    std::string error, field;
    if (!batcher->batcher->checkJob(*job, "max_new_tokens", error, field))
      return failWith(error);
    job->onToken = [on_token, user](int64_t token, const TokenLogprobs *) {
      if (!on_token)
        return TokenAction::Continue;
      int action = on_token(user, token);
      return action == TFMC_CANCEL          ? TokenAction::Cancel
             : action == TFMC_STOP_SEQUENCE ? TokenAction::StopSequence
                                            : TokenAction::Continue;
    };
    job->onDone = [on_done, user](FinishReason reason,
                                  const std::string &message) {
      if (!on_done)
        return;
      int code = reason == FinishReason::Stop        ? TFMC_FINISH_STOP
                 : reason == FinishReason::Length    ? TFMC_FINISH_LENGTH
                 : reason == FinishReason::Cancelled ? TFMC_FINISH_CANCELLED
                                                     : TFMC_FINISH_ERROR;
      on_done(user, code,
              reason == FinishReason::Error ? message.c_str() : nullptr);
    };
    switch (batcher->batcher->submit(std::move(job))) {
    case ContinuousBatcher::Admission::Accepted:
      return 0;
    case ContinuousBatcher::Admission::QueueFull:
      return TFMC_QUEUE_FULL;
    case ContinuousBatcher::Admission::Closed:
      break;
    }
    return failWith("tfmc_batcher_submit: the batcher is shutting down");
  });
}

extern "C" void tfmc_batcher_destroy(tfmc_batcher *batcher,
                                     double grace_seconds) {
  if (!batcher)
    return;
  if (batcher->batcher)
    batcher->batcher->shutdown(grace_seconds);
  delete batcher;
}
