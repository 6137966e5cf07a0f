//===- ModelCache.cpp - The KV cache across prefill and decode steps ------===//
//
// Generation runs one sequence: a prefill empties the cache and fills
// max_len-row slots with its sequence; each decode step reads the P rows
// cached so far and appends its own (L = P + 1). A decode step also reads
// the other symbols of the prefill it continues (S: the source that
// cross-attention attends to). A call that fails after its kernels started
// leaves the cache half-written, so the cache is then dropped.
//
//===----------------------------------------------------------------------===//

#include "runtime/ModelImpl.h"

namespace tfmc::runtime {

bool Model::Impl::bindCacheSymbols(Call &call, std::string &error) {
  const Plan &plan = call.plan;
  std::vector<int64_t> &symbols = call.symbols;
  // P rows already cached (none before a prefill), L = P + 1 in a decode
  // step.
  call.past = call.prefill ? 0 : cachedRows;
  for (std::size_t s = 0; s < plan.symbols.size(); ++s) {
    if (call.boundBy[s] >= 0)
      continue;
    const std::string &name = plan.symbols[s];
    auto stored = prefillSymbols.find(name);
    if (name == "P") {
      symbols[s] = call.past;
    } else if (name == "L") {
      symbols[s] = call.past + 1;
    } else if (call.usesCache && !call.prefill &&
               stored != prefillSymbols.end()) {
      symbols[s] = stored->second;
    } else {
      error = fmt::format("plan: symbol {} has no value: no input given "
                          "names it",
                          quote(name));
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
  if (symbols[0] != 1) {
    error = fmt::format("generation runs one sequence at a time: batch "
                        "{} given to {}",
                        symbols[0], plan.entry);
    return false;
  }
  if (!call.prefill && call.past + 1 > plan.maxLen) {
    error = fmt::format("the sequence is full: {} tokens are cached and "
                        "max_len is {}",
                        call.past, plan.maxLen);
    return false;
  }
  return true;
}

void Model::Impl::updateCache(const Call &call) {
  if (!call.usesCache)
    return;
  if (!call.prefill) {
    cachedRows = call.past + 1;
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
}

void Model::Impl::dropCache(const Call &call) {
  if (call.usesCache)
    cachedRows = 0;
}

bool Model::reorderCache(const std::vector<int64_t> &, int64_t, bool, std::string &error) { error = "TEMP"; return false; }

} // namespace tfmc::runtime
