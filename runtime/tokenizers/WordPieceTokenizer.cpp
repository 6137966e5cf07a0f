//===- WordPieceTokenizer.cpp - BERT's vocab.txt --------------------------===//

#include "runtime/tokenizers/WordPieceTokenizer.h"

#include "runtime/FileIO.h"
#include "runtime/tokenizers/Common.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <unordered_map>

namespace tfmc::runtime {
namespace {

using namespace tokenizers;
using Json = nlohmann::json;

/// A word longer than this many characters is [UNK] (BERT's
/// max_input_chars_per_word).
constexpr std::size_t kMaxWordChars = 100;

bool isWhitespace(uint32_t cp) {
  return cp == '\t' || cp == '\n' || cp == '\r' || classify(cp) == kSpace;
}

/// Rust's char::is_other (categories C*) but tab, newline and return.
bool isControl(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r')
    return false;
  utf8proc_category_t c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF ||
         c == UTF8PROC_CATEGORY_CS || c == UTF8PROC_CATEGORY_CO ||
         c == UTF8PROC_CATEGORY_CN;
}

/// BERT's punctuation: ASCII symbols that are not letters or digits, and
/// Unicode's P* categories.
bool isPunctuation(uint32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
      (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_PC:
  case UTF8PROC_CATEGORY_PD:
  case UTF8PROC_CATEGORY_PS:
  case UTF8PROC_CATEGORY_PE:
  case UTF8PROC_CATEGORY_PI:
  case UTF8PROC_CATEGORY_PF:
  case UTF8PROC_CATEGORY_PO:
    return true;
  default:
    return false;
  }
}

/// The CJK Unified Ideographs blocks BERT sets apart.
bool isChinese(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::vector<uint32_t> codePoints(std::string_view text) {
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    std::size_t n = decodeUtf8(text, i, cp);
    if (n == 0) { // validated before: not reached
      ++i;
      continue;
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}

class WordPieceTokenizer final : public Tokenizer {
public:
  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override {
    ids.clear();
    if (!validateUtf8(utf8, error))
      return false;
    // Special tokens written in the text stay whole; the text between them
    // is normalised and split.
    std::size_t start = 0, i = 0;
    while (i < utf8.size()) {
      const std::string *special = nullptr;
      for (const std::string &s : specials)
        if (utf8.compare(i, s.size(), s) == 0 &&
            (!special || s.size() > special->size()))
          special = &s;
      if (!special) {
        ++i;
        continue;
      }
      encodeText(utf8.substr(start, i - start), ids);
      ids.push_back(vocab.at(*special));
      i += special->size();
      start = i;
    }
    encodeText(utf8.substr(start), ids);
    return true;
  }

  std::string decode(const std::vector<int64_t> &ids) const override {
    std::string text;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::string token = hasId(ids[i]) ? tokens[ids[i]] : kReplacement;
      if (i != 0) {
        if (token.rfind("##", 0) == 0)
          token = token.substr(2);
        else
          token = " " + token;
      }
      text += cleanup(token);
    }
    return text;
  }

  bool hasId(int64_t id) const override {
    return id >= 0 && id < static_cast<int64_t>(tokens.size());
  }
  int64_t vocabSize() const override { return int64_t(tokens.size()); }
  std::optional<int64_t> tokenId(std::string_view token) const override {
    auto it = vocab.find(std::string(token));
    if (it == vocab.end())
      return std::nullopt;
    return it->second;
  }
  const std::string &directory() const override { return dir; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    if (cls < 0 || sep < 0)
      return false;
    prefix = {cls};
    suffix = {sep};
    return true;
  }

  std::string dir;
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int64_t> vocab;
  std::vector<std::string> specials;
  int64_t unk = -1, cls = -1, sep = -1;
  bool lowerCase = true, stripAccents = true, chineseChars = true;

private:
  /// The WordPiece decoder's clean-up of the spaces a join put before
  /// punctuation and contractions.
  static std::string cleanup(std::string text) {
    static const std::pair<const char *, const char *> kRules[] = {
        {" .", "."},       {" ?", "?"},     {" !", "!"},     {" ,", ","},
        {" ' ", "'"},      {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
        {" 's", "'s"},     {" 've", "'ve"}, {" 're", "'re"}};
    for (auto [from, to] : kRules) {
      std::string out;
      std::size_t at = 0, found;
      const std::size_t length = std::char_traits<char>::length(from);
      while ((found = text.find(from, at)) != std::string::npos) {
        out.append(text, at, found - at);
        out += to;
        at = found + length;
      }
      out.append(text, at, std::string::npos);
      text = std::move(out);
    }
    return text;
  }

  /// BertNormalizer's text, as code points.
  std::vector<uint32_t> normalize(std::string_view text) const {
    std::string cleaned;
    for (uint32_t cp : codePoints(text)) {
      if (cp == 0 || cp == 0xFFFD || isControl(cp))
        continue;
      if (isWhitespace(cp)) {
        cleaned += ' ';
      } else if (chineseChars && isChinese(cp)) {
        cleaned += ' ';
        appendUtf8(cleaned, cp);
        cleaned += ' ';
      } else {
        appendUtf8(cleaned, cp);
      }
    }
    std::vector<uint32_t> out;
    if (stripAccents) {
      utf8proc_uint8_t *decomposed = nullptr;
      utf8proc_ssize_t length = utf8proc_map(
          reinterpret_cast<const utf8proc_uint8_t *>(cleaned.data()),
          static_cast<utf8proc_ssize_t>(cleaned.size()), &decomposed,
          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
      if (length >= 0) {
        cleaned.assign(reinterpret_cast<const char *>(decomposed),
                       static_cast<std::size_t>(length));
        std::free(decomposed);
      }
      for (uint32_t cp : codePoints(cleaned))
        if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) !=
            UTF8PROC_CATEGORY_MN)
          out.push_back(cp);
    } else {
      out = codePoints(cleaned);
    }
    if (lowerCase)
      for (uint32_t &cp : out)
        cp = static_cast<uint32_t>(
            utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
    return out;
  }

  void encodeText(std::string_view text, std::vector<int64_t> &ids) const {
    if (text.empty())
      return;
    std::vector<uint32_t> chars = normalize(text);
    // Words: runs between whitespace; each punctuation character alone.
    std::vector<uint32_t> word;
    auto flush = [&]() {
      if (!word.empty())
        wordPiece(word, ids);
      word.clear();
    };
    for (uint32_t cp : chars) {
      if (isWhitespace(cp)) {
        flush();
      } else if (isPunctuation(cp)) {
        flush();
        word.push_back(cp);
        flush();
      } else {
        word.push_back(cp);
      }
    }
    flush();
  }

  /// Greedy longest-match-first split of one word.
  void wordPiece(const std::vector<uint32_t> &word,
                 std::vector<int64_t> &ids) const {
    if (word.size() > kMaxWordChars) {
      ids.push_back(unk);
      return;
    }
    std::vector<int64_t> pieces;
    std::size_t start = 0;
    while (start < word.size()) {
      std::size_t end = word.size();
      int64_t found = -1;
      while (start < end) {
        std::string piece = start > 0 ? "##" : "";
        for (std::size_t c = start; c < end; ++c)
          appendUtf8(piece, word[c]);
        auto it = vocab.find(piece);
        if (it != vocab.end()) {
          found = it->second;
          break;
        }
        --end;
      }
      if (found < 0) {
        ids.push_back(unk);
        return;
      }
      pieces.push_back(found);
      start = end;
    }
    ids.insert(ids.end(), pieces.begin(), pieces.end());
  }
};

/// A string option of tokenizer_config.json: its value, or `fallback`
/// when absent; an AddedToken object's "content" counts too.
bool stringOption(const Json &config, const char *key, const std::string &path,
                  std::string fallback, std::string &value,
                  std::string &error) {
  value = std::move(fallback);
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return true;
  const Json &item =
      it->is_object() && it->contains("content") ? (*it)["content"] : *it;
  if (!item.is_string()) {
    error = fmt::format("{}: {} must be a string", path, key);
    return false;
  }
  value = item.get<std::string>();
  return true;
}

bool boolOption(const Json &config, const char *key, const std::string &path,
                bool fallback, bool &value, std::string &error) {
  value = fallback;
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return true;
  if (!it->is_boolean()) {
    error = fmt::format("{}: {} must be true, false or null", path, key);
    return false;
  }
  value = it->get<bool>();
  return true;
}

} // namespace

std::unique_ptr<Tokenizer> loadWordPieceTokenizer(const std::string &dir,
                                                  std::string &error) {
  auto tokenizer = std::make_unique<WordPieceTokenizer>();
  tokenizer->dir = dir;
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/')
    prefix += '/';
  const std::string vocabPath = prefix + "vocab.txt";
  std::string text;
  if (!readRegularFile(vocabPath, text, error)) {
    error = fmt::format("{}: {}", vocabPath, error);
    return nullptr;
  }
  std::size_t line = 0, at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    std::string token = text.substr(at, end - at);
    if (!token.empty() && token.back() == '\r')
      token.pop_back();
    ++line;
    std::string why;
    if (!Tokenizer::validateUtf8(token, why)) {
      error = fmt::format("{}:{}: {}", vocabPath, line, why);
      return nullptr;
    }
    if (token.empty()) {
      error = fmt::format("{}:{}: empty line (vocab.txt holds one token per "
                          "line, its id the line number - 1)",
                          vocabPath, line);
      return nullptr;
    }
    if (!tokenizer->vocab.emplace(token, int64_t(line - 1)).second) {
      error = fmt::format("{}:{}: token {} is already line {}", vocabPath,
                          line, quoteToken(token),
                          tokenizer->vocab[token] + 1);
      return nullptr;
    }
    tokenizer->tokens.push_back(std::move(token));
    at = end + 1;
  }
  if (tokenizer->tokens.empty()) {
    error = fmt::format("{}: no tokens", vocabPath);
    return nullptr;
  }
  Json config = Json::object();
  const std::string configPath = prefix + "tokenizer_config.json";
  if (exists(configPath)) {
    if (!readJsonFile(configPath, config, error))
      return nullptr;
    if (!config.is_object()) {
      error = fmt::format("{}: expected a JSON object", configPath);
      return nullptr;
    }
  }
  std::string unk, cls, sep, pad, mask;
  bool strip = false;
  if (!boolOption(config, "do_lower_case", configPath, true,
                  tokenizer->lowerCase, error) ||
      !boolOption(config, "strip_accents", configPath, tokenizer->lowerCase,
                  strip, error) ||
      !boolOption(config, "tokenize_chinese_chars", configPath, true,
                  tokenizer->chineseChars, error) ||
      !stringOption(config, "unk_token", configPath, "[UNK]", unk, error) ||
      !stringOption(config, "cls_token", configPath, "[CLS]", cls, error) ||
      !stringOption(config, "sep_token", configPath, "[SEP]", sep, error) ||
      !stringOption(config, "pad_token", configPath, "[PAD]", pad, error) ||
      !stringOption(config, "mask_token", configPath, "[MASK]", mask, error))
    return nullptr;
  tokenizer->stripAccents = strip;
  auto id = [&](const std::string &token) -> int64_t {
    auto it = tokenizer->vocab.find(token);
    return it == tokenizer->vocab.end() ? -1 : it->second;
  };
  tokenizer->unk = id(unk);
  if (tokenizer->unk < 0) {
    error = fmt::format("{}: the unknown token {} is not in the vocabulary",
                        vocabPath, quoteToken(unk));
    return nullptr;
  }
  tokenizer->cls = id(cls);
  tokenizer->sep = id(sep);
  for (const std::string &special : {unk, cls, sep, pad, mask})
    if (id(special) >= 0 &&
        std::find(tokenizer->specials.begin(), tokenizer->specials.end(),
                  special) == tokenizer->specials.end())
      tokenizer->specials.push_back(special);
  return tokenizer;
}

} // namespace tfmc::runtime
