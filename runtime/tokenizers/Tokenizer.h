//===- Tokenizer.h - Text <-> token ids ------------------------*- C++ -*-===//
//
// `Tokenizer` is what generate and tfmc-tokenize use; `loadTokenizer` picks
// the kind from the files in a model's directory (tokenizer.json:
// runtime/tokenizers/HfTokenizer.h, or WordPieceTokenizer.h for BERT's;
// tokenizer.model: runtime/tokenizers/SentencePieceTokenizer.h; source.spm:
// MarianTokenizer.h; vocab.json + merges.txt: Gpt2Tokenizer below; vocab.txt:
// WordPieceTokenizer.h), or a GGUF file's metadata (GgufTokenizer.h), and
// `readPromptTokens` the BOS/EOS rules.
//
// The tokenizer of GPT-2 (and of every model that reuses its files): byte-level
// byte-pair encoding over the two files that sit beside a Hugging Face
// checkpoint, vocab.json (token string -> id) and merges.txt (a `#version`
// line, then one merge `LEFT RIGHT` per line, best first).
//
// Encoding, as OpenAI's encoder.py does it:
//   1. The text (UTF-8, validated) is split into pieces by GPT-2's pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      implemented by hand over the code point classes of UnicodeTables.inc
//      (\p{L}: general category L*, \p{N}: N*, \s: White_Space; see
//      unicode_tables.py). Contractions are matched case-sensitively, as in
//      GPT-2 ("'S" is not one).
//   2. Each piece's bytes become one symbol each (the byte's token in
//      GPT-2's bytes_to_unicode mapping), and adjacent symbols are merged,
//      always the pair whose merge comes first in merges.txt, every
//      non-overlapping occurrence from left to right, until no pair merges.
//      Pieces and their ids are cached.
// Special tokens such as "<|endoftext|>" are not recognised in the text; like
// GPT-2's encoder, they are encoded as the characters they are made of
// (look one up with `tokenId`).
//
// Decoding concatenates the bytes of each id's token (the inverse mapping);
// characters of a token outside the byte mapping are kept as their UTF-8.
// An id that is no token (negative, >= vocabSize(), or a gap in the ids of
// vocab.json) decodes to U+FFFD, the replacement character, rather than
// failing: a model whose output layer is wider than its vocabulary may emit
// one. decode(encode(t)) == t for every valid UTF-8 text t.
//
// No function here throws (except std::bad_alloc); failures are reported
// through the return value and an `error` string (one line, no trailing
// newline, starting with the file's path, or with "text is not valid UTF-8"
// for bad input text).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZER_H
#define TFMC_RUNTIME_TOKENIZER_H

#include "runtime/tokenizers/Common.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tfmc::runtime {

class Tokenizer {
public:
  virtual ~Tokenizer() = default;

  /// Replaces `ids` with the ids of `utf8` (no BOS/EOS added: see
  /// PromptTokens). Fails on text that is not valid UTF-8, with `ids` empty
  /// and `error` as validateUtf8's. Not thread-safe (caches).
  virtual bool encode(std::string_view utf8, std::vector<int64_t> &ids,
                      std::string &error) = 0;
  /// The bytes `ids` stand for, raw (may split a character; see
  /// toValidUtf8); U+FFFD for an id that is no token.
  virtual std::string decode(const std::vector<int64_t> &ids) const = 0;
  virtual bool hasId(int64_t id) const = 0;
  /// One more than the largest id.
  virtual int64_t vocabSize() const = 0;
  /// The id of a token spelled as the tokenizer's files spell it.
  virtual std::optional<int64_t> tokenId(std::string_view token) const = 0;
  /// The directory (or file) it was loaded from, for messages.
  virtual const std::string &directory() const = 0;
  /// The ids the tokenizer's own file adds before and after a text's
  /// (tokenizer.json's post_processor, SentencePiece's BOS), if it says.
  virtual bool ownSpecials(std::vector<int64_t> &prefix,
                           std::vector<int64_t> &suffix) const {
    (void)prefix;
    (void)suffix;
    return false;
  }

