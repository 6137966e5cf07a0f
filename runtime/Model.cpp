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

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
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

/// `[1, 5]`: the row-major position of element `flat` of `shape`.
std::string formatPosition(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> position(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    position[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return formatShape(position);
}

/// GPT-2 checkpoints carry the causal-mask buffers; the README (Hugging Face
/// GPT-2) says they are ignored, so they are not worth a warning either.
bool isIgnoredBuffer(const std::string &name) {
  auto endsWith = [&](const char *suffix) {
    std::size_t length = std::strlen(suffix);
    return name.size() >= length &&
           name.compare(name.size() - length, length, suffix) == 0;
  };
  return endsWith(".attn.bias") || endsWith(".attn.masked_bias");
}

/// GPT2LMHeadModel's output layer is wte itself; a checkpoint that also
/// stores it as `lm_head.weight` holds the same values, so that copy is not
/// worth a warning. A different lm_head (an untied model, which tfmc does not
/// compute) is still reported as unused.
bool isTiedCopy(const SafetensorsFile &file, const TensorView &tensor,
                const std::set<std::string> &used) {
  if (tensor.name != "lm_head.weight")
    return false;
  for (const char *name : {"wte.weight", "transformer.wte.weight"}) {
    if (!used.count(name))
      continue;
    const TensorView *table = file.find(name);
    return table && table->dtype == tensor.dtype &&
           table->shape == tensor.shape && table->bytes == tensor.bytes &&
           std::memcmp(table->data, tensor.data, tensor.bytes) == 0;
  }
  return false;
}

/// A rank-2 F32 tensor [rows, cols] as a fresh aligned [cols, rows] buffer
/// (null data when out of memory). The source may be misaligned.
AlignedBuffer transposeToAligned(const TensorView &tensor) {
  const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
  AlignedBuffer out(tensor.bytes);
  if (!out.data())
    return out;
  const auto *source = static_cast<const unsigned char *>(tensor.data);
  auto *target = static_cast<float *>(out.data());
  // Blocks of 32 x 32 keep both sides' cache lines in use.
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t r = r0; r < std::min(r0 + kBlock, rows); ++r)
        for (int64_t c = c0; c < std::min(c0 + kBlock, cols); ++c)
          std::memcpy(&target[c * rows + r],
                      source + (r * cols + c) * sizeof(float), sizeof(float));
  return out;
}

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

} // namespace

struct Model::Impl {
  /// Each entry point's kernels, step by step.
  std::vector<std::vector<tfmc_kernel_fn>> entryKernels;
  std::optional<SafetensorsFile> weightsFile;
  std::vector<AlignedBuffer> weightCopies;
  std::vector<const float *> weightData;
  std::vector<int64_t> weightElements;
  AlignedBuffer arena;
  /// KV cache slots, [max_len, width] floats each (generation is batch 1),
  /// the rows filled so far, and the symbols of the prefill that filled
  /// them (e.g. S, the source length cross-attention reads).
  std::vector<AlignedBuffer> cache;
  int64_t cachedRows = 0;
  std::map<std::string, int64_t> prefillSymbols;

  // Reused by every forward() so that a call allocates nothing in the common
  // case.
  std::vector<int64_t> symbolValues;
  std::vector<std::vector<int64_t>> defaultInputs; // absent optional masks
  std::vector<halide_buffer_t> buffers;
  std::vector<halide_dimension_t> dimensions;
  std::vector<void *> argPointers;

  /// setStepTimes(): where each kernel call's wall time goes, or null.
  std::vector<double> *stepSeconds = nullptr;

  // A CUDA plan ("device": "cuda"): the weights, the arena, the KV cache
  // and a staging buffer per input live in device memory (addresses from
  // HalideHooks.h), and the kernels get device buffers over them. The host
  // arena then only receives the output.
  bool onDevice = false;
  std::vector<std::uint64_t> weightDevice;
  std::uint64_t arenaDevice = 0;
  std::vector<std::uint64_t> cacheDevice;
  std::vector<std::uint64_t> inputDevice;
  int64_t inputCapacity = 0; // values each input staging buffer holds
  std::vector<std::uint64_t> argDevice; // the current step's arguments

  Impl() = default;
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;
  ~Impl() {
    for (std::uint64_t address : inputDevice)
      deviceFree(address);
    for (std::uint64_t address : cacheDevice)
      deviceFree(address);
    if (arenaDevice)
      deviceFree(arenaDevice);
    for (std::uint64_t address : weightDevice)
      deviceFree(address);
  }

