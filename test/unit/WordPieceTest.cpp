//===- WordPieceTest.cpp - BERT's WordPiece tokenizer, by hand ------------===//
//
// WordPieceTokenizer (runtime/tokenizers/WordPieceTokenizer.h) on a
// hand-made vocab.txt, with expectations derived by hand from BERT's rules
// (test/Tokenizer/wordpiece.test compares with transformers.js).
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/WordPieceTokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace tfmc::runtime;

namespace {

// ids: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 un 6 ##aff 7 ##able
// 8 hello 9 , 10 world 11 ! 12 a 13 ##a 14 b 15 ##b 16 cafe 17 日 18 $
// 19 ` 20 unaff 21 ' 22 s 23 it
const char *kVocab[] = {"[PAD]", "[UNK]",  "[CLS]", "[SEP]", "[MASK]", "un",
                        "##aff", "##able", "hello", ",",     "world",  "!",
                        "a",     "##a",    "b",     "##b",   "cafe",   "日",
                        "$",     "`",      "unaff", "'",     "s",      "it"};

class WordPieceTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tfmc-wordpiece-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream out(dir_ / "vocab.txt");
    for (const char *token : kVocab)
      out << token << "\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<WordPieceTokenizer> load(const std::string &config = "") {
    if (!config.empty())
      std::ofstream(dir_ / "tokenizer_config.json") << config;
    std::string error;
    auto t = WordPieceTokenizer::fromVocabTxt(dir_.string(), error);
    EXPECT_TRUE(t) << error;
    return t;
  }
  std::vector<int64_t> encode(WordPieceTokenizer &t, std::string_view text) {
    std::vector<int64_t> ids;
    std::string error;
    EXPECT_TRUE(t.encode(text, ids, error)) << error;
    return ids;
  }

  std::filesystem::path dir_;
};

using Ids = std::vector<int64_t>;

TEST_F(WordPieceTest, LongestMatchFirst) {
  auto t = load();
  // "unaffable": the longest first piece, "unaff" (not "un" + "##aff"),
  // then "##able".
  EXPECT_EQ(encode(*t, "unaffable"), (Ids{20, 7}));
  EXPECT_EQ(encode(*t, "unable"), (Ids{5, 7}));
  // A word with a part no token matches is one [UNK], whole.
  EXPECT_EQ(encode(*t, "unaffablex hello"), (Ids{1, 8}));
}

TEST_F(WordPieceTest, BasicTokenizer) {
  auto t = load();
  // Lower-cased, accents stripped (composed and decomposed), punctuation
  // split (ASCII $ and ` are punctuation for BERT though not Unicode P*).
  EXPECT_EQ(encode(*t, "HeLLo, Wörld!"), (Ids{8, 9, 10, 11}));
  EXPECT_EQ(encode(*t, "Café cafe\xcc\x81"), (Ids{16, 16}));
  EXPECT_EQ(encode(*t, "$a`b"), (Ids{18, 12, 19, 14}));
  // CJK ideographs are words of their own; controls vanish.
  EXPECT_EQ(encode(*t, "a日b\x07"), (Ids{12, 17, 14}));
  // Special tokens in the text are kept whole, in their case.
  EXPECT_EQ(encode(*t, "hello[MASK]world [mask]"), (Ids{8, 4, 10, 1, 1, 1}));
}

TEST_F(WordPieceTest, CasedKeepsCaseAndAccents) {
  auto t = load(R"({"do_lower_case": false})");
  EXPECT_EQ(encode(*t, "Hello hello Café"), (Ids{1, 8, 1}));
  auto keep = load(R"({"do_lower_case": true, "strip_accents": false})");
  EXPECT_EQ(encode(*keep, "CAFÉ CAFE"), (Ids{1, 16}));
}

TEST_F(WordPieceTest, MaxInputCharsPerWord) {
  auto t = load();
  std::string word100(100, 'a'), word101(101, 'a');
  Ids ids100(100, 13);
  ids100[0] = 12;
  EXPECT_EQ(encode(*t, word100), ids100);
  EXPECT_EQ(encode(*t, word101), (Ids{1}));
}

TEST_F(WordPieceTest, PairsAndLongestFirstTruncation) {
  auto t = load();
  Ids ids, types;
  std::string error;
  std::string_view b = "b b b";
  ASSERT_TRUE(t->encodeForModel("a a", &b, 0, ids, types, error)) << error;
  EXPECT_EQ(ids, (Ids{2, 12, 12, 3, 14, 14, 14, 3}));
  EXPECT_EQ(types, (Ids{0, 0, 0, 0, 1, 1, 1, 1}));
  // 8 -> 6: b (3) loses one (longer), then a tie (2, 2): the second loses.
  ASSERT_TRUE(t->encodeForModel("a a", &b, 6, ids, types, error)) << error;
  EXPECT_EQ(ids, (Ids{2, 12, 12, 3, 14, 3}));
  EXPECT_EQ(types, (Ids{0, 0, 0, 0, 1, 1}));
  ASSERT_TRUE(t->encodeForModel("a a a", nullptr, 3, ids, types, error));
  EXPECT_EQ(ids, (Ids{2, 12, 3}));
  EXPECT_FALSE(t->encodeForModel("a", &b, 2, ids, types, error));
  EXPECT_EQ(error, "a maximum length of 2 leaves no room for the 3 special "
                   "tokens");
}

TEST_F(WordPieceTest, Decode) {
  auto t = load();
  EXPECT_EQ(t->decode({2, 8, 9, 10, 11, 3}), "[CLS] hello, world! [SEP]");
  EXPECT_EQ(t->decode({20, 7, 12, 13, 13}), "unaffable aaa");
  EXPECT_EQ(t->decode({23, 21, 22}), "it's");
  EXPECT_EQ(t->decode({8, 999}), "hello \xef\xbf\xbd");
  auto raw = load(R"({"clean_up_tokenization_spaces": false})");
  EXPECT_EQ(raw->decode({8, 9, 10, 11}), "hello , world !");
}

} // namespace
