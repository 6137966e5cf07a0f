//===- Model.cpp - Execute a compiled model's plan ------------------------===//
//
// Creation does everything that can be done once (kernel lookup, weight
// mapping and checks, the copy to the GPU of a CUDA plan's weights: the
// Weights that Models made by share() read too; then this Model's own arena
// and KV cache). runEntry() is one call of an entry point, in three parts
// (ModelImpl.h): input and output binding, KV-cache management and plan
// execution.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Model.h"
#include "runtime/core/ModelImpl.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>

namespace tfmc::runtime {
Model::~Model() = default;

bool Model::Weights::moveToDevice(const Plan &plan, std::string &error) {
  if (!openCudaDevice(error))
    return false;
  for (std::size_t i = 0; i < weightData.size(); ++i) {
    const PlanWeight &weight = plan.weights[i];
    std::size_t bytes = static_cast<std::size_t>(weight.storedBytes());
    std::string what = fmt::format("weight {}", support::quote(weight.name));
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
  return true;
}

bool Model::Impl::allocate(const std::vector<Plan> &entries,
                           std::string &error,
                           std::shared_ptr<KvBlockPool> sharedPool) {
  const Plan &plan = entries.front();
  poison = poisonArenaRequested();
  onDevice = plan.device == "cuda";

  // The arena: one allocation for the model's life, as large as the
  // largest entry's (create has made every entry's arenaBytes that). Not
  // initialised: every kernel writes what it or a later one reads, so its
  // initial contents are irrelevant (which TFMC_POISON_ARENA=1 tests), and
  // untouched pages cost nothing.
  int64_t arenaBytes = plan.arenaBytes;
  arena = AlignedBuffer(static_cast<std::size_t>(arenaBytes));
  if (!arena.data()) {
    error = fmt::format("out of memory: the arena needs {} bytes", arenaBytes);
    return false;
  }

  // The KV cache: max_len rows per slot for each of max_batch sequences.
  // Not initialised either: attention reads only the rows a prefill or
  // decode step wrote (below L); TFMC_POISON_ARENA=1 fills it with NaN
  // (all ones: a NaN in f32, bf16 and f16 alike).
  // Paged slots are the pool's (KvBlocks.h), which Models made by
  // share(kvBlocks) take from their source.
  for (const PlanCacheSlot &slot : plan.cache) {
    if (slot.paged && onDevice) {
      error = fmt::format("plan: the KV cache slot {} is paged, which the "
                          "GPU runtime does not read",
                          support::quote(slot.slot));
      return false;
    }
    if (slot.paged) {
      cache.emplace_back();
      continue;
    }
    std::size_t bytes = static_cast<std::size_t>(plan.cacheSlotBytes(slot));
    AlignedBuffer buffer(bytes);
    if (!buffer.data()) {
      error = fmt::format("out of memory: the KV cache slot {} needs {} "
                          "bytes",
                          support::quote(slot.slot), bytes);
      return false;
    }
    if (poison)
      std::memset(buffer.data(), 0xff, bytes);
    cache.push_back(std::move(buffer));
  }
  pool = sharedPool ? std::move(sharedPool)
                    : KvBlockPool::create(plan, poison, error);
  if (!pool && !error.empty())
    return false;
  slotRows.assign(plan.cache.size(), 0);
  appendedByDecode.assign(plan.cache.size(), false);
  for (std::size_t s = 0; s < plan.cache.size(); ++s)
    appendedByDecode[s] = plan.cache[s].paged;
  for (const Plan &entry : entries)
    if (entry.entry == "decode_step")
      for (const PlanValue &value : entry.values)
        if (value.kind == ValueKind::Cache && value.rowSymbol >= 0)
          appendedByDecode[value.index] = true;

  std::size_t maxArgs = 0, maxDims = 0;
  for (const Plan &entry : entries)
    for (const PlanStep &step : entry.steps) {
      std::size_t dims = 0;
      for (const PlanArg &arg : step.args)
        dims += arg.dims.size();
      maxArgs = std::max(maxArgs, step.args.size());
      maxDims = std::max(maxDims, dims);
    }
  buffers.resize(maxArgs);
  dimensions.resize(maxDims);
  argPointers.resize(maxArgs);
  std::size_t maxInputs = 0, maxSymbols = 0;
  for (const Plan &entry : entries) {
    maxInputs = std::max(maxInputs, entry.inputs.size());
    maxSymbols = std::max(maxSymbols, entry.symbols.size());
  }
  defaultInputs.resize(maxInputs);
  symbolValues.resize(maxSymbols);
  argDevice.resize(maxArgs);
  if (!onDevice)
    return true;

  // The arena's and the cache's contents are irrelevant (see above):
  // allocated, never uploaded.
  if (!allocateOnDevice(std::max<std::size_t>(arena.size(), 4), arenaDevice,
                        "the arena", error))
    return false;
  for (std::size_t i = 0; i < cache.size(); ++i) {
    std::string what =
        fmt::format("the KV cache slot {}", support::quote(plan.cache[i].slot));
    std::uint64_t address = 0;
    if (!allocateOnDevice(std::max<std::size_t>(cache[i].size(), 4), address,
                          what, error))
      return false;
    cacheDevice.push_back(address);
  }
  // Inputs are [B, S] (or [B, T]) ids or masks: at most max_batch rows of
  // max(max_seq, max_len) values.
  int64_t inputBytes = 0;
  if (__builtin_mul_overflow(plan.maxBatch, std::max(plan.maxSeq, plan.maxLen),
                             &inputCapacity) ||
      __builtin_mul_overflow(inputCapacity, int64_t(8), &inputBytes) ||
      inputBytes > kMaxPlanBytes) {
    error = fmt::format("plan: inputs of max_batch {} x {} ids are more than "
                        "the limit of {} bytes",
                        plan.maxBatch, std::max(plan.maxSeq, plan.maxLen),
                        kMaxPlanBytes);
    return false;
  }
  for (std::size_t i = 0; i < maxInputs; ++i) {
    std::uint64_t address = 0;
    if (!allocateOnDevice(static_cast<std::size_t>(inputBytes), address,
                          fmt::format("input {}", i), error))
      return false;
    inputDevice.push_back(address);
  }
  return true;
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

int64_t Model::cachedSequences() const { return impl_->cachedBatch; }

const LoadStats &Model::loadStats() const { return impl_->weights->loadStats; }

const std::string &Model::warning() const { return impl_->weights->warning; }

std::size_t Model::copiedWeightBytes() const {
  return impl_->weights->copiedBytes;
}

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
  auto start = std::chrono::steady_clock::now();
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
    auto weights = std::make_shared<Weights>();

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
          weights->entryKernels.emplace_back();
      for (std::size_t i = 0; i < entry.steps.size(); ++i) {
        // A store step is the runtime's own.
        if (entry.steps[i].storeSlot >= 0) {
          stepKernels.push_back(nullptr);
          continue;
        }
        auto it = table.find(entry.steps[i].kernel);
        if (it == table.end()) {
          error = fmt::format("plan: step {} calls kernel {}, which is not "
                              "linked into this program ({} kernels)",
                              i, support::quote(entry.steps[i].kernel), table.size());
          return nullptr;
        }
        stepKernels.push_back(it->second);
      }
    }

    // Weights: mapped, checked, used in place unless misaligned, or
    // converted to the program's bf16 or int8.
    if (!weights->load(plan, weightsPath, error))
      return nullptr;

    // Every entry gets the largest entry's arena size: the one arena serves
    // them all.
    int64_t arenaBytes = 0;
    for (const Plan &entry : entries)
      arenaBytes = std::max(arenaBytes, entry.arenaBytes);
    for (Plan &entry : model->entries_)
      entry.arenaBytes = arenaBytes;
    model->plan_.arenaBytes = arenaBytes;

    installHalideErrorHandler();
    weights->onDevice = plan.device == "cuda";
    if (weights->onDevice && !weights->moveToDevice(plan, error))
      return nullptr;
    impl.weights = weights;
    if (!impl.allocate(model->entries_, error))
      return nullptr;
    weights->loadStats.loadSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return model;
  } catch (const std::bad_alloc &) {
    error = "out of memory while loading the model";
  } catch (const std::exception &e) {
    error = fmt::format("cannot load the model: {}", e.what());
  }
  return nullptr;
}

