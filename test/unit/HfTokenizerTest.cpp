//===- HfTokenizerTest.cpp - tokenizer.json and the BOS/EOS rules ---------===//
//
// A hand-written SentencePiece-style tokenizer.json (Llama 2's components)
// with a handful of tokens: ids and decodings derived by hand (merge order,
// byte fallback, unk fusing, added tokens, the decoder's Strip), then the
// BOS/EOS rules of readPromptTokens one file at a time.
// test/Tokenizer/hf-tokenizers.test compares bigger tokenizers with an
// independent implementation.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace tfmc::runtime;
using Json = nlohmann::json;

namespace {

const std::string kMeta = "\xe2\x96\x81"; // ▁

class HfTokenizerTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfmc-hf-tokenizer-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    write("tokenizer.json", tokenizerJson().dump());
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  void write(const std::string &name, const std::string &bytes) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << bytes;
  }

  static Json tokenizerJson() {
    Json vocab = {{"<unk>", 0}, {"<s>", 1},      {"</s>", 2},
                  {"<0xC3>", 3}, {"<0xA9>", 4},  {kMeta, 5},
                  {"a", 6},      {"b", 7},       {kMeta + "a", 8},
                  {"ab", 9},     {kMeta + "ab", 10}};
    auto special = [](int id, const char *content) {
      return Json{{"id", id},         {"content", content},
                  {"single_word", false}, {"lstrip", false},
                  {"rstrip", false},  {"normalized", false},
                  {"special", true}};
    };
    return Json{
        {"added_tokens",
         {special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")}},
        {"normalizer",
         {{"type", "Sequence"},
          {"normalizers",
           {{{"type", "Prepend"}, {"prepend", kMeta}},
            {{"type", "Replace"},
             {"pattern", {{"String", " "}}},
             {"content", kMeta}}}}}},
        {"pre_tokenizer", nullptr},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single",
           {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}}}}}}},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"},
             {"pattern", {{"String", kMeta}}},
             {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
        {"model",
         {{"type", "BPE"},
          {"unk_token", "<unk>"},
          {"fuse_unk", true},
          {"byte_fallback", true},
          {"vocab", vocab},
          // Ranks: (▁, a) first, then (a, b), then (▁a, b).
          {"merges", {kMeta + " a", "a b", {kMeta + "a", "b"}}}}}};
  }

  std::unique_ptr<Tokenizer> load() {
    std::string error;
    std::unique_ptr<Tokenizer> tokenizer = loadTokenizer(dir, error);
    EXPECT_TRUE(tokenizer) << error;
    return tokenizer;
  }

  std::vector<int64_t> encode(Tokenizer &tokenizer, const std::string &text) {
    std::vector<int64_t> ids;
    std::string error;
    EXPECT_TRUE(tokenizer.encode(text, ids, error)) << error;
    return ids;
  }

  PromptTokens promptTokens(Tokenizer &tokenizer) {
    PromptTokens tokens;
    std::string error;
    EXPECT_TRUE(readPromptTokens(dir, tokenizer, tokens, error)) << error;
    return tokens;
  }

  std::string dir;
};

using Ids = std::vector<int64_t>;

TEST_F(HfTokenizerTest, MergesInRankOrder) {
  auto tokenizer = load();
  // "▁ab▁ab": (▁, a) merges first at both places, then (▁a, b); (a, b)
  // never gets its chance.
  EXPECT_EQ(encode(*tokenizer, "ab ab"), (Ids{10, 10}));
  // "▁ba": neither (▁, b) nor (b, a) is a merge.
  EXPECT_EQ(encode(*tokenizer, "ba"), (Ids{5, 7, 6}));
  EXPECT_EQ(tokenizer->decode({10, 10}), "ab ab");
}

TEST_F(HfTokenizerTest, ByteFallbackAndUnk) {
  auto tokenizer = load();
  // é has no token: its bytes C3 A9 do.
  EXPECT_EQ(encode(*tokenizer, "\xc3\xa9"), (Ids{5, 3, 4}));
  EXPECT_EQ(tokenizer->decode({5, 3, 4}), "\xc3\xa9");
  // c and d have neither: one <unk> for the run (fuse_unk).
  EXPECT_EQ(encode(*tokenizer, "cda"), (Ids{5, 0, 6}));
}

TEST_F(HfTokenizerTest, AddedTokensSplitTheText) {
  auto tokenizer = load();
  // Each segment between added tokens is normalized alone: "▁ab" after
  // <s>, as Hugging Face's legacy Llama tokenizer does.
  EXPECT_EQ(encode(*tokenizer, "<s>ab</s>"), (Ids{1, 10, 2}));
  // The decoder's Strip removes the text's first space only.
  EXPECT_EQ(tokenizer->decode({1, 10, 2}), "<s> ab</s>");
}

TEST_F(HfTokenizerTest, UnknownIdDecodesToReplacement) {
  auto tokenizer = load();
  EXPECT_FALSE(tokenizer->hasId(11));
  EXPECT_EQ(tokenizer->decode({10, 11}), "ab\xef\xbf\xbd");
  EXPECT_EQ(tokenizer->vocabSize(), 11);
  EXPECT_EQ(tokenizer->tokenId("</s>"), 2);
  EXPECT_FALSE(tokenizer->tokenId("</S>"));
}

TEST_F(HfTokenizerTest, InvalidUtf8IsRefused) {
  auto tokenizer = load();
  std::vector<int64_t> ids{7};
  std::string error;
  EXPECT_FALSE(tokenizer->encode("a\xff", ids, error));
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(error, "text is not valid UTF-8: byte 0xff at offset 1");
}

TEST_F(HfTokenizerTest, BosFromThePostProcessor) {
  auto tokenizer = load();
  PromptTokens tokens = promptTokens(*tokenizer);
  EXPECT_EQ(tokens.prefix, (Ids{1}));
  EXPECT_TRUE(tokens.suffix.empty());
  EXPECT_TRUE(tokens.eos.empty());
}

TEST_F(HfTokenizerTest, TokenizerConfigDecides) {
  auto tokenizer = load();
  write("tokenizer_config.json",
        R"({"add_bos_token": false, "add_eos_token": true,
            "eos_token": {"content": "</s>"}})");
  PromptTokens tokens = promptTokens(*tokenizer);
  EXPECT_TRUE(tokens.prefix.empty());
  EXPECT_EQ(tokens.suffix, (Ids{2}));
  Ids ids = encode(*tokenizer, "ab");
  tokens.surround(ids);
  EXPECT_EQ(ids, (Ids{10, 2}));
}

TEST_F(HfTokenizerTest, EosFromGenerationConfigFirst) {
  auto tokenizer = load();
  write("config.json", R"({"eos_token_id": 2})");
  EXPECT_EQ(promptTokens(*tokenizer).eos, (Ids{2}));
  write("generation_config.json", R"({"eos_token_id": [2, 7]})");
  EXPECT_EQ(promptTokens(*tokenizer).eos, (Ids{2, 7}));
}

} // namespace
