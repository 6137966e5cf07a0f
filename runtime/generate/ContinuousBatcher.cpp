//===- ContinuousBatcher.cpp - Continuous batching ---------------------------===//

#include "runtime/generate/ContinuousBatcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

namespace tfmc::runtime {

/// A sequence of the running batch, in the cache row of its index.
struct ContinuousBatcher::Row {
  std::shared_ptr<Job> job;
  Sampler sampler;
  std::vector<int64_t> history; // prompt, then the new tokens
  int64_t generated = 0;
  int64_t newest = 0; // the token the next step feeds
  /// Padding columns before the row's first position in the shared cache.
  int64_t pad = 0;
  bool done = false;

  Row(std::shared_ptr<Job> job)
      : job(std::move(job)),
        sampler(this->job->sampling, 0, this->job->prompt.size()),
        history(this->job->prompt) {}
  int64_t remaining() const { return job->maxTokens - generated; }
};

struct ContinuousBatcher::Joining {
  Row row;
  int64_t done = 0; // prompt tokens the second Model has run
  bool ready = false;
};

namespace {

bool canJoin(const Model &model) {
  return !entryTakes(model, "prefill", "decoder_input_ids") &&
         entryTakes(model, "decode_step", "attention_mask") &&
         entryTakes(model, "decode_step", "position_ids");
}

} // namespace

std::unique_ptr<ContinuousBatcher> ContinuousBatcher::create(Model &model, int64_t maxQueue,
                                             std::string &error) {
  if (!model.hasEntry("prefill") || !model.hasEntry("decode_step")) {
    error = fmt::format("model '{}' cannot generate: it has no decoder",
                        model.plan().model);
    return nullptr;
  }
  std::unique_ptr<Model> donor;
  if (canJoin(model)) {
    donor = model.share(error, /*kvBlocks=*/true);
    if (!donor)
      return nullptr;
  }
  std::unique_ptr<ContinuousBatcher> scheduler(
      new ContinuousBatcher(model, std::move(donor), maxQueue));
  scheduler->thread = std::thread([s = scheduler.get()] { s->loop(); });
  return scheduler;
}

ContinuousBatcher::ContinuousBatcher(Model &model, std::unique_ptr<Model> donor,
                     int64_t maxQueue)
    : model(model), donor(std::move(donor)), maxQueue(maxQueue),
      encoderDecoder(entryTakes(model, "prefill", "decoder_input_ids")),
      joins(this->donor != nullptr), canExtend(model.hasEntry("extend")),
      rowLimit(joins ? model.plan().maxBatch : 1) {}

ContinuousBatcher::~ContinuousBatcher() { shutdown(0); }

bool ContinuousBatcher::checkJob(const Job &job, const std::string &budgetName,
                                 std::string &error, std::string &field) const {
  if (job.constraint && !joins) {
    error = fmt::format("constrained sampling needs a model whose requests "
                        "join a batch; model '{}' runs them one at a time",
                        model.plan().model);
    field = "response_format";
    return false;
  }
  GenerateRequest request;
  request.prompts = {job.prompt};
  request.encoderDecoder = encoderDecoder;
  request.bos = job.bos;
  request.eos = job.eos;
  request.maxNewTokens = job.maxTokens;
  request.sampling = job.sampling;
  request.cApiNames = true;
  request.promptName = "prompt";
  request.maxNewTokensName = budgetName;
  request.eosName = "eos";
  if (checkGenerateRequest(model, request, error))
    return true;
  // The field the message names first (the budget before "a prompt of N
  // tokens plus ...").
  field.clear();
  for (const std::string &name :
       {budgetName, std::string("prompt"), std::string("temperature"),
        std::string("top_p"), std::string("top_k"),
        std::string("repetition_penalty"), std::string("eos")})
    if (error.find(name) != std::string::npos) {
      field = name;
      break;
    }
  return false;
}

ContinuousBatcher::Admission ContinuousBatcher::submit(std::shared_ptr<Job> job) {
  std::lock_guard<std::mutex> lock(mutex);
  if (closing)
    return Admission::Closed;
  if (static_cast<int64_t>(queue.size()) >= maxQueue)
    return Admission::QueueFull;
  queue.push_back(std::move(job));
  wake.notify_all();
  return Admission::Accepted;
}

BatcherState ContinuousBatcher::state() const {
  std::lock_guard<std::mutex> lock(mutex);
  BatcherState state;
  state.queued = static_cast<int64_t>(queue.size());
  state.running = running;
  state.maxBatch = rowLimit;
  state.stepSeconds = lastStepSeconds;
  state.promptChunks = promptChunks;
  state.prefix = prefixStats;
  state.prefixBudget = prefixBudget;
  state.kvBlocks = model.kvBlocks();
  return state;
}

bool ContinuousBatcher::setPrefixCache(int64_t budgetBytes) {
  if (budgetBytes > 0 &&
      (!joins || !canExtend || donor->cachePositionBytes() == 0))
    return false;
  prefixBudget = std::max<int64_t>(budgetBytes, 0);
  return true;
}

void ContinuousBatcher::publishPrefixStats() {
  std::lock_guard<std::mutex> lock(mutex);
  prefixStats = prefix ? prefix->stats() : PrefixCacheStats{};
}

void ContinuousBatcher::restorePrefix(Joining &joining) {
  // A new budget starts a new cache (none for 0).
  const int64_t budget = prefixBudget;
  if (budget != prefixMadeFor) {
    prefix.reset();
    if (budget > 0) {
      // Over a paged cache the prefixes are blocks of the pool, which
      // grows by the budget's blocks (beyond what the batch's rows and the
      // newcomer may hold); where it cannot, the prefixes keep copies.
      std::shared_ptr<KvBlockPool> pool = donor->kvBlockPool();
      const int64_t positionBytes = donor->cachePositionBytes();
      std::string error;
      if (pool && !pool->reserveExtra(
                      PrefixCache::budgetBlocks(positionBytes, budget), error))
        pool = nullptr;
      prefix = std::make_unique<PrefixCache>(positionBytes, budget, pool);
    }
    prefixMadeFor = budget;
  }
  if (!prefix)
    return;
  std::string error;
  const int64_t reused = prefix->restore(joining.row.job->prompt, *donor, error);
  // A refusal leaves the donor's cache unknown: the prompt runs whole
  // (its prefill empties the cache first).
  joining.done = std::max<int64_t>(reused, 0);
  publishPrefixStats();
}

void ContinuousBatcher::savePrefix(const Joining &joining) {
  if (!prefix)
    return;
  std::string error;
  // A block that cannot be saved is only not cached.
  (void)prefix->save(joining.row.job->prompt, *donor, error);
  publishPrefixStats();
}

void ContinuousBatcher::shutdown(double graceSeconds) {
  std::unique_lock<std::mutex> lock(mutex);
  closing = true;
  wake.notify_all();
  wake.wait_for(lock,
                std::chrono::duration<double>(std::max(0.0, graceSeconds)),
                [&] { return queue.empty() && running == 0; });
  cancelAll = true;
  wake.notify_all();
  lock.unlock();
  if (thread.joinable())
    thread.join();
}

void ContinuousBatcher::finishRow(Row &row, FinishReason reason,
                          const std::string &error) {
  row.done = true;
  if (row.job->onDone)
    row.job->onDone(reason, error);
}

namespace {

/// Whether a sequence that just got `token` (its `generated`th) ends, and
/// why: the callback's answer, an eos, or the budget.
std::optional<FinishReason> endOf(const Job &job, TokenAction action,
                                  int64_t token, int64_t generated) {
  if (action == TokenAction::Cancel)
    return FinishReason::Cancelled;
  if (action == TokenAction::StopSequence ||
      std::find(job.eos.begin(), job.eos.end(), token) != job.eos.end())
    return FinishReason::Stop;
  if (generated >= job.maxTokens)
    return FinishReason::Length;
  return std::nullopt;
}

} // namespace

int64_t ContinuousBatcher::choose(Row &row, float *logits, int64_t vocab) {
  TokenConstraint *constraint = row.job->constraint.get();
  if (!constraint)
    return row.sampler.next(logits, vocab, row.history);
  allowedScratch.assign(static_cast<std::size_t>(vocab), 0);
  constraint->allowed(allowedScratch);
  if (constraint->complete() &&
      std::find(allowedScratch.begin(), allowedScratch.end(), 1) ==
          allowedScratch.end())
    return kConstraintComplete;
  const int64_t token =
      row.sampler.next(logits, vocab, row.history, -1, allowedScratch.data());
  if (token >= 0)
    constraint->accept(token);
  return token;
}

bool ContinuousBatcher::deliver(Row &row, int64_t token) {
  ++row.generated;
  row.newest = token;
  row.history.push_back(token);
  TokenAction action =
      row.job->onToken ? row.job->onToken(token, row.sampler.lastLogprobs())
                       : TokenAction::Continue;
  if (std::optional<FinishReason> end =
          endOf(*row.job, action, token, row.generated))
    finishRow(row, *end, "");
  return !row.done;
}

bool ContinuousBatcher::fits(const std::vector<Row> &rows, int64_t promptLength,
                     int64_t budget, int64_t &shift) const {
  const int64_t maxLen = model.plan().maxLen;
  if (rows.empty()) {
    shift = 0;
    return promptLength + budget - 1 <= maxLen;
  }
  const int64_t length = model.cachedTokens();
  int64_t remaining = budget - 1, minPad = length;
  for (const Row &row : rows) {
    remaining = std::max(remaining, row.remaining());
    minPad = std::min(minPad, row.pad);
  }
  // As it is, or with the columns that are padding in every row dropped.
  for (int64_t start : {length, length - minPad}) {
    const int64_t joined = std::max(start, promptLength);
    if (joined + remaining <= maxLen) {
      shift = joined - length;
      return true;
    }
  }
  return false;
}

ContinuousBatcher::JoinState
ContinuousBatcher::prefillNext(Joining &joining, int64_t chunk) {
  Row &row = joining.row;
  if (row.job->cancelled || cancelAll) {
    finishRow(row, FinishReason::Cancelled, "");
    return JoinState::Ended;
  }
  const std::vector<int64_t> &prompt = row.job->prompt;
  const int64_t length = static_cast<int64_t>(prompt.size());
  std::string error;
  std::optional<OutputView> logits =
      runPromptChunk(*donor, prompt, joining.done, chunk, error);
  if (!logits) {
    finishRow(row, FinishReason::Error, error);
    return JoinState::Ended;
  }
  joining.done = chunk > 0 ? std::min(length, joining.done + chunk) : length;
  if (joining.done < length)
    return JoinState::Prefilling;
  savePrefix(joining);
  const int64_t vocab = model.plan().vocab;
  std::vector<float> scratch(logits->data, logits->data + vocab);
  int64_t token = choose(row, scratch.data(), vocab);
  if (token == kConstraintComplete) {
    finishRow(row, FinishReason::Stop, "");
    return JoinState::Ended;
  }
  if (token < 0) {
    finishRow(row, FinishReason::Error,
              "no logit is finite: nothing to choose from");
    return JoinState::Ended;
  }
  if (!deliver(row, token))
    return JoinState::Ended;
  joining.ready = true;
  return JoinState::Ready;
}

bool ContinuousBatcher::insert(Joining &joining, std::vector<Row> &rows,
                               bool &joined) {
  Row &row = joining.row;
  const int64_t promptLength = static_cast<int64_t>(row.job->prompt.size());
  int64_t shift = 0;
  joined = false;
  // The rows' lengths moved on while the prompt ran: it may have to wait
  // for rows to leave.
  if (!fits(rows, promptLength, row.job->maxTokens, shift))
    return true;
  std::string error;
  joined = true;
  if (!rows.empty() && shift != 0) {
    if (!model.shiftCache(shift, error)) {
      finishRow(row, FinishReason::Error, error);
      return false;
    }
    for (Row &other : rows)
      other.pad += shift;
  }
  if (rows.empty())
    model.clearCache();
  if (!model.insertSequence(*donor, 0, static_cast<int64_t>(rows.size()),
                            error)) {
    finishRow(row, FinishReason::Error, error);
    return false;
  }
  row.pad = model.cachedTokens() - promptLength;
  rows.push_back(std::move(row));
  return true;
}

void ContinuousBatcher::admit(std::vector<Row> &rows) {
  // The batch's cache is in no known state: every row ends.
  auto broken = [&] {
    for (Row &row : rows)
      if (!row.done)
        finishRow(row, FinishReason::Error,
                  "the batch's KV cache could not take a new sequence");
  };
  // Prompt tokens that may run while rows wait for their next step: one
  // chunk's worth, over as many newcomers as it covers. A prompt runs
  // whole into an empty batch (no one waits for it). With no chunk, every
  // prompt runs whole: all that fit into an empty batch, one into a
  // running batch.
  const int64_t chunk = canExtend ? prefillChunk.load() : 0;
  const bool startedEmpty = rows.empty();
  // The second Model's blocks of a paged cache go back to the pool (or
  // stay the row's, when it joined) as soon as a newcomer is done with.
  auto endJoining = [&] {
    joining.reset();
    donor->clearCache();
  };
  int64_t budget = chunk;
  for (;;) {
    const bool waiting = chunk > 0 && !rows.empty();
    if (waiting && budget == 0)
      return;
    if (!joining) {
      std::shared_ptr<Job> job = nextJob(rows);
      if (!job)
        return;
      if (job->cancelled || cancelAll) {
        if (job->onDone)
          job->onDone(FinishReason::Cancelled, "");
        continue;
      }
      joining.reset(new Joining{Row(std::move(job))});
      restorePrefix(*joining);
    }
    if (!joining->ready) {
      const int64_t before = joining->done;
      JoinState state = prefillNext(*joining, waiting ? budget : 0);
      if (waiting) {
        budget -= joining->done - before;
        std::lock_guard<std::mutex> lock(mutex);
        ++promptChunks;
      }
      if (state == JoinState::Ended) {
        endJoining();
        continue;
      }
      if (state == JoinState::Prefilling)
        return; // the next chunk after the next step
    } else if (joining->row.job->cancelled || cancelAll) {
      finishRow(joining->row, FinishReason::Cancelled, "");
      endJoining();
      continue;
    }
    bool joined = false;
    if (!insert(*joining, rows, joined)) {
      endJoining();
      broken();
      return;
    }
    if (!joined)
      return; // it waits for room
    endJoining();
    if (chunk == 0 && !startedEmpty)
      return; // whole prompts: one per step into a running batch
  }
}

bool ContinuousBatcher::step(std::vector<Row> &rows) {
  const int64_t count = static_cast<int64_t>(rows.size());
  const int64_t length = model.cachedTokens() + 1;
  std::vector<int64_t> ids(rows.size()), positions(rows.size());
  std::vector<int64_t> mask(static_cast<std::size_t>(count * length), 1);
  for (int64_t r = 0; r < count; ++r) {
    ids[r] = rows[r].newest;
    positions[r] = length - 1 - rows[r].pad;
    std::fill_n(mask.begin() + r * length, rows[r].pad, 0);
  }
  std::vector<InputView> inputs = {
      {"input_ids", {count, 1}, ids.data()},
      {"position_ids", {count, 1}, positions.data()},
      {"attention_mask", {count, length}, mask.data()}};
  std::string error;
  auto begin = std::chrono::steady_clock::now();
  std::optional<OutputView> logits = model.run("decode_step", inputs, error);
  {
    std::lock_guard<std::mutex> lock(mutex);
    lastStepSeconds = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - begin)
                          .count();
  }
  if (!logits) {
    for (Row &row : rows)
      finishRow(row, FinishReason::Error, error);
    return false;
  }
  const int64_t vocab = model.plan().vocab;
  std::vector<float> scratch(static_cast<std::size_t>(vocab));
  for (int64_t r = 0; r < count; ++r) {
    Row &row = rows[r];
    std::copy(logits->data + r * vocab, logits->data + (r + 1) * vocab,
              scratch.begin());
    int64_t token = choose(row, scratch.data(), vocab);
    if (token == kConstraintComplete)
      finishRow(row, FinishReason::Stop, "");
    else if (token < 0)
      finishRow(row, FinishReason::Error,
                "no logit is finite: nothing to choose from");
    else
      deliver(row, token);
  }
  return true;
}

