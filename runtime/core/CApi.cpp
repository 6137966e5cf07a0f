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

#include "runtime/core/CpuFeatures.h"
#include "runtime/core/CApiImpl.h"
#include "runtime/core/Model.h"
#include "support/Text.h"
#include "runtime/core/tfmc.h"

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

} // namespace

std::string &capi::lastError() {
  thread_local std::string message;
  return message;
}

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
using tfmc::runtime::capi::failWith;
using tfmc::runtime::capi::guarded;

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

extern "C" int tfmc_share(const tfmc_model *model, tfmc_model **shared) {
  return guarded("tfmc_share", [&]() -> int {
    if (!shared)
      return failWith("tfmc_share: shared is null");
    *shared = nullptr;
    if (!model)
      return failWith("tfmc_share: model is null");
    std::string error;
    std::unique_ptr<Model> copy = model->model->share(error);
    if (!copy)
      return failWith(error);
    *shared = new tfmc_model{std::move(copy)};
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
                                    tfmc::support::quote(input.name), input.batch,
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
                                tfmc::support::quote(name), names));
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

extern "C" const char *tfmc_last_error(void) {
  return capi::lastError().c_str();
}

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
