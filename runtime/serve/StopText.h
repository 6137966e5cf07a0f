//===- StopText.h - A sequence's text with OpenAI's stop strings -*- C++ -*-===//
//
// The text of one generated sequence as its tokens come, with OpenAI's
// stop strings: the sequence stops where `generate --stop` stops it
// (TextStream: a stop string ends within the newest token's text), but
// the text sent ends before the stop string, and text that may be the
// start of one is held back until it is known not to be. A stop string
// may span any number of tokens.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_STOPTEXT_H
#define TFMC_RUNTIME_SERVE_STOPTEXT_H

#include "runtime/tokenizers/TextStream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::runtime::serve {

class StopText {
public:
  /// `tokenizer` may be null (a server without one sends ids, no text);
  /// `prompt` is the context the new tokens decode in.
  StopText(const Tokenizer *tokenizer, const std::vector<int64_t> &prompt,
           std::vector<std::string> stops);

  /// The text that can go out now; `stopped` when a stop string appeared
  /// (nothing after it is ever sent).
  std::string push(int64_t token, bool &stopped);
  /// At the end of a sequence that no stop string ended: the text held
  /// back.
  std::string finish();

private:
  std::string release(std::size_t end);

  std::optional<TextStream> stream;
  std::vector<std::string> stops;
  std::string text;
  std::size_t sent = 0;
  bool ended = false;
};

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_STOPTEXT_H
