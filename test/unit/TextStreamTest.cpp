//===- TextStreamTest.cpp - Streamed text: whole characters, stop strings -===//

#include "runtime/tokenizers/TextStream.h"

#include "BytesTokenizer.h"

#include <gtest/gtest.h>

using namespace tfmc::runtime;
using tfmc::test::BytesTokenizer;

namespace {

const BytesTokenizer &tokenizer() { return tfmc::test::splitCharacters(); }

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
