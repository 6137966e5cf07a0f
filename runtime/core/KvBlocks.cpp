//===- KvBlocks.cpp - The blocks of a paged KV cache ----------------------===//

#include "runtime/core/KvBlocks.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace tfmc::runtime {

std::shared_ptr<KvBlockPool> KvBlockPool::create(const Plan &plan, bool poison,
                                                 std::string &error) {
  if (plan.blockTokens <= 0)
    return nullptr;
  std::shared_ptr<KvBlockPool> pool(new KvBlockPool());
  pool->blockTokens_ = plan.blockTokens;
  // Block 0 is the zero block: never handed out, all zeros, the row that
  // attention reads (and weighs 0) for a position key_rows names none for.
  pool->sequenceBlocks_ = blocksFor(plan);
  const int64_t blocks = pool->sequenceBlocks_ + 1;
  for (const PlanCacheSlot &slot : plan.cache)
    if (slot.paged)
      pool->widest_ = std::max(pool->widest_, slot.width);
  if (!pool->indexable(blocks, error))
    return nullptr;
  pool->rowBytes_.assign(plan.cache.size(), 0);
  pool->heads_.assign(plan.cache.size(), 1);
  pool->names_.resize(plan.cache.size());
  for (std::size_t s = 0; s < plan.cache.size(); ++s)
    if (plan.cache[s].paged) {
      pool->rowBytes_[s] = plan.cache[s].rowBytes();
      pool->heads_[s] = plan.cache[s].heads;
      pool->names_[s] = plan.cache[s].slot;
    }
  if (!pool->allocateSlots(blocks, pool->slots_, error))
    return nullptr;
  // Not initialised: attention reads only rows a store wrote (key_rows
  // names no other) and the zero block; TFMC_POISON_ARENA=1 fills the
  // rest with NaN (all ones: NaN in f32, bf16 and f16 alike).
  for (std::size_t s = 0; s < plan.cache.size(); ++s) {
    if (!pool->paged(s))
      continue;
    if (poison)
      std::memset(pool->slotData(s), 0xff, pool->slots_[s].size());
    std::memset(pool->slotData(s), 0,
                static_cast<std::size_t>(pool->blockTokens_ *
                                         pool->rowBytes_[s]));
  }
  pool->references_.assign(static_cast<std::size_t>(blocks), 0);
  pool->references_[0] = 1;
  // Block 1 first: a fresh sequence's blocks are in order.
  for (int64_t b = blocks - 1; b >= 1; --b)
    pool->free_.push_back(static_cast<int32_t>(b));
  return pool;
}

bool KvBlockPool::allocateSlots(int64_t blocks,
                                std::vector<AlignedBuffer> &slots,
                                std::string &error) const {
  slots.clear();
  slots.resize(rowBytes_.size());
  for (std::size_t s = 0; s < rowBytes_.size(); ++s) {
    if (!paged(s))
      continue;
    const std::size_t bytes =
        static_cast<std::size_t>(blocks * blockTokens_ * rowBytes_[s]);
    slots[s] = AlignedBuffer(bytes);
    if (!slots[s].data()) {
      error = fmt::format("out of memory: the KV cache slot {} needs {} "
                          "bytes for {} blocks",
                          support::quote(names_[s]), bytes, blocks - 1);
      return false;
    }
  }
  return true;
}

bool KvBlockPool::indexable(int64_t blocks, std::string &error) const {
  // Kernels index a pool's (head dim, heads, rows) elements in 32 bits.
  if (blocks * blockTokens_ * widest_ > std::numeric_limits<int32_t>::max()) {
    error = fmt::format("the KV cache's {} blocks of {} positions of {} "
                        "values are more elements than a kernel indexes "
                        "(2^31 - 1); lower --max-batch or max_len",
                        blocks - 1, blockTokens_, widest_);
    return false;
  }
  return true;
}

int64_t KvBlockPool::blocksFor(const Plan &plan) {
  if (plan.blockTokens <= 0)
    return 0;
  const int64_t perSequence =
      (plan.maxLen + plan.blockTokens - 1) / plan.blockTokens;
  return (plan.maxBatch + 1) * perSequence + plan.maxBatch;
}

int32_t KvBlockPool::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty())
    return -1;
  int32_t block = free_.back();
  free_.pop_back();
  references_[block] = 1;
  return block;
}

void KvBlockPool::retain(int32_t block) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++references_[block];
}

void KvBlockPool::release(int32_t block) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--references_[block] == 0)
    free_.push_back(block);
}

int64_t KvBlockPool::firstRun(std::size_t slot, int64_t row) const {
  return (row / blockTokens_) * heads_[slot] * blockTokens_ + row % blockTokens_;
}

void KvBlockPool::writeRow(std::size_t slot, int64_t row,
                           const uint8_t *from) {
  const int64_t runBytes = rowBytes_[slot] / heads_[slot];
  uint8_t *run = slotData(slot) + firstRun(slot, row) * runBytes;
  for (int64_t h = 0; h < heads_[slot]; ++h, run += blockTokens_ * runBytes)
    std::memcpy(run, from + h * runBytes, static_cast<std::size_t>(runBytes));
}

void KvBlockPool::readRow(std::size_t slot, int64_t row, uint8_t *to) const {
  const int64_t runBytes = rowBytes_[slot] / heads_[slot];
  const uint8_t *run = slotData(slot) + firstRun(slot, row) * runBytes;
  for (int64_t h = 0; h < heads_[slot]; ++h, run += blockTokens_ * runBytes)
    std::memcpy(to + h * runBytes, run, static_cast<std::size_t>(runBytes));
}

bool KvBlockPool::shared(int32_t block) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return references_[block] > 1;
}

void KvBlockPool::copy(int32_t from, int32_t to) {
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (!paged(s))
      continue;
    const std::size_t bytes =
        static_cast<std::size_t>(blockTokens_ * rowBytes_[s]);
    std::memcpy(slotData(s) + to * bytes, slotData(s) + from * bytes, bytes);
  }
}

bool KvBlockPool::reserveExtra(int64_t extra, std::string &error) {
  // With the zero block.
  const int64_t before = static_cast<int64_t>(references_.size()),
                blocks = sequenceBlocks_ + extra + 1;
  if (blocks <= before)
    return true;
  if (!indexable(blocks, error))
    return false;
  std::vector<AlignedBuffer> grown;
  if (!allocateSlots(blocks, grown, error))
    return false;
  std::lock_guard<std::mutex> lock(mutex_);
  // Only the blocks in use are copied: untouched pages stay untouched.
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (!paged(s))
      continue;
    const std::size_t blockBytes =
        static_cast<std::size_t>(blockTokens_ * rowBytes_[s]);
    for (int64_t b = 0; b < before; ++b)
      if (references_[b] > 0)
        std::memcpy(static_cast<uint8_t *>(grown[s].data()) + b * blockBytes,
                    slotData(s) + b * blockBytes, blockBytes);
    slots_[s] = std::move(grown[s]);
  }
  references_.resize(static_cast<std::size_t>(blocks), 0);
  // The new blocks are taken after the free ones.
  std::vector<int32_t> added;
  for (int64_t b = blocks - 1; b >= before; --b)
    added.push_back(static_cast<int32_t>(b));
  free_.insert(free_.begin(), added.begin(), added.end());
  return true;
}

KvBlockStats KvBlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  KvBlockStats stats;
  stats.blockTokens = blockTokens_;
  stats.blocks = static_cast<int64_t>(references_.size()) - 1;
  stats.used = stats.blocks - static_cast<int64_t>(free_.size());
  return stats;
}

} // namespace tfmc::runtime
