//===- ContinuousBatcher.h - Continuous batching ----------------*- C++ -*-===//
//
// A ContinuousBatcher runs many independent requests on one Model, on its
// own thread, one step at a time (what `NAME serve` and the C API's
// tfmc_batcher run):
//   - between decode steps, waiting requests join the running batch, up to
//     the plan's max_batch rows: each runs its prompt alone as a one-row
//     prefill on a second Model of the same load (Model::share), chooses its
//     first token, and its KV-cache row is copied into the batch's cache
//     (Model::insertSequence), right-aligned to the batch's length; the
//     positions before it are masked out in its row's attention_mask and
//     its position_ids count from 0, as a left-padded batch of generate().
//     Between two steps of a running batch newcomers' prompts run at most
//     setPrefillChunk tokens in all (the prefill, then the extend entry
//     point, one newcomer after another), so that the running rows wait
//     one chunk's time per step, never a whole long prompt's; into an
//     empty batch the first prompt runs whole.
//     With a prefix cache (setPrefixCache) a newcomer first restores the
//     cached positions of its prompt's longest known prefix of whole
//     blocks, and runs only the rest (PrefixCache.h).
//   - each decode step runs every row's newest token; each row chooses its
//     next token with its own sampling settings and seed (a Sampler of
//     stream 0: what `NAME generate --seed S` uses for one prompt), stops
//     at its own eos, budget or stop string, and a finished or cancelled
//     row leaves the batch before the next step (Model::reorderCache).
//   - the batch's cache has one length L for every row (the shared-length
//     layout of generate's batches). A newcomer longer than L shifts the
//     cache right; columns that are padding in every row are dropped
//     (Model::shiftCache) when room is needed, and when the steps left
//     save more attention reads than the copy costs. A newcomer joins only when
//     L + every row's remaining budget fits max_len, so that no row is
//     ever cut short by another; otherwise it waits for rows to leave.
// Models that cannot pad (no attention_mask or position_ids in their
// decode step) and encoder-decoders run one request at a time through
// generate().
//
// Callbacks run on the batcher's thread and must be quick (a server hands
// the tokens to the connection's thread).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GENERATE_CONTINUOUSBATCHER_H
#define TFMC_RUNTIME_GENERATE_CONTINUOUSBATCHER_H

#include "runtime/core/Model.h"
#include "runtime/generate/Generate.h"
#include "runtime/generate/PrefixCache.h"
#include "runtime/generate/TokenConstraint.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tfmc::runtime {

enum class FinishReason {
  Stop,      ///< eos, or a stop string (the callback said StopSequence)
  Length,    ///< max_tokens reached
  Cancelled, ///< the client went away, or the server shut down
  Error,     ///< the model failed (the message says why)
};

/// One sequence to generate.
struct Job {
  /// Decoder-only: the prompt. Encoder-decoder: the source, and `bos`.
  std::vector<int64_t> prompt;
  int64_t bos = -1;
  int64_t maxTokens = 16;
  std::vector<int64_t> eos;
  SamplingOptions sampling;
  /// Each new token as it is chosen; StopSequence ends the sequence (the
  /// token is kept), Cancel too (finish reason Cancelled).
  /// With sampling.logprobs >= 0, `logprobs` holds its log-probabilities
  /// (else null).
  std::function<TokenAction(int64_t token, const TokenLogprobs *logprobs)>
      onToken;
  /// Once, last.
  std::function<void(FinishReason reason, const std::string &error)> onDone;
  /// Optional: the tokens each choice may take (checkJob refuses it where
  /// requests run one at a time).
  std::shared_ptr<TokenConstraint> constraint;
  /// Set from any thread: the row leaves the batch before the next step.
  std::atomic<bool> cancelled{false};
};

/// What /metrics and 429's Retry-After read.
struct BatcherState {
  int64_t queued = 0;  // waiting to join
  int64_t running = 0; // rows of the batch
  int64_t maxBatch = 0;
  double stepSeconds = 0; // the last decode step's
  /// Chunks of newcomers' prompts run between two steps of a running
  /// batch (a prompt run whole into an empty batch is none).
  int64_t promptChunks = 0;
  /// The prefix cache's (all zero without one).
  PrefixCacheStats prefix;
  int64_t prefixBudget = 0;
  /// The paged KV cache's blocks (all zero without one): the batch's rows
  /// and the newcomer being prefilled hold what is used.
  KvBlockStats kvBlocks;
};

class ContinuousBatcher {
public:
  /// Over `model` (which it then owns the use of); `maxQueue` requests may
  /// wait. Null with `error` when the second Model cannot be made.
  static std::unique_ptr<ContinuousBatcher> create(Model &model, int64_t maxQueue,
                                           std::string &error);

