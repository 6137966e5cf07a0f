//===- PrefixCache.cpp - Reusing the KV cache of prompts' prefixes --------===//

#include "runtime/generate/PrefixCache.h"

#include <algorithm>
#include <cstring>

namespace tfmc::runtime {

PrefixCache::PrefixCache(int64_t positionBytes, int64_t budgetBytes,
                         std::shared_ptr<KvBlockPool> pool)
    : positionBytes_(positionBytes),
      blockBytes_(positionBytes * kBlockTokens),
      budgetBytes_(std::max(budgetBytes, positionBytes * kBlockTokens)),
      pool_(pool && pool->blockTokens() == kBlockTokens ? std::move(pool)
                                                         : nullptr) {}

PrefixCache::~PrefixCache() {
  if (pool_)
    for (const auto &entry : blocks_)
      pool_->release(entry.second->poolBlock);
}

uint64_t PrefixCache::keyOf(const Block *parent, const int64_t *tokens) {
  // FNV-1a over the parent's key and the tokens' bytes.
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&](uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xff;
      hash *= 1099511628211ull;
    }
  };
  mix(parent ? parent->key : 0);
  for (int64_t t = 0; t < kBlockTokens; ++t)
    mix(static_cast<uint64_t>(tokens[t]));
  return hash;
}

PrefixCache::Block *PrefixCache::find(const Block *parent,
                                      const int64_t *tokens) const {
  auto range = blocks_.equal_range(keyOf(parent, tokens));
  for (auto it = range.first; it != range.second; ++it) {
    Block *block = it->second.get();
    if (block->parent == parent &&
        std::equal(block->tokens.begin(), block->tokens.end(), tokens))
      return block;
  }
  return nullptr;
}

int64_t PrefixCache::restore(const std::vector<int64_t> &prompt, Model &model,
                             std::string &error) {
  const int64_t length = static_cast<int64_t>(prompt.size());
  ++stats_.lookups;
  stats_.promptTokens += length;
  // The last token always runs: its logits choose the first new one.
  const int64_t usable = (length - 1) / kBlockTokens;
  std::vector<Block *> chain;
  const Block *parent = nullptr;
  for (int64_t j = 0; j < usable; ++j) {
    Block *block = find(parent, prompt.data() + j * kBlockTokens);
    if (!block)
      break;
    chain.push_back(block);
    parent = block;
  }
  if (chain.empty())
    return 0;
  if (pool_) {
    std::vector<int32_t> blocks;
    for (const Block *block : chain)
      blocks.push_back(block->poolBlock);
    if (!model.adoptCacheBlocks(blocks, error))
      return -1;
  } else {
    for (std::size_t j = 0; j < chain.size(); ++j)
      if (!model.restoreCachePositions(static_cast<int64_t>(j) * kBlockTokens,
                                       kBlockTokens,
                                       chain[j]->positions.data(), error))
        return -1;
  }
  // Used last to first: the first blocks end up the most recent.
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    lru_.splice(lru_.begin(), lru_, (*it)->lru);
  const int64_t reused = static_cast<int64_t>(chain.size()) * kBlockTokens;
  stats_.reusedTokens += reused;
  return reused;
}

bool PrefixCache::save(const std::vector<int64_t> &prompt, const Model &model,
                       std::string &error) {
  const int64_t whole = static_cast<int64_t>(prompt.size()) / kBlockTokens;
  // The blocks held already (a missing block's followers are missing too),
  // marked used so that making room does not evict them.
  std::vector<Block *> held;
  Block *parent = nullptr;
  while (static_cast<int64_t>(held.size()) < whole) {
    Block *block = find(parent, prompt.data() + held.size() * kBlockTokens);
    if (!block)
      break;
    held.push_back(block);
    parent = block;
  }
  for (auto it = held.rbegin(); it != held.rend(); ++it)
    lru_.splice(lru_.begin(), lru_, (*it)->lru);
  const int64_t heldBytes = static_cast<int64_t>(held.size()) * blockBytes_;
  const int64_t added =
      std::min(whole - static_cast<int64_t>(held.size()),
               (budgetBytes_ - heldBytes) / blockBytes_);
  if (added <= 0)
    return true;
  evictTo(budgetBytes_ - added * blockBytes_);
  auto after = lru_.begin();
  if (!held.empty())
    after = std::next(held.back()->lru);
  for (int64_t j = static_cast<int64_t>(held.size()),
               end = j + added;
       j < end; ++j) {
    const int64_t *tokens = prompt.data() + j * kBlockTokens;
    auto owned = std::make_unique<Block>();
    Block *block = owned.get();
    block->key = keyOf(parent, tokens);
    block->parent = parent;
    block->tokens.assign(tokens, tokens + kBlockTokens);
    if (pool_) {
      if (!model.cacheBlock(0, j, block->poolBlock, error))
        return false;
      pool_->retain(block->poolBlock);
    } else {
      block->positions.resize(static_cast<std::size_t>(blockBytes_));
      if (!model.saveCachePositions(0, j * kBlockTokens, kBlockTokens,
                                    block->positions.data(), error))
        return false;
    }
    // After the prefix's earlier blocks in recency: the last ones go first.
    block->lru = lru_.insert(after, block);
    after = std::next(block->lru);
    if (parent)
      parent->children.push_back(block);
    blocks_.emplace(block->key, std::move(owned));
    ++stats_.blocks;
    stats_.bytes += blockBytes_;
    parent = block;
  }
  return true;
}

void PrefixCache::evictTo(int64_t bytes) {
  while (stats_.bytes > bytes && !lru_.empty()) {
    const int64_t before = stats_.blocks;
    erase(lru_.back());
    stats_.evictedBlocks += before - stats_.blocks;
  }
}

void PrefixCache::erase(Block *block) {
  // Children first (a copy: erasing one edits this block's list).
  std::vector<Block *> children = block->children;
  for (Block *child : children)
    erase(child);
  if (Block *parent = block->parent) {
    auto &siblings = parent->children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), block));
  }
  lru_.erase(block->lru);
  if (pool_)
    pool_->release(block->poolBlock);
  --stats_.blocks;
  stats_.bytes -= blockBytes_;
  auto range = blocks_.equal_range(block->key);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.get() == block) {
      blocks_.erase(it);
      return;
    }
}

} // namespace tfmc::runtime
