//===- CApi.cpp - The C API (tfmc.h) over Model ---------------------------===//
//
// Also the one place that names the symbols codegen's glue file defines for
// each compiled model: its variants (a target, the CPU features it needs,
// its kernel table and plan JSON; the widest first) and the registry's CPU
// targets (for the rebuild hint when no variant runs on this CPU).
//
// Nothing may cross the C boundary as an exception: each entry point catches
// everything (std::bad_alloc included) into the thread's last error.
//
//===----------------------------------------------------------------------===//

#include "runtime/CpuFeatures.h"
#include "runtime/Generate.h"
#include "runtime/Model.h"
#include "runtime/Text.h"
#include "runtime/tfmc.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <new>

// Defined by the glue file codegen writes for each model.
extern "C" {
extern const struct tfmc_variant tfmc_variants[];
extern const int tfmc_num_variants;
extern const struct tfmc_cpu_target tfmc_cpu_targets[];
extern const int tfmc_num_cpu_targets;
}

struct tfmc_model {
  std::unique_ptr<tfmc::runtime::Model> model;
};

namespace tfmc::runtime {
namespace {

/// The variant this CPU runs (the first, i.e. widest, whose features it
/// has) and its plans; where none fits, the first variant's plans (they
/// describe the program: name, inputs, weights) and the reason.
struct LinkedPlans {
  const tfmc_variant *variant = nullptr;
  bool runsHere = false;
  std::string cpuError; // why no variant runs here
  std::optional<std::vector<Plan>> plans;
  std::string error;
};

const LinkedPlans &parsedLinkedPlans() {
  // A function-local static: chosen and parsed once, thread-safe.
  static const LinkedPlans linked = [] {
    LinkedPlans result;
    try {
      std::vector<CpuTargetFeatures> variants, registry;
      for (int i = 0; i < tfmc_num_variants; ++i)
        variants.push_back({tfmc_variants[i].target, tfmc_variants[i].features});
      for (int i = 0; i < tfmc_num_cpu_targets; ++i)
        registry.push_back({tfmc_cpu_targets[i].name, tfmc_cpu_targets[i].features});
      VariantChoice choice = chooseVariant(variants, registry, cpuHasFeature);
      result.runsHere = choice.index >= 0;
      result.variant = &tfmc_variants[std::max(choice.index, 0)];
      result.cpuError = choice.error;
      result.plans = parsePlans(result.variant->plan_json, result.error);
    } catch (...) {
      result.error = "plan: out of memory";
    }
    return result;
  }();
  return linked;
}

thread_local std::string lastError;

int failWith(const std::string &message) {
  try {
    // The same one-line form as the command line's errors.
    lastError = oneLine(message);
  } catch (...) {
    // Keep whatever was there; there is no memory for more.
  }
  return 1;
}

/// Runs the body of a C entry point (which returns 0, or failWith(...)),
/// turning anything it throws into the thread's last error: no exception
/// crosses the C API.
template <typename Body> int guarded(const char *entryPoint, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return failWith("out of memory");
  } catch (const std::exception &e) {
    return failWith(e.what());
  } catch (...) {
    return failWith(fmt::format("{}: unknown error", entryPoint));
  }
}

} // namespace

const std::vector<Plan> *linkedPlans(std::string &error) {
  const LinkedPlans &linked = parsedLinkedPlans();
  if (!linked.plans) {
    error = linked.error;
    return nullptr;
  }
  return &*linked.plans;
}

std::vector<LinkedVariant> linkedVariants() {
  const LinkedPlans &linked = parsedLinkedPlans();
  std::vector<LinkedVariant> variants;
  for (int i = 0; i < tfmc_num_variants; ++i)
    variants.push_back({tfmc_variants[i].target,
                        missingCpuFeatures(tfmc_variants[i].features),
                        linked.runsHere && linked.variant == &tfmc_variants[i]});
  return variants;
}

const Plan *linkedPlan(std::string &error) {
  const std::vector<Plan> *plans = linkedPlans(error);
  return plans ? &plans->front() : nullptr;
}

std::unique_ptr<Model> Model::createLinked(const std::string &weightsPath,
                                           std::string &error) {
  const std::vector<Plan> *plans = linkedPlans(error);
  if (!plans)
    return nullptr;
  // Before any kernel runs: never SIGILL.
  const LinkedPlans &linked = parsedLinkedPlans();
  if (!linked.runsHere) {
    error = linked.cpuError;
    return nullptr;
  }
  return create(*plans, linked.variant->kernels, linked.variant->num_kernels,
                weightsPath, error);
}

} // namespace tfmc::runtime

using namespace tfmc::runtime;

