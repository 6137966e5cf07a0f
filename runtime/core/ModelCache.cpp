//===- ModelCache.cpp - The KV cache across prefill and decode steps ------===//
//
// Generation runs a batch of B sequences (B <= max_batch): a prefill
// empties the cache and fills each sequence's max_len-row part of every
// slot; each decode step reads the P rows cached so far and appends its own
// (L = P + 1) to each of its B' <= B sequences (the first B' rows); an
// extend step appends S rows (L = P + S) to a cache of one sequence. A
// decode step also reads the other symbols of the prefill it continues (S:
// the source that cross-attention attends to). reorderCache rearranges the
// sequences (beams, finished rows). A call that fails after its kernels
// started leaves the cache half-written, so the cache is then dropped.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/ModelImpl.h"

#include <algorithm>
#include <cstring>

namespace tfmc::runtime {

bool Model::Impl::bindCacheSymbols(Call &call, std::string &error) {
  const Plan &plan = call.plan;
  std::vector<int64_t> &symbols = call.symbols;
  // P rows already cached (none before a prefill), L = P + 1 in a decode
  // step, P + S in an extend step (S: input_ids' columns).
  call.past = call.prefill ? 0 : cachedRows;
  call.added = 1;
  if (call.extend)
    for (std::size_t s = 0; s < plan.symbols.size(); ++s)
      if (plan.symbols[s] == "S" && call.boundBy[s] >= 0)
        call.added = symbols[s];
  for (std::size_t s = 0; s < plan.symbols.size(); ++s) {
    if (call.boundBy[s] >= 0) {
      // A decode (extend) step's attention_mask [B, L] covers the cached
      // keys and the new ones.
      if (plan.symbols[s] == "L" && !call.prefill &&
          symbols[s] != call.past + call.added) {
        error = fmt::format("{} has {} columns, but the KV cache holds {} "
                            "tokens and the step adds {} (expected {})",
                            support::quote(plan.inputs[call.boundBy[s]].name),
                            symbols[s], call.past, call.added,
                            call.past + call.added);
        return false;
      }
      continue;
    }
    const std::string &name = plan.symbols[s];
    auto stored = prefillSymbols.find(name);
    if (name == "P") {
      symbols[s] = call.past;
    } else if (name == "L") {
      symbols[s] = call.past + call.added;
    } else if (call.usesCache && !call.prefill &&
               stored != prefillSymbols.end()) {
      symbols[s] = stored->second;
    } else {
      error = fmt::format("plan: symbol {} has no value: no input given "
                          "names it",
                          support::quote(name));
      return false;
    }
  }
  if (!call.usesCache)
    return true;
  if (!call.prefill && cachedRows == 0) {
    error = fmt::format("{} needs a prefill first: the KV cache is empty",
                        plan.entry);
    return false;
  }
  if (onDevice && symbols[0] != 1) {
    error = fmt::format("generation on the GPU runs one sequence at a "
                        "time: batch {} given to {}",
                        symbols[0], plan.entry);
    return false;
  }
  if (!call.prefill && symbols[0] > cachedBatch) {
    error = fmt::format("{} is given {} sequences but the KV cache holds {}",
                        plan.entry, symbols[0], cachedBatch);
    return false;
  }
  // An extend step's projections write their S rows into the cache as one
  // matrix, which only a single sequence's rows are.
  if (call.extend && (symbols[0] != 1 || cachedBatch != 1)) {
    error = fmt::format("extend continues one sequence: the KV cache holds "
                        "{} and {} are given",
                        cachedBatch, symbols[0]);
    return false;
  }
  if (call.prefill)
    call.cacheElements.assign(plan.cache.size(), 0);
  if (!call.prefill && call.past + call.added > plan.maxLen) {
    error = call.added == 1
                ? fmt::format("the sequence is full: {} tokens are cached "
                              "and max_len is {}",
                              call.past, plan.maxLen)
                : fmt::format("{} more tokens do not fit: {} are cached and "
                              "max_len is {}",
                              call.added, call.past, plan.maxLen);
    return false;
  }
  return true;
}

void Model::Impl::updateCache(const Call &call) {
  if (!call.usesCache)
    return;
  if (!call.prefill) {
    cachedRows = call.past + call.added;
    return;
  }
  // The decoder's sequence: its length symbol is T for an encoder-decoder,
  // S for a decoder-only model.
  const Plan &plan = call.plan;
  prefillSymbols.clear();
  for (std::size_t s = 0; s < plan.symbols.size(); ++s)
    prefillSymbols[plan.symbols[s]] = call.symbols[s];
  auto target = prefillSymbols.find("T");
  cachedRows = target != prefillSymbols.end() ? target->second
                                              : prefillSymbols["S"];
  cachedBatch = call.symbols[0];
  crossShared = false;
  // The prefill wrote its sequences densely ([B, rows, width] from the
  // slot's start); each moves to its own max_len rows, the last first so
  // that no sequence is overwritten before it moves.
  for (std::size_t s = 0; s < plan.cache.size(); ++s) {
    const int64_t width = plan.cache[s].width;
    const int64_t rowBytes = plan.cache[s].rowBytes();
    slotRows[s] = call.cacheElements[s] / (width * cachedBatch);
    auto *data = static_cast<uint8_t *>(cache[s].data());
    const std::size_t sequenceBytes =
        static_cast<std::size_t>(slotRows[s] * rowBytes);
    for (int64_t b = cachedBatch - 1; b > 0; --b)
      std::memmove(data + b * plan.maxLen * rowBytes, data + b * sequenceBytes,
                   sequenceBytes);
  }
}

void Model::Impl::dropCache(const Call &call) {
  if (call.usesCache)
    cachedRows = cachedBatch = 0;
}

bool Model::reorderCache(const std::vector<int64_t> &sources,
                         int64_t firstPosition, bool crossToo,
                         std::string &error) {
  Impl &impl = *impl_;
  const int64_t rows = static_cast<int64_t>(sources.size());
  if (impl.cachedRows == 0) {
    error = "reorderCache: the KV cache is empty (run a prefill first)";
    return false;
  }
  if (impl.onDevice) {
    error = "reorderCache: beams and batches of sequences run on the CPU "
            "only (the GPU runtime holds one sequence)";
    return false;
  }
  if (rows < 1 || rows > plan_.maxBatch) {
    error = fmt::format("reorderCache: {} sequences, but max_batch is {}",
                        rows, plan_.maxBatch);
    return false;
  }
  for (int64_t source : sources)
    if (source < 0 || source >= impl.cachedBatch) {
      error = fmt::format("reorderCache: sequence {} is not in the KV cache "
                          "(it holds {})",
                          source, impl.cachedBatch);
      return false;
    }
  if (firstPosition < 0 || firstPosition > impl.cachedRows) {
    error = fmt::format("reorderCache: position {} is past the {} cached",
                        firstPosition, impl.cachedRows);
    return false;
  }
  // Sequences that all continue one (a prompt's beams at their first
  // step) share its cross-attention rows instead of copies; once shared,
  // they stay the same for every sequence.
  if (crossToo && !impl.crossShared &&
      std::all_of(sources.begin(), sources.end(),
                  [&](int64_t s) { return s == sources[0]; })) {
    impl.crossShared = true;
    impl.crossRow = sources[0];
  }
  // The rows that change, staged first: a source may itself be overwritten
  // (beams swap places).
  std::vector<int64_t> changed;
  for (int64_t r = 0; r < rows; ++r)
    if (sources[r] != r)
      changed.push_back(r);
  for (std::size_t s = 0; s < plan_.cache.size() && !changed.empty(); ++s) {
    const bool self = impl.appendedByDecode[s];
    if (!self && (!crossToo || impl.crossShared))
      continue;
    const int64_t rowBytes = plan_.cache[s].rowBytes();
    const int64_t first = self ? firstPosition : 0;
    const int64_t count = (self ? impl.cachedRows : impl.slotRows[s]) - first;
    if (count <= 0)
      continue;
    // Bytes: an f32, bf16 or f16 slot's rows alike.
    const std::size_t span = static_cast<std::size_t>(count * rowBytes);
    auto *data = static_cast<uint8_t *>(impl.cache[s].data());
    auto rowStart = [&](int64_t r) {
      return data + (r * plan_.maxLen + first) * rowBytes;
    };
    impl.reorderScratch.resize(changed.size() * span);
    for (std::size_t c = 0; c < changed.size(); ++c)
      std::memcpy(impl.reorderScratch.data() + c * span,
                  rowStart(sources[changed[c]]), span);
    for (std::size_t c = 0; c < changed.size(); ++c)
      std::memcpy(rowStart(changed[c]), impl.reorderScratch.data() + c * span,
                  span);
  }
  impl.cachedBatch = rows;
  return true;
}

bool Model::insertSequence(const Model &donor, int64_t sourceRow, int64_t row,
                           std::string &error) {
  Impl &impl = *impl_;
  const Impl &from = *donor.impl_;
  if (from.weights != impl.weights) {
    error = "insertSequence: the donor is not a Model of this load";
    return false;
  }
  if (impl.onDevice) {
    error = "insertSequence: continuous batching runs on the CPU only";
    return false;
  }
  for (std::size_t s = 0; s < plan_.cache.size(); ++s)
    if (!impl.appendedByDecode[s]) {
      error = "insertSequence: a model with cross-attention cannot join "
              "sequences to a running batch";
      return false;
    }
  if (from.cachedRows == 0 || sourceRow < 0 || sourceRow >= from.cachedBatch) {
    error = fmt::format("insertSequence: the donor holds no sequence {}",
                        sourceRow);
    return false;
  }
  if (row < 0 || row > impl.cachedBatch || row >= plan_.maxBatch) {
    error = fmt::format("insertSequence: row {} is past the {} held (max_batch "
                        "{})",
                        row, impl.cachedBatch, plan_.maxBatch);
    return false;
  }
  const bool empty = impl.cachedRows == 0;
  const int64_t length = empty ? from.cachedRows : impl.cachedRows;
  if (from.cachedRows > length) {
    error = fmt::format("insertSequence: the sequence has {} positions but "
                        "the cache holds {}",
                        from.cachedRows, length);
    return false;
  }
  const int64_t pad = length - from.cachedRows;
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    const int64_t rowBytes = plan_.cache[s].rowBytes();
    const auto *source = static_cast<const uint8_t *>(from.cache[s].data()) +
                         sourceRow * plan_.maxLen * rowBytes;
    auto *target = static_cast<uint8_t *>(impl.cache[s].data()) +
                   row * plan_.maxLen * rowBytes;
    std::memset(target, 0, static_cast<std::size_t>(pad * rowBytes));
    std::memcpy(target + pad * rowBytes, source,
                static_cast<std::size_t>(from.cachedRows * rowBytes));
  }
  if (empty) {
    impl.cachedRows = length;
    impl.prefillSymbols = from.prefillSymbols;
    impl.slotRows = from.slotRows;
    impl.crossShared = false;
  }
  impl.cachedBatch = std::max(impl.cachedBatch, row + 1);
  return true;
}

