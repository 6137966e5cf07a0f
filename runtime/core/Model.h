//===- Model.h - Execute a compiled model's plan ----------------*- C++ -*-===//
//
// A Model is one compiled model ready to run: its plan (Plan.h), its kernels
// (Halide AOT entry points, looked up by name in the table codegen links in),
// its weights (a mapped safetensors file, used in place where aligned) and
// one arena sized by the plan, allocated once.
//
// forward() validates the inputs completely before any kernel runs, so a bad
// input is a one-line error naming the tensor or value, never a kernel
// reading out of bounds. Then it runs the plan's steps in order, each over
// halide_buffer_t descriptors of the inputs, weights and arena slots.
//
// No function here throws (allocation failures included); each reports
// failure through its return value and an `error` string (one line).
//
// Threads: one Model runs one call at a time (its arena and KV cache are
// reused by every call). share() makes another Model over the same kernels
// and weights (read-only, not copied) with its own arena and KV cache: the
// Models of one load may run on different threads at the same time, and
// be destroyed in any order.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_MODEL_H
#define TFMC_RUNTIME_MODEL_H

#include "runtime/core/KvBlocks.h"
#include "runtime/core/Plan.h"
#include "runtime/core/Safetensors.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

extern "C" {
/// Halide's `NAME_argv` entry point: every argument is a halide_buffer_t *,
/// inputs first, the output last. Returns 0 on success.
typedef int (*tfmc_kernel_fn)(void **args);

/// One row of the kernel table that codegen's glue file defines.
struct tfmc_kernel_entry {
  const char *name;
  tfmc_kernel_fn fn;
};

/// The program's kernels and plans for one target (`tfmc --target` takes
/// a list); the glue's table lists them widest first.
struct tfmc_variant {
  const char *target;   /* the registry's name, e.g. "x86-64-avx2" */
  const char *features; /* CPU features it needs, LLVM's names, spaced */
  const struct tfmc_kernel_entry *kernels;
  int num_kernels;
  const char *plan_json;
};

/// Every CPU target of the compiler's registry, widest first: the rebuild
/// hint of a program whose variants this CPU cannot run.
struct tfmc_cpu_target {
  const char *name;
  const char *features;
};
}

namespace tfmc::runtime {

/// An input as the caller holds it: int64 values, row-major, owned by the
/// caller for the duration of forward().
struct InputView {
  std::string name;
  std::vector<int64_t> shape;
  const int64_t *data = nullptr; ///< shape's element count values
};

/// The output of forward(): a view into the model's arena, valid until the
/// next forward() or the model's destruction.
struct OutputView {
  std::string name;            ///< "logits", "last_hidden_state", ...
  std::vector<int64_t> shape;  ///< row-major, e.g. [B, S, V]
  const float *data = nullptr; ///< shape's element count floats

  int64_t numElements() const { return elementCount(shape).value_or(0); }
};

/// What loading the weights took (Model::loadStats()).
struct LoadStats {
  double mapSeconds = 0; ///< opening, mapping (page-in) and checking the file
  /// Widening bf16/f16 tensors, transposes, f32 to bf16/int8/int4.
  double convertSeconds = 0;
  int64_t convertedTensors = 0;
  double loadSeconds = 0; ///< all of Model::create
  /// The weights as the program stores them (int8 scales included).
  int64_t weightBytes = 0;
};

class Model {
public:
  /// `plan` must be one that parsePlan accepted (its indices are trusted).
  /// Resolves every kernel the plan calls in `kernels`, maps `weightsPath`
  /// (a safetensors file, a sharded checkpoint's index, a checkpoint
  /// directory or a GGUF file: WeightFiles.h) and checks each weight the
  /// plan uses (F32, BF16 or F16, or a GGUF file's block types; exact shape;
  /// converted to the plan's dtype), and allocates
  /// the arena. Tensors of the file that the plan does not use are reported
  /// as one warning line on stderr (and by `warning()`). On failure returns
  /// null and sets `error`.
  static std::unique_ptr<Model>
  create(const Plan &plan, const tfmc_kernel_entry *kernels, int numKernels,
         const std::string &weightsPath, std::string &error);

  /// The same for a program with several entry points (forward first, then
  /// e.g. prefill and decode_step), which share the weights, the arena (the
  /// largest entry's) and the KV cache.
  static std::unique_ptr<Model>
  create(const std::vector<Plan> &entries, const tfmc_kernel_entry *kernels,
         int numKernels, const std::string &weightsPath, std::string &error);