  /// Newcomers' prompts run at most this many tokens between two steps of
  /// the running batch (over one or more newcomers; 0: whole prompts, one
  /// per step), so that a step waits at most one chunk's time; into an
  /// empty batch the first prompt runs whole. Any time.
  static constexpr int64_t kDefaultPrefillChunk = 64;
  void setPrefillChunk(int64_t tokens) { prefillChunk = tokens; }
  /// Keeps the KV-cache positions of prompts' whole blocks, up to
  /// `budgetBytes` (0: none), and restores a newcomer's longest cached
  /// prefix instead of running it (PrefixCache.h). Only where newcomers
  /// join a running batch and prompts can run in chunks; false otherwise.
  /// Any time: a new budget empties the cache.
  bool setPrefixCache(int64_t budgetBytes);
  ~ContinuousBatcher();

  enum class Admission { Accepted, QueueFull, Closed };
  /// Queues the job (validated by the caller: checkJob).
  Admission submit(std::shared_ptr<Job> job);

  /// Checks a job against the model (token ids, max_len, options) before
  /// it is queued: false with a one-line message naming the field as the
  /// C API names it (top_p, eos, ...; the budget as `budgetName`), also
  /// given in `field` (empty: none).
  bool checkJob(const Job &job, const std::string &budgetName,
                std::string &error, std::string &field) const;

  /// Stops taking jobs, lets the running and queued ones finish for up to
  /// `graceSeconds`, then cancels what is left and joins the thread.
  void shutdown(double graceSeconds);

  BatcherState state() const;
  /// Whether requests join a running batch (else: one at a time).
  bool batches() const { return joins; }
  const Plan &plan() const { return model.plan(); }

private:
  ContinuousBatcher(Model &model, std::unique_ptr<Model> donor, int64_t maxQueue);
  struct Row;
  /// A newcomer whose prompt the second Model is running.
  struct Joining;
  enum class JoinState { Prefilling, Ready, Ended };
  void loop();
  /// Ends cancelled rows, and moves the live ones up over finished ones.
  void compact(std::vector<Row> &rows);
  /// Drops the columns that are padding in every row when the steps left
  /// gain more than the copy costs.
  void dropPadding(std::vector<Row> &rows);
  /// The first waiting job, when it fits the batch now (under the lock).
  std::shared_ptr<Job> nextJob(const std::vector<Row> &rows);
  /// Runs the next `chunk` tokens of the newcomer's prompt (0: the rest);
  /// once the prompt is done it has its first token (Ready), unless that
  /// ended it.
  JoinState prefillNext(Joining &joining, int64_t chunk);
  /// Moves a Ready newcomer into the batch when it fits now (`joined`);
  /// false when the batch's cache is left in no known state.
  bool insert(Joining &joining, std::vector<Row> &rows, bool &joined);
  /// Runs newcomers' prompts, a chunk's worth (setPrefillChunk), and moves
  /// those done into the batch.
  void admit(std::vector<Row> &rows);
  bool step(std::vector<Row> &rows);
  void runAlone(const std::shared_ptr<Job> &job);
  /// The row's next token from `logits` (within its constraint's allowed
  /// tokens); -1 when nothing can be chosen, kConstraintComplete when the
  /// constraint's output is whole and allows nothing more (no eos).
  static constexpr int64_t kConstraintComplete = -2;
  int64_t choose(Row &row, float *logits, int64_t vocab);
  std::vector<uint8_t> allowedScratch;
  /// Delivers a token to its row; false when the row is finished.
  bool deliver(Row &row, int64_t token);
  bool fits(const std::vector<Row> &rows, int64_t promptLength,
            int64_t budget, int64_t &shift) const;
  void finishRow(Row &row, FinishReason reason, const std::string &error);

  Model &model;
  std::unique_ptr<Model> donor;
  const int64_t maxQueue;
  const bool encoderDecoder;
  const bool joins;
  /// The program has the extend entry point (prompts can run in chunks).
  const bool canExtend;
  /// Rows that may run at once: the plan's max_batch, or 1.
  const int64_t rowLimit;
  std::atomic<int64_t> prefillChunk{kDefaultPrefillChunk};
  /// The newcomer being prefilled (the loop's thread only).
  std::unique_ptr<Joining> joining;
  /// setPrefixCache's budget, and the cache made for it (the loop's
  /// thread only).
  std::atomic<int64_t> prefixBudget{0};
  int64_t prefixMadeFor = 0;
  std::unique_ptr<PrefixCache> prefix;
  /// Restores the newcomer's cached prefix (its `done` tokens then).
  void restorePrefix(Joining &joining);
  /// Saves the whole blocks of a newcomer whose prompt has run.
  void savePrefix(const Joining &joining);
  void publishPrefixStats();

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::shared_ptr<Job>> queue;
  bool closing = false;       // no new jobs
  bool cancelAll = false;     // the grace period is over
  int64_t running = 0;
  double lastStepSeconds = 0;
  int64_t promptChunks = 0;
  PrefixCacheStats prefixStats;
  std::thread thread;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GENERATE_CONTINUOUSBATCHER_H