  /// Checks that `text` is valid UTF-8; the error is
  ///   text is not valid UTF-8: byte 0xff at offset 3
  static bool validateUtf8(std::string_view text, std::string &error);

  /// `bytes` with each maximal ill-formed subsequence replaced by U+FFFD (as
  /// Python's errors="replace" does); valid UTF-8 is returned unchanged.
  static std::string toValidUtf8(std::string_view bytes);
};

/// The bytes each id of a `vocab`-token model adds to text when it is
/// decoded after other tokens (SentencePiece's "▁x" is " x"), as
/// TextStream prints it: what constrained sampling matches a token
/// against. Empty for an id the tokenizer has no token for. Decodes each
/// id after an anchor token (the first of encode("a")): O(vocab) decodes.
std::vector<std::string> tokenBytesInContext(Tokenizer &tokenizer,
                                             int64_t vocab);

/// The tokenizer of the GGUF file `dir` (a regular file named *.gguf or
/// starting with "GGUF": runtime/tokenizers/GgufTokenizer.h), or the
/// tokenizer in the directory `dir`, from the first of these present: tokenizer.json
/// (runtime/tokenizers/WordPieceTokenizer.h when its model is WordPiece),
/// tokenizer.model, source.spm or target.spm (Marian:
/// runtime/tokenizers/MarianTokenizer.h), vocab.json (with merges.txt),
/// vocab.txt (BERT's WordPiece). On failure nothing, and `error` is one line
/// naming the file, e.g.
///   DIR: no tokenizer (expected tokenizer.json, tokenizer.model, source.spm, vocab.json and merges.txt, or vocab.txt)
std::unique_ptr<Tokenizer> loadTokenizer(const std::string &dir,
                                         std::string &error);

/// What a prompt gets around its text, and where generation stops, from the
/// tokenizer directory's JSON files (runtime/tokenizers/PromptTokens.cpp
/// documents the rules).
struct PromptTokens {
  std::vector<int64_t> prefix; // BOS, when the files say to add it
  std::vector<int64_t> suffix; // e.g. EOS with add_eos_token
  std::vector<int64_t> eos;    // stop at any of these (may be empty)
  /// An encoder-decoder's first decoder token (Marian's
  /// decoder_start_token_id, its pad), or -1 when the files give none.
  int64_t decoderStart = -1;
  /// Token sequences generation must not produce (bad_words_ids: Marian's
  /// bans its pad), each non-empty.
  std::vector<std::vector<int64_t>> badWords;

  /// A text's ids as the model gets them: prefix + ids + suffix.
  void surround(std::vector<int64_t> &ids) const {
    ids.insert(ids.begin(), prefix.begin(), prefix.end());
    ids.insert(ids.end(), suffix.begin(), suffix.end());
  }
  /// The eos ids and banned sequences a model of `vocab` tokens can meet:
  /// an id outside its vocabulary is never generated, so it cannot stop
  /// anything, and a sequence holding one can never be completed.
  std::vector<int64_t> eosWithin(int64_t vocab) const;
  std::vector<std::vector<int64_t>> badWordsWithin(int64_t vocab) const;
};

/// Reads config.json, generation_config.json and tokenizer_config.json in
/// `dir` (each optional) for `tokenizer`; for a GGUF file, its metadata's
/// (readGgufPromptTokens). Fails with one line naming the
/// file and key on a malformed file or a token the tokenizer lacks.
bool readPromptTokens(const std::string &dir, const Tokenizer &tokenizer,
                      PromptTokens &tokens, std::string &error);