  /// The same, with the plan and kernel table linked into this program by
  /// codegen (the glue's tfmc_variants): the first variant whose CPU
  /// features this CPU has; none is a one-line error naming the variants,
  /// the missing features and the target to rebuild with.
  static std::unique_ptr<Model> createLinked(const std::string &weightsPath,
                                             std::string &error);

  /// Another Model over this one's kernels and weights, which it shares
  /// (read-only; they live as long as any Model using them), with its own
  /// arena, KV cache (empty) and call state. Safe to call while this Model
  /// runs on another thread. On failure (memory) returns null and sets
  /// `error`.
  /// With `kvBlocks`, the new Model takes the blocks of its paged KV cache
  /// from this one's pool (KvBlocks.h) instead of a pool of its own, so
  /// that a sequence one of them prefilled can join the other's batch
  /// without a copy (insertSequence); the two must then run on one thread
  /// at a time, as a ContinuousBatcher runs its two.
  std::unique_ptr<Model> share(std::string &error,
                               bool kvBlocks = false) const;

  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// Runs the model. `inputs` are matched to the plan's inputs by name; an
  /// absent optional mask means all ones. On failure returns nothing and
  /// sets `error`; the output of an earlier call is then invalid.
  std::optional<OutputView> forward(const std::vector<InputView> &inputs,
                                    std::string &error);
  std::optional<OutputView>
  forward(const std::map<std::string, IntegerTensor> &inputs,
          std::string &error);

  /// Whether the program has an entry point named `name`.
  bool hasEntry(const std::string &name) const { return entry(name); }
  /// The plan of entry point `name`, or null.
  const Plan *entry(const std::string &name) const;

  /// Runs entry point `name` (e.g. "prefill", "decode_step"). A prefill
  /// empties the KV cache and fills it with its batch of B sequences (B up
  /// to max_batch); each decode step appends one token to each of its first
  /// B' <= B rows. Inputs are validated as in forward().
  std::optional<OutputView> run(const std::string &name,
                                const std::vector<InputView> &inputs,
                                std::string &error);

  /// Rows of the KV cache filled so far (the tokens the decoder has seen).
  int64_t cachedTokens() const;
  /// Sequences (batch rows) the KV cache holds.
  int64_t cachedSequences() const;

  /// Rearranges the KV cache's sequences: row r becomes what row
  /// sources[r] holds (a beam continuing another, or a batch closing the
  /// holes of finished sequences), and the cache then holds sources.size()
  /// rows. Only what can differ is copied: positions from `firstPosition`
  /// of the decoder's own keys and values, and the cross-attention keys and
  /// values of the source only with `crossToo`, and then not at all when
  /// every row continues the same one (a prompt's beams): the rows then
  /// share its cross-attention keys and values, read in place by every
  /// decode step. Rows with sources[r] == r are not touched. False with a message if the cache is empty, a source
  /// is not a row it holds, or the rows exceed max_batch.
  bool reorderCache(const std::vector<int64_t> &sources, int64_t firstPosition,
                    bool crossToo, std::string &error);

  /// Continuous batching (`NAME serve`), for decoder-only models: copies
  /// sequence `sourceRow` of `donor`'s KV cache (another Model of the same
  /// load, after its prefill) into row `row` of this one's, right-aligned:
  /// its P positions become [cachedTokens() - P, cachedTokens()) and the
  /// positions before them are zeros, which the row's attention_mask must
  /// hide. `row` is a row the cache holds, or the next one (the cache then
  /// holds one more). An empty cache takes the donor's length. False with
  /// a message when the donor's sequence is longer than the cache (shift
  /// it first), the row is out of range, or the model has cross-attention.
  bool insertSequence(const Model &donor, int64_t sourceRow, int64_t row,
                      std::string &error);
  /// Moves every sequence's cached positions by `shift`: right (> 0) puts
  /// zeros before them, left (< 0) drops the first -shift positions (the
  /// caller's padding, in every row). The cache then holds cachedTokens()
  /// + shift positions. False with a message past max_len or the start.
  bool shiftCache(int64_t shift, std::string &error);
  /// Empties the KV cache (the next decode step needs a prefill or an
  /// insertSequence first).
  void clearCache();
  /// The paged KV cache's blocks (KvBlocks.h), shared with the Models
  /// share(kvBlocks) made: all zero when the program has no paged slot.
  KvBlockStats kvBlocks() const;
  /// The pool of the paged KV cache's blocks (null when none is paged).
  std::shared_ptr<KvBlockPool> kvBlockPool() const;
  /// The pool block that holds positions [index·T, (index + 1)·T) of
  /// sequence `row` (T: the pool's block tokens), a sequence whose tokens
  /// are the cache's whole frame (one prefilled alone). False with a
  /// message when it holds no such whole block.
  bool cacheBlock(int64_t row, int64_t index, int32_t &block,
                  std::string &error) const;
  /// Empties the KV cache, which then holds one sequence of these whole
  /// blocks of the pool (each then held once more), as a prefill of its
  /// blocks.size()·T tokens leaves it.
  bool adoptCacheBlocks(const std::vector<int32_t> &blocks,
                        std::string &error);

