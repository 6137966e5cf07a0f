//===- HalideScratch.cpp - Reused scratch memory for Halide kernels -------===//

#include "runtime/core/HalideScratch.h"

#include <HalideRuntime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>

namespace tfmc::runtime {
namespace {

// Each block starts with a header of one alignment unit holding its usable
// size; the caller's pointer follows it.
constexpr std::size_t kAlignment = 64;
// Blocks a thread keeps for reuse. A kernel task holds at most a handful of
// scratch buffers at once.
constexpr int kCachedBlocks = 6;

struct Header {
  std::size_t capacity;
};

/// The freed blocks one thread keeps; they go back to the system when the
/// thread exits.
struct ThreadCache {
  void *blocks[kCachedBlocks] = {};
  int count = 0;
  ~ThreadCache() {
    for (int i = 0; i < count; ++i)
      std::free(blocks[i]);
  }
};

thread_local ThreadCache cache;

std::size_t capacityOf(void *raw) { return static_cast<Header *>(raw)->capacity; }

void *userPointer(void *raw) { return static_cast<char *>(raw) + kAlignment; }

void *rawPointer(void *user) { return static_cast<char *>(user) - kAlignment; }

extern "C" void *tfmcHalideMalloc(void *, std::size_t bytes) {
  return scratchAllocate(bytes);
}

extern "C" void tfmcHalideFree(void *, void *block) { scratchFree(block); }

} // namespace

void *scratchAllocate(std::size_t bytes) {
  // The smallest cached block that fits and wastes at most half of itself.
  int best = -1;
  for (int i = 0; i < cache.count; ++i) {
    std::size_t capacity = capacityOf(cache.blocks[i]);
    if (capacity >= bytes && capacity / 2 <= bytes &&
        (best < 0 || capacity < capacityOf(cache.blocks[best])))
      best = i;
  }
  if (best >= 0) {
    void *raw = cache.blocks[best];
    cache.blocks[best] = cache.blocks[--cache.count];
    return userPointer(raw);
  }
  // Round up to whole units, plus one unit past the end for over-reads.
  std::size_t capacity = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *raw = nullptr;
  if (posix_memalign(&raw, kAlignment, capacity + 2 * kAlignment) != 0)
    return nullptr;
  static_cast<Header *>(raw)->capacity = capacity;
  return userPointer(raw);
}

void scratchFree(void *block) {
  if (!block)
    return;
  void *raw = rawPointer(block);
  if (cache.count < kCachedBlocks) {
    cache.blocks[cache.count++] = raw;
    return;
  }
  // A full cache keeps the largest blocks.
  int smallest = 0;
  for (int i = 1; i < cache.count; ++i)
    if (capacityOf(cache.blocks[i]) < capacityOf(cache.blocks[smallest]))
      smallest = i;
  if (capacityOf(cache.blocks[smallest]) < capacityOf(raw))
    std::swap(cache.blocks[smallest], raw);
  std::free(raw);
}

void installHalideScratchAllocator() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    halide_set_custom_malloc(tfmcHalideMalloc);
    halide_set_custom_free(tfmcHalideFree);
  });
}

} // namespace tfmc::runtime
