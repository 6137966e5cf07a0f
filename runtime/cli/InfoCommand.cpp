//===- InfoCommand.cpp - NAME info: what the program was compiled for -----===//
//
//   NAME info [--weights W.safetensors]
//
// Inputs, output, weights (count, bytes as stored, dtype), arena and the
// limits the program was compiled with (vocab, max_len, --max-batch,
// --max-seq). With --weights, also loads W and says how long that took
// (mapping and checking, converting f32 to the program's bf16, int8 or int4).
//
//===----------------------------------------------------------------------===//

#include "runtime/cli/Cli.h"
#include "runtime/core/WeightFiles.h"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <set>

namespace tfmc::runtime::cli {

namespace {
/// "x86-64-avx2 (runs on this CPU; also x86-64-avx512, which needs
/// avx512f ... here)": the variant this CPU runs first, then the others
/// and what this CPU lacks for each.
std::string describeTargets(const std::vector<LinkedVariant> &variants) {
  auto lacks = [](const LinkedVariant &variant) {
    std::string text;
    for (const std::string &feature : variant.missingFeatures)
      text += " " + feature;
    return text;
  };
  const LinkedVariant *chosen = nullptr;
  for (const LinkedVariant &variant : variants)
    if (variant.chosen)
      chosen = &variant;
  std::string text;
  if (chosen) {
    text = chosen->target + " (runs on this CPU";
  } else {
    text = variants.front().target +
           " (cannot run on this CPU, which lacks" + lacks(variants.front());
  }
  for (const LinkedVariant &variant : variants) {
    if (&variant == chosen || (!chosen && &variant == &variants.front()))
      continue;
    text += "; also " + variant.target;
    if (!variant.missingFeatures.empty())
      text += ", which needs" + lacks(variant) + " here";
  }
  return text + ")";
}
} // namespace

int infoCommand(int argc, char **argv) {
  Options options("info", {"--weights"}, argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const Plan &plan = requirePlan();
  // Each weight is at most kMaxPlanBytes; their sum is checked.
  int64_t parameters = 0;
  std::map<WeightDType, int64_t> tensorsOf;
  for (const PlanWeight &weight : plan.weights) {
    ++tensorsOf[weight.dtype];
    if (__builtin_add_overflow(parameters,
                               elementCount(weight.shape).value_or(0),
                               &parameters))
      fail("plan: the weights' parameter count overflows");
  }
  std::optional<int64_t> stored = storedWeightBytes(plan);
  if (!stored)
    fail("plan: the weights' byte count overflows");
  const int64_t bytes = *stored;
  // "int8 (group 64): 49 int8, 99 f32 tensors"
  const WeightDType dtype = programWeightDType(plan);
  std::string dtypeLine = weightDTypeName(dtype);
  if (dtype == WeightDType::Int8)
    dtypeLine += fmt::format(" (group {})", programWeightGroup(plan));
  else if (dtype == WeightDType::Int4)
    dtypeLine += fmt::format(" (Q4_0 blocks of {})", programWeightGroup(plan));
  else if (isKQuant(dtype))
    dtypeLine += fmt::format(" (llama.cpp's super-blocks of {})",
                             format::kKQuantBlockValues);
  if (dtype != WeightDType::F32) {
    std::string counts;
    for (auto [kind, count] : tensorsOf)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count,
                            weightDTypeName(kind));
    dtypeLine += ": " + counts + " tensors";
  }
  std::set<std::string> kernels;
  for (const PlanStep &step : plan.steps)
    kernels.insert(step.kernel);

  std::printf("model: %s\n", plan.model.c_str());
  std::printf("entry: %s\n", plan.entry.c_str());
  std::printf("target: %s\n", describeTargets(linkedVariants()).c_str());
  std::printf("device: %s\n", plan.device == "cuda"
                                  ? "cuda (weights, arena and KV cache in "
                                    "GPU memory)"
                                  : "host");
  for (const PlanInput &input : plan.inputs)
    std::printf("input: %s %s (%s%s%s)\n", input.name.c_str(),
                formatDims(plan, input.dims).c_str(),
                input.kind == InputKind::Ids         ? "token ids"
                : input.kind == InputKind::Types     ? "token types"
                : input.kind == InputKind::Positions ? "positions"
                                                     : "mask",
                input.optional ? ", optional" : "",
                !input.unused   ? ""
                : input.causal ? ", not read: causal attention, right "
                                 "padding accepted"
                               : ", not read: all ones only");
  std::printf("output: %s %s f32\n", plan.output().name.c_str(),
              formatDims(plan, plan.output().dims).c_str());
  std::printf("weights: %zu tensors, %lld parameters, %lld bytes (%.1f MiB)\n",
              plan.weights.size(), static_cast<long long>(parameters),
              static_cast<long long>(bytes),
              static_cast<double>(bytes) / (1 << 20));
  std::printf("weight dtype: %s\n", dtypeLine.c_str());
  // f32 linear weights in panels, int8 and int4 ones in block panels
  // (support/WeightFormat.h): laid out once at load (unless the file holds
  // them so: convert-weights), so they are memory of the process rather
  // than the file's mapping.
  int64_t panelTensors = 0, panelBytes = 0, blockTensors = 0, blockBytes = 0;
  int64_t panelRows = 0;
  for (const PlanWeight &weight : plan.weights)
    if (weight.panel > 0 && weight.blockBytes()) {
      ++blockTensors;
      blockBytes += weight.storedBytes();
    } else if (weight.panel > 0) {
      ++panelTensors;
      panelBytes += weight.storedBytes();
      panelRows = weight.panel;
    }
  if (panelTensors)
    std::printf("weight layout: %lld tensors in panels of %lld rows, %lld "
                "bytes (%.1f MiB) laid out at load\n",
                static_cast<long long>(panelTensors),
                static_cast<long long>(panelRows),
                static_cast<long long>(panelBytes),
                static_cast<double>(panelBytes) / (1 << 20));
  if (blockTensors)
    std::printf("weight layout: %lld int8/int4 tensors in block panels of "
                "%lld rows for the integer microkernel, %lld bytes (%.1f "
                "MiB), laid out at load unless the file holds them so\n",
                static_cast<long long>(blockTensors),
                static_cast<long long>(format::kBlockPanelRows),
                static_cast<long long>(blockBytes),
                static_cast<double>(blockBytes) / (1 << 20));
  std::size_t integerSteps = 0, bf16Steps = 0;
  for (const PlanStep &step : plan.steps) {
    integerSteps += step.activations == "int8";
    bf16Steps += step.activations == "bf16";
  }
  if (integerSteps)
    std::printf("activations: int8 in %zu linear steps (each input row "
                "quantised per group, integer products); f32 elsewhere\n",
                integerSteps);
  else if (bf16Steps)
    std::printf("activations: bf16 in %zu linear steps (each input rounded "
                "to bf16, products of bf16 pairs summed in f32); f32 "
                "elsewhere\n",
                bf16Steps);
  else
    std::printf("activations: f32\n");
  std::printf("arena: %lld bytes (%.1f MiB)\n",
              static_cast<long long>(plan.arenaBytes),
              static_cast<double>(plan.arenaBytes) / (1 << 20));
  // What each handle (Model::share, tfmc_share) has of its own beside the
  // arena: max_batch sequences of max_len rows per dense slot, or a pool of
  // blocks for the paged slots (KvBlocks.h).
  if (!plan.cache.empty()) {
    // The compiler gives every slot one type (`tfmc --kv-cache-dtype`).
    int64_t cacheBytes = 0, blockBytes = 0;
    for (const PlanCacheSlot &slot : plan.cache)
      if (slot.paged)
        blockBytes += plan.blockTokens * slot.rowBytes();
      else
        cacheBytes += plan.cacheSlotBytes(slot);
    if (cacheBytes > 0 || blockBytes == 0)
      std::printf("kv cache: %s, %lld bytes (%.1f MiB)\n",
                  elementTypeName(plan.cache.front().type),
                  static_cast<long long>(cacheBytes),
                  static_cast<double>(cacheBytes) / (1 << 20));
    if (blockBytes > 0) {
      const int64_t blocks = KvBlockPool::blocksFor(plan);
      std::printf("kv cache blocks: %s, %lld blocks of %lld positions, %lld "
                  "bytes each (%.1f MiB; sequences hold them as they "
                  "grow)\n",
                  elementTypeName(plan.cache.front().type),
                  static_cast<long long>(blocks),
                  static_cast<long long>(plan.blockTokens),
                  static_cast<long long>(blockBytes),
                  static_cast<double>(blocks * blockBytes) / (1 << 20));
    }
  }
  std::printf(
      "limits: vocab %lld, max_len %lld, max batch %lld, max seq %lld\n",
      static_cast<long long>(plan.vocab), static_cast<long long>(plan.maxLen),
      static_cast<long long>(plan.maxBatch),
      static_cast<long long>(plan.maxSeq));
  std::printf("kernels: %zu steps, %zu distinct kernels\n", plan.steps.size(),
              kernels.size());
  if (std::optional<WeightFiles::Embedded> embedded = WeightFiles::embedded())
    std::printf("embedded weights: %s, %llu bytes (used without --weights)\n",
                embedded->kind.c_str(),
                static_cast<unsigned long long>(embedded->bytes));
  if (options.has("--weights") || WeightFiles::embedded()) {
    std::unique_ptr<Model> model = loadModel(weightsPath(options));
    printLoadStats(stdout, model->loadStats());
  }
  return 0;
}

} // namespace tfmc::runtime::cli
