//===- Metrics.cpp - NAME serve's Prometheus metrics -----------------------===//

#include "runtime/serve/Metrics.h"

#include <fmt/format.h>

namespace tfmc::runtime::serve {

Histogram::Histogram(std::vector<double> bounds)
    : bounds(std::move(bounds)), counts(this->bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::size_t b = 0;
  while (b < bounds.size() && value > bounds[b])
    ++b;
  ++counts[b];
  sum += value;
  ++count;
}

void Histogram::write(std::string &out, const std::string &name) const {
  uint64_t cumulative = 0;
  for (std::size_t b = 0; b <= bounds.size(); ++b) {
    cumulative += counts[b];
    std::string le = b < bounds.size() ? fmt::format("{}", bounds[b]) : "+Inf";
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, le, cumulative);
  }
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum, name, count);
}

Metrics::Metrics()
    : timeToFirstToken({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                        10}),
      timePerToken({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                    1}) {}

void Metrics::request(const std::string &endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex);
  ++requests[{endpoint, status}];
}

void Metrics::tokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mutex);
  promptTokens += static_cast<uint64_t>(prompt);
  generatedTokens += static_cast<uint64_t>(generated);
}

void Metrics::firstToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  timeToFirstToken.observe(seconds);
}

void Metrics::perToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  timePerToken.observe(seconds);
}

std::string Metrics::text(const BatcherState &state) const {
  std::lock_guard<std::mutex> lock(mutex);
  std::string out;
  out += "# HELP tfmc_requests_total HTTP requests answered, by endpoint and "
         "status.\n# TYPE tfmc_requests_total counter\n";
  for (const auto &[key, count] : requests)
    out += fmt::format("tfmc_requests_total{{endpoint=\"{}\",status=\"{}\"}} "
                       "{}\n",
                       key.first, key.second, count);
  out += fmt::format(
      "# HELP tfmc_prompt_tokens_total Prompt tokens of completed and "
      "cancelled requests.\n# TYPE tfmc_prompt_tokens_total counter\n"
      "tfmc_prompt_tokens_total {}\n"
      "# HELP tfmc_generation_tokens_total Tokens generated.\n"
      "# TYPE tfmc_generation_tokens_total counter\n"
      "tfmc_generation_tokens_total {}\n"
      "# HELP tfmc_queue_depth Requests waiting to join the batch.\n"
      "# TYPE tfmc_queue_depth gauge\ntfmc_queue_depth {}\n"
      "# HELP tfmc_running_sequences Sequences in the running batch.\n"
      "# TYPE tfmc_running_sequences gauge\ntfmc_running_sequences {}\n"
      "# HELP tfmc_max_batch Rows the batch can hold.\n"
      "# TYPE tfmc_max_batch gauge\ntfmc_max_batch {}\n"
      "# HELP tfmc_prompt_chunks_total Chunks of newcomers' prompts run "
      "while a running batch waited.\n"
      "# TYPE tfmc_prompt_chunks_total counter\ntfmc_prompt_chunks_total {}\n",
      promptTokens, generatedTokens, state.queued, state.running,
      state.maxBatch, state.promptChunks);
  const PrefixCacheStats &prefix = state.prefix;
  out += fmt::format(
      "# HELP tfmc_prefix_cache_lookup_tokens_total Prompt tokens looked up "
      "in the prefix cache.\n"
      "# TYPE tfmc_prefix_cache_lookup_tokens_total counter\n"
      "tfmc_prefix_cache_lookup_tokens_total {}\n"
      "# HELP tfmc_prefix_cache_hit_tokens_total Prompt tokens restored "
      "from the prefix cache instead of run (hit rate: this over lookup "
      "tokens).\n"
      "# TYPE tfmc_prefix_cache_hit_tokens_total counter\n"
      "tfmc_prefix_cache_hit_tokens_total {}\n"
      "# HELP tfmc_prefix_cache_blocks Blocks the prefix cache holds.\n"
      "# TYPE tfmc_prefix_cache_blocks gauge\ntfmc_prefix_cache_blocks {}\n"
      "# HELP tfmc_prefix_cache_bytes Bytes they take.\n"
      "# TYPE tfmc_prefix_cache_bytes gauge\ntfmc_prefix_cache_bytes {}\n"
      "# HELP tfmc_prefix_cache_budget_bytes What it may take "
      "(--prefix-cache).\n"
      "# TYPE tfmc_prefix_cache_budget_bytes gauge\n"
      "tfmc_prefix_cache_budget_bytes {}\n"
      "# HELP tfmc_prefix_cache_evicted_blocks_total Blocks evicted to stay "
      "within the budget.\n"
      "# TYPE tfmc_prefix_cache_evicted_blocks_total counter\n"
      "tfmc_prefix_cache_evicted_blocks_total {}\n",
      prefix.promptTokens, prefix.reusedTokens, prefix.blocks, prefix.bytes,
      state.prefixBudget, prefix.evictedBlocks);
  if (state.kvBlocks.blockTokens > 0)
    out += fmt::format(
        "# HELP tfmc_kv_cache_blocks_used Blocks of the paged KV cache that "
        "sequences hold.\n"
        "# TYPE tfmc_kv_cache_blocks_used gauge\n"
        "tfmc_kv_cache_blocks_used {}\n"
        "# HELP tfmc_kv_cache_blocks_free Blocks free for new positions.\n"
        "# TYPE tfmc_kv_cache_blocks_free gauge\n"
        "tfmc_kv_cache_blocks_free {}\n"
        "# HELP tfmc_kv_cache_block_tokens Positions a block holds.\n"
        "# TYPE tfmc_kv_cache_block_tokens gauge\n"
        "tfmc_kv_cache_block_tokens {}\n",
        state.kvBlocks.used, state.kvBlocks.blocks - state.kvBlocks.used,
        state.kvBlocks.blockTokens);
  out += "# HELP tfmc_time_to_first_token_seconds From the request's arrival "
         "to its first token.\n# TYPE tfmc_time_to_first_token_seconds "
         "histogram\n";
  timeToFirstToken.write(out, "tfmc_time_to_first_token_seconds");
  out += "# HELP tfmc_time_per_output_token_seconds Between a request's "
         "consecutive tokens.\n# TYPE tfmc_time_per_output_token_seconds "
         "histogram\n";
  timePerToken.write(out, "tfmc_time_per_output_token_seconds");
  return out;
}

} // namespace tfmc::runtime::serve
