//===- Model.cpp - Execute a compiled model's plan ------------------------===//
//
// Creation does everything that can be done once (kernel lookup, weight
// mapping and checks, arena allocation); forward() validates the inputs,
// binds the plan's symbols (B, S, T) from their shapes, and calls each step's
// kernel over halide_buffer_t descriptors built on the stack of this call.
//
// Every buffer a kernel gets is checked against the memory behind it before
// the first kernel runs (an arena slot inside the arena, a weight view
// inside its tensor, an input view inside the input), so a wrong plan is a
// `plan: ...` error, not a kernel writing past an allocation.
//
//===----------------------------------------------------------------------===//

#include "runtime/Model.h"
#include "runtime/HalideHooks.h"

#include <HalideRuntime.h>
#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>

namespace tfmc::runtime {
namespace {

/// Names as messages show them: control characters escaped (names come from
/// files and callers).
std::string quote(const std::string &name) {
  std::string text = "'";
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f)
      text += fmt::format("\\x{:02x}", c);
    else
      text += static_cast<char>(c);
  }
  return text + "'";
}

std::string plain(const std::string &name) {
  std::string quoted = quote(name);
  return quoted.substr(1, quoted.size() - 2);
}

/// `[B, S]`, `[B*S, 768]`: a plan's dims as written.
std::string formatDims(const Plan &plan, const std::vector<DimExpr> &dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i)
      text += ", ";
    if (dims[i].empty())
      text += "1";
    for (std::size_t t = 0; t < dims[i].size(); ++t) {
      if (t)
        text += "*";
      const DimTerm &term = dims[i][t];
      text +=
          term.isSymbol ? plan.symbols[term.value] : std::to_string(term.value);
    }
  }
  return text + "]";
}