  /// `bytes` of device memory (the caller records it for ~Impl).
  bool allocateOnDevice(std::size_t bytes, std::uint64_t &address,
                        const std::string &what, std::string &error) {
    std::string message;
    if (!deviceAllocate(bytes, address, message)) {
      error = fmt::format("cannot allocate {} bytes of GPU memory for {}: {}",
                          bytes, what, message);
      return false;
    }
    return true;
  }

  /// Copies `bytes` at `host` into device memory at `address`.
  bool upload(std::uint64_t address, const void *host, std::size_t bytes,
              const std::string &what, std::string &error) {
    std::string message;
    if (!deviceUpload(address, host, bytes, message)) {
      error = fmt::format("cannot copy {} to the GPU: {}", what, message);
      return false;
    }
    return true;
  }

  /// Uploads every weight, the zeroed arena and KV cache, and makes the
  /// input staging buffers: once, at load.
  bool moveToDevice(const std::vector<Plan> &entries, std::string &error);
};

Model::~Model() = default;

bool Model::Impl::moveToDevice(const std::vector<Plan> &entries,
                               std::string &error) {
  const Plan &plan = entries.front();
  if (!openCudaDevice(error))
    return false;
  for (std::size_t i = 0; i < weightData.size(); ++i) {
    std::size_t bytes = static_cast<std::size_t>(weightElements[i]) * 4;
    std::string what = fmt::format("weight {}", quote(plan.weights[i].name));
    std::uint64_t address = 0;
    if (!allocateOnDevice(std::max<std::size_t>(bytes, 4), address, what,
                          error))
      return false;
    weightDevice.push_back(address);
    if (!upload(address, weightData[i], bytes, what, error))
      return false;
  }
  // The kernels read the device copies only: host copies (transposed or
  // realigned weights) are not needed any more.
  weightCopies.clear();
  weightCopies.shrink_to_fit();
  std::fill(weightData.begin(), weightData.end(), nullptr);

  std::size_t arenaBytes = arena.size();
  if (!allocateOnDevice(std::max<std::size_t>(arenaBytes, 4), arenaDevice,
                        "the arena", error) ||
      !upload(arenaDevice, arena.data(), arenaBytes, "the arena", error))
    return false;
  for (std::size_t i = 0; i < cache.size(); ++i) {
    std::string what =
        fmt::format("the KV cache slot {}", quote(plan.cache[i].slot));
    std::uint64_t address = 0;
    if (!allocateOnDevice(std::max<std::size_t>(cache[i].size(), 4), address,
                          what, error))
      return false;
    cacheDevice.push_back(address);
    if (!upload(address, cache[i].data(), cache[i].size(), what, error))
      return false;
  }
  // Inputs are [B, S] (or [B, T]) ids or masks: at most max_batch rows of
  // max(max_seq, max_len) values.
  std::size_t numInputs = 0;
  for (const Plan &entry : entries)
    numInputs = std::max(numInputs, entry.inputs.size());
  inputCapacity = plan.maxBatch * std::max(plan.maxSeq, plan.maxLen);
  for (std::size_t i = 0; i < numInputs; ++i) {
    std::uint64_t address = 0;
    if (!allocateOnDevice(static_cast<std::size_t>(inputCapacity) * 8, address,
                          fmt::format("input {}", i), error))
      return false;
    inputDevice.push_back(address);
  }
  return true;
}

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

const Plan *Model::entry(const std::string &name) const {
  for (const Plan &entry : entries_)
    if (entry.entry == name)
      return &entry;
  return nullptr;
}

int64_t Model::cachedTokens() const { return impl_->cachedRows; }

void Model::setStepTimes(std::vector<double> *seconds) {
  impl_->stepSeconds = seconds;
}

std::unique_ptr<Model> Model::create(const Plan &plan,
                                     const tfmc_kernel_entry *kernels,
                                     int numKernels,
                                     const std::string &weightsPath,
                                     std::string &error) {
  return create(std::vector<Plan>{plan}, kernels, numKernels, weightsPath,
                error);
}

