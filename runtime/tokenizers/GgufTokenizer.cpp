//===- GgufTokenizer.cpp - The tokenizer of a GGUF file's metadata --------===//
//
// See GgufTokenizer.h. The reference is llama.cpp's llama-vocab.cpp (as
// node-llama-cpp 3.22.1 ships it): load_vocab for the keys and defaults,
// tokenizer_st_partition for the special tokens, llm_tokenizer_spm_session
// and llm_tokenizer_bpe_session for the two kinds, token_to_piece and
// detokenize for decoding. The byte-pair merges are BpeModel's (Common.h),
// the pre-tokenizer regexes Oniguruma's through tokenizers::Regex, GPT-2's
// pattern Gpt2Tokenizer::pretokenize. Nothing here throws but std::bad_alloc.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/GgufTokenizer.h"
#include "runtime/tokenizers/Common.h"
#include "support/Gguf.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>

#include <sys/stat.h>

namespace tfmc::runtime {
namespace {

using namespace tokenizers;
using support::GgufFile;
using support::GgufType;
using support::GgufValue;

/// tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

/// llama.cpp's pre-tokenizer regexes (llm_tokenizer_bpe), applied one after
/// another: each match and each gap between matches is a piece.
const std::vector<std::string> kDefaultRegexes = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
};
const char kLlama3Regex[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kQwen2Regex[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/// The token texts llama.cpp's load_vocab takes for end of generation
/// (special_eog_ids) besides the eos, eot and eom ids.
const char *const kEndOfGeneration[] = {
    "<|eot_id|>",    "<|im_end|>",     "<|end|>",       "<|return|>",
    "<|call|>",      "<|flush|>",      "<|calls|>",     "<end_of_turn>",
    "<|endoftext|>", "</s>",           "<|eom_id|>",    "<EOT>",
    "_<EOT>",        "[EOT]",          "[EOS]",         "<|end_of_text|>",
    "<end_of_utterance>", "<eos>",     "<turn|>",       "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", // DeepSeek
    "[e~[",
};

const char kMeta[] = "\xe2\x96\x81"; // U+2581, SentencePiece's space

class GgufTokenizer final : public Tokenizer {
public:
  static std::unique_ptr<GgufTokenizer> load(const std::string &path,
                                             std::string &error);

  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override;
  std::string decode(const std::vector<int64_t> &ids) const override;
  bool hasId(int64_t id) const override {
    return id >= 0 && id < static_cast<int64_t>(texts_.size());
  }
  int64_t vocabSize() const override {
    return static_cast<int64_t>(texts_.size());
  }
  std::optional<int64_t> tokenId(std::string_view token) const override {
    auto it = bpe_.vocab.find(std::string(token));
    if (it == bpe_.vocab.end())
      return std::nullopt;
    return it->second;
  }
  const std::string &directory() const override { return path_; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    prefix = prompt_.prefix;
    suffix = prompt_.suffix;
    return true;
  }

  const PromptTokens &prompt() const { return prompt_; }
  const GgufChatInfo &chat() const { return chat_; }

private:
  enum class Kind { Spm, Bpe };

  bool loadFrom(const GgufFile &file, std::string &error);
  bool loadMerges(const GgufFile &file, std::string &error);
  /// llm_tokenizer_spm_session::tokenize on `text` (spaces escaped).
  bool encodeSpm(const std::string &text, std::vector<int64_t> &ids,
                 std::string &error) const;
  /// llm_tokenizer_bpe_session::tokenize on one fragment of raw text.
  void encodeBpe(const std::string &text, std::vector<int64_t> &ids);
  /// What token_to_piece gives `id` with special = true, lstrip = 0.
  std::string piece(int64_t id) const;

  Kind kind_ = Kind::Spm;
  std::string path_;
  std::vector<std::string> texts_;
  std::vector<int32_t> types_;
  std::vector<float> scores_;
  /// The control, user-defined and unknown tokens, longest first: matched
  /// in the text before anything else.
  std::vector<int32_t> specials_;
  bool addSpacePrefix_ = false;
  /// Every token by its text (bpe_.vocab) and, for "gpt2", the merges.
  BpeModel bpe_;
  /// "gpt2": GPT-2's pattern (Gpt2Tokenizer::pretokenize), else regexes_.
  bool gpt2Pattern_ = false;
  std::vector<Regex> regexes_;
  /// "llama": byte -> its <0xXX> token, else its one-byte token, else -1.
  std::array<int32_t, 256> byteIds_{};
  PromptTokens prompt_;
  GgufChatInfo chat_;
};

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

std::unique_ptr<GgufTokenizer> GgufTokenizer::load(const std::string &path,
                                                   std::string &error) {
  std::optional<GgufFile> file = support::readGgufFile(path, error);
  if (!file)
    return nullptr;
  std::unique_ptr<GgufTokenizer> tokenizer(new GgufTokenizer());
  tokenizer->path_ = path;
  if (!tokenizer->loadFrom(*file, error))
    return nullptr;
  return tokenizer;
}

bool GgufTokenizer::loadFrom(const GgufFile &file, std::string &error) {
  auto fail = [&](std::string_view key, const std::string &what) {
    error = fmt::format("{}: key '{}' {}", path_, key, what);
    return false;
  };
  constexpr std::string_view kModel = "tokenizer.ggml.model";
  if (!file.find(kModel)) {
    bool any = std::any_of(
        file.metadata().begin(), file.metadata().end(), [](const auto &kv) {
          return kv.key.rfind("tokenizer.ggml.", 0) == 0;
        });
    if (!any) {
      error = fmt::format("{}: no tokenizer: the file has no tokenizer.ggml.* "
                          "keys (give --tokenizer a directory or a GGUF file "
                          "with one)",
                          path_);
      return false;
    }
  }
  std::optional<std::string_view> model = file.getString(kModel, error);
  if (!model)
    return false;
  if (*model == "llama")
    kind_ = Kind::Spm;
  else if (*model == "gpt2")
    kind_ = Kind::Bpe;
  else
    return fail(kModel,
                fmt::format("is {}, which tfmc does not read (it reads "
                            "\"gpt2\", byte-level BPE, and \"llama\", "
                            "SentencePiece)",
                            support::quoteJson(*model)));

  // Tokens: every text once (llama.cpp asserts as much), an empty one as
  // llama.cpp names it.
  constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
  const GgufValue *tokens = file.getArray(kTokens, GgufType::String, error);
  if (!tokens)
    return false;
  const uint64_t n = tokens->size();
  if (n == 0)
    return fail(kTokens, "is empty");
  if (n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return fail(kTokens, fmt::format("has {} tokens, more than the {} tfmc "
                                     "reads",
                                     n, std::numeric_limits<int32_t>::max()));
  texts_.reserve(n);
  bpe_.vocab.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string text(tokens->stringAt(i));
    if (text.empty())
      text = fmt::format("[EMPTY_{}]", i);
    auto [it, fresh] = bpe_.vocab.emplace(text, static_cast<int32_t>(i));
    if (!fresh) {
      error = fmt::format("{}: key '{}': token {} {} is also token {}", path_,
                          kTokens, i, support::quoteJson(text), it->second);
      return false;
    }
    texts_.push_back(std::move(text));
  }

  // Scores (f32, or i32 as llama.cpp also reads), default 0.
  scores_.assign(n, 0.0f);
  constexpr std::string_view kScores = "tokenizer.ggml.scores";
  if (file.find(kScores)) {
    const GgufValue *scores = file.getArray(kScores, error);
    if (!scores)
      return false;
    if (scores->elementType() != GgufType::F32 &&
        scores->elementType() != GgufType::I32)
      return fail(kScores, fmt::format("is {}, expected an array of f32 or i32",
                                       scores->describeType()));
    if (scores->size() < n)
      return fail(kScores, fmt::format("has {} scores, but {} has {} tokens",
                                       scores->size(), kTokens, n));
    for (uint64_t i = 0; i < n; ++i) {
      support::GgufScalar value = scores->scalarAt(i);
      double score = value.type == GgufType::F32 ? *value.toFloat()
                                                 : double(*value.toSigned());
      if (!std::isfinite(score))
        return fail(kScores, fmt::format("gives token {} the score {}", i,
                                         value.format()));
      scores_[i] = static_cast<float>(score);
    }
  }

  // Token types, default normal.
  types_.assign(n, kNormal);
  constexpr std::string_view kTypes = "tokenizer.ggml.token_type";
  if (file.find(kTypes)) {
    const GgufValue *types = file.getArray(kTypes, GgufType::I32, error);
    if (!types)
      return false;
    if (types->size() < n)
      return fail(kTypes, fmt::format("has {} types, but {} has {} tokens",
                                      types->size(), kTokens, n));
    for (uint64_t i = 0; i < n; ++i) {
      int64_t type = *types->scalarAt(i).toSigned();
      types_[i] = type >= kNormal && type <= kByte
                      ? static_cast<int32_t>(type)
                      : kUndefined;
      if (types_[i] == kByte && byteFallbackValue(texts_[i]) < 0)
        return fail(kTypes,
                    fmt::format("gives token {} {} type 6 (byte), but a byte "
                                "token is spelled <0xXX>",
                                i, support::quoteJson(texts_[i])));
    }
  }
  for (uint64_t i = 0; i < n; ++i) {
    std::string unused;
    if ((types_[i] == kControl || types_[i] == kUserDefined ||
         types_[i] == kUnknown) &&
        validateUtf8(texts_[i], unused))
      specials_.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](int32_t a, int32_t b) {
                     return texts_[a].size() > texts_[b].size();
                   });

  // The kind's own keys.
  constexpr std::string_view kPre = "tokenizer.ggml.pre";
  bool llama3 = false;
  if (kind_ == Kind::Bpe) {
    std::string pre = "default";
    if (file.find(kPre)) {
      std::optional<std::string_view> value = file.getString(kPre, error);
      if (!value)
        return false;
      pre = std::string(*value);
    }
    std::vector<std::string> patterns;
    if (pre == "default") {
      patterns = kDefaultRegexes;
    } else if (pre == "gpt-2") {
      gpt2Pattern_ = true;
    } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
      patterns = {kLlama3Regex};
      llama3 = true;
      bpe_.ignoreMerges = true;
    } else if (pre == "qwen2") {
      patterns = {kQwen2Regex};
    } else {
      return fail(kPre, fmt::format("is {}, a pre-tokenizer tfmc does not "
                                    "implement (it implements \"default\", "
                                    "\"gpt-2\", \"llama-bpe\" and \"qwen2\")",
                                    support::quoteJson(pre)));
    }
    for (const std::string &pattern : patterns) {
      Regex regex;
      std::string reason;
      if (!regex.compile(pattern, reason)) // tfmc's own patterns: never
        return fail(kPre, "has a pattern Oniguruma refuses: " + reason);
      regexes_.push_back(std::move(regex));
    }
    if (!loadMerges(file, error))
      return false;
  } else {
    for (int b = 0; b < 256; ++b) {
      auto it = bpe_.vocab.find(fmt::format("<0x{:02X}>", b));
      if (it == bpe_.vocab.end())
        it = bpe_.vocab.find(std::string(1, static_cast<char>(b)));
      byteIds_[b] = it == bpe_.vocab.end() ? -1 : it->second;
    }
  }
  addSpacePrefix_ = kind_ == Kind::Spm;
  constexpr std::string_view kSpacePrefix = "tokenizer.ggml.add_space_prefix";
  if (file.find(kSpacePrefix)) {
    std::optional<bool> value = file.getBool(kSpacePrefix, error);
    if (!value)
      return false;
    addSpacePrefix_ = *value;
  }

  // Special ids: llama.cpp's defaults for "llama" (bos 1, eos 2, unk 0 when
  // the vocabulary has them); none for "gpt2" (llama.cpp's 11 is a GPT-NeoX
  // leftover that no converted file relies on).
  auto specialId = [&](const char *key, int64_t fallback, int64_t &id) {
    id = fallback < static_cast<int64_t>(n) ? fallback : -1;
    if (!file.find(key))
      return true;
    std::optional<uint64_t> value = file.getUnsigned(key, error);
    if (!value)
      return false;
    if (*value >= n)
      return fail(key, fmt::format("is {}, but {} has {} tokens", *value,
                                   kTokens, n));
    id = static_cast<int64_t>(*value);
    return true;
  };
  bool spm = kind_ == Kind::Spm;
  int64_t bos, eos, unk, pad, eot, eom;
  if (!specialId("tokenizer.ggml.bos_token_id", spm ? 1 : -1, bos) ||
      !specialId("tokenizer.ggml.eos_token_id", spm ? 2 : -1, eos) ||
      !specialId("tokenizer.ggml.unknown_token_id", spm ? 0 : -1, unk) ||
      !specialId("tokenizer.ggml.padding_token_id", -1, pad) ||
      !specialId("tokenizer.ggml.eot_token_id", -1, eot) ||
      !specialId("tokenizer.ggml.eom_token_id", -1, eom))
    return false;
  (void)unk; // unknown characters become bytes, as in llama.cpp
  (void)pad;

  // BOS/EOS around a prompt: llama.cpp's defaults (add_bos for "llama" and
  // Llama 3's pre-tokenizer), then the file's add_bos_token/add_eos_token.
  bool addBos = spm || llama3, addEos = false;
  for (auto [key, flag, id, idKey] :
       {std::tuple{"tokenizer.ggml.add_bos_token", &addBos, bos,
                   "tokenizer.ggml.bos_token_id"},
        std::tuple{"tokenizer.ggml.add_eos_token", &addEos, eos,
                   "tokenizer.ggml.eos_token_id"}}) {
    bool given = file.find(key) != nullptr;
    if (given) {
      std::optional<bool> value = file.getBool(key, error);
      if (!value)
        return false;
      *flag = *value;
    }
    if (*flag && id < 0) {
      if (given)
        return fail(key, fmt::format("is true, but the file has no {}", idKey));
      *flag = false; // a default the file cannot meet
    }
  }
  if (addBos)
    prompt_.prefix.push_back(bos);
  if (addEos)
    prompt_.suffix.push_back(eos);
  // A chat template, and the texts its bos_token and eos_token stand for.
  constexpr std::string_view kChatTemplate = "tokenizer.chat_template";
  if (file.find(kChatTemplate)) {
    std::optional<std::string_view> source = file.getString(kChatTemplate, error);
    if (!source)
      return false;
    chat_.chatTemplate = std::string(*source);
  }
  if (bos >= 0)
    chat_.bos = texts_[bos];
  if (eos >= 0)
    chat_.eos = texts_[eos];

  // Where generation stops: eos, eot and eom, then the tokens llama.cpp
  // takes for end of generation by their text (its special_eog_ids).
  auto stopAt = [&](int64_t id) {
    if (id >= 0 && std::find(prompt_.eos.begin(), prompt_.eos.end(), id) ==
                       prompt_.eos.end())
      prompt_.eos.push_back(id);
  };
  for (int64_t id : {eos, eot, eom})
    stopAt(id);
  for (const char *text : kEndOfGeneration)
    if (auto it = bpe_.vocab.find(text); it != bpe_.vocab.end())
      stopAt(it->second);
  return true;
}

bool GgufTokenizer::loadMerges(const GgufFile &file, std::string &error) {
  constexpr std::string_view kMerges = "tokenizer.ggml.merges";
  const GgufValue *merges = file.getArray(kMerges, GgufType::String, error);
  if (!merges)
    return false;
  if (merges->size() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    error = fmt::format("{}: key '{}' has {} merges, more than tfmc reads",
                        path_, kMerges, merges->size());
    return false;
  }
  for (uint64_t i = 0; i < merges->size(); ++i) {
    // llama.cpp splits at the first space after the first byte.
    std::string_view merge = merges->stringAt(i);
    std::size_t space = merge.size() > 1 ? merge.find(' ', 1)
                                         : std::string_view::npos;
    std::string missing;
    if (space == std::string_view::npos) {
      error = fmt::format("{}: key '{}': merge {} {} is not two tokens "
                          "separated by a space",
                          path_, kMerges, i, support::quoteJson(merge));
      return false;
    }
    if (!bpe_.addMerge(std::string(merge.substr(0, space)),
                       std::string(merge.substr(space + 1)),
                       static_cast<int32_t>(i), missing)) {
      error = fmt::format("{}: key '{}': merge {} {}: {} is not in "
                          "tokenizer.ggml.tokens",
                          path_, kMerges, i, support::quoteJson(merge),
                          support::quoteJson(missing));
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

bool GgufTokenizer::encode(std::string_view utf8, std::vector<int64_t> &ids,
                           std::string &error) {
  ids.clear();
  if (!validateUtf8(utf8, error))
    return false;
  // tokenizer_st_partition: each special token, longest first, splits the
  // raw text left of it into fragments at each of its occurrences.
  struct Fragment {
    int32_t token; // -1: raw text [offset, offset + length)
    std::size_t offset, length;
  };
  std::vector<Fragment> fragments, split;
  if (!utf8.empty())
    fragments.push_back({-1, 0, utf8.size()});
  for (int32_t special : specials_) {
    const std::string &text = texts_[special];
    split.clear();
    for (const Fragment &fragment : fragments) {
      if (fragment.token >= 0) {
        split.push_back(fragment);
        continue;
      }
      std::size_t at = fragment.offset, end = fragment.offset + fragment.length;
      std::string_view window = utf8.substr(0, end);
      for (std::size_t match; (match = window.find(text, at)) != std::string::npos;
           at = match + text.size()) {
        if (match > at)
          split.push_back({-1, at, match - at});
        split.push_back({special, 0, 0});
      }
      if (end > at)
        split.push_back({-1, at, end - at});
    }
    fragments.swap(split);
  }

  bool previousSpecial = true; // "llama": a space before the first text
  for (const Fragment &fragment : fragments) {
    if (fragment.token >= 0) {
      ids.push_back(fragment.token);
      previousSpecial = true;
      continue;
    }
    std::string text(utf8.substr(fragment.offset, fragment.length));
    if (kind_ == Kind::Bpe) {
      encodeBpe(text, ids);
      continue;
    }
    if (addSpacePrefix_ && previousSpecial)
      text.insert(0, " ");
    replaceAll(text, " ", kMeta);
    if (!encodeSpm(text, ids, error)) {
      ids.clear();
      return false;
    }
    previousSpecial = false;
  }
  return true;
}

void GgufTokenizer::encodeBpe(const std::string &text,
                              std::vector<int64_t> &ids) {
  // Pre-tokenize: GPT-2's pattern, or the regexes one after another.
  std::vector<std::string> pieces;
  if (gpt2Pattern_) {
    std::vector<std::string_view> views;
    std::string unused;
    Gpt2Tokenizer::pretokenize(text, views, unused); // text is valid UTF-8
    pieces.assign(views.begin(), views.end());
  } else {
    pieces.push_back(text);
    std::vector<std::string> next;
    for (const Regex &regex : regexes_) {
      next.clear();
      for (const std::string &piece : pieces) {
        std::size_t at = 0;
        for (const auto &[start, stop] : regex.findAll(piece)) {
          if (start > at)
            next.push_back(piece.substr(at, start - at));
          next.push_back(piece.substr(start, stop - start));
          at = stop;
        }
        if (at < piece.size())
          next.push_back(piece.substr(at));
      }
      pieces.swap(next);
    }
  }
  // Each piece's bytes as GPT-2's characters, then merged.
  const std::array<uint32_t, 256> &table = byteTable();
  std::string mapped;
  for (const std::string &piece : pieces) {
    mapped.clear();
    for (char c : piece)
      appendUtf8(mapped, table[static_cast<unsigned char>(c)]);
    bpe_.encodePiece(mapped, ids);
  }
}

bool GgufTokenizer::encodeSpm(const std::string &text,
                              std::vector<int64_t> &ids,
                              std::string &error) const {
  // One symbol per UTF-8 character, in a linked list.
  struct Symbol {
    int prev, next;
    std::size_t start, size;
  };
  std::vector<Symbol> symbols;
  for (std::size_t at = 0; at < text.size();) {
    auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    length = std::min(length, text.size() - at);
    int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, at + length == text.size() ? -1 : index + 1,
                       at, length});
    at += length;
  }
  // Candidate merges: the adjacent pairs that spell a token, the highest
  // score first, then the leftmost (llm_bigram_spm's order).
  struct Bigram {
    int left, right;
    float score;
    std::size_t size;
  };
  auto lower = [](const Bigram &a, const Bigram &b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(
      lower);
  auto tryAdd = [&](int left, int right) {
    if (left < 0 || right < 0)
      return;
    std::size_t size = symbols[left].size + symbols[right].size;
    auto it = bpe_.vocab.find(text.substr(symbols[left].start, size));
    if (it != bpe_.vocab.end())
      queue.push({left, right, scores_[it->second], size});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i)
    tryAdd(i - 1, i);
  while (!queue.empty()) {
    Bigram bigram = queue.top();
    queue.pop();
    Symbol &left = symbols[bigram.left], &right = symbols[bigram.right];
    if (left.size == 0 || right.size == 0 ||
        left.size + right.size != bigram.size)
      continue; // stale
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = bigram.left;
    tryAdd(left.prev, bigram.left);
    tryAdd(bigram.left, left.next);
  }
  // Each symbol is a token (every merge made one) or a character without
  // one: its bytes' tokens. (llama.cpp's resegment also looks the symbol up
  // among past merges; with every merge a token, that never happens.)
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const Symbol &symbol = symbols[i];
    auto it = bpe_.vocab.find(text.substr(symbol.start, symbol.size));
    if (it != bpe_.vocab.end()) {
      ids.push_back(it->second);
      continue;
    }
    for (std::size_t k = symbol.start; k < symbol.start + symbol.size; ++k) {
      auto byte = static_cast<unsigned char>(text[k]);
      if (byteIds_[byte] < 0) {
        error = fmt::format("{}: no token for byte 0x{:02x} of {} (the "
                            "vocabulary has neither <0x{:02X}> nor the byte)",
                            path_, byte,
                            support::quoteJson(
                                text.substr(symbol.start, symbol.size)),
                            byte);
        return false;
      }
      ids.push_back(byteIds_[byte]);
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

std::string GgufTokenizer::piece(int64_t id) const {
  const std::string &text = texts_[id];
  switch (types_[id]) {
  case kControl:
  case kUnknown:
  case kUserDefined:
    return text;
  case kNormal:
    if (kind_ == Kind::Bpe)
      return tokenToBytes(text);
    else {
      std::string unescaped = text;
      replaceAll(unescaped, kMeta, " ");
      return unescaped;
    }
  case kByte:
    return std::string(1, static_cast<char>(byteFallbackValue(text)));
  default: // unused, undefined
    return std::string();
  }
}

std::string GgufTokenizer::decode(const std::vector<int64_t> &ids) const {
  // As llama.cpp's detokenize (remove_special = false, unparse_special =
  // true, no clean-up of spaces): the first token loses one leading space
  // when the encoder adds one.
  std::string text;
  bool removeSpace = addSpacePrefix_;
  for (int64_t id : ids) {
    if (!hasId(id)) {
      text += kReplacement;
      removeSpace = false;
      continue;
    }
    std::string next = piece(id);
    if (removeSpace && !next.empty() && next[0] == ' ')
      next.erase(0, 1);
    removeSpace = false;
    text += next;
  }
  return text;
}

} // namespace

bool isGgufFile(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return false;
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0)
    return true;
  char magic[4] = {};
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return false;
  bool gguf = std::fread(magic, 1, 4, file) == 4 &&
              std::string_view(magic, 4) == "GGUF";
  std::fclose(file);
  return gguf;
}

std::unique_ptr<Tokenizer> loadGgufTokenizer(const std::string &path,
                                             std::string &error) {
  return GgufTokenizer::load(path, error);
}

bool readGgufPromptTokens(const Tokenizer &tokenizer, PromptTokens &tokens,
                          std::string &error) {
  const auto *gguf = dynamic_cast<const GgufTokenizer *>(&tokenizer);
  if (!gguf) {
    error = fmt::format("{}: not a GGUF file's tokenizer", tokenizer.directory());
    return false;
  }
  tokens = gguf->prompt();
  return true;
}

bool ggufChatInfo(const Tokenizer &tokenizer, GgufChatInfo &info) {
  const auto *gguf = dynamic_cast<const GgufTokenizer *>(&tokenizer);
  if (!gguf)
    return false;
  info = gguf->chat();
  return true;
}

} // namespace tfmc::runtime
