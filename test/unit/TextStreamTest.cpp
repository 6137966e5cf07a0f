//===- TextStreamTest.cpp - Streamed text: whole characters, stop strings -===//

#include "runtime/cli/TextStream.h"

#include <gtest/gtest.h>

#include <map>

using namespace tfmc::runtime;

namespace {

/// A tokenizer whose tokens are fixed byte strings (byte-level BPE-like:
/// a character may be split over tokens).
class BytesTokenizer : public Tokenizer {
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

const BytesTokenizer &tokenizer() {
  // "é" is C3 A9, "😀" F0 9F 98 80.
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

bool wholeUtf8(const std::string &text) {
  std::string error;
  return Tokenizer::validateUtf8(text, error);
}

} // namespace

TEST(TextStream, CharactersSplitOverTokensAreHeldBack) {
  TextStream stream(tokenizer(), {0}, {});
  std::vector<std::string> outs;
  bool stopped = false;
  for (int64_t token : {1, 2, 3, 4, 5, 6, 7}) {
    outs.push_back(stream.push(token, stopped));
    EXPECT_TRUE(wholeUtf8(outs.back())) << token;
    EXPECT_FALSE(stopped);
  }
  outs.push_back(stream.finish());
  EXPECT_EQ(outs, (std::vector<std::string>{" caf", "", "\xC3\xA9", " ", "",
                                            "\xF0\x9F\x98\x80!", "\n\n", ""}));
}

TEST(TextStream, ConcatenationIsTheWholeDecode) {
  // Longer than the decoding window, with characters split at its edges.
  std::vector<int64_t> tokens;
  for (int i = 0; i < 9; ++i)
    for (int64_t t : {1, 2, 3, 4, 5, 6, 10})
      tokens.push_back(t);
  TextStream stream(tokenizer(), {0, 1}, {});
  std::string all;
  bool stopped = false;
  for (int64_t t : tokens) {
    std::string text = stream.push(t, stopped);
    EXPECT_TRUE(wholeUtf8(text));
    all += text;
  }
  all += stream.finish();
  EXPECT_EQ(all, tokenizer().decode(tokens));
}

TEST(TextStream, InvalidBytesAreReplaced) {
  TextStream stream(tokenizer(), {}, {});
  bool stopped = false;
  EXPECT_EQ(stream.push(8, stopped), "\xEF\xBF\xBD"); // U+FFFD
  EXPECT_EQ(stream.push(2, stopped), "");             // waits for more
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");         // never completed
}

TEST(TextStream, StopStringsMaySpanTokens) {
  // "END" in one token; "af\xC3\xA9" over three; "\n" inside "\n\n".
  auto stopsAt = [](std::vector<std::string> stops,
                    std::vector<int64_t> tokens) {
    TextStream stream(tokenizer(), {0}, std::move(stops));
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      bool stopped = false;
      stream.push(tokens[i], stopped);
      if (stopped)
        return int(i);
    }
    return -1;
  };
  EXPECT_EQ(stopsAt({"END"}, {1, 10, 9, 10}), 2);
  EXPECT_EQ(stopsAt({"af\xC3\xA9"}, {1, 2, 3, 10}), 2);
  EXPECT_EQ(stopsAt({"\n"}, {1, 7, 10}), 1);
  EXPECT_EQ(stopsAt({"zzz", "x"}, {1, 10}), 1);
  // The prompt's text does not count.
  EXPECT_EQ(stopsAt({"Hi"}, {1, 10}), -1);
  EXPECT_EQ(stopsAt({"Hi caf"}, {1, 10}), -1);
}
