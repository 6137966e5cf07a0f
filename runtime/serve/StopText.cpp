//===- StopText.cpp - A sequence's text with OpenAI's stop strings --------===//

#include "runtime/serve/StopText.h"

#include <algorithm>

namespace tfmc::runtime::serve {

StopText::StopText(const Tokenizer *tokenizer,
                   const std::vector<int64_t> &prompt,
                   std::vector<std::string> stops)
    : stops(stops) {
  if (tokenizer)
    stream.emplace(*tokenizer, prompt, std::move(stops));
}

std::string StopText::push(int64_t token, bool &stopped) {
  stopped = false;
  if (!stream || ended)
    return "";
  text += stream->push(token, stopped);
  if (stopped) {
    // No stop string was whole before this token: the first one now is
    // the one it completed.
    std::size_t end = text.size();
    for (const std::string &stop : stops)
      end = std::min(end, text.find(stop));
    text.resize(end);
    ended = true;
    return release(end);
  }
  // Hold back a suffix that a stop string begins with.
  std::size_t end = text.size();
  for (const std::string &stop : stops)
    for (std::size_t k = std::min(stop.size() - 1, text.size()); k > 0; --k)
      if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
        end = std::min(end, text.size() - k);
        break;
      }
  return release(end);
}

std::string StopText::finish() {
  if (!stream || ended)
    return "";
  text += stream->finish();
  return release(text.size());
}

std::string StopText::release(std::size_t end) {
  end = std::max(end, sent);
  std::string out = text.substr(sent, end - sent);
  sent = end;
  return out;
}

} // namespace tfmc::runtime::serve
