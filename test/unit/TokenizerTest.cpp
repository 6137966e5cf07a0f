//===- TokenizerTest.cpp - Tests of the GPT-2 byte-level BPE tokenizer ----===//
//
// A tiny hand-made tokenizer (the 256 byte tokens in GPT-2's order, then a
// few merges) in a temp dir: BPE results derived by hand, the pre-tokeniser's
// splits one rule at a time, UTF-8 validation, decoding (round trips and
// ids that are no token), and one test per way the files can be bad, each
// checking the exact one-line message. test/Tokenizer/gpt3-encoder.test
// compares the real GPT-2 files with an independent implementation.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace tfmc::runtime;
using Json = nlohmann::json;

namespace {

/// GPT-2's bytes_to_unicode, written out independently of Tokenizer.cpp:
/// the code point that stands for byte `b`.
uint32_t byteCodePoint(int b) {
  auto printable = [](int c) {
    return (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) ||
           (c >= 0xae && c <= 0xff);
  };
  if (printable(b))
    return b;
  int n = 0;
  for (int c = 0; c < b; ++c)
    if (!printable(c))
      ++n;
  return 256 + n;
}

std::string utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

/// The id of byte `b`'s token in GPT-2's vocabulary (and in ours): the
/// printable bytes first, in byte order, then the others.
int64_t byteId(unsigned char b) {
  if (b >= 0x21 && b <= 0x7e)
    return b - 0x21;
  if (b >= 0xa1 && b <= 0xac)
    return 94 + (b - 0xa1);
  if (b >= 0xae)
    return 106 + (b - 0xae);
  return 188 + (byteCodePoint(b) - 256);
}

const std::string kUsageHint =
    " (a GPT-2 tokenizer needs vocab.json and merges.txt)";

class TokenizerTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfmc-tokenizer-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  void write(const std::string &name, const std::string &bytes) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << bytes;
  }

  /// The 256 byte tokens at GPT-2's ids, then the merged tokens below.
  static Json tinyVocab() {
    Json vocab = Json::object();
    for (int b = 0; b < 256; ++b)
      vocab[utf8(byteCodePoint(b))] = byteId(static_cast<unsigned char>(b));
    vocab["ll"] = 256;
    vocab["\xc4\xa0h"] = 257; // "Ġh"
    vocab["ell"] = 258;
    vocab["hell"] = 259;
    vocab["hello"] = 260;
    vocab["aa"] = 261;
    vocab["aaaa"] = 262;
    vocab["bb"] = 263;
    vocab["bbb"] = 264;
    vocab["<|endoftext|>"] = 265;
    // 266 is a gap.
    vocab["zz"] = 267;
    return vocab;
  }
  static std::string tinyMerges() {
    return "#version: 0.2\n"
           "l l\n"          // 0
           "\xc4\xa0 h\n"   // 1: Ġ h
           "e ll\n"         // 2
           "h ell\n"        // 3
           "hell o\n"       // 4
           "a a\n"          // 5
           "aa aa\n"        // 6
           "bb b\n"         // 7: before the merge that makes "bb"
           "b b\n"          // 8
           "z z\n";         // 9
  }

  void writeTiny() {
    write("vocab.json", tinyVocab().dump());
    write("merges.txt", tinyMerges());
  }

  Gpt2Tokenizer loadTiny() {
    writeTiny();
    std::string error;
    std::optional<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(dir, error);
    EXPECT_TRUE(tokenizer) << error;
    return std::move(*tokenizer);
  }

  std::vector<int64_t> encode(Gpt2Tokenizer &tokenizer,
                              const std::string &text) {
    std::vector<int64_t> ids;
    std::string error;
    EXPECT_TRUE(tokenizer.encode(text, ids, error)) << error;
    return ids;
  }

  /// The error `load` reports for the files as they are now.
  std::string loadError() {
    std::string error;
    std::optional<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(dir, error);
    EXPECT_FALSE(tokenizer);
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    return error;
  }

  std::string dir;
};

