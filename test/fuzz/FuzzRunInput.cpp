//===- FuzzRunInput.cpp - `NAME run --input FILE` against a real plan -----===//
//
// Bytes as the inputs file of `run --input`, for a small encoder-decoder
// compiled by tfmc (data/run-input/plan.json: its plans, four inputs:
// input_ids, attention_mask, decoder_input_ids, decoder_attention_mask):
// the file is read as the program does (runtime/cli/RunCommand.cpp:
// each tensor must be one of the plan's inputs, read as ids or as a mask),
// then Model::forward validates the set against the plan before any kernel
// runs. The kernels are stand-ins that read and write every element of
// every buffer the executor hands them, so an input that passes validation
// but does not fit its buffers is an ASan report. Weights are zeros.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "runtime/core/Model.h"

#include "HalideRuntime.h"

#include <fstream>
#include <iterator>
#include <map>

using namespace tfmc::runtime;

namespace {

const Plan *forwardPlan = nullptr;
std::size_t nextStep = 0;

/// Reads (and writes, for the last argument: the output) every element of
/// every buffer of the plan's next step.
int touchBuffers(void **args) {
  TFMC_FUZZ_CHECK(nextStep < forwardPlan->steps.size());
  const PlanStep &step = forwardPlan->steps[nextStep++];
  for (std::size_t a = 0; a < step.args.size(); ++a) {
    auto *buffer = static_cast<halide_buffer_t *>(args[a]);
    TFMC_FUZZ_CHECK(buffer && buffer->host);
    int64_t elements = 1;
    for (int d = 0; d < buffer->dimensions; ++d) {
      TFMC_FUZZ_CHECK(buffer->dim[d].extent >= 0);
      elements *= buffer->dim[d].extent;
    }
    std::size_t bytes = static_cast<std::size_t>(elements) *
                        ((buffer->type.bits + 7) / 8);
    volatile uint8_t *host = buffer->host;
    uint8_t sum = 0;
    for (std::size_t i = 0; i < bytes; ++i)
      sum += host[i];
    if (a + 1 == step.args.size())
      for (std::size_t i = 0; i < bytes; ++i)
        host[i] = 0;
    (void)sum;
  }
  return 0;
}

std::unique_ptr<Model> model;
std::vector<tfmc_kernel_entry> kernels;
std::vector<std::string> kernelNames;

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  TFMC_FUZZ_CHECK(in.good());
  return {std::istreambuf_iterator<char>(in), {}};
}

void setUp() {
  std::string error;
  static std::optional<std::vector<Plan>> plans =
      parsePlans(readFile(tfmc::fuzz::dataDir() + "/run-input/plan.json"), error);
  if (!plans) {
    std::fprintf(stderr, "fuzz set-up: %s\n", error.c_str());
    std::abort();
  }
  forwardPlan = &plans->front();
  for (const Plan &plan : *plans)
    for (const PlanStep &step : plan.steps)
      kernelNames.push_back(step.kernel);
  for (const std::string &name : kernelNames)
    kernels.push_back({name.c_str(), touchBuffers});

  // Zero weights of the plan's names and shapes.
  std::vector<std::vector<float>> storage;
  std::vector<TensorView> tensors;
  storage.reserve(forwardPlan->weights.size());
  for (const PlanWeight &weight : forwardPlan->weights) {
    std::optional<int64_t> count = elementCount(weight.shape);
    TFMC_FUZZ_CHECK(count.has_value());
    storage.emplace_back(static_cast<std::size_t>(*count), 0.0f);
    TensorView view;
    view.name = weight.name;
    view.dtype = DType::F32;
    view.shape = weight.shape;
    view.data = storage.back().data();
    view.bytes = storage.back().size() * sizeof(float);
    tensors.push_back(view);
  }
  // writeSafetensors renames a temporary into place: a real directory.
  char directory[] = "/tmp/tfmc-fuzz-XXXXXX";
  TFMC_FUZZ_CHECK(::mkdtemp(directory) != nullptr);
  std::string weights = std::string(directory) + "/weights.safetensors";
  bool created = writeSafetensors(weights, tensors, error) &&
                 (model = Model::create(*plans, kernels.data(),
                                        static_cast<int>(kernels.size()),
                                        weights, error));
  // The model keeps its mapping of the file.
  ::unlink(weights.c_str());
  ::rmdir(directory);
  if (!created) {
    std::fprintf(stderr, "fuzz set-up: %s\n", error.c_str());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!model)
    setUp();
  static tfmc::fuzz::MemoryFile memory("inputs.safetensors");
  const std::string &path = memory.write(tfmc::fuzz::asText(data, size));
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  if (!file)
    return 0;
  // As runtime/cli/RunCommand.cpp reads --input.
  std::map<std::string, IntegerTensor> inputs;
  for (const TensorView &tensor : file->tensors()) {
    const PlanInput *input = nullptr;
    for (const PlanInput &candidate : forwardPlan->inputs)
      if (candidate.name == tensor.name)
        input = &candidate;
    if (!input)
      return 0;
    std::optional<IntegerTensor> values = readIntegerTensor(
        *file, tensor.name,
        input->kind == InputKind::Mask ? IntegerInputKind::Mask
                                       : IntegerInputKind::Ids,
        error);
    if (!values)
      return 0;
    inputs[tensor.name] = std::move(*values);
  }
  nextStep = 0;
  std::optional<OutputView> output = model->forward(inputs, error);
  if (output) {
    TFMC_FUZZ_CHECK(nextStep == forwardPlan->steps.size());
    TFMC_FUZZ_CHECK(output->numElements() > 0 || output->shape.empty() ||
                    output->data);
  } else {
    TFMC_FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
  }
  return 0;
}
