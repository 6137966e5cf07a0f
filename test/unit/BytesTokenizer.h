//===- BytesTokenizer.h - A tokenizer of fixed byte strings -----*- C++ -*-===//
//
// The unit tests' tokenizer for streamed text (TextStreamTest.cpp,
// ServeTest.cpp): each id decodes to a fixed byte string, so that a
// character may be split over tokens, as in byte-level BPE.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_UNIT_BYTESTOKENIZER_H
#define TFMC_TEST_UNIT_BYTESTOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

#include <map>
#include <string>

namespace tfmc::test {

/// A tokenizer whose tokens are fixed byte strings (byte-level BPE-like:
/// a character may be split over tokens).
class BytesTokenizer : public runtime::Tokenizer {
public:
  explicit BytesTokenizer(std::map<int64_t, std::string> pieces)
      : pieces(std::move(pieces)) {}
  bool encode(std::string_view, std::vector<int64_t> &,
              std::string &) override {
    return false;
  }
  std::string decode(const std::vector<int64_t> &ids) const override {
    std::string text;
    for (int64_t id : ids)
      text += pieces.at(id);
    return text;
  }
  bool hasId(int64_t id) const override { return pieces.count(id); }
  int64_t vocabSize() const override { return int64_t(pieces.size()); }
  std::optional<int64_t> tokenId(std::string_view) const override {
    return std::nullopt;
  }
  const std::string &directory() const override { return name; }

private:
  std::map<int64_t, std::string> pieces;
  std::string name = "bytes";
};

/// The tests' tokens: "é" (C3 A9) split over 2 and 3, "😀" (F0 9F 98 80)
/// over 4, 5 and 6, an invalid byte (8), and whole words.
inline const BytesTokenizer &splitCharacters() {
  static const BytesTokenizer t({{0, "Hi"},
                                 {1, " caf"},
                                 {2, "\xC3"},
                                 {3, "\xA9"},
                                 {4, " \xF0\x9F"},
                                 {5, "\x98"},
                                 {6, "\x80!"},
                                 {7, "\n\n"},
                                 {8, "\xFF"},
                                 {9, "END"},
                                 {10, "x"}});
  return t;
}

} // namespace tfmc::test

#endif // TFMC_TEST_UNIT_BYTESTOKENIZER_H