/// `[1, 5]`: the row-major position of element `flat` of `shape`.
std::string formatPosition(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> position(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    position[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return formatShape(position);
}

/// GPT-2 checkpoints carry the causal-mask buffers; DESIGN.md says they are
/// ignored, so they are not worth a warning either.
bool isIgnoredBuffer(const std::string &name) {
  auto endsWith = [&](const char *suffix) {
    std::size_t length = std::strlen(suffix);
    return name.size() >= length &&
           name.compare(name.size() - length, length, suffix) == 0;
  };
  return endsWith(".attn.bias") || endsWith(".attn.masked_bias");
}

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

} // namespace

struct Model::Impl {
  std::vector<tfmc_kernel_fn> stepKernels;
  std::optional<SafetensorsFile> weightsFile;
  std::vector<AlignedBuffer> weightCopies;
  std::vector<const float *> weightData;
  std::vector<int64_t> weightElements;
  AlignedBuffer arena;

  // Reused by every forward() so that a call allocates nothing in the common
  // case.
  std::vector<int64_t> symbolValues;
  std::vector<std::vector<int64_t>> defaultInputs; // absent optional masks
  std::vector<halide_buffer_t> buffers;
  std::vector<halide_dimension_t> dimensions;
  std::vector<void *> argPointers;
};

Model::~Model() = default;

std::string Model::inputNames() const {
  std::string text;
  for (const PlanInput &input : plan_.inputs) {
    if (!text.empty())
      text += ", ";
    text += plain(input.name);
  }
  return text;
}

bool Model::setThreads(int threads, std::string &error) {
  if (threads < 1) {
    error = fmt::format("the thread count must be at least 1, got {}", threads);
    return false;
  }
  setHalideThreads(threads);
  return true;
}

std::unique_ptr<Model> Model::create(const Plan &plan,
                                     const tfmc_kernel_entry *kernels,
                                     int numKernels,
                                     const std::string &weightsPath,
                                     std::string &error) {
  try {
    std::unique_ptr<Model> model(new Model());
    model->plan_ = plan;
    model->impl_ = std::make_unique<Impl>();
    Impl &impl = *model->impl_;

    // Kernels: every step's name must be in the table.
    if (numKernels < 0 || (numKernels > 0 && !kernels)) {
      error = fmt::format("the kernel table is invalid ({} kernels at {})",
                          numKernels, static_cast<const void *>(kernels));
      return nullptr;
    }
    std::unordered_map<std::string, tfmc_kernel_fn> table;
    for (int i = 0; i < numKernels; ++i)
      if (kernels[i].name && kernels[i].fn)
        table.emplace(kernels[i].name, kernels[i].fn);
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
      auto it = table.find(plan.steps[i].kernel);
      if (it == table.end()) {
        error = fmt::format("plan: step {} calls kernel {}, which is not "
                            "linked into this program ({} kernels)",
                            i, quote(plan.steps[i].kernel), table.size());
        return nullptr;
      }
      impl.stepKernels.push_back(it->second);
    }

    // Weights: mapped, checked, used in place unless misaligned.
    impl.weightsFile = SafetensorsFile::open(weightsPath, error);
    if (!impl.weightsFile)
      return nullptr;
    const SafetensorsFile &file = *impl.weightsFile;
    std::set<std::string> used;
    for (const PlanWeight &weight : plan.weights) {
      const TensorView *tensor =
          expectTensor(file, weight.name, DType::F32, weight.shape, error);
      if (!tensor)
        return nullptr;
      used.insert(weight.name);
      const void *data = tensor->data;
      if (!tensor->isNaturallyAligned()) {
        AlignedBuffer copy = copyToAligned(*tensor);
        if (!copy.data()) {
          error = fmt::format("{}: out of memory copying tensor {} ({} bytes) "
                              "to aligned memory",
                              file.path(), quote(weight.name), tensor->bytes);
          return nullptr;
        }
        data = copy.data();
        model->copiedWeightBytes_ += tensor->bytes;
        impl.weightCopies.push_back(std::move(copy));
      }
      impl.weightData.push_back(static_cast<const float *>(data));
      impl.weightElements.push_back(tensor->numElements());
    }
    std::vector<std::string> unused;
    for (const TensorView &tensor : file.tensors())
      if (!used.count(tensor.name) && !isIgnoredBuffer(tensor.name))
        unused.push_back(tensor.name);
    if (!unused.empty()) {
      std::string names;
      for (std::size_t i = 0; i < unused.size() && i < 5; ++i)
        names += (i ? ", " : "") + quote(unused[i]);
      if (unused.size() > 5)
        names += fmt::format(" and {} more", unused.size() - 5);
      model->warning_ = fmt::format(
          "{}: warning: {} {} the model does not use: {}", file.path(),
          unused.size(), unused.size() == 1 ? "tensor" : "tensors", names);
      std::fprintf(stderr, "%s\n", model->warning_.c_str());
    }

    // The arena: one allocation for the model's life. Zeroed once, so that
    // positions no kernel writes (padding) read as finite numbers.
    impl.arena = AlignedBuffer(static_cast<std::size_t>(plan.arenaBytes));
    if (!impl.arena.data()) {
      error = fmt::format("out of memory: the arena needs {} bytes",
                          plan.arenaBytes);
      return nullptr;
    }
    std::memset(impl.arena.data(), 0,
                static_cast<std::size_t>(plan.arenaBytes));

    std::size_t maxArgs = 0, maxDims = 0;
    for (const PlanStep &step : plan.steps) {
      std::size_t dims = 0;
      for (const PlanArg &arg : step.args)
        dims += arg.dims.size();
      maxArgs = std::max(maxArgs, step.args.size());
      maxDims = std::max(maxDims, dims);
    }
    impl.buffers.resize(maxArgs);
    impl.dimensions.resize(maxDims);
    impl.argPointers.resize(maxArgs);
    impl.defaultInputs.resize(plan.inputs.size());
    impl.symbolValues.resize(plan.symbols.size());

    installHalideErrorHandler();
    return model;
  } catch (const std::bad_alloc &) {
    error = "out of memory while loading the model";
  } catch (const std::exception &e) {
    error = fmt::format("cannot load the model: {}", e.what());
  }
  return nullptr;
}

std::optional<OutputView>
Model::forward(const std::map<std::string, IntegerTensor> &inputs,
               std::string &error) {
  try {
    std::vector<InputView> views;
    for (const auto &[name, tensor] : inputs) {
      std::optional<int64_t> count = elementCount(tensor.shape);
      if (!count || *count != static_cast<int64_t>(tensor.values.size())) {
        error = fmt::format("input {} has shape {} but {} values", quote(name),
                            formatShape(tensor.shape), tensor.values.size());
        return std::nullopt;
      }
      views.push_back({name, tensor.shape, tensor.values.data()});
    }
    return forward(views, error);
  } catch (const std::bad_alloc &) {
    error = "out of memory";
  } catch (const std::exception &e) {
    error = e.what();
  }
  return std::nullopt;
}

