//===- WordPieceTokenizer.h - BERT's vocab.txt / WordPiece ------*- C++ -*-===//
//
// BERT's tokenizer, from either form a checkpoint ships:
//   - vocab.txt (one token a line, id = line number) with
//     tokenizer_config.json's do_lower_case (default true), strip_accents
//     (default: as do_lower_case), tokenize_chinese_chars (default true),
//     unk/cls/sep/pad/mask_token, model_max_length,
//     clean_up_tokenization_spaces (default true);
//   - a tokenizer.json whose model is WordPiece (normalizer BertNormalizer,
//     pre_tokenizer BertPreTokenizer, decoder WordPiece, post_processor
//     TemplateProcessing or BertProcessing).
// Encoding, as Hugging Face's BertTokenizer:
//   1. special tokens ([CLS], [SEP], [MASK], ... and tokenizer.json's
//      special added tokens) are matched in the raw text first, longest
//      first, and kept whole;
//   2. the basic tokenizer on the rest: code points 0, U+FFFD and control
//      characters (category C*, but tab, LF, CR) dropped, whitespace (tab,
//      LF, CR, Zs) made a space; spaces around each CJK ideograph; split on
//      whitespace; lower-cased (as Python's str.lower: utf8proc's simple
//      mapping, with Greek final sigma and U+0130) and/or accents stripped
//      (NFD, marks Mn dropped) as configured; each punctuation
//      character (category P*, and the ASCII non-alphanumerics !-/ :-@ [-`
//      {-~) its own word;
//   3. WordPiece on each word: greedy longest match first, continuations
//      spelled "##x"; a word of more than max_input_chars_per_word (100)
//      characters, or with a part no token matches, is [UNK].
// encodeForModel adds [CLS] A [SEP] (B [SEP]) with token types 0 / 1 and
// truncates longest-first (the longer text loses its last token, the second
// on a tie) to a maximum length, with a one-line warning on stderr.
// decode joins the tokens with spaces, glues "##" continuations, and cleans
// up spaces before punctuation and contractions (" ." -> ".", " n't" ->
// "n't", ...) as clean_up_tokenization_spaces says. An id that is no token
// decodes to U+FFFD.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_WORDPIECETOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_WORDPIECETOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime {

class WordPieceTokenizer final : public Tokenizer {
public:
  struct Options {
    bool cleanText = true;
    bool chineseChars = true;
    bool lowercase = true;
    bool stripAccents = true;
    bool cleanupSpaces = true;      // clean_up_tokenization_spaces
    std::size_t maxWordChars = 100; // max_input_chars_per_word
    std::string prefix = "##";      // continuing_subword_prefix
  };

  /// DIR/vocab.txt and DIR/tokenizer_config.json (optional). Errors name
  /// the file, e.g.
  ///   DIR/vocab.txt:7: token "[CLS]" repeated (first on line 2)
  ///   DIR/tokenizer_config.json: do_lower_case must be true or false
  ///   DIR/vocab.txt: no unk_token "[UNK]"
  static std::unique_ptr<WordPieceTokenizer>
  fromVocabTxt(const std::string &dir, std::string &error);
  /// A parsed tokenizer.json (at `path`) whose model.type is "WordPiece".
  static std::unique_ptr<WordPieceTokenizer>
  fromTokenizerJson(const std::string &path, const nlohmann::json &root,
                    std::string &error);

  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override;
  /// BERT's inputs: [CLS] a [SEP] (b [SEP]) and their token types,
  /// truncated to `maxLength` tokens (0: the tokenizer's model_max_length,
  /// if it has one) with a warning on stderr.
  bool encodeForModel(std::string_view a, const std::string_view *b,
                      std::size_t maxLength, std::vector<int64_t> &ids,
                      std::vector<int64_t> &typeIds, std::string &error);
  std::string decode(const std::vector<int64_t> &ids) const override;
  bool hasId(int64_t id) const override {
    return id >= 0 && id < vocabSize() && !tokens_[id].empty();
  }
  int64_t vocabSize() const override {
    return static_cast<int64_t>(tokens_.size());
  }
  std::optional<int64_t> tokenId(std::string_view token) const override;
  const std::string &directory() const override { return path_; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    prefix.assign(1, cls_);
    suffix.assign(1, sep_);
    return true;
  }

  int64_t clsId() const { return cls_; }
  int64_t sepId() const { return sep_; }
  int64_t padId() const { return pad_; }

  /// Step 2 alone: the words of `utf8` (valid UTF-8) under `options`.
  static void basicTokenize(std::string_view utf8, const Options &options,
                            std::vector<std::string> &words);

private:
  WordPieceTokenizer() = default;
  /// Sets the special ids from their spellings; false with `error` when
  /// the vocabulary lacks one that must be there.
  bool finish(const std::string &file, std::string &error);
  void encodeWord(const std::string &word, std::vector<int64_t> &ids) const;

  std::string path_;
  Options options_;
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> tokens_; // id -> token ("" for a gap)
  std::string unkToken_ = "[UNK]", clsToken_ = "[CLS]", sepToken_ = "[SEP]",
              padToken_ = "[PAD]", maskToken_ = "[MASK]";
  int64_t unk_ = -1, cls_ = -1, sep_ = -1, pad_ = -1;
  std::size_t maxLength_ = 0; // model_max_length (0: none)
  /// Tokens matched whole in the raw text, longest first.
  std::vector<std::string> specials_;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_WORDPIECETOKENIZER_H