/// The longest text a program tokenizes: kMaxTextBytesPerPosition bytes per
/// position of max_len (docs/user-guide.md, "Limits"). Tokens average about
/// 4 bytes, so a longer text cannot fit the model; and a tokenizer's time
/// grows faster than the text (SentencePiece took 30 s on 1 MB of
/// newlines), so the bound comes before tokenizing.
inline constexpr int64_t kMaxTextBytesPerPosition = 32;

/// A text as a model without a decoder takes it: BERT's WordPiece as
/// [CLS] A [SEP] (B [SEP]) with token types (`types`), else the
/// tokenizer's ids with the files' BOS and EOS (`types` empty). False with
/// a message on a text the tokenizer refuses.
bool encodeModelText(Tokenizer &tokenizer, const PromptTokens &tokens,
                     std::string_view text, const std::string_view *pair,
                     int64_t maxLen, std::vector<int64_t> &ids,
                     std::vector<int64_t> &types, std::string &error);

class Gpt2Tokenizer : public Tokenizer {
public:
  /// Reads DIR/vocab.json and DIR/merges.txt. On failure returns nothing and
  /// sets `error`, e.g.
  ///   DIR: missing vocab.json (a GPT-2 tokenizer needs vocab.json and merges.txt)
  ///   DIR/vocab.json:3:7: invalid JSON: syntax error while parsing ...
  ///   DIR/merges.txt:12: expected two tokens separated by one space, got "a"
  /// Besides the syntax, it checks that every id is an integer in
  /// [0, 2^31), that no two tokens share an id, that each of the 256 bytes
  /// has its token, and that both halves of every merge and its result are
  /// in vocab.json.
  static std::optional<Gpt2Tokenizer> load(const std::string &dir,
                                           std::string &error);

  /// Replaces `ids` with the ids of `utf8`. Fails only on text that is not
  /// valid UTF-8 (overlong forms, surrogates and code points above U+10FFFF
  /// included): `ids` is then empty and `error` is
  ///   text is not valid UTF-8: byte 0xff at offset 3
  /// naming the first byte of the first ill-formed sequence.
  /// Not thread-safe: it fills a cache.
  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override;

  /// The bytes of `ids` concatenated (U+FFFD for an id that is no token; see
  /// above). Ids that split a character (a generation cut short) give
  /// invalid UTF-8; `toValidUtf8` makes such text printable.
  std::string decode(const std::vector<int64_t> &ids) const override;

  /// Whether `id` is a token of vocab.json (decode gives U+FFFD otherwise).
  bool hasId(int64_t id) const override { return tokenBytes_.has(id); }

  /// One more than the largest id in vocab.json (50257 for GPT-2).
  int64_t vocabSize() const override { return tokenBytes_.size(); }

  /// The id of `token` as spelled in vocab.json (e.g. "<|endoftext|>",
  /// "Ġthe"), or nothing.
  std::optional<int64_t> tokenId(std::string_view token) const override;

  /// The directory given to `load`.
  const std::string &directory() const override { return dir_; }

  /// Step 1 alone: the pieces of `utf8` (views into it, in order, covering
  /// it exactly). Fails like `encode` on text that is not valid UTF-8.
  static bool pretokenize(std::string_view utf8,
                          std::vector<std::string_view> &pieces,
                          std::string &error);

private:
  Gpt2Tokenizer() = default;

  /// Appends the ids of one piece (step 2).
  void encodePiece(std::string_view piece, std::vector<int64_t> &ids);

  std::string dir_;
  /// vocab.json as read: token string -> id.
  std::unordered_map<std::string, int32_t> vocab_;
  /// id -> the bytes the token stands for (gaps allowed).
  tokenizers::TokenTable tokenBytes_;
  /// byte -> the id of its one-byte token.
  std::array<int32_t, 256> byteIds_{};
  /// (left id, right id) -> rank in merges.txt and the merged token's id.
  tokenizers::MergeTable merges_;
  /// piece bytes -> ids (bounded: cleared when it grows past a limit).
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZER_H
