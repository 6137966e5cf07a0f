//===- PrefixCache.h - Reusing the KV cache of prompts' prefixes -*- C++ -*-===//
//
// Chat traffic repeats long system prompts and earlier turns. A PrefixCache
// keeps the KV-cache positions of prompts that ran, in blocks of
// kBlockTokens tokens, so that a later prompt starting with the same tokens
// restores them instead of running them again (`NAME serve`'s
// --prefix-cache):
//   - block j of a prompt (its tokens [jB, (j + 1)B)) is keyed by its own
//     tokens and its parent, block j - 1: a block stands for the whole
//     prefix up to its end, as vLLM's blocks do. A lookup compares the
//     tokens themselves, so a hash collision cannot give another prompt's
//     positions;
//   - a prompt reuses its longest run of cached blocks from its start, but
//     always runs its last token itself (its logits choose the first new
//     token);
//   - over a paged KV cache (runtime/core/KvBlocks.h) a cached block is a
//     block of the pool, held by the cache as a sequence holds it: saving
//     and restoring copy nothing, and a prefix that running sequences
//     hold takes its memory once. Otherwise the cache keeps its own copy
//     of the positions;
//   - blocks are evicted least recently used first, beyond a byte budget.
//     A lookup marks a prefix's blocks used from last to first, so that a
//     prefix loses its last blocks before its first ones (an evicted block
//     takes the blocks after it with it).
// The positions of a prefix are a pure function of its tokens (the same
// kernels compute them, whatever ran before), so a restored prompt gives
// the ids that running it whole gives: test/Serve/prefix-cache.test
// checks that at every block boundary.
//
// Not thread-safe: one ContinuousBatcher's thread uses it; stats() is
// copied out under the batcher's lock.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GENERATE_PREFIXCACHE_H
#define TFMC_RUNTIME_GENERATE_PREFIXCACHE_H

#include "runtime/core/Model.h"
#include "support/PlanFormat.h"

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tfmc::runtime {

struct PrefixCacheStats {
  int64_t lookups = 0;       ///< prompts looked up
  int64_t promptTokens = 0;  ///< their tokens
  int64_t reusedTokens = 0;  ///< tokens restored instead of run
  int64_t blocks = 0;        ///< blocks held now
  int64_t bytes = 0;         ///< their bytes
  int64_t evictedBlocks = 0; ///< blocks evicted so far
};

class PrefixCache {
public:
  /// The paged KV cache's block (support/PlanFormat.h), so that a cached
  /// block can be one of its pool's.
  static constexpr int64_t kBlockTokens = tfmc::plan::kBlockTokens;

  /// Over positions of `positionBytes` bytes (Model::cachePositionBytes),
  /// holding at most `budgetBytes` (at least one block's worth); with
  /// `pool` (whose blocks hold kBlockTokens positions), blocks of the pool
  /// that the Models given to restore and save use.
  PrefixCache(int64_t positionBytes, int64_t budgetBytes,
              std::shared_ptr<KvBlockPool> pool = nullptr);
  ~PrefixCache();
  PrefixCache(const PrefixCache &) = delete;
  PrefixCache &operator=(const PrefixCache &) = delete;
  /// The blocks a pool needs beyond its sequences' for a cache over
  /// positions of `positionBytes` bytes within `budgetBytes`.
  static int64_t budgetBlocks(int64_t positionBytes, int64_t budgetBytes) {
    return std::max<int64_t>(budgetBytes / (positionBytes * kBlockTokens), 1);
  }

  /// Restores into `model`'s cache the longest cached prefix of `prompt`
  /// that leaves its last token to run; returns its length (0: nothing
  /// reused, the cache untouched), or -1 with `error` when the model
  /// refused the positions.
  int64_t restore(const std::vector<int64_t> &prompt, Model &model,
                  std::string &error);

  /// Saves the whole blocks of `prompt` that `model`'s sequence 0 holds
  /// (after its prompt ran) and the cache does not hold yet.
  bool save(const std::vector<int64_t> &prompt, const Model &model,
            std::string &error);

  const PrefixCacheStats &stats() const { return stats_; }
  int64_t blockBytes() const { return blockBytes_; }

private:
  struct Block {
    uint64_t key;
    Block *parent;
    std::vector<Block *> children;
    std::vector<int64_t> tokens;
    std::vector<uint8_t> positions; ///< without a pool
    int32_t poolBlock = -1;         ///< with one
    std::list<Block *>::iterator lru;
  };
  static uint64_t keyOf(const Block *parent, const int64_t *tokens);
  /// The cached block continuing `parent` with these tokens, or null.
  Block *find(const Block *parent, const int64_t *tokens) const;
  void evictTo(int64_t bytes);
  /// Erases the block and every block after it (which it keys).
  void erase(Block *block);

  const int64_t positionBytes_;
  const int64_t blockBytes_;
  const int64_t budgetBytes_;
  std::shared_ptr<KvBlockPool> pool_;
  std::unordered_multimap<uint64_t, std::unique_ptr<Block>> blocks_;
  /// Most recently used first.
  std::list<Block *> lru_;
  PrefixCacheStats stats_;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GENERATE_PREFIXCACHE_H