bool Model::shiftCache(int64_t shift, std::string &error) {
  Impl &impl = *impl_;
  if (impl.onDevice) {
    error = "shiftCache: continuous batching runs on the CPU only";
    return false;
  }
  const int64_t length = impl.cachedRows + shift;
  if (impl.cachedRows == 0 || length < 1 || length > plan_.maxLen) {
    error = fmt::format("shiftCache: {} positions shifted by {} leave {} "
                        "(max_len {})",
                        impl.cachedRows, shift, length, plan_.maxLen);
    return false;
  }
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    if (!impl.appendedByDecode[s])
      continue;
    const int64_t rowBytes = plan_.cache[s].rowBytes();
    auto *data = static_cast<uint8_t *>(impl.cache[s].data());
    for (int64_t b = 0; b < impl.cachedBatch; ++b) {
      uint8_t *start = data + b * plan_.maxLen * rowBytes;
      if (shift > 0) {
        std::memmove(start + shift * rowBytes, start,
                     static_cast<std::size_t>(impl.cachedRows * rowBytes));
        std::memset(start, 0, static_cast<std::size_t>(shift * rowBytes));
      } else {
        std::memmove(start, start - shift * rowBytes,
                     static_cast<std::size_t>(length * rowBytes));
      }
    }
  }
  impl.cachedRows = length;
  return true;
}

