//===- TextStream.cpp - Text of a sequence as its tokens come -------------===//

#include "runtime/tokenizers/TextStream.h"

#include <algorithm>

namespace tfmc::runtime {
namespace {

/// Tokens of context before the new ones that a window starts with.
constexpr std::size_t kContext = 5;

} // namespace

std::size_t completeUtf8Prefix(const std::string &bytes) {
  const std::size_t n = bytes.size();
  // A character is at most 4 bytes: look at the last 3 for a lead byte
  // whose character is not finished yet.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    auto byte = static_cast<unsigned char>(bytes[n - back]);
    if ((byte & 0xC0) == 0x80)
      continue; // a continuation byte: look further back
    std::size_t need = byte >= 0xF0 && byte <= 0xF4   ? 4
                       : byte >= 0xE0 && byte <= 0xEF ? 3
                       : byte >= 0xC2 && byte <= 0xDF ? 2
                                                      : 1;
    return need > back ? n - back : n;
  }
  return n;
}

TextStream::TextStream(const Tokenizer &tokenizer, std::vector<int64_t> prompt,
                       std::vector<std::string> stops)
    : tokenizer(tokenizer), tokens(std::move(prompt)), stops(std::move(stops)) {
  prefixOffset = tokens.size() - std::min(tokens.size(), kContext);
  printed = tokenizer
                .decode(std::vector<int64_t>(tokens.begin() + prefixOffset,
                                             tokens.end()))
                .size();
}

std::string TextStream::pending(bool final) {
  // The window's text past what is out; whole characters of it go out.
  std::string text = tokenizer.decode(
      std::vector<int64_t>(tokens.begin() + prefixOffset, tokens.end()));
  std::string fresh = text.substr(std::min(printed, text.size()));
  std::size_t cut = final ? fresh.size() : completeUtf8Prefix(fresh);
  printed += cut;
  if (cut == fresh.size() && tokens.size() - prefixOffset > 2 * kContext) {
    // Nothing held: the window restarts a few tokens back.
    prefixOffset = tokens.size() - kContext;
    printed = tokenizer
                  .decode(std::vector<int64_t>(tokens.begin() + prefixOffset,
                                               tokens.end()))
                  .size();
  }
  return Tokenizer::toValidUtf8(fresh.substr(0, cut));
}

std::string TextStream::push(int64_t token, bool &stopped) {
  tokens.push_back(token);
  const std::size_t before = generated.size();
  std::string text = pending(/*final=*/false);
  generated += text;
  stopped = false;
  for (const std::string &stop : stops) {
    if (stop.empty() || generated.size() < stop.size())
      continue;
    // An occurrence that ends in this token's text.
    std::size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
    std::size_t at = generated.find(stop, from);
    if (at != std::string::npos && at + stop.size() > before) {
      stopped = true;
      break;
    }
  }
  return text;
}

std::string TextStream::finish() {
  std::string text = pending(/*final=*/true);
  generated += text;
  return text;
}

} // namespace tfmc::runtime