std::vector<std::string> pieces(const std::string &text) {
  std::vector<std::string_view> views;
  std::string error;
  EXPECT_TRUE(Gpt2Tokenizer::pretokenize(text, views, error)) << error;
  return std::vector<std::string>(views.begin(), views.end());
}

using Pieces = std::vector<std::string>;

//===----------------------------------------------------------------------===//
// Pre-tokenisation
//===----------------------------------------------------------------------===//

TEST(PretokenizeTest, WordsTakeTheSpaceBeforeThem) {
  EXPECT_EQ(pieces("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pieces(" leading"), (Pieces{" leading"}));
  EXPECT_EQ(pieces(""), Pieces{});
  EXPECT_EQ(pieces("a"), (Pieces{"a"}));
}

TEST(PretokenizeTest, Contractions) {
  EXPECT_EQ(pieces("I'm you're we've he'll she'd it's don't"),
            (Pieces{"I", "'m", " you", "'re", " we", "'ve", " he", "'ll",
                    " she", "'d", " it", "'s", " don", "'t"}));
  // Case-sensitive, as in GPT-2: "'S" is punctuation then a word.
  EXPECT_EQ(pieces("IT'S"), (Pieces{"IT", "'", "S"}));
  // The first alternative that matches, not the longest word.
  EXPECT_EQ(pieces("'tis"), (Pieces{"'t", "is"}));
  EXPECT_EQ(pieces("''s"), (Pieces{"''", "s"}));
  EXPECT_EQ(pieces("'"), (Pieces{"'"}));
  EXPECT_EQ(pieces("'x 'l"), (Pieces{"'", "x", " '", "l"}));
  // A curly apostrophe is punctuation.
  EXPECT_EQ(pieces("it\xe2\x80\x99s"), (Pieces{"it", "\xe2\x80\x99", "s"}));
}

TEST(PretokenizeTest, Numbers) {
  EXPECT_EQ(pieces("abc123def 4567 8.9"),
            (Pieces{"abc", "123", "def", " 4567", " 8", ".", "9"}));
  EXPECT_EQ(pieces("12345678901234567890"), (Pieces{"12345678901234567890"}));
  // \p{N} is Nd, Nl and No: superscripts, fractions, Roman numerals.
  EXPECT_EQ(pieces("x\xc2\xb2\xc2\xbd \xe2\x85\xab"),
            (Pieces{"x", "\xc2\xb2\xc2\xbd", " \xe2\x85\xab"}));
}

TEST(PretokenizeTest, Punctuation) {
  EXPECT_EQ(pieces("!!!???"), (Pieces{"!!!???"}));
  EXPECT_EQ(pieces("hi!! ... (ok)"),
            (Pieces{"hi", "!!", " ...", " (", "ok", ")"}));
  EXPECT_EQ(pieces("<|endoftext|>"), (Pieces{"<|", "endoftext", "|>"}));
  // Emoji and combining marks are neither letters nor numbers.
  EXPECT_EQ(pieces("\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd ok"),
            (Pieces{"\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", " ok"}));
  EXPECT_EQ(pieces("e\xcc\x81"), (Pieces{"e", "\xcc\x81"}));
}

TEST(PretokenizeTest, WhitespaceRuns) {
  // \s+(?!\S): a run before a word leaves its last space to the word.
  EXPECT_EQ(pieces("a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(pieces("a   b"), (Pieces{"a", "  ", " b"}));
  // ... but only U+0020 attaches; another last character stands alone.
  EXPECT_EQ(pieces("a\t\tb"), (Pieces{"a", "\t", "\t", "b"}));
  EXPECT_EQ(pieces("a\tb"), (Pieces{"a", "\t", "b"}));
  EXPECT_EQ(pieces("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pieces("a \n b"), (Pieces{"a", " \n", " b"}));
  EXPECT_EQ(pieces("a \n\tb"), (Pieces{"a", " \n", "\t", "b"}));
  // At the end of the text the whole run is one piece.
  EXPECT_EQ(pieces("end  "), (Pieces{"end", "  "}));
  EXPECT_EQ(pieces("end \n\t "), (Pieces{"end", " \n\t "}));
  EXPECT_EQ(pieces("   "), (Pieces{"   "}));
  EXPECT_EQ(pieces(" "), (Pieces{" "}));
  // Before punctuation or digits, as before letters.
  EXPECT_EQ(pieces("x   !!"), (Pieces{"x", "  ", " !!"}));
  EXPECT_EQ(pieces("x  42"), (Pieces{"x", " ", " 42"}));
  // Unicode white space (no-break space, ideographic space, NEL) is \s.
  EXPECT_EQ(pieces("x\xc2\xa0y"), (Pieces{"x", "\xc2\xa0", "y"}));
  EXPECT_EQ(pieces("x \xe3\x80\x80y"), (Pieces{"x", " ", "\xe3\x80\x80", "y"}));
  EXPECT_EQ(pieces("!\xc2\x85!"), (Pieces{"!", "\xc2\x85", "!"}));
}

TEST(PretokenizeTest, OtherScripts) {
  EXPECT_EQ(pieces("caf\xc3\xa9 na\xc3\xafve"),
            (Pieces{"caf\xc3\xa9", " na\xc3\xafve"}));
  // 日本語のテキスト: ideographs, hiragana, katakana and the prolonged
  // sound mark (Lm) are all letters.
  EXPECT_EQ(pieces("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83"
                   "\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88\xe3\x83\xbc"),
            (Pieces{"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83"
                    "\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88\xe3\x83\xbc"}));
  // Привет, мир!
  EXPECT_EQ(pieces("\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, "
                   "\xd0\xbc\xd0\xb8\xd1\x80!"),
            (Pieces{"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", ",",
                    " \xd0\xbc\xd0\xb8\xd1\x80", "!"}));
}

TEST(PretokenizeTest, PiecesCoverTheText) {
  const std::string text = "It's  42\t\xe2\x82\xac!! caf\xc3\xa9\n\n \xf0\x9f\x98\x80 ";
  std::string joined;
  for (const std::string &piece : pieces(text))
    joined += piece;
  EXPECT_EQ(joined, text);
}

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

std::string utf8Error(const std::string &text) {
  std::string error;
  EXPECT_FALSE(Gpt2Tokenizer::validateUtf8(text, error));
  return error;
}

TEST(Utf8Test, InvalidTextNamesTheByteAndItsOffset) {
  EXPECT_EQ(utf8Error("abc\xff"), "text is not valid UTF-8: byte 0xff at offset 3");
  EXPECT_EQ(utf8Error("\x80"), "text is not valid UTF-8: byte 0x80 at offset 0");
  // Overlong, surrogate, beyond U+10FFFF, truncated, bad continuation.
  EXPECT_EQ(utf8Error("\xc0\xaf"), "text is not valid UTF-8: byte 0xc0 at offset 0");
  EXPECT_EQ(utf8Error("\xe0\x80\xaf"), "text is not valid UTF-8: byte 0xe0 at offset 0");
  EXPECT_EQ(utf8Error("x\xed\xa0\x80"), "text is not valid UTF-8: byte 0xed at offset 1");
  EXPECT_EQ(utf8Error("\xf4\x90\x80\x80"), "text is not valid UTF-8: byte 0xf4 at offset 0");
  EXPECT_EQ(utf8Error("ab\xe6\x97"), "text is not valid UTF-8: byte 0xe6 at offset 2");
  EXPECT_EQ(utf8Error("\xc3(\xc3\xa9"), "text is not valid UTF-8: byte 0xc3 at offset 0");
  std::string error;
  EXPECT_TRUE(Gpt2Tokenizer::validateUtf8(
      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xed\x9f\xbf", error));
  EXPECT_TRUE(Gpt2Tokenizer::validateUtf8(std::string("a\0b", 3), error));
}

TEST(Utf8Test, ToValidUtf8ReplacesMaximalSubparts) {
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8("a\xff" "b"), "a" + r + "b");
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8("a\xe6\x97"), "a" + r);
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8("\xe6\x97x"), r + "x");
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8("\xed\xa0\x80"), r + r + r);
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8("\xf0\x9f\x98"), r);
}

TEST_F(TokenizerTest, EncodeRejectsInvalidUtf8) {
  Gpt2Tokenizer tokenizer = loadTiny();
  std::vector<int64_t> ids{1, 2, 3};
  std::string error;
  EXPECT_FALSE(tokenizer.encode("hel\xfflo", ids, error));
  EXPECT_EQ(error, "text is not valid UTF-8: byte 0xff at offset 3");
  EXPECT_TRUE(ids.empty());
}

//===----------------------------------------------------------------------===//
// BPE
//===----------------------------------------------------------------------===//

TEST_F(TokenizerTest, MergesInRankOrder) {
  Gpt2Tokenizer tokenizer = loadTiny();
  // hello: l l (0) -> h e ll o; e ll (2) -> h ell o; h ell (3); hell o (4).
  EXPECT_EQ(encode(tokenizer, "hello"), (std::vector<int64_t>{260}));
  // " hello": l l (0), then Ġ h (1) takes the h before h ell (3) could:
  // Ġh ell o.
  EXPECT_EQ(encode(tokenizer, " hello"),
            (std::vector<int64_t>{257, 258, byteId('o')}));
  // Pieces are encoded apart: "hello" and " hello".
  EXPECT_EQ(encode(tokenizer, "hello hello"),
            (std::vector<int64_t>{260, 257, 258, byteId('o')}));
  // No merge applies: one id per byte (é is two bytes).
  EXPECT_EQ(encode(tokenizer, "caf\xc3\xa9"),
            (std::vector<int64_t>{byteId('c'), byteId('a'), byteId('f'),
                                  byteId(0xc3), byteId(0xa9)}));
  EXPECT_EQ(encode(tokenizer, "\n"), (std::vector<int64_t>{198}));
  EXPECT_EQ(encode(tokenizer, " "), (std::vector<int64_t>{220}));
  EXPECT_EQ(encode(tokenizer, ""), (std::vector<int64_t>{}));
}

TEST_F(TokenizerTest, OverlappingPairsMergeLeftToRight) {
  Gpt2Tokenizer tokenizer = loadTiny();
  const int64_t a = byteId('a');
  EXPECT_EQ(encode(tokenizer, "aa"), (std::vector<int64_t>{261}));
  EXPECT_EQ(encode(tokenizer, "aaa"), (std::vector<int64_t>{261, a}));
  EXPECT_EQ(encode(tokenizer, "aaaa"), (std::vector<int64_t>{262}));
  EXPECT_EQ(encode(tokenizer, "aaaaa"), (std::vector<int64_t>{262, a}));
  EXPECT_EQ(encode(tokenizer, "aaaaaaa"), (std::vector<int64_t>{262, 261, a}));
  EXPECT_EQ(encode(tokenizer, "aaaaaaaa"), (std::vector<int64_t>{262, 262}));
  // A long run (the cache is bypassed above 256 bytes).
  std::vector<int64_t> expected(250, 262);
  EXPECT_EQ(encode(tokenizer, std::string(1000, 'a')), expected);
  expected.push_back(261);
  expected.push_back(a);
  EXPECT_EQ(encode(tokenizer, std::string(1003, 'a')), expected);
}

TEST_F(TokenizerTest, OnePassPerMerge) {
  Gpt2Tokenizer tokenizer = loadTiny();
  // "bb b" ranks before "b b", which makes "bb": GPT-2 merges every b b of
  // the word in one pass (bb bb), and only then looks for the best pair
  // again; bb bb does not merge. Merging "bb b" as soon as the first bb
  // appears would give bbb b.
  EXPECT_EQ(encode(tokenizer, "bbbb"), (std::vector<int64_t>{263, 263}));
  // bbb: b b -> bb b (one pass), then bb b -> bbb.
  EXPECT_EQ(encode(tokenizer, "bbb"), (std::vector<int64_t>{264}));
}

TEST_F(TokenizerTest, CacheGivesTheSameIds) {
  Gpt2Tokenizer tokenizer = loadTiny();
  std::vector<int64_t> first = encode(tokenizer, "hello aaaaa hello aaaaa");
  std::vector<int64_t> second = encode(tokenizer, "hello aaaaa hello aaaaa");
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, (std::vector<int64_t>{260, 220, 262, byteId('a'), 257, 258,
                                         byteId('o'), 220, 262, byteId('a')}));
}

TEST_F(TokenizerTest, SpecialTokensAreNotRecognisedInText) {
  Gpt2Tokenizer tokenizer = loadTiny();
  EXPECT_EQ(tokenizer.tokenId("<|endoftext|>"), std::optional<int64_t>(265));
  EXPECT_EQ(tokenizer.tokenId("nope"), std::nullopt);
  EXPECT_EQ(encode(tokenizer, "<|endoftext|>").size(), 13u);
  EXPECT_EQ(tokenizer.decode({265}), "<|endoftext|>");
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

TEST_F(TokenizerTest, RoundTrip) {
  Gpt2Tokenizer tokenizer = loadTiny();
  std::string all;
  for (int b = 1; b < 128; ++b)
    all += static_cast<char>(b);
  for (const std::string &text :
       {std::string("hello  hello\n\n\t bbbb aaaaaaa zz"),
        std::string("caf\xc3\xa9's \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x91\x8d"
                    "\xf0\x9f\x8f\xbd  \xe2\x82\xac 1234 "),
        std::string("a\0b", 3), all, std::string()}) {
    EXPECT_EQ(tokenizer.decode(encode(tokenizer, text)), text);
  }
}

TEST_F(TokenizerTest, IdsThatAreNoTokenDecodeToReplacementCharacter) {
  Gpt2Tokenizer tokenizer = loadTiny();
  EXPECT_EQ(tokenizer.vocabSize(), 268);
  const std::string r = "\xef\xbf\xbd";
  // Negative, a gap in the ids, vocabSize, far beyond.
  EXPECT_EQ(tokenizer.decode({-1, 266, 268, int64_t(1) << 40}), r + r + r + r);
  EXPECT_EQ(tokenizer.decode({260, 266, 267}), "hello" + r + "zz");
  // Half a character stays half a character; toValidUtf8 makes it printable.
  std::string half = tokenizer.decode({byteId(0xc3)});
  EXPECT_EQ(half, "\xc3");
  EXPECT_EQ(Gpt2Tokenizer::toValidUtf8(half), r);
}

//===----------------------------------------------------------------------===//
// Bad tokenizer files
//===----------------------------------------------------------------------===//

TEST_F(TokenizerTest, MissingFiles) {
  EXPECT_EQ(loadError(), dir + ": missing vocab.json" + kUsageHint);
  write("merges.txt", tinyMerges());
  EXPECT_EQ(loadError(), dir + ": missing vocab.json" + kUsageHint);
  std::filesystem::remove(dir + "/merges.txt");
  write("vocab.json", tinyVocab().dump());
  EXPECT_EQ(loadError(), dir + ": missing merges.txt" + kUsageHint);
  std::string error;
  EXPECT_FALSE(Gpt2Tokenizer::load(dir + "/nope", error));
  EXPECT_EQ(error, dir + "/nope: no such directory (a GPT-2 tokenizer is a "
                         "directory holding vocab.json and merges.txt)");
  EXPECT_FALSE(Gpt2Tokenizer::load(dir + "/vocab.json", error));
  EXPECT_EQ(error, dir + "/vocab.json: not a directory (a GPT-2 tokenizer is "
                         "a directory holding vocab.json and merges.txt)");
  // A trailing slash is fine.
  write("merges.txt", tinyMerges());
  EXPECT_TRUE(Gpt2Tokenizer::load(dir + "/", error)) << error;
}

TEST_F(TokenizerTest, InvalidJson) {
  write("merges.txt", tinyMerges());
  write("vocab.json", "{\"a\": 1,\n  \"b\" 2}");
  EXPECT_EQ(loadError(),
            dir + "/vocab.json:2:7: invalid JSON: syntax error while parsing "
                  "object separator - unexpected number literal; expected ':'");
  write("vocab.json", "{\"a\": 1");
  EXPECT_EQ(loadError().rfind(dir + "/vocab.json:1:8: invalid JSON: ", 0), 0u);
  write("vocab.json", "");
  EXPECT_EQ(loadError().rfind(dir + "/vocab.json:1:1: invalid JSON: ", 0), 0u);
}

TEST_F(TokenizerTest, BadVocabulary) {
  write("merges.txt", "#version: 0.2\n");
  write("vocab.json", "[1, 2]");
  EXPECT_EQ(loadError(), dir + "/vocab.json: expected a JSON object mapping "
                               "each token to its id, got array");
  write("vocab.json", "{}");
  EXPECT_EQ(loadError(), dir + "/vocab.json: no tokens");

  Json vocab = tinyVocab();
  vocab["x\ny"] = -1;
  write("vocab.json", vocab.dump());
  EXPECT_EQ(loadError(), dir + "/vocab.json: token \"x\\ny\" has id -1; "
                               "expected an integer in [0, 2147483646]");
  vocab["x\ny"] = "7";
  write("vocab.json", vocab.dump());
  EXPECT_EQ(loadError(), dir + "/vocab.json: token \"x\\ny\" has id \"7\"; "
                               "expected an integer in [0, 2147483646]");
  vocab["x\ny"] = 1.5;
  write("vocab.json", vocab.dump());
  EXPECT_EQ(loadError(), dir + "/vocab.json: token \"x\\ny\" has id 1.5; "
                               "expected an integer in [0, 2147483646]");

  vocab = tinyVocab();
  vocab["other"] = 260;
  write("vocab.json", vocab.dump());
  // nlohmann's objects iterate in key order: "hello" comes first.
  EXPECT_EQ(loadError(),
            dir + "/vocab.json: id 260 is given to both \"hello\" and \"other\"");

  write("vocab.json", "{\"a\": 1, \"b\": 2, \"a\": 3}");
  EXPECT_EQ(loadError(), dir + "/vocab.json: token \"a\" appears twice");

  vocab = tinyVocab();
  vocab.erase("\xc4\x80"); // Ā, byte 0x00
  write("vocab.json", vocab.dump());
  EXPECT_EQ(loadError(),
            dir + "/vocab.json: no token \"\xc4\x80\" for byte 0x00 (a "
                  "byte-level vocabulary has a token for each of the 256 bytes)");
}

TEST_F(TokenizerTest, BadMerges) {
  write("vocab.json", tinyVocab().dump());
  write("merges.txt", "#version: 0.2\nl l\nll\n");
  EXPECT_EQ(loadError(), dir + "/merges.txt:3: expected two tokens separated "
                               "by one space, got \"ll\"");
  write("merges.txt", "l l\na  a\n");
  EXPECT_EQ(loadError(), dir + "/merges.txt:2: expected two tokens separated "
                               "by one space, got \"a  a\"");
  write("merges.txt", "l l\n a\n");
  EXPECT_EQ(loadError(), dir + "/merges.txt:2: expected two tokens separated "
                               "by one space, got \" a\"");
  write("merges.txt", "#version: 0.2\nl l\nq xyz\n");
  EXPECT_EQ(loadError(),
            dir + "/merges.txt:3: token \"xyz\" is not in vocab.json");
  write("merges.txt", "#version: 0.2\nx y\n");
  EXPECT_EQ(loadError(),
            dir + "/merges.txt:2: the merged token \"xy\" is not in vocab.json");
  write("merges.txt", "#version: 0.2\nl\xff l\n");
  EXPECT_EQ(loadError(),
            dir + "/merges.txt:2: not valid UTF-8: \"l\\xff l\"");
}

TEST_F(TokenizerTest, MergesToleratesCrlfAndBlankLines) {
  write("vocab.json", tinyVocab().dump());
  std::string merges = tinyMerges();
  std::string crlf;
  for (char c : merges)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  write("merges.txt", crlf + "\r\n\n");
  std::string error;
  std::optional<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::load(dir, error);
  ASSERT_TRUE(tokenizer) << error;
  EXPECT_EQ(encode(*tokenizer, " hello"),
            (std::vector<int64_t>{257, 258, byteId('o')}));
}

} // namespace
