//===- TokenChannel.cpp - Tokens from the batcher to a request ------------===//

#include "runtime/serve/TokenChannel.h"

namespace tfmc::runtime::serve {

void Channel::push(Piece piece) {
  std::lock_guard<std::mutex> lock(mutex);
  std::deque<Piece> &pieces = state.pieces;
  if (!pieces.empty() && !pieces.back().text.empty() && piece.text.empty()) {
    pieces.back().tokens.insert(pieces.back().tokens.end(),
                                piece.tokens.begin(), piece.tokens.end());
    pieces.back().logprobs.insert(pieces.back().logprobs.end(),
                                  piece.logprobs.begin(), piece.logprobs.end());
  } else
    pieces.push_back(std::move(piece));
  ready.notify_all();
}

void Channel::finish(FinishReason reason, const std::string &error) {
  std::lock_guard<std::mutex> lock(mutex);
  state.done = true;
  state.reason = reason;
  state.error = error;
  ready.notify_all();
}

Channel::Taken Channel::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  ready.wait_for(lock, timeout,
                 [&] { return state.done || !state.pieces.empty(); });
  Taken taken;
  taken.pieces.swap(state.pieces);
  taken.done = state.done;
  taken.reason = state.reason;
  taken.error = state.error;
  return taken;
}

Channel::Taken Channel::takeAll(const std::function<bool()> &abandoned,
                                std::chrono::milliseconds poll) {
  std::unique_lock<std::mutex> lock(mutex);
  while (!ready.wait_for(lock, poll, [&] { return state.done; }))
    if (abandoned()) {
      Taken taken;
      taken.pieces.swap(state.pieces);
      return taken;
    }
  Taken taken = std::move(state);
  state = Taken();
  return taken;
}

std::string finishName(FinishReason reason) {
  switch (reason) {
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Cancelled:
    return "cancelled";
  case FinishReason::Error:
    return "error";
  }
  return "error";
}

} // namespace tfmc::runtime::serve