void ContinuousBatcher::runAlone(const std::shared_ptr<Job> &job) {
  GenerateRequest request;
  request.prompts = {job->prompt};
  request.encoderDecoder = encoderDecoder;
  request.bos = job->bos;
  request.eos = job->eos;
  request.maxNewTokens = job->maxTokens;
  request.sampling = job->sampling;
  request.cApiNames = true;
  FinishReason reason = FinishReason::Length;
  int64_t generated = 0;
  auto onToken = [&](int64_t, int64_t token, const TokenLogprobs *logprobs) {
    TokenAction action =
        job->cancelled || cancelAll ? TokenAction::Cancel
        : job->onToken              ? job->onToken(token, logprobs)
                                    : TokenAction::Continue;
    if (std::optional<FinishReason> end =
            endOf(*job, action, token, ++generated))
      reason = *end;
    return action;
  };
  std::string error;
  if (!generate(model, request, error, onToken)) {
    if (job->onDone)
      job->onDone(FinishReason::Error, error);
    return;
  }
  if (job->onDone)
    job->onDone(reason, "");
}

std::shared_ptr<Job> ContinuousBatcher::nextJob(const std::vector<Row> &rows) {
  std::lock_guard<std::mutex> lock(mutex);
  if (queue.empty() || static_cast<int64_t>(rows.size()) >= rowLimit ||
      joining)
    return nullptr;
  int64_t shift = 0;
  const Job &front = *queue.front();
  if (joins && !fits(rows, static_cast<int64_t>(front.prompt.size()),
                     front.maxTokens, shift))
    return nullptr;
  std::shared_ptr<Job> job = std::move(queue.front());
  queue.pop_front();
  running = static_cast<int64_t>(rows.size()) + 1;
  return job;
}