  /// Prefix caching (`NAME serve`), for decoder-only models on the CPU:
  /// the bytes one position of one sequence takes in the KV cache, over
  /// every slot (0 when the model cannot save or restore positions: it has
  /// cross-attention, runs on a GPU, or generates nothing).
  int64_t cachePositionBytes() const;
  /// Copies positions [first, first + count) of sequence `row` into `out`
  /// (cachePositionBytes() · count bytes: each slot's rows in turn). False
  /// with a message when they are not cached.
  bool saveCachePositions(int64_t row, int64_t first, int64_t count,
                          uint8_t *out, std::string &error) const;
  /// Writes what saveCachePositions saved as positions [first, first +
  /// count) of sequence 0, and leaves the cache holding that one sequence
  /// of first + count positions: `first` is 0 (the cache is emptied) or
  /// the positions it holds. An extend step then continues the sequence.
  bool restoreCachePositions(int64_t first, int64_t count, const uint8_t *in,
                             std::string &error);

  /// Per-kernel timing (for `NAME bench`): while `seconds` is non-null,
  /// every successful run of an entry point overwrites it with one wall time
  /// per plan step, in seconds, measured around the kernel call alone (not
  /// the building of its buffer descriptors). Null, the default, turns it
  /// off; the vector must outlive the runs that fill it.
  void setStepTimes(std::vector<double> *seconds);

  /// Sets the size of Halide's thread pool, shared by every model in the
  /// process. False with `error` set when `threads` < 1.
  static bool setThreads(int threads, std::string &error);

  const Plan &plan() const { return plan_; }
  /// Every output of the last successful call, in the plan's order: what
  /// forward() or run() returned, then the entry's further outputs (BERT's
  /// pooler_output). Valid as long as that return value; empty after a
  /// failed call.
  const std::vector<OutputView> &outputs() const { return lastOutputs_; }
  /// The unused-tensor warning given at creation, or empty.
  const std::string &warning() const;
  /// Bytes of f32 weights copied because the file did not align them (or
  /// held them transposed).
  std::size_t copiedWeightBytes() const;
  /// How long loading took and what the weights take.
  const LoadStats &loadStats() const;
  /// Every weight as the program stores it, for `convert-weights`: a bf16,
  /// int8 or int4 weight under its plan name in the plan's layout (BF16
  /// [rows, cols]; int8: I8 [rows, ceil(cols/group), 2 + group] of blocks;
  /// int4: U8 [rows, ceil(cols/32), 18] of Q4_0 blocks), an f32 weight as
  /// the file holds it. Views into the
  /// model, valid for its life. Nothing (with `error`) for a CUDA program,
  /// whose weights are in GPU memory.
  std::optional<std::vector<TensorView>> storedWeights(std::string &error) const;
  /// "input_ids, attention_mask": the inputs this model takes, for messages.
  std::string inputNames() const;

private:
  Model() = default;
  struct Weights;
  struct Impl;
  std::optional<OutputView> runEntry(std::size_t entry,
                                     const std::vector<InputView> &inputs,
                                     std::string &error);

  Plan plan_; // the forward entry (entries_[0])
  std::vector<Plan> entries_;
  std::vector<OutputView> lastOutputs_;
  std::unique_ptr<Impl> impl_;
};

/// One of the program's variants, as `info` reports it.
struct LinkedVariant {
  std::string target;
  std::vector<std::string> missingFeatures; // what this CPU lacks for it
  bool chosen = false;                      // the variant that runs here
};

/// The program's variants, widest first.
std::vector<LinkedVariant> linkedVariants();

/// The plan linked into this program, parsed once (thread-safe): the plan
/// of the variant this CPU runs, or of the first where it runs none (plans
/// agree on everything but tiles and kernels). Null with `error` set when
/// it does not parse. Model::createLinked refuses a CPU that runs no
/// variant, naming what it lacks: nothing runs a kernel before that check.
const Plan *linkedPlan(std::string &error);

/// Every entry point's plan linked into this program (forward first).
const std::vector<Plan> *linkedPlans(std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_MODEL_H