extern "C" int tfmc_create(const char *weights_path, tfmc_model **model) {
  return guarded("tfmc_create", [&]() -> int {
    if (!model)
      return failWith("tfmc_create: model is null");
    *model = nullptr;
    if (!weights_path)
      return failWith("tfmc_create: weights_path is null");
    std::string error;
    std::unique_ptr<Model> created = Model::createLinked(weights_path, error);
    if (!created)
      return failWith(error);
    *model = new tfmc_model{std::move(created)};
    return 0;
  });
}

extern "C" int tfmc_forward(tfmc_model *model, const tfmc_input *inputs,
                            int num_inputs, const float **output,
                            int64_t shape[3]) {
  return guarded("tfmc_forward", [&]() -> int {
    if (!model || !model->model)
      return failWith("tfmc_forward: model is null");
    if (!output || !shape)
      return failWith("tfmc_forward: output or shape is null");
    if (num_inputs < 0 || (num_inputs > 0 && !inputs))
      return failWith(fmt::format("tfmc_forward: {} inputs at {}", num_inputs,
                                  static_cast<const void *>(inputs)));
    *output = nullptr;
    std::vector<InputView> views;
    for (int i = 0; i < num_inputs; ++i) {
      const tfmc_input &input = inputs[i];
      if (!input.name)
        return failWith(fmt::format("tfmc_forward: input {} has no name", i));
      if (input.batch < 0 || input.length < 0)
        return failWith(fmt::format("input {} has shape [{}, {}]",
                                    quote(input.name), input.batch,
                                    input.length));
      views.push_back({input.name, {input.batch, input.length}, input.data});
    }
    std::string error;
    std::optional<OutputView> result = model->model->forward(views, error);
    if (!result)
      return failWith(error);
    if (result->shape.size() != 3)
      return failWith(fmt::format("output '{}' has rank {}; the C API returns "
                                  "rank 3",
                                  result->name, result->shape.size()));
    for (int d = 0; d < 3; ++d)
      shape[d] = result->shape[d];
    *output = result->data;
    return 0;
  });
}

extern "C" int tfmc_output(tfmc_model *model, const char *name,
                           const float **output, int64_t shape[3],
                           int *rank) {
  return guarded("tfmc_output", [&]() -> int {
    if (!model || !model->model)
      return failWith("tfmc_output: model is null");
    if (!name || !output || !shape || !rank)
      return failWith("tfmc_output: name, output, shape or rank is null");
    *output = nullptr;
    const std::vector<OutputView> &outputs = model->model->outputs();
    if (outputs.empty())
      return failWith("tfmc_output: no tfmc_forward has succeeded yet");
    std::string names;
    for (const OutputView &view : outputs) {
      if (view.name == name && view.shape.size() <= 3) {
        for (int d = 0; d < 3; ++d)
          shape[d] = d < static_cast<int>(view.shape.size()) ? view.shape[d] : 0;
        *rank = static_cast<int>(view.shape.size());
        *output = view.data;
        return 0;
      }
      names += (names.empty() ? "" : ", ") + view.name;
    }
    return failWith(fmt::format("tfmc_output: no output {}; this model's are {}",
                                quote(name), names));
  });
}

extern "C" int tfmc_set_threads(int threads) {
  return guarded("tfmc_set_threads", [&]() -> int {
    std::string error;
    if (!Model::setThreads(threads, error))
      return failWith(error);
    return 0;
  });
}

extern "C" void tfmc_destroy(tfmc_model *model) { delete model; }

extern "C" const char *tfmc_last_error(void) { return lastError.c_str(); }

extern "C" const char *tfmc_model_name(void) {
  try {
    std::string error;
    const Plan *plan = linkedPlan(error);
    return plan ? plan->model.c_str() : "";
  } catch (...) {
    return "";
  }
}

extern "C" const char *tfmc_target(void) {
  try {
    const LinkedPlans &linked = parsedLinkedPlans();
    return linked.runsHere ? linked.variant->target : "";
  } catch (...) {
    return "";
  }
}

extern "C" const char *tfmc_weight_dtype(void) {
  try {
    std::string error;
    const Plan *plan = linkedPlan(error);
    return plan ? weightDTypeName(programWeightDType(*plan)) : "";
  } catch (...) {
    return "";
  }
}

extern "C" int64_t tfmc_weight_group(void) {
  try {
    std::string error;
    const Plan *plan = linkedPlan(error);
    return plan ? programWeightGroup(*plan) : 0;
  } catch (...) {
    return 0;
  }
}

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
    TokenCallback onToken = [&](int64_t sequence, int64_t token) {
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
