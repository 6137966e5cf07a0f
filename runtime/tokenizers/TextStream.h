//===- TextStream.h - Text of a sequence as its tokens come -----*- C++ -*-===//
//
// Turns one sequence's new tokens into text as each is generated, as
// Hugging Face's text-generation-inference does: the tokens are decoded
// over a short window that starts a few tokens back, and what the window's
// text has past the bytes already printed is the new text. Decoding in context keeps
// SentencePiece's leading spaces and byte-level BPE's merges right, and
// costs O(window) per token. Bytes of an unfinished UTF-8 character are
// held back until it is whole; bytes that can never be one are replaced
// (U+FFFD) when they are printed.
//
// Stop strings (--stop): the sequence stops when a stop string ends within
// the text of its newest token (it may begin in earlier ones); that
// token's whole text is printed (as Hugging Face's stop_strings keeps the
// token that completes the string), and nothing after it is generated.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_TEXTSTREAM_H
#define TFMC_RUNTIME_TOKENIZERS_TEXTSTREAM_H

#include "runtime/tokenizers/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfmc::runtime {

class TextStream {
public:
  /// `prompt`: the tokens before the new ones (context for decoding; not
  /// printed). `stops`: the stop strings.
  TextStream(const Tokenizer &tokenizer, std::vector<int64_t> prompt,
             std::vector<std::string> stops);

  /// Adds a new token; returns the text that can be printed now (whole
  /// characters). `stopped` is true when a stop string ends in it.
  std::string push(int64_t token, bool &stopped);
  /// The text held back (an unfinished character at the end, replaced).
  std::string finish();

private:
  std::string pending(bool final);

  const Tokenizer &tokenizer;
  std::vector<int64_t> tokens;  // prompt, then the new tokens
  std::size_t prefixOffset = 0; // the window's first token
  std::size_t printed = 0;      // bytes of the window's text that are out
  std::vector<std::string> stops;
  std::string generated;         // the text printed so far (for stops)
};

/// The length of the longest prefix of `bytes` that does not end inside a
/// UTF-8 character that later bytes could still complete.
std::size_t completeUtf8Prefix(const std::string &bytes);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_TEXTSTREAM_H