std::unique_ptr<Model> Model::share(std::string &error, bool kvBlocks) const {
  try {
    std::unique_ptr<Model> model(new Model());
    model->plan_ = plan_;
    model->entries_ = entries_;
    model->impl_ = std::make_unique<Impl>();
    model->impl_->weights = impl_->weights;
    if (!model->impl_->allocate(model->entries_, error,
                                kvBlocks ? impl_->pool : nullptr))
      return nullptr;
    return model;
  } catch (const std::bad_alloc &) {
    error = "out of memory while sharing the model";
  } catch (const std::exception &e) {
    error = fmt::format("cannot share the model: {}", e.what());
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
        error = fmt::format("input {} has shape {} but {} values", support::quote(name),
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
  error = fmt::format("this program has no entry point '{}'", support::escapeText(name));
  return std::nullopt;
}

std::optional<OutputView>
Model::runEntry(std::size_t entryIndex, const std::vector<InputView> &inputs,
                std::string &error) {
  try {
    Impl &impl = *impl_;
    lastOutputs_.clear();
    Impl::Call call(entries_[entryIndex], plan_, entryIndex,
                    impl.symbolValues);
    if (!impl.bindInputs(call, inputs, error) ||
        !impl.bindCacheSymbols(call, error) || !impl.checkInputs(call, error) ||
        !impl.preparePaged(call, error) || !impl.bindOutputs(call, error) ||
        !impl.checkSteps(call, error) ||
        (impl.onDevice && !impl.uploadInputs(call, error))) {
      impl.releasePending();
      return std::nullopt;
    }
    // From here on a failure leaves the KV cache half-written.
    if (!impl.executeSteps(call, error)) {
      impl.dropCache(call);
      return std::nullopt;
    }
    impl.updateCache(call);
    lastOutputs_ = call.outputs;
    return lastOutputs_.front();
  } catch (const std::bad_alloc &) {
    error = "out of memory";
  } catch (const std::exception &e) {
    error = e.what();
  }
  impl_->releasePending();
  return std::nullopt;
}

bool poisonArenaRequested() {
  static const bool requested = [] {
    const char *value = std::getenv("TFMC_POISON_ARENA");
    return value && std::strcmp(value, "1") == 0;
  }();
  return requested;
}

} // namespace tfmc::runtime