std::unique_ptr<Model> Model::create(const std::vector<Plan> &entries,
                                     const tfmc_kernel_entry *kernels,
                                     int numKernels,
                                     const std::string &weightsPath,
                                     std::string &error) {
  try {
    if (entries.empty()) {
      error = "plan: the program has no entry points";
      return nullptr;
    }
    std::unique_ptr<Model> model(new Model());
    // Every entry shares the weights table: the first one's is checked.
    const Plan &plan = entries.front();
    model->plan_ = plan;
    model->entries_ = entries;
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
    for (const Plan &entry : entries) {
      std::vector<tfmc_kernel_fn> &stepKernels =
          impl.entryKernels.emplace_back();
      for (std::size_t i = 0; i < entry.steps.size(); ++i) {
        auto it = table.find(entry.steps[i].kernel);
        if (it == table.end()) {
          error = fmt::format("plan: step {} calls kernel {}, which is not "
                              "linked into this program ({} kernels)",
                              i, quote(entry.steps[i].kernel), table.size());
          return nullptr;
        }
        stepKernels.push_back(it->second);
      }
    }

    // Weights: mapped, checked, used in place unless misaligned.
    impl.weightsFile = SafetensorsFile::open(weightsPath, error);
    if (!impl.weightsFile)
      return nullptr;
    const SafetensorsFile &file = *impl.weightsFile;
    std::set<std::string> used;
    for (const PlanWeight &weight : plan.weights) {
      // The first of the weight's names that the file holds (a Hugging
      // Face checkpoint with or without the `transformer.` prefix).
      std::string name = weight.name;
      if (!file.find(name)) {
        for (const std::string &alt : weight.altNames)
          if (file.find(alt)) {
            name = alt;
            break;
          }
        if (!file.find(name) && !weight.altNames.empty()) {
          std::string tried;
          for (const std::string &alt : weight.altNames)
            tried += (tried.empty() ? "" : ", ") + quote(alt);
          error = fmt::format("{}: missing tensor {} (also tried {})",
                              file.path(), quote(weight.name), tried);
          return nullptr;
        }
      }
      // A transposed weight is checked against the file's own shape.
      std::vector<int64_t> fileShape = weight.shape;
      if (weight.transposed)
        std::reverse(fileShape.begin(), fileShape.end());
      const TensorView *tensor =
          expectTensor(file, name, DType::F32, fileShape, error);
      if (!tensor)
        return nullptr;
      used.insert(name);
      const void *data = tensor->data;
      if (weight.transposed) {
        // Once at load, into memory the model owns; kernels then read
        // [out, in] like any other linear weight (and tfm.split views of
        // it, such as c_attn's q/k/v thirds, stay contiguous).
        AlignedBuffer copy = transposeToAligned(*tensor);
        if (!copy.data()) {
          error = fmt::format("{}: out of memory transposing tensor {} ({} "
                              "bytes)",
                              file.path(), quote(name), tensor->bytes);
          return nullptr;
        }
        data = copy.data();
        model->copiedWeightBytes_ += tensor->bytes;
        impl.weightCopies.push_back(std::move(copy));
      } else if (!tensor->isNaturallyAligned()) {
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
      if (!used.count(tensor.name) && !isIgnoredBuffer(tensor.name) &&
          !isTiedCopy(file, tensor, used))
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

    // The arena: one allocation for the model's life, as large as the
    // largest entry's. Zeroed once, so that positions no kernel writes
    // (padding) read as finite numbers.
    int64_t arenaBytes = 0;
    for (const Plan &entry : entries)
      arenaBytes = std::max(arenaBytes, entry.arenaBytes);
    impl.arena = AlignedBuffer(static_cast<std::size_t>(arenaBytes));
    if (!impl.arena.data()) {
      error =
          fmt::format("out of memory: the arena needs {} bytes", arenaBytes);
      return nullptr;
    }
    std::memset(impl.arena.data(), 0, static_cast<std::size_t>(arenaBytes));
    for (Plan &entry : model->entries_)
      entry.arenaBytes = arenaBytes;
    model->plan_.arenaBytes = arenaBytes;

    // The KV cache: max_len rows per slot, for one sequence.
    for (const PlanCacheSlot &slot : plan.cache) {
      std::size_t bytes =
          static_cast<std::size_t>(plan.maxLen * slot.width) * sizeof(float);
      AlignedBuffer buffer(bytes);
      if (!buffer.data()) {
        error = fmt::format("out of memory: the KV cache slot {} needs {} "
                            "bytes",
                            quote(slot.slot), bytes);
        return nullptr;
      }
      std::memset(buffer.data(), 0, bytes);
      impl.cache.push_back(std::move(buffer));
    }

    std::size_t maxArgs = 0, maxDims = 0;
    for (const Plan &entry : entries)
      for (const PlanStep &step : entry.steps) {
        std::size_t dims = 0;
        for (const PlanArg &arg : step.args)
          dims += arg.dims.size();
        maxArgs = std::max(maxArgs, step.args.size());
        maxDims = std::max(maxDims, dims);
      }
    impl.buffers.resize(maxArgs);
    impl.dimensions.resize(maxDims);
    impl.argPointers.resize(maxArgs);
    std::size_t maxInputs = 0, maxSymbols = 0;
    for (const Plan &entry : entries) {
      maxInputs = std::max(maxInputs, entry.inputs.size());
      maxSymbols = std::max(maxSymbols, entry.symbols.size());
    }
    impl.defaultInputs.resize(maxInputs);
    impl.symbolValues.resize(maxSymbols);
    impl.argDevice.resize(maxArgs);

    installHalideErrorHandler();
    impl.onDevice = plan.device == "cuda";
    if (impl.onDevice && !impl.moveToDevice(entries, error))
      return nullptr;
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
  return runEntry(0, inputs, error);
}

std::optional<OutputView> Model::run(const std::string &name,
                                     const std::vector<InputView> &inputs,
                                     std::string &error) {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].entry == name)
      return runEntry(i, inputs, error);
  error = fmt::format("this program has no entry point '{}'", plain(name));
  return std::nullopt;
}

std::optional<OutputView>
Model::runEntry(std::size_t entryIndex, const std::vector<InputView> &inputs,
                std::string &error) {
  try {
    const Plan &plan = entries_[entryIndex];
    Impl &impl = *impl_;
    const bool prefill = plan.entry == "prefill";
    const bool usesCache = !plan.cache.empty() && plan.entry != "forward";
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
    // The cache's symbols: P rows already cached (none before a prefill),
    // L = P + 1 in a decode step; a decode step reads the other symbols of
    // the prefill it continues (S: the source cross-attention attends to).
    const int64_t past = prefill ? 0 : impl.cachedRows;
    for (std::size_t s = 0; s < plan.symbols.size(); ++s) {
      if (boundBy[s] >= 0)
        continue;
      const std::string &name = plan.symbols[s];
      auto stored = impl.prefillSymbols.find(name);
      if (name == "P") {
        symbols[s] = past;
      } else if (name == "L") {
        symbols[s] = past + 1;
      } else if (usesCache && !prefill &&
                 stored != impl.prefillSymbols.end()) {
        symbols[s] = stored->second;
      } else {
        error = fmt::format("plan: symbol '{}' has no value: no input given "
                            "names it",
                            name);
        return std::nullopt;
      }
    }
    if (usesCache) {
      if (!prefill && impl.cachedRows == 0) {
        error = fmt::format("{} needs a prefill first: the KV cache is empty",
                            plan.entry);
        return std::nullopt;
      }
      if (symbols[0] != 1) {
        error = fmt::format("generation runs one sequence at a time: batch "
                            "{} given to {}",
                            symbols[0], plan.entry);
        return std::nullopt;
      }
      if (!prefill && past + 1 > plan.maxLen) {
        error = fmt::format("the sequence is full: {} tokens are cached and "
                            "max_len is {}",
                            past, plan.maxLen);
        return std::nullopt;
      }
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
          int64_t extent = 0, min = 0;
          if (!evaluate(arg.dims[d], extent) || extent > kMaxInt32 ||
              stride > kMaxInt32 ||
              (!arg.mins.empty() &&
               (!evaluate(arg.mins[d], min) || min > kMaxInt32))) {
            error =
                fmt::format("{}: dims {} exceed Halide's 32-bit extents "
                            "for {}",
                            where(), formatDims(plan, arg.dims), symbolText());
            return false;
          }
          impl.dimensions[nextDim + d] = halide_dimension_t(
              static_cast<int32_t>(min), static_cast<int32_t>(extent),
              static_cast<int32_t>(stride));
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
          if (impl.onDevice)
            impl.argDevice[a] = impl.inputDevice[value.index];
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
          if (impl.onDevice)
            impl.argDevice[a] = impl.weightDevice[value.index] +
                                static_cast<std::uint64_t>(value.offset) * 4;
          else
            buffer.host = reinterpret_cast<uint8_t *>(const_cast<float *>(
                impl.weightData[value.index] + value.offset));
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
          if (impl.onDevice)
            impl.argDevice[a] = impl.arenaDevice + value.offset;
          break;
        }
        case ValueKind::Cache: {
          const PlanCacheSlot &slot = plan.cache[value.index];
          int64_t row = value.rowSymbol < 0 ? 0 : symbols[value.rowSymbol];
          int64_t available = (plan.maxLen - row) * slot.width;
          if (row < 0 || elements > available) {
            error = fmt::format("{}: dims {} from row {} run past the KV "
                                "cache slot {} ({} rows of {})",
                                where(), formatDims(plan, arg.dims), row,
                                quote(slot.slot), plan.maxLen, slot.width);
            return false;
          }
          buffer.host = static_cast<uint8_t *>(impl.cache[value.index].data()) +
                        row * slot.width * elementBytes;
          if (impl.onDevice)
            impl.argDevice[a] = impl.cacheDevice[value.index] +
                                row * slot.width * elementBytes;
          break;
        }
        }
        // On the GPU every argument is device memory only.
        if (impl.onDevice)
          buffer.host = nullptr;
        impl.argPointers[a] = &buffer;
      }
      return true;
    };
    for (std::size_t s = 0; s < plan.steps.size(); ++s)
      if (!buildStep(s))
        return std::nullopt;

    // A CUDA plan: the inputs are copied to the GPU once per call.
    if (impl.onDevice) {
      for (std::size_t i = 0; i < numInputs; ++i) {
        auto [data, count] = inputData[i];
        if (count > impl.inputCapacity) {
          error = fmt::format("plan: input {} has {} values, more than the {} "
                              "its GPU buffer holds",
                              quote(plan.inputs[i].name), count,
                              impl.inputCapacity);
          return std::nullopt;
        }
        if (!impl.upload(impl.inputDevice[i], data,
                         static_cast<std::size_t>(count) * 8,
                         fmt::format("input {}", quote(plan.inputs[i].name)),
                         error))
          return std::nullopt;
      }
    }
    // A failure after this point leaves the KV cache half-written.
    auto failRun = [&](std::string message) {
      error = std::move(message);
      if (usesCache)
        impl.cachedRows = 0;
      return std::nullopt;
    };

    const std::vector<tfmc_kernel_fn> &stepKernels =
        impl.entryKernels[entryIndex];
    std::vector<double> *stepSeconds = impl.stepSeconds;
    if (stepSeconds)
      stepSeconds->assign(plan.steps.size(), 0.0);
    for (std::size_t s = 0; s < plan.steps.size(); ++s) {
      buildStep(s);
      const std::size_t args = plan.steps[s].args.size();
      if (impl.onDevice)
        for (std::size_t a = 0; a < args; ++a) {
          std::string message;
          if (!deviceWrap(impl.buffers[a], impl.argDevice[a], message)) {
            for (std::size_t b = 0; b < a; ++b)
              deviceDetach(impl.buffers[b]);
            return failRun(fmt::format("step {} arg {}: {}", s, a, message));
          }
        }
      std::chrono::steady_clock::time_point start;
      if (stepSeconds)
        start = std::chrono::steady_clock::now();
      int result = stepKernels[s](impl.argPointers.data());
      std::string syncError;
      // GPU kernels run asynchronously: a timed step waits for its own.
      if (result == 0 && stepSeconds && impl.onDevice &&
          !deviceSynchronize(syncError))
        result = -1;
      if (stepSeconds)
        (*stepSeconds)[s] = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count();
      if (impl.onDevice)
        for (std::size_t a = 0; a < args; ++a)
          deviceDetach(impl.buffers[a]);
      if (result != 0) {
        std::string message =
            !syncError.empty() ? syncError : takeHalideError();
        if (message.empty())
          message = fmt::format("error code {}", result);
        // A half-written cache is no cache.
        return failRun(fmt::format("kernel {} (step {} of {}) failed: {}",
                                   plan.steps[s].kernel, s + 1,
                                   plan.steps.size(), message));
      }
    }
    // A CUDA plan: the output is copied back once per call, into the host
    // arena where OutputView points.
    if (impl.onDevice) {
      std::string message;
      if (!deviceDownload(arena + outputValue.offset,
                          impl.arenaDevice + outputValue.offset,
                          static_cast<std::size_t>(*outputCount) * 4,
                          message))
        return failRun(fmt::format("cannot copy the output {} from the GPU: "
                                   "{}",
                                   quote(plan.output.name), message));
    }
    if (usesCache) {
      if (prefill) {
        // The decoder's sequence: its length symbol is T for an
        // encoder-decoder, S for a decoder-only model.
        impl.prefillSymbols.clear();
        for (std::size_t s = 0; s < plan.symbols.size(); ++s)
          impl.prefillSymbols[plan.symbols[s]] = symbols[s];
        auto target = impl.prefillSymbols.find("T");
        impl.cachedRows = target != impl.prefillSymbols.end()
                              ? target->second
                              : impl.prefillSymbols["S"];
      } else {
        impl.cachedRows = past + 1;
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