std::optional<OutputView> Model::forward(const std::vector<InputView> &inputs,
                                         std::string &error) {
  try {
    const Plan &plan = plan_;
    Impl &impl = *impl_;
    const std::size_t numInputs = plan.inputs.size();

    // Which plan input each given tensor is.
    std::vector<const InputView *> given(numInputs, nullptr);
    for (const InputView &view : inputs) {
      std::size_t index = 0;
      while (index < numInputs && plan.inputs[index].name != view.name)
        ++index;
      if (index == numInputs) {
        error = fmt::format("unknown input {}; this model takes {}",
                            quote(view.name), inputNames());
        return std::nullopt;
      }
      if (given[index]) {
        error = fmt::format("input {} is given twice", quote(view.name));
        return std::nullopt;
      }
      std::optional<int64_t> count = elementCount(view.shape);
      if (!count) {
        error = fmt::format("input {} has an invalid shape {}",
                            quote(view.name), formatShape(view.shape));
        return std::nullopt;
      }
      if (*count > 0 && !view.data) {
        error = fmt::format("input {} has no data", quote(view.name));
        return std::nullopt;
      }
      given[index] = &view;
    }
    for (std::size_t i = 0; i < numInputs; ++i)
      if (!given[i] && !plan.inputs[i].optional) {
        error = fmt::format("missing input {}; this model takes {}",
                            quote(plan.inputs[i].name), inputNames());
        return std::nullopt;
      }
    for (std::size_t i = 0; i < numInputs; ++i) {
      const PlanInput &input = plan.inputs[i];
      if (given[i] && given[i]->shape.size() != input.dims.size()) {
        error = fmt::format("input {} has rank {}, expected {} ({})",
                            quote(input.name), given[i]->shape.size(),
                            input.dims.size(), formatDims(plan, input.dims));
        return std::nullopt;
      }
    }

    // Symbols: bound by the first input whose dim is exactly that symbol;
    // every later input must agree.
    std::vector<int64_t> &symbols = impl.symbolValues;
    std::vector<int> boundBy(plan.symbols.size(), -1);
    for (std::size_t i = 0; i < numInputs; ++i) {
      if (!given[i])
        continue;
      const PlanInput &input = plan.inputs[i];
      for (std::size_t d = 0; d < input.dims.size(); ++d) {
        const DimExpr &dim = input.dims[d];
        if (dim.size() != 1 || !dim[0].isSymbol)
          continue;
        int64_t symbol = dim[0].value;
        int64_t extent = given[i]->shape[d];
        if (boundBy[symbol] < 0) {
          boundBy[symbol] = static_cast<int>(i);
          symbols[symbol] = extent;
        } else if (symbols[symbol] != extent) {
          error = fmt::format("{} has shape {}, but {} has {}",
                              plain(input.name), formatShape(given[i]->shape),
                              plain(plan.inputs[boundBy[symbol]].name),
                              formatShape(given[boundBy[symbol]]->shape));
          return std::nullopt;
        }
      }
    }
    for (std::size_t s = 0; s < plan.symbols.size(); ++s)
      if (boundBy[s] < 0) {
        error = fmt::format("plan: symbol '{}' has no value: no input given "
                            "names it",
                            plan.symbols[s]);
        return std::nullopt;
      }
    auto evaluate = [&](const DimExpr &dim, int64_t &extent) {
      extent = 1;
      for (const DimTerm &term : dim) {
        int64_t factor = term.isSymbol ? symbols[term.value] : term.value;
        if (__builtin_mul_overflow(extent, factor, &extent))
          return false;
      }
      return true;
    };
    auto evaluateAll = [&](const std::vector<DimExpr> &dims,
                           std::vector<int64_t> &shape) {
      shape.resize(dims.size());
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (!evaluate(dims[d], shape[d]))
          return false;
      return true;
    };
    auto symbolText = [&] {
      std::string text;
      for (std::size_t s = 0; s < plan.symbols.size(); ++s)
        text +=
            fmt::format("{}{}={}", s ? ", " : "", plan.symbols[s], symbols[s]);
      return text;
    };
    // Dims that are products or constants: the whole shape must match.
    std::vector<int64_t> expected;
    for (std::size_t i = 0; i < numInputs; ++i) {
      if (!given[i])
        continue;
      const PlanInput &input = plan.inputs[i];
      if (!evaluateAll(input.dims, expected) || expected != given[i]->shape) {
        error = fmt::format("input {} has shape {}, expected {}",
                            quote(input.name), formatShape(given[i]->shape),
                            formatDims(plan, input.dims));
        return std::nullopt;
      }
    }

    // Sizes: symbol 0 is the batch, the others are sequence lengths.
    for (std::size_t i = 0; i < numInputs; ++i) {
      if (!given[i])
        continue;
      const PlanInput &input = plan.inputs[i];
      for (std::size_t d = 0; d < input.dims.size(); ++d) {
        const DimExpr &dim = input.dims[d];
        if (dim.size() != 1 || !dim[0].isSymbol)
          continue;
        int64_t extent = given[i]->shape[d];
        if (dim[0].value == 0) {
          if (extent == 0) {
            error = fmt::format("{} has batch 0 (shape {})", plain(input.name),
                                formatShape(given[i]->shape));
            return std::nullopt;
          }
          if (extent > plan.maxBatch) {
            error = fmt::format("batch {} is more than the {} this binary was "
                                "compiled for (tfmc --max-batch)",
                                extent, plan.maxBatch);
            return std::nullopt;
          }
        } else {
          if (extent == 0) {
            error = fmt::format("{} has 0 tokens (shape {})", plain(input.name),
                                formatShape(given[i]->shape));
            return std::nullopt;
          }
          if (extent > plan.maxLen) {
            error = fmt::format("{} has {} tokens, more than max_len {}",
                                plain(input.name), extent, plan.maxLen);
            return std::nullopt;
          }
          if (extent > plan.maxSeq) {
            error = fmt::format("{} has {} tokens, more than the {} this "
                                "binary was compiled for (tfmc --max-seq)",
                                plain(input.name), extent, plan.maxSeq);
            return std::nullopt;
          }
        }
      }
    }

    // Values: token ids inside the vocabulary, masks 0 or 1.
    for (std::size_t i = 0; i < numInputs; ++i) {
      if (!given[i])
        continue;
      const PlanInput &input = plan.inputs[i];
      const InputView &view = *given[i];
      int64_t count = *elementCount(view.shape);
      for (int64_t e = 0; e < count; ++e) {
        int64_t value = view.data[e];
        if (input.kind == InputKind::Ids &&
            (value < 0 || value >= plan.vocab)) {
          error = fmt::format("{}{} = {} is not a token id (vocab {})",
                              plain(input.name), formatPosition(view.shape, e),
                              value, plan.vocab);
          return std::nullopt;
        }
        if (input.kind == InputKind::Mask && value != 0 && value != 1) {
          error = fmt::format("{}{} = {}: expected 0 or 1", plain(input.name),
                              formatPosition(view.shape, e), value);
          return std::nullopt;
        }
      }
    }

    // Where each input's values live; absent masks are all ones.
    std::vector<std::pair<const int64_t *, int64_t>> inputData(numInputs);
    for (std::size_t i = 0; i < numInputs; ++i) {
      if (given[i]) {
        inputData[i] = {given[i]->data, *elementCount(given[i]->shape)};
        continue;
      }
      std::vector<int64_t> shape;
      std::optional<int64_t> count;
      if (!evaluateAll(plan.inputs[i].dims, shape) ||
          !(count = elementCount(shape))) {
        error =
            fmt::format("plan: input {}: shape {} overflows for {}", i,
                        formatDims(plan, plan.inputs[i].dims), symbolText());
        return std::nullopt;
      }
      std::vector<int64_t> &ones = impl.defaultInputs[i];
      ones.assign(static_cast<std::size_t>(*count), 1);
      inputData[i] = {ones.data(), *count};
    }

    // The output: an arena slot that must hold its dims.
    OutputView output;
    output.name = plan.output.name;
    std::optional<int64_t> outputCount;
    const PlanValue &outputValue = plan.values[plan.output.value];
    if (!evaluateAll(plan.output.dims, output.shape) ||
        !(outputCount = elementCount(output.shape)) ||
        *outputCount > (plan.arenaBytes - outputValue.offset) / 4) {
      error = fmt::format("plan: output {} {} does not fit in the arena at "
                          "offset {} ({} bytes) for {}",
                          quote(plan.output.name),
                          formatDims(plan, plan.output.dims),
                          outputValue.offset, plan.arenaBytes, symbolText());
      return std::nullopt;
    }
    if (outputValue.offset % 4 != 0) {
      error = fmt::format("plan: output {} is at arena offset {}, which is not "
                          "a multiple of 4",
                          quote(plan.output.name), outputValue.offset);
      return std::nullopt;
    }
    auto *arena = static_cast<uint8_t *>(impl.arena.data());
    output.data = reinterpret_cast<const float *>(arena + outputValue.offset);

    // Buffers for one step; every one is checked before the step runs, and
    // all steps are checked before the first kernel runs.
    auto buildStep = [&](std::size_t stepIndex) {
      const PlanStep &step = plan.steps[stepIndex];
      std::size_t nextDim = 0;
      for (std::size_t a = 0; a < step.args.size(); ++a) {
        const PlanArg &arg = step.args[a];
        const PlanValue &value = plan.values[arg.value];
        auto where = [&] {
          return fmt::format("plan: step {} arg {}", stepIndex, a);
        };
        const int64_t elementBytes = arg.type == ElementType::F32 ? 4 : 8;

        halide_buffer_t &buffer = impl.buffers[a];
        buffer = halide_buffer_t();
        buffer.dimensions = static_cast<int32_t>(arg.dims.size());
        buffer.dim = impl.dimensions.data() + nextDim;
        buffer.type = arg.type == ElementType::F32
                          ? halide_type_t(halide_type_float, 32)
                          : halide_type_t(halide_type_int, 64);
        int64_t stride = 1;
        for (std::size_t d = 0; d < arg.dims.size(); ++d) {
          int64_t extent = 0;
          if (!evaluate(arg.dims[d], extent) || extent > kMaxInt32 ||
              stride > kMaxInt32) {
            error =
                fmt::format("{}: dims {} exceed Halide's 32-bit extents "
                            "for {}",
                            where(), formatDims(plan, arg.dims), symbolText());
            return false;
          }
          impl.dimensions[nextDim + d] = halide_dimension_t(
              0, static_cast<int32_t>(extent), static_cast<int32_t>(stride));
          stride *= extent; // both below 2^31: no overflow
        }
        nextDim += arg.dims.size();
        const int64_t elements = stride;

        switch (value.kind) {
        case ValueKind::Input: {
          auto [data, count] = inputData[value.index];
          if (elements > count) {
            error = fmt::format("{}: dims {} view {} elements of input {}, "
                                "which has {} for {}",
                                where(), formatDims(plan, arg.dims), elements,
                                quote(plan.inputs[value.index].name), count,
                                symbolText());
            return false;
          }
          buffer.host =
              reinterpret_cast<uint8_t *>(const_cast<int64_t *>(data));
          break;
        }
        case ValueKind::Weight: {
          int64_t available = impl.weightElements[value.index] - value.offset;
          if (elements > available) {
            error =
                fmt::format("{}: dims {} view {} elements at offset {} of "
                            "weight {}, which has {}",
                            where(), formatDims(plan, arg.dims), elements,
                            value.offset, quote(plan.weights[value.index].name),
                            impl.weightElements[value.index]);
            return false;
          }
          buffer.host = reinterpret_cast<uint8_t *>(
              const_cast<float *>(impl.weightData[value.index] + value.offset));
          break;
        }
        case ValueKind::Arena: {
          int64_t available = plan.arenaBytes - value.offset;
          if (elements > available / elementBytes) {
            error = fmt::format("{}: dims {} ({} bytes) at arena offset {} run "
                                "past the arena ({} bytes) for {}",
                                where(), formatDims(plan, arg.dims),
                                elements * elementBytes, value.offset,
                                plan.arenaBytes, symbolText());
            return false;
          }
          if (value.offset % elementBytes != 0) {
            error = fmt::format("{}: arena offset {} is not a multiple of {}",
                                where(), value.offset, elementBytes);
            return false;
          }
          buffer.host = arena + value.offset;
          break;
        }
        }
        impl.argPointers[a] = &buffer;
      }
      return true;
    };
    for (std::size_t s = 0; s < plan.steps.size(); ++s)
      if (!buildStep(s))
        return std::nullopt;

    for (std::size_t s = 0; s < plan.steps.size(); ++s) {
      buildStep(s);
      int result = impl.stepKernels[s](impl.argPointers.data());
      if (result != 0) {
        std::string message = takeHalideError();
        if (message.empty())
          message = fmt::format("error code {}", result);
        error = fmt::format("kernel {} (step {} of {}) failed: {}",
                            plan.steps[s].kernel, s + 1, plan.steps.size(),
                            message);
        return std::nullopt;
      }
    }
    return output;
  } catch (const std::bad_alloc &) {
    error = "out of memory";
  } catch (const std::exception &e) {
    error = e.what();
  }
  return std::nullopt;
}

} // namespace tfmc::runtime
