//===- RunCommand.cpp - NAME run: one forward pass ------------------------===//
//
//   NAME run --weights W --input IN --output OUT [--threads N]
//   NAME run --weights W --ids 5,6,7|@FILE [--decoder-ids ...] [--output OUT]
//
// The output file is checked (and its temporary created) before anything
// is read or run, and written atomically after the forward pass.
//
//===----------------------------------------------------------------------===//

#include "runtime/Safetensors.h"
#include "runtime/Text.h"
#include "runtime/cli/Cli.h"

#include <fmt/format.h>

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
                       file->path(), quote(tensor.name), names));
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
                   "--threads"},
                  argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  const std::string &weights = options.get("--weights");
  bool fromFile = options.has("--input");
  bool fromIds = options.has("--ids") || options.has("--decoder-ids");
  if (fromFile && fromIds)
    fail("run takes either --input or --ids, not both");
  if (!fromFile && !fromIds)
    fail("run needs --input (with --output) or --ids");
  if (fromFile && !options.has("--output"))
    fail("run needs --output");
  applyThreads(options);

  // Before any work: an output that cannot be written, or that would
  // replace an input, fails now rather than after the forward pass.
  std::vector<OutputFile> outputs;
  if (options.has("--output"))
    outputs = checkOutputs(
        {{"--output", options.get("--output")}},
        inputFiles(options, {"--weights", "--input", "--ids", "--decoder-ids"}));

  const Plan &plan = requirePlan();
  std::map<std::string, IntegerTensor> inputs =
      fromFile ? readInputFile(plan, options.get("--input"))
               : readIdOptions(options);
  std::unique_ptr<Model> model = loadModel(weights);
  OutputView output = runTimed(*model, inputs);
  if (!outputs.empty())
    writeOutput(outputs.front(), output);
  if (fromIds)
    printArgmax(output);
  return 0;
}

} // namespace tfmc::runtime::cli
