//===- ConvertWeightsCommand.cpp - NAME convert-weights -------------------===//
//
//   NAME convert-weights --weights W --output W2.safetensors
//
// W: a safetensors file, a checkpoint directory or a sharded index, with
// F32, BF16 or F16 tensors (docs/user-guide.md, "Weight files").
//
// A bf16, int8 or int4 program converts an f32 file at every load, and an f32
// program in panels (tfmc --weight-layout panels) lays its linear weights
// out; this writes the weights as the program stores them, once, so that W2
// loads by mmap with no conversion (docs/precision.md, "Low-precision
// weights", and support/WeightFormat.h give the layouts).
// The conversion is the load's own (Model::storedWeights), so running
// with W2 gives exactly what running with W gives.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Safetensors.h"
#include "support/Text.h"
#include "support/WeightFormat.h"
#include "runtime/cli/Cli.h"

#include <fmt/format.h>

#include <cstdio>

namespace tfmc::runtime::cli {

int convertWeightsCommand(int argc, char **argv) {
  Options options("convert-weights", {"--weights", "--output"}, argc, argv,
                  2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const std::string weights = weightsPath(options);
  const std::string &path = options.get("--output");
  const Plan &plan = requirePlan();
  const WeightDType dtype = programWeightDType(plan);
  const bool panels = programWeightPanel(plan) > 0;
  if (dtype == WeightDType::F32 && !panels)
    fail(fmt::format("model '{}' stores every weight as f32 in the file's "
                     "layout: there is nothing to convert (compile it with "
                     "tfmc --weight-dtype bf16, int8 or int4, or "
                     "--weight-layout panels)",
                     plan.model));
  // Not over the weights, nor any shard of them.
  std::vector<support::OutputFile> outputs =
      checkOutputs({{"--output", path}}, inputFiles(options, {"--weights"}));

  std::unique_ptr<Model> model = loadModel(weights);
  std::string error;
  std::optional<std::vector<TensorView>> tensors =
      model->storedWeights(error);
  if (!tensors)
    fail(error);
  std::map<std::string, std::string> metadata = {
      {"tfmc.weight_dtype", weightDTypeName(dtype)}};
  if (dtype == WeightDType::Int8 || dtype == WeightDType::Int4)
    metadata["tfmc.group"] = std::to_string(programWeightGroup(plan));
  if (panels)
    metadata[format::kLayoutMetadataKey] = format::kPanelsLayout;
  if (!writeSafetensors(outputs.front(), *tensors, error, metadata))
    fail(error);
  const LoadStats &stats = model->loadStats();
  std::fprintf(stderr,
               "convert-weights: wrote %zu tensors (%.1f MiB, %s) to %s; "
               "conversion took %.1f ms\n",
               tensors->size(),
               static_cast<double>(stats.weightBytes) / (1 << 20),
               weightDTypeName(dtype), support::oneLine(path).c_str(),
               stats.convertSeconds * 1e3);
  return 0;
}

} // namespace tfmc::runtime::cli
