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
  // step, P + S in an extend step (S: input_ids' columns); a prefill gives
  // each sequence its decoder's length, T for an encoder-decoder, else S.
  call.past = call.prefill ? 0 : cachedRows;
  call.added = 1;
  if (call.extend || call.prefill) {
    for (std::size_t s = 0; s < plan.symbols.size(); ++s)
      if (plan.symbols[s] == "S" && call.boundBy[s] >= 0)
        call.added = symbols[s];
    for (std::size_t s = 0; s < plan.symbols.size() && call.prefill; ++s)
      if (plan.symbols[s] == "T" && call.boundBy[s] >= 0)
        call.added = symbols[s];
  }
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
    } else if (name == "N") {
      symbols[s] = pool ? pool->poolBlocks() : 0;
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

void Model::Impl::releaseSequences(std::vector<PagedSequence> &rows) {
  if (pool)
    for (PagedSequence &row : rows)
      for (int32_t block : row.blocks)
        pool->release(block);
  rows.clear();
}

void Model::Impl::releasePending() { releaseSequences(pendingSequences); }

bool Model::Impl::makeRoom(PagedSequence &row, int64_t added,
                           std::string &error) {
  const int64_t tokens = pool->blockTokens();
  auto full = [&] {
    KvBlockStats stats = pool->stats();
    error = fmt::format("the KV cache is full: its {} blocks of {} positions "
                        "are all in use",
                        stats.blocks, stats.blockTokens);
    return false;
  };
  // Positions are written from row.tokens on: a block there that another
  // sequence holds too is copied first (blocks after it are this
  // sequence's own).
  const std::size_t first = static_cast<std::size_t>(row.tokens / tokens);
  if (first < row.blocks.size() && pool->shared(row.blocks[first])) {
    int32_t copy = pool->take();
    if (copy < 0)
      return full();
    pool->copy(row.blocks[first], copy);
    pool->release(row.blocks[first]);
    row.blocks[first] = copy;
  }
  const std::size_t needed =
      static_cast<std::size_t>((row.tokens + added + tokens - 1) / tokens);
  while (row.blocks.size() < needed) {
    int32_t block = pool->take();
    if (block < 0)
      return full();
    row.blocks.push_back(block);
  }
  return true;
}

bool Model::Impl::preparePaged(Call &call, std::string &error) {
  if (!pool || !call.usesCache)
    return true;
  const int64_t batch = call.symbols[0], added = call.added,
                length = call.length();
  std::vector<PagedSequence> &rows =
      call.prefill ? pendingSequences : sequences;
  if (call.prefill) {
    // A prefill empties the cache: its blocks go back before the new
    // sequences take theirs (a call that threw after its preparation left
    // pending blocks too).
    releaseSequences(sequences);
    cachedRows = cachedBatch = 0;
    releasePending();
    rows.assign(static_cast<std::size_t>(batch), PagedSequence());
  }
  // A decode step of the first B' sequences of more: the others get the
  // step's position too, unwritten (the caller masks it), as they would
  // in a dense cache.
  const int64_t held = call.prefill ? batch : cachedBatch;
  for (int64_t b = 0; b < held; ++b)
    if (!makeRoom(rows[b], added, error))
      return false;
  // key_rows: each sequence right-aligned in the call's `length` positions.
  keyRows.resize(static_cast<std::size_t>(batch * length));
  for (int64_t b = 0; b < batch; ++b) {
    const PagedSequence &row = rows[b];
    const int64_t offset = length - (row.tokens + added);
    int32_t *out = keyRows.data() + b * length;
    for (int64_t j = 0; j < length; ++j)
      out[j] = j < offset ? -1
                          : static_cast<int32_t>(pool->row(row, j - offset));
  }
  return true;
}

int Model::Impl::storeRows(const Call &call, std::size_t stepIndex) {
  const PlanStep &step = call.plan.steps[stepIndex];
  const halide_buffer_t &rows = buffers[0];
  const int64_t count = rows.dim[1].extent, batch = rows.dim[2].extent;
  const int64_t rowBytes = pool->rowBytes(step.storeSlot), length = call.length();
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t *positions = keyRows.data() + b * length + length - count;
    for (int64_t s = 0; s < count; ++s)
      pool->writeRow(static_cast<std::size_t>(step.storeSlot), positions[s],
                     rows.host + (b * count + s) * rowBytes);
  }
  return 0;
}