void Model::clearCache() { impl_->cachedRows = impl_->cachedBatch = 0; }

int64_t Model::cachePositionBytes() const {
  const Impl &impl = *impl_;
  if (impl.onDevice || plan_.cache.empty())
    return 0;
  int64_t bytes = 0;
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    if (!impl.appendedByDecode[s])
      return 0;
    bytes += plan_.cache[s].rowBytes();
  }
  return bytes;
}

bool Model::saveCachePositions(int64_t row, int64_t first, int64_t count,
                               uint8_t *out, std::string &error) const {
  const Impl &impl = *impl_;
  if (cachePositionBytes() == 0) {
    error = "saveCachePositions: the model's KV cache cannot be saved";
    return false;
  }
  if (row < 0 || row >= impl.cachedBatch || first < 0 || count < 0 ||
      first + count > impl.cachedRows) {
    error = fmt::format("saveCachePositions: positions [{}, {}) of sequence "
                        "{} are not cached ({} sequences of {})",
                        first, first + count, row, impl.cachedBatch,
                        impl.cachedRows);
    return false;
  }
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    const int64_t rowBytes = plan_.cache[s].rowBytes();
    const auto *data = static_cast<const uint8_t *>(impl.cache[s].data());
    const std::size_t span = static_cast<std::size_t>(count * rowBytes);
    std::memcpy(out, data + (row * plan_.maxLen + first) * rowBytes, span);
    out += span;
  }
  return true;
}

bool Model::restoreCachePositions(int64_t first, int64_t count,
                                  const uint8_t *in, std::string &error) {
  Impl &impl = *impl_;
  if (cachePositionBytes() == 0) {
    error = "restoreCachePositions: the model's KV cache cannot be restored";
    return false;
  }
  const bool continues = first > 0 && impl.cachedBatch == 1 &&
                         impl.cachedRows == first;
  if ((first != 0 && !continues) || count < 1 ||
      first + count > plan_.maxLen) {
    error = fmt::format("restoreCachePositions: positions [{}, {}) do not "
                        "continue the cache ({} sequences of {}, max_len {})",
                        first, first + count, impl.cachedBatch,
                        impl.cachedRows, plan_.maxLen);
    return false;
  }
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    const int64_t rowBytes = plan_.cache[s].rowBytes();
    auto *data = static_cast<uint8_t *>(impl.cache[s].data());
    const std::size_t span = static_cast<std::size_t>(count * rowBytes);
    std::memcpy(data + first * rowBytes, in, span);
    in += span;
    impl.slotRows[s] = first + count;
  }
  if (first == 0) {
    // What a prefill of one sequence of `count` tokens leaves.
    impl.prefillSymbols = {{"B", 1}, {"S", count}};
    impl.crossShared = false;
  }
  impl.cachedRows = first + count;
  impl.cachedBatch = 1;
  return true;
}

} // namespace tfmc::runtime
