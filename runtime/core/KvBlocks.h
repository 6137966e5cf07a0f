//===- KvBlocks.h - The blocks of a paged KV cache --------------*- C++ -*-===//
//
// A CPU program's KV cache slots that decode steps append to are paged
// (Plan.h's PlanCacheSlot::paged): each is a pool of blocks of the plan's
// block_tokens rows, and block i is rows [i·T, (i + 1)·T) of every paged
// slot at once. A sequence holds a list of blocks and a token count; its
// token t lives in pool row blocks[t / T]·T + t % T. Inside a block a
// slot's rows are head-major: the slot's H heads split each row into runs
// of width / H values, and head h's T runs of block i are one, so that
// row r's head h is run ((r / T)·H + h)·T + r % T (decode attention reads
// a head's keys of a block in one run, where position-major rows lay a
// row apart: 3 KiB for GPT-2 small). Block 0 holds zeros
// and no sequence's tokens: attention reads it for positions key_rows
// names no row for (-1), so that what it weighs 0 is never a NaN.
//
// Each Model has its own KvBlockPool, but a ContinuousBatcher's second
// Model (Model::share with kvBlocks) takes its blocks from the first's, so
// that a sequence it prefilled can join the batch by handing over its block
// list (no rows are copied), and a finished sequence's blocks are free for
// either at once. A block two
// sequences hold (beams that continue one prompt) is counted; whoever
// writes into it first copies it (ModelCache.cpp).
//
// The counts are thread-safe; the rows are written by the calls of the
// Models that hold them.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_KVBLOCKS_H
#define TFMC_RUNTIME_KVBLOCKS_H

#include "runtime/core/Plan.h"
#include "runtime/core/Safetensors.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tfmc::runtime {

/// How many blocks a pool holds and how many are in use.
struct KvBlockStats {
  int64_t blockTokens = 0; ///< positions a block holds (0: no paged cache)
  int64_t blocks = 0;
  int64_t used = 0;
};

/// One sequence of a paged cache: its blocks, in position order, and the
/// tokens they hold (blocks past them may be held ahead of use).
struct PagedSequence {
  std::vector<int32_t> blocks;
  int64_t tokens = 0;
};

class KvBlockPool {
public:
  /// The pool for `plan`'s paged slots: enough blocks for max_batch
  /// sequences of max_len positions, one more such sequence (a batcher's
  /// newcomer being prefilled on a second Model), and one copied block per
  /// sequence. Null with `error` when the memory cannot be had (or the
  /// plan has no paged slot: null, no error). `poison` fills the rows with
  /// NaN (TFMC_POISON_ARENA).
  static std::shared_ptr<KvBlockPool> create(const Plan &plan, bool poison,
                                             std::string &error);
  /// The blocks create() makes for `plan`.
  static int64_t blocksFor(const Plan &plan);

  int64_t blockTokens() const { return blockTokens_; }
  /// The blocks sequences may hold (beside the zero block, block 0).
  int64_t blocks() const {
    return static_cast<int64_t>(references_.size()) - 1;
  }
  /// The blocks kernels see, the zero block's included.
  int64_t poolBlocks() const {
    return static_cast<int64_t>(references_.size());
  }
  /// The rows kernels see, the zero block's included.
  int64_t rows() const { return poolBlocks() * blockTokens_; }
  /// The blocks of plan slot `slot` (a paged one).
  uint8_t *slotData(std::size_t slot) {
    return static_cast<uint8_t *>(slots_[slot].data());
  }
  const uint8_t *slotData(std::size_t slot) const {
    return static_cast<const uint8_t *>(slots_[slot].data());
  }
  int64_t rowBytes(std::size_t slot) const { return rowBytes_[slot]; }
  /// Writes pool row `row` of paged slot `slot` from `from` (a row as the
  /// plan's values hold it: its heads one after another).
  void writeRow(std::size_t slot, int64_t row, const uint8_t *from);
  /// Reads pool row `row` of paged slot `slot` into `to` (as writeRow's).
  void readRow(std::size_t slot, int64_t row, uint8_t *to) const;
  /// The pool row that holds token `t` of `sequence`.
  int64_t row(const PagedSequence &sequence, int64_t t) const {
    return sequence.blocks[t / blockTokens_] * blockTokens_ + t % blockTokens_;
  }
  /// Whether plan slot `slot` is paged.
  bool paged(std::size_t slot) const { return rowBytes_[slot] > 0; }

  /// A free block, held once; -1 when every block is in use.
  int32_t take();
  /// One more holder of `block`.
  void retain(int32_t block);
  /// One holder fewer; the block is free when none is left.
  void release(int32_t block);
  /// Whether more than one sequence holds `block`.
  bool shared(int32_t block) const;
  /// Copies block `from`'s rows over block `to`'s, in every paged slot.
  void copy(int32_t from, int32_t to);
  /// Room for `blocks` blocks beyond what create() made for the plan's
  /// sequences (a prefix cache's; the blocks held keep their rows);
  /// false with `error` when the memory cannot be had. Only while no call
  /// of a Model over the pool runs (a ContinuousBatcher grows its own
  /// between steps, for its prefix cache).
  bool reserveExtra(int64_t blocks, std::string &error);
  KvBlockStats stats() const;

private:
  KvBlockPool() = default;
  /// Whether `blocks` blocks (the zero block's included) keep the widest
  /// slot's elements indexable in 32 bits; else `error`.
  bool indexable(int64_t blocks, std::string &error) const;
  /// The run (width / heads values) that holds head 0 of pool row `row`
  /// of paged slot `slot`; head h's is T runs on.
  int64_t firstRun(std::size_t slot, int64_t row) const;
  /// Each paged slot's rows for `blocks` blocks (the zero block's
  /// included), uninitialised; false with `error` when memory is short.
  bool allocateSlots(int64_t blocks, std::vector<AlignedBuffer> &slots,
                     std::string &error) const;
  int64_t blockTokens_ = 0;
  int64_t sequenceBlocks_ = 0; ///< create()'s, for the plan's sequences
  int64_t widest_ = 0; ///< the widest paged slot's values a position
  std::vector<AlignedBuffer> slots_; ///< per plan slot (empty: a dense one)
  std::vector<int64_t> rowBytes_;    ///< per plan slot (0: a dense one)
  std::vector<int64_t> heads_;       ///< per plan slot (its blocks' layout)
  std::vector<std::string> names_;   ///< per plan slot, for messages
  mutable std::mutex mutex_;
  std::vector<int32_t> references_; ///< per block
  std::vector<int32_t> free_;       ///< free blocks, the next on top
};


} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_KVBLOCKS_H