void Model::Impl::updateCache(const Call &call) {
  if (!call.usesCache)
    return;
  if (pool) {
    // (preparePaged emptied the cache for a prefill.)
    if (call.prefill)
      sequences.swap(pendingSequences);
    for (PagedSequence &sequence : sequences)
      sequence.tokens += call.added;
  }
  cachedRows = call.length();
  if (!call.prefill)
    return;
  const Plan &plan = call.plan;
  prefillSymbols.clear();
  for (std::size_t s = 0; s < plan.symbols.size(); ++s)
    prefillSymbols[plan.symbols[s]] = call.symbols[s];
  cachedBatch = call.symbols[0];
  crossShared = false;
  // The prefill wrote its sequences densely ([B, rows, width] from the
  // slot's start); each moves to its own max_len rows, the last first so
  // that no sequence is overwritten before it moves.
  for (std::size_t s = 0; s < plan.cache.size(); ++s) {
    if (plan.cache[s].paged)
      continue;
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
  if (!call.usesCache)
    return;
  cachedRows = cachedBatch = 0;
  releaseSequences(sequences);
  releasePending();
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
  // Paged sequences are lists of blocks: row r holds sources[r]'s (a
  // block two rows then hold is copied before either writes into it).
  if (impl.pool) {
    std::vector<PagedSequence> next;
    for (int64_t source : sources) {
      next.push_back(impl.sequences[source]);
      for (int32_t block : next.back().blocks)
        impl.pool->retain(block);
    }
    impl.releaseSequences(impl.sequences);
    impl.sequences = std::move(next);
  }
  for (std::size_t s = 0; s < plan_.cache.size() && !changed.empty(); ++s) {
    const bool self = impl.appendedByDecode[s];
    if (plan_.cache[s].paged || (!self && (!crossToo || impl.crossShared)))
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
  if (impl.pool != from.pool) {
    error = "insertSequence: the donor does not share this Model's KV cache "
            "blocks (make it with share(error, true))";
    return false;
  }
  if (impl.pool) {
    // The donor's blocks, held by both until the donor lets go: no copy.
    PagedSequence joining = from.sequences[sourceRow];
    for (int32_t block : joining.blocks)
      impl.pool->retain(block);
    if (row < static_cast<int64_t>(impl.sequences.size())) {
      std::vector<PagedSequence> old{std::move(impl.sequences[row])};
      impl.releaseSequences(old);
      impl.sequences[row] = std::move(joining);
    } else {
      impl.sequences.push_back(std::move(joining));
    }
  }
  const int64_t pad = length - from.cachedRows;
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    if (plan_.cache[s].paged)
      continue;
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
  // Paged sequences are right-aligned in the frame: it only grows or
  // shrinks, as long as no sequence's tokens fall out of it.
  if (impl.pool)
    for (int64_t b = 0; b < impl.cachedBatch; ++b)
      if (impl.sequences[b].tokens > length) {
        error = fmt::format("shiftCache: sequence {} has {} positions, more "
                            "than the {} left",
                            b, impl.sequences[b].tokens, length);
        return false;
      }
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    if (!impl.appendedByDecode[s] || plan_.cache[s].paged)
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

void Model::clearCache() {
  impl_->cachedRows = impl_->cachedBatch = 0;
  impl_->releaseSequences(impl_->sequences);
}

KvBlockStats Model::kvBlocks() const {
  return impl_->pool ? impl_->pool->stats() : KvBlockStats();
}

std::shared_ptr<KvBlockPool> Model::kvBlockPool() const { return impl_->pool; }

bool Model::cacheBlock(int64_t row, int64_t index, int32_t &block,
                       std::string &error) const {
  const Impl &impl = *impl_;
  if (!impl.pool || row < 0 || row >= impl.cachedBatch ||
      impl.sequences[row].tokens != impl.cachedRows || index < 0 ||
      (index + 1) * impl.pool->blockTokens() > impl.cachedRows) {
    error = fmt::format("cacheBlock: sequence {} holds no whole block {} of "
                        "a paged cache",
                        row, index);
    return false;
  }
  block = impl.sequences[row].blocks[index];
  return true;
}

bool Model::adoptCacheBlocks(const std::vector<int32_t> &blocks,
                             std::string &error) {
  Impl &impl = *impl_;
  const int64_t tokens =
      impl.pool ? static_cast<int64_t>(blocks.size()) * impl.pool->blockTokens()
                : 0;
  if (!impl.pool || blocks.empty() || tokens > plan_.maxLen) {
    error = fmt::format("adoptCacheBlocks: {} blocks do not make a sequence "
                        "of a paged cache (max_len {})",
                        blocks.size(), plan_.maxLen);
    return false;
  }
  for (int32_t block : blocks)
    if (block < 0 || block >= impl.pool->blocks()) {
      error = fmt::format("adoptCacheBlocks: block {} is not in the pool "
                          "({} blocks)",
                          block, impl.pool->blocks());
      return false;
    }
  // Held first: a block this cache's own sequence holds stays held.
  for (int32_t block : blocks)
    impl.pool->retain(block);
  impl.releaseSequences(impl.sequences);
  impl.sequences.resize(1);
  impl.sequences[0].blocks = blocks;
  impl.sequences[0].tokens = tokens;
  // What a prefill of one sequence of `tokens` tokens leaves.
  impl.prefillSymbols = {{"B", 1}, {"S", tokens}};
  impl.crossShared = false;
  impl.cachedRows = tokens;
  impl.cachedBatch = 1;
  return true;
}

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
    if (plan_.cache[s].paged) {
      // Position j of the frame; zeros left of the sequence's tokens.
      const PagedSequence &sequence = impl.sequences[row];
      const int64_t offset = impl.cachedRows - sequence.tokens;
      for (int64_t j = first; j < first + count; ++j, out += rowBytes) {
        if (j < offset)
          std::memset(out, 0, static_cast<std::size_t>(rowBytes));
        else
          impl.pool->readRow(s, impl.pool->row(sequence, j - offset), out);
      }
      continue;
    }
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
  if (impl.pool) {
    // One sequence whose tokens are the frame's (a continued one is such:
    // it was restored or prefilled alone), with blocks for the new ones.
    if (first == 0) {
      impl.releaseSequences(impl.sequences);
      impl.sequences.resize(1);
    }
    PagedSequence &sequence = impl.sequences[0];
    if (sequence.tokens != first) {
      error = fmt::format("restoreCachePositions: the sequence holds {} "
                          "positions of a frame of {}",
                          sequence.tokens, first);
      return false;
    }
    if (!impl.makeRoom(sequence, count, error)) {
      // An empty cache, not a half-restored one.
      impl.releaseSequences(impl.sequences);
      impl.cachedRows = impl.cachedBatch = 0;
      error = "restoreCachePositions: " + error;
      return false;
    }
    sequence.tokens = first + count;
  }
  for (std::size_t s = 0; s < plan_.cache.size(); ++s) {
    const int64_t rowBytes = plan_.cache[s].rowBytes();
    if (plan_.cache[s].paged) {
      const PagedSequence &sequence = impl.sequences[0];
      for (int64_t t = first; t < first + count; ++t, in += rowBytes)
        impl.pool->writeRow(s, impl.pool->row(sequence, t), in);
      continue;
    }
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