void ContinuousBatcher::compact(std::vector<Row> &rows) {
  for (Row &row : rows)
    if (!row.done && (row.job->cancelled || cancelAll))
      finishRow(row, FinishReason::Cancelled, "");
  // Finished rows leave; the live ones move up into their cache rows.
  std::vector<int64_t> sources;
  std::vector<Row> kept;
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (!rows[r].done) {
      sources.push_back(static_cast<int64_t>(r));
      kept.push_back(std::move(rows[r]));
    }
  std::string error;
  if (!kept.empty() && kept.size() != rows.size() &&
      !model.reorderCache(sources, 0, /*crossToo=*/false, error)) {
    for (Row &row : kept)
      finishRow(row, FinishReason::Error, error);
    kept.clear();
  }
  rows = std::move(kept);
  if (rows.empty())
    model.clearCache();
  {
    std::lock_guard<std::mutex> lock(mutex);
    running = static_cast<int64_t>(rows.size()) + (joining ? 1 : 0);
    wake.notify_all();
  }
}

void ContinuousBatcher::dropPadding(std::vector<Row> &rows) {
  if (rows.empty())
    return;
  // Columns that are padding in every row still cost every step's
  // attention. A paged cache drops them for free (its rows are
  // right-aligned in a frame that just shrinks); a dense one copies the
  // rest of the cache once, worth it when the steps left save more than
  // the copy: as memory traffic, a step reads each dropped column once,
  // the copy reads and writes each kept one.
  const int64_t length = model.cachedTokens();
  int64_t minPad = length, remaining = 0;
  for (const Row &row : rows) {
    minPad = std::min(minPad, row.pad);
    remaining = std::max(remaining, row.remaining());
  }
  const bool paged = model.kvBlocks().blockTokens > 0;
  if (minPad == 0 || (!paged && minPad * remaining < 2 * (length - minPad)))
    return;
  std::string error;
  if (!model.shiftCache(-minPad, error)) {
    for (Row &row : rows)
      finishRow(row, FinishReason::Error, error);
    return;
  }
  for (Row &row : rows)
    row.pad -= minPad;
}

void ContinuousBatcher::loop() {
  std::vector<Row> rows;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] {
        return !rows.empty() || joining || !queue.empty() || cancelAll ||
               closing;
      });
      if (cancelAll) {
        for (const std::shared_ptr<Job> &job : queue)
          if (job->onDone)
            job->onDone(FinishReason::Cancelled, "");
        queue.clear();
      }
      if (rows.empty() && !joining && queue.empty() &&
          (closing || cancelAll)) {
        running = 0;
        wake.notify_all();
        return;
      }
    }
    if (!joins) {
      if (std::shared_ptr<Job> job = nextJob(rows)) {
        if (job->cancelled || cancelAll) {
          if (job->onDone)
            job->onDone(FinishReason::Cancelled, "");
        } else {
          runAlone(job);
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      running = 0;
      wake.notify_all();
      continue;
    }
    compact(rows);
    // Waiting jobs join between steps: all that fit into an empty batch,
    // one per step into a running one, a chunk of its prompt a step (its
    // prefill is the others' stall).
    admit(rows);
    compact(rows);
    dropPadding(rows);
    if (!rows.empty() && !step(rows)) {
      rows.clear();
      model.clearCache();
    }
  }
}

} // namespace tfmc::runtime
