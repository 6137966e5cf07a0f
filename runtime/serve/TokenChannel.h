//===- TokenChannel.h - Tokens from the batcher to a request -----*- C++ -*-===//
//
// The ContinuousBatcher's thread produces a request's tokens (and their
// text); the worker thread that answers the request consumes them. A
// Channel is the queue between the two: pieces of text with their token
// ids, then one finish (the reason, and the error message of a failure).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TOKENCHANNEL_H
#define TFMC_RUNTIME_SERVE_TOKENCHANNEL_H

#include "runtime/generate/ContinuousBatcher.h"
#include "runtime/serve/OpenAiApi.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace tfmc::runtime::serve {

class Channel {
public:
  struct Piece {
    std::string text;
    std::vector<int64_t> tokens;
    /// With logprobs asked for: one entry per token.
    std::vector<TokenLogprobEntry> logprobs;
  };
  /// What a consumer takes at once: the pieces pushed since its last take,
  /// and whether the sequence has finished (then `reason` and `error`).
  struct Taken {
    std::deque<Piece> pieces;
    bool done = false;
    FinishReason reason = FinishReason::Stop;
    std::string error;
  };

  /// Producer: a piece. A piece without text (a token whose text is held
  /// back) joins the previous piece when that one has text and has not
  /// been taken, so that a stream sends no empty events.
  void push(Piece piece);
  /// Producer: the end of the sequence. Nothing is pushed after it.
  void finish(FinishReason reason, const std::string &error);

  /// Consumer: waits up to `timeout` for a piece or the finish, then takes
  /// what there is (possibly nothing).
  Taken take(std::chrono::milliseconds timeout);

  /// Consumer of a whole answer: waits for the finish and returns every
  /// piece, asking `abandoned` every `poll`; when it says true, returns at
  /// once with `done` false (the caller cancels the request).
  Taken takeAll(const std::function<bool()> &abandoned,
                std::chrono::milliseconds poll);

private:
  std::mutex mutex;
  std::condition_variable ready;
  Taken state;
};

/// OpenAI's finish_reason for `reason` ("stop", "length", ...).
std::string finishName(FinishReason reason);

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_TOKENCHANNEL_H
