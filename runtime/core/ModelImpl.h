//===- ModelImpl.h - A Model's state, shared by its parts -------*- C++ -*-===//
//
// Private to the runtime. A call of an entry point (Model::runEntry) is:
//   input and output binding (ModelInputs.cpp): the given tensors matched
//     to the plan's inputs, the symbols bound from their shapes, every
//     shape, size and value checked, the output's arena view;
//   KV-cache management (ModelCache.cpp): P and L, the prefill's symbols,
//     the rows the cache holds after the call;
//   plan execution (ModelExecute.cpp): each step's halide_buffer_t
//     descriptors built and checked against the memory behind them, then
//     the kernels run.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_MODELIMPL_H
#define TFMC_RUNTIME_MODELIMPL_H

#include "runtime/core/HalideHooks.h"
#include "runtime/core/KvBlocks.h"
#include "runtime/core/Model.h"
#include "support/Text.h"
#include "runtime/core/WeightFiles.h"

#include <HalideRuntime.h>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::runtime {

/// `bytes` of device memory; `what` names it in the message.
inline bool allocateOnDevice(std::size_t bytes, std::uint64_t &address,
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
inline bool upload(std::uint64_t address, const void *host, std::size_t bytes,
                   const std::string &what, std::string &error) {
  std::string message;
  if (!deviceUpload(address, host, bytes, message)) {
    error = fmt::format("cannot copy {} to the GPU: {}", what, message);
    return false;
  }
  return true;
}

/// What every Model of one load shares (Model::share): the kernels and the
/// weights. Written while the first Model is created, read-only after:
/// threads running the Models that share it only read it.
struct Model::Weights {
  /// Each entry point's kernels, step by step.
  std::vector<std::vector<tfmc_kernel_fn>> entryKernels;
  std::optional<WeightFiles> weightFiles;
  /// Weights the model owns: transposed, realigned or converted at load.
  std::vector<AlignedBuffer> weightCopies;
  /// Per plan weight: its elements as the kernels read them (the plan's
  /// dtype; PlanWeight::storedElements of them), and the file's tensor it
  /// came from.
  std::vector<const uint8_t *> weightData;
  std::vector<const TensorView *> weightSource;
  LoadStats loadStats;
  /// The unused-tensor warning given at load, or empty; bytes of f32
  /// weights copied because the file did not align them (or held them
  /// transposed).
  std::string warning;
  std::size_t copiedBytes = 0;
  /// A CUDA plan: each weight's device copy.
  bool onDevice = false;
  std::vector<std::uint64_t> weightDevice;

  Weights() = default;
  Weights(const Weights &) = delete;
  Weights &operator=(const Weights &) = delete;
  ~Weights() {
    for (std::uint64_t address : weightDevice)
      deviceFree(address);
  }

  /// Maps `weightsPath`, checks every weight the plan uses against it
  /// (ModelWeights.cpp) and makes each what the kernels read; sets the
  /// warning and copied bytes.
  bool load(const Plan &plan, const std::string &weightsPath,
            std::string &error);
  /// A CUDA plan: uploads every weight (once, at load) and drops the host
  /// copies.
  bool moveToDevice(const Plan &plan, std::string &error);
};

/// One Model's own state: its working memory, KV cache and call scratch,
/// over the shared weights.
struct Model::Impl {
  std::shared_ptr<const Weights> weights;
  AlignedBuffer arena;
  /// KV cache slots, [max_batch, max_len, width] elements each (f32, bf16 or f16:
  /// PlanCacheSlot::type): sequence b's
  /// rows start at b * max_len * width (a prefill of B > 1 writes them
  /// densely, [B, S, width], and updateCache spreads them out). The rows
  /// filled so far, the sequences held, each slot's rows after the prefill
  /// (cross-attention slots keep them), whether a decode step appends to a
  /// slot (the decoder's own keys and values), and the symbols of the
  /// prefill that filled them (e.g. S, the source length cross-attention
  /// reads).
  std::vector<AlignedBuffer> cache;
  int64_t cachedRows = 0;
  int64_t cachedBatch = 0;
  std::vector<int64_t> slotRows;
  std::vector<bool> appendedByDecode;
  /// Every sequence reads the same source (one prompt's beams): the
  /// cross-attention slots keep sequence `crossRow`'s rows only, and decode
  /// steps read them for every sequence (batch stride 0).
  bool crossShared = false;
  int64_t crossRow = 0;
  std::map<std::string, int64_t> prefillSymbols;
  /// reorderCache's staging rows (reused).
  std::vector<uint8_t> reorderScratch;

  /// The paged slots' blocks (KvBlocks.h; null when no slot is paged),
  /// shared with the Models share(kvBlocks) makes. The cache's cachedRows
  /// positions are a frame every sequence is right-aligned in: sequence
  /// b's tokens are its last sequences[b].tokens positions (the ones
  /// before are the padding of a shorter sequence that joined the batch).
  std::shared_ptr<KvBlockPool> pool;
  std::vector<PagedSequence> sequences;
  /// A prefill's new sequences, until it succeeds.
  std::vector<PagedSequence> pendingSequences;
  /// The call's key_rows, [B, L]: the pool row of each position of each
  /// sequence after the call, -1 left of its tokens.
  std::vector<int32_t> keyRows;

  // Reused by every forward() so that a call allocates nothing in the common
  // case.
  std::vector<int64_t> symbolValues;
  std::vector<std::vector<int64_t>> defaultInputs; // absent optional masks
  std::vector<halide_buffer_t> buffers;
  std::vector<halide_dimension_t> dimensions;
  std::vector<void *> argPointers;

  /// TFMC_POISON_ARENA=1 (a testing aid, read once): the KV cache is
  /// filled with NaN at load and the arena before every call (host plans),
  /// so that a kernel reading what no kernel wrote shows in the output.
  bool poison = false;

  /// setStepTimes(): where each kernel call's wall time goes, or null.
  std::vector<double> *stepSeconds = nullptr;

  // A CUDA plan ("device": "cuda"): the weights (Weights), the arena, the
  // KV cache and a staging buffer per input live in device memory
  // (addresses from HalideHooks.h), and the kernels get device buffers over
  // them. The host arena then only receives the output.
  bool onDevice = false;
  std::uint64_t arenaDevice = 0;
  std::vector<std::uint64_t> cacheDevice;
  std::vector<std::uint64_t> inputDevice;
  int64_t inputCapacity = 0; // values each input staging buffer holds
  std::vector<std::uint64_t> argDevice; // the current step's arguments

  Impl() = default;
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;
  ~Impl() {
    // Blocks of a shared pool go back to it.
    releaseSequences(sequences);
    releaseSequences(pendingSequences);
    for (std::uint64_t address : inputDevice)
      deviceFree(address);
    for (std::uint64_t address : cacheDevice)
      deviceFree(address);
    if (arenaDevice)
      deviceFree(arenaDevice);
  }

  /// Everything a Model has of its own, for `entries` (the arena as large
  /// as the largest entry's, the KV cache, the call scratch; a CUDA plan's
  /// device arena, cache and input staging): at create and at share.
  /// A Model made by share(kvBlocks) takes `sharedPool`, its source's
  /// blocks.
  bool allocate(const std::vector<Plan> &entries, std::string &error,
                std::shared_ptr<KvBlockPool> sharedPool = nullptr);

  struct Call;

  // Input and output binding (ModelInputs.cpp).
  /// Matches the given tensors to the plan's inputs, checks their ranks and
  /// binds the symbols their shapes name.
  bool bindInputs(Call &call, const std::vector<InputView> &inputs,
                  std::string &error);
  /// Checks every given input's whole shape, sizes and values, and points
  /// absent optional masks at all ones. After bindCacheSymbols.
  bool checkInputs(Call &call, std::string &error);
  /// The outputs' views into the arena.
  bool bindOutputs(Call &call, std::string &error);
  /// A CUDA plan: copies the inputs to their device buffers.
  bool uploadInputs(Call &call, std::string &error);

  // KV-cache management (ModelCache.cpp).
  /// Binds P, L and the prefill's symbols, and checks that the cache can
  /// take this call.
  bool bindCacheSymbols(Call &call, std::string &error);
  /// After a successful call: the rows the cache now holds.
  void updateCache(const Call &call);
  /// After a failed call: a half-written cache is no cache.
  void dropCache(const Call &call);
  /// Before the steps are built: blocks for the call's new positions in
  /// every sequence (copying a block shared with another sequence before
  /// it is written) and the call's key_rows. False with `error` when the
  /// pool has no free block left.
  bool preparePaged(Call &call, std::string &error);
  /// Blocks for `added` more positions of `row` (the one they start in
  /// copied first if another sequence holds it too); false with `error`
  /// when the pool has no free block left.
  bool makeRoom(PagedSequence &row, int64_t added, std::string &error);
  /// After a call that failed before its kernels ran: a prefill's new
  /// sequences give their blocks back (its preparation emptied the cache).
  void releasePending();
  /// Gives every block of `rows` back, and empties it.
  void releaseSequences(std::vector<PagedSequence> &rows);
  /// The store step `stepIndex` (its buffers built): each new row into its
  /// sequence's block. Returns 0, as a kernel that succeeded.
  int storeRows(const Call &call, std::size_t stepIndex);

  // Plan execution (ModelExecute.cpp).
  /// Builds (and so checks) every step's buffers before any kernel runs.
  bool checkSteps(Call &call, std::string &error);
  /// Runs every step's kernel, then (CUDA) copies the output back.
  bool executeSteps(Call &call, std::string &error);

private:
  /// Fills buffers/argPointers for step `stepIndex`; false with `error` set
  /// when an argument does not fit the memory behind it.
  bool buildStep(Call &call, std::size_t stepIndex, std::string &error);
};

/// One call of an entry point: what binding computes and execution reads.
struct Model::Impl::Call {
  Call(const Plan &plan, const Plan &forward, std::size_t entryIndex,
       std::vector<int64_t> &symbols)
      : plan(plan), forward(forward), entryIndex(entryIndex),
        prefill(plan.entry == "prefill"), extend(plan.entry == "extend"),
        usesCache(!plan.cache.empty() && plan.entry != "forward"),
        symbols(symbols) {}

  const Plan &plan;
  const Plan &forward; ///< the program's forward plan (messages name its inputs)
  const std::size_t entryIndex;
  const bool prefill;
  /// S more tokens of the one cached sequence (serve's chunked prefill).
  const bool extend;
  const bool usesCache;
  /// Symbol values (Impl::symbolValues), and the input that bound each (-1:
  /// none).
  std::vector<int64_t> &symbols;
  std::vector<int> boundBy;
  /// The plan input each given tensor is (null: absent).
  std::vector<const InputView *> given;
  /// Rows already in the KV cache (0 for a prefill), and the rows this call
  /// gives each sequence after them (a decode step 1, an extend S, a
  /// prefill the decoder's length: T, else S).
  int64_t past = 0;
  int64_t added = 1;
  /// The positions the cache holds after the call (its L).
  int64_t length() const { return past + added; }
  /// A prefill's elements written per cache slot (for updateCache).
  std::vector<int64_t> cacheElements;
  /// Where each input's values live and how many there are.
  std::vector<std::pair<const int64_t *, int64_t>> inputData;
  /// The plan's outputs' views into the arena, in order.
  std::vector<OutputView> outputs;

  /// A dim's extent with the symbols bound; false on overflow.
  bool evaluate(const DimExpr &dim, int64_t &extent) const {
    extent = 1;
    for (const DimTerm &term : dim) {
      int64_t factor = term.isSymbol ? symbols[term.value] : term.value;
      if (__builtin_mul_overflow(extent, factor, &extent))
        return false;
    }
    return true;
  }
  bool evaluateAll(const std::vector<DimExpr> &dims,
                   std::vector<int64_t> &shape) const {
    shape.resize(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (!evaluate(dims[d], shape[d]))
        return false;
    return true;
  }
  /// "B=1, S=7": the symbols, for messages.
  std::string symbolText() const {
    std::string text;
    for (std::size_t s = 0; s < plan.symbols.size(); ++s)
      text +=
          fmt::format("{}{}={}", s ? ", " : "", plan.symbols[s], symbols[s]);
    return text;
  }
};


/// Whether TFMC_POISON_ARENA is 1 (read once per process).
bool poisonArenaRequested();

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_MODELIMPL_H
