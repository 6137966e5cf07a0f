//===- WordPieceTokenizer.cpp - BERT's vocab.txt / WordPiece --------------===//
//
// See WordPieceTokenizer.h. Unicode categories, case mapping and NFD come
// from utf8proc.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/WordPieceTokenizer.h"
#include "support/FileIO.h"
#include "support/Text.h"
#include "runtime/tokenizers/Common.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tfmc::runtime {
namespace {

using Json = nlohmann::json;
using tokenizers::appendUtf8;
using tokenizers::decodeUtf8;

bool isControl(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r')
    return false;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_CC:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_CS:
  case UTF8PROC_CATEGORY_CO:
  case UTF8PROC_CATEGORY_CN:
    return true;
  default:
    return false;
  }
}

bool isWhitespace(uint32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r')
    return true;
  utf8proc_category_t c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  // Zl and Zp: Python's str.split and Rust's is_whitespace split on them.
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL ||
         c == UTF8PROC_CATEGORY_ZP;
}

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

bool isChinese(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/// Unicode's Cased property, near enough: a letter with case, or a
/// character with a case mapping.
bool isCased(uint32_t cp) {
  auto c = static_cast<utf8proc_int32_t>(cp);
  utf8proc_category_t cat = utf8proc_category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
         cat == UTF8PROC_CATEGORY_LT || utf8proc_tolower(c) != c ||
         utf8proc_toupper(c) != c;
}

/// Unicode's Case_Ignorable: marks, format characters, modifiers, and the
/// Word_Break MidLetter / MidNumLet / Single_Quote characters.
bool isCaseIgnorable(uint32_t cp) {
  switch (cp) {
  case 0x27:
  case 0x2E:
  case 0x3A:
  case 0xB7:
  case 0x387:
  case 0x55F:
  case 0x5F4:
  case 0x2018:
  case 0x2019:
  case 0x2024:
  case 0x2027:
  case 0xFE13:
  case 0xFE52:
  case 0xFE55:
  case 0xFF07:
  case 0xFF0E:
  case 0xFF1A:
    return true;
  default:
    break;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_SK:
    return true;
  default:
    return false;
  }
}

/// `word` lower-cased as Python's str.lower() (and JavaScript's
/// toLowerCase) does: utf8proc's simple mapping, but for U+0130 (İ -> i +
/// U+0307) and the final sigma (Σ -> ς after a cased letter and not before
/// one, case-ignorable characters skipped).
std::string lowerCase(const std::string &word) {
  std::vector<uint32_t> cps;
  for (std::size_t i = 0; i < word.size();) {
    uint32_t cp = 0;
    std::size_t n = decodeUtf8(word, i, cp);
    cps.push_back(cp);
    i += n;
  }
  std::string out;
  for (std::size_t k = 0; k < cps.size(); ++k) {
    uint32_t cp = cps[k];
    if (cp == 0x130) {
      out += "i\xCC\x87";
      continue;
    }
    if (cp == 0x3A3) {
      std::size_t before = k;
      while (before > 0 && isCaseIgnorable(cps[before - 1]))
        --before;
      std::size_t after = k + 1;
      while (after < cps.size() && isCaseIgnorable(cps[after]))
        ++after;
      if (before > 0 && isCased(cps[before - 1]) &&
          !(after < cps.size() && isCased(cps[after]))) {
        appendUtf8(out, 0x3C2);
        continue;
      }
    }
    appendUtf8(out, static_cast<uint32_t>(
                        utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

/// `word` lower-cased and/or without its accents (NFD, Mn dropped).
std::string normalizeWord(const std::string &word, bool lower, bool strip) {
  std::string out = lower ? lowerCase(word) : word;
  if (!strip)
    return out;
  utf8proc_uint8_t *nfd = nullptr;
  utf8proc_ssize_t length = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(out.data()),
      static_cast<utf8proc_ssize_t>(out.size()), &nfd,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  if (length < 0)
    return out; // valid UTF-8 always maps
  std::string decomposed(reinterpret_cast<char *>(nfd),
                         static_cast<std::size_t>(length));
  std::free(nfd);
  std::string stripped;
  for (std::size_t i = 0; i < decomposed.size();) {
    uint32_t cp = 0;
    std::size_t n = decodeUtf8(decomposed, i, cp);
    if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) !=
        UTF8PROC_CATEGORY_MN)
      stripped.append(decomposed, i, n);
    i += n;
  }
  return stripped;
}

/// Hugging Face's clean_up_tokenization.
std::string cleanUp(std::string text) {
  static const std::pair<const char *, const char *> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
      {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
      {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto &[from, to] : kRules) {
    std::string out;
    std::string_view f(from);
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(f, start)) != std::string::npos;
         start = at + f.size())
      out.append(text, start, at - start).append(to);
    out.append(text, start, std::string::npos);
    text = std::move(out);
  }
  return text;
}

bool getBool(const Json &object, const char *key, bool &value,
             const std::string &file, const std::string &where,
             std::string &error) {
  if (!object.contains(key) || object[key].is_null())
    return true;
  if (!object[key].is_boolean()) {
    error = fmt::format("{}: {}{} must be true or false", file, where, key);
    return false;
  }
  value = object[key].get<bool>();
  return true;
}

/// A token setting: a string, or an added-token object {"content": ...}.
bool getToken(const Json &object, const char *key, std::string &value,
              const std::string &file, std::string &error) {
  if (!object.contains(key) || object[key].is_null())
    return true;
  const Json &v = object[key];
  if (v.is_string()) {
    value = v.get<std::string>();
    return true;
  }
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    value = v["content"].get<std::string>();
    return true;
  }
  error = fmt::format("{}: {} must be a string", file, key);
  return false;
}

/// tokenizer_config.json (optional) beside a tokenizer: the settings of the
/// slow tokenizer, and model_max_length.
bool readConfig(const std::string &path, bool withNormalizer,
                WordPieceTokenizer::Options &options,
                std::array<std::string *, 5> tokens, std::size_t &maxLength,
                std::string &error) {
  if (!tokenizers::exists(path))
    return true;
  Json config;
  if (!tokenizers::readJsonFile(path, config, error))
    return false;
  if (!config.is_object()) {
    error = fmt::format("{}: expected a JSON object", path);
    return false;
  }
  if (withNormalizer) {
    bool lower = true, chinese = true;
    if (!getBool(config, "do_lower_case", lower, path, "", error) ||
        !getBool(config, "tokenize_chinese_chars", chinese, path, "", error))
      return false;
    bool strip = lower;
    if (!getBool(config, "strip_accents", strip, path, "", error))
      return false;
    options.lowercase = lower;
    options.stripAccents = strip;
    options.chineseChars = chinese;
    static const char *kKeys[] = {"unk_token", "cls_token", "sep_token",
                                  "pad_token", "mask_token"};
    for (std::size_t k = 0; k < 5; ++k)
      if (!getToken(config, kKeys[k], *tokens[k], path, error))
        return false;
  }
  if (!getBool(config, "clean_up_tokenization_spaces", options.cleanupSpaces,
               path, "", error))
    return false;
  if (config.contains("model_max_length")) {
    const Json &m = config["model_max_length"];
    // Tokenizers without a limit say 1e30 (a float).
    if (m.is_number_unsigned() && m.get<uint64_t>() > 0 &&
        m.get<uint64_t>() < (uint64_t(1) << 31))
      maxLength = static_cast<std::size_t>(m.get<uint64_t>());
    else if (!m.is_number() || m.get<double>() < 1) {
      error =
          fmt::format("{}: model_max_length must be a positive integer", path);
      return false;
    }
  }
  return true;
}

} // namespace

void WordPieceTokenizer::basicTokenize(std::string_view utf8,
                                       const Options &options,
                                       std::vector<std::string> &words) {
  words.clear();
  std::string word;
  auto flush = [&] {
    if (word.empty())
      return;
    std::string normal =
        normalizeWord(word, options.lowercase, options.stripAccents);
    word.clear();
    // Each punctuation character is a word of its own.
    std::string run;
    for (std::size_t i = 0; i < normal.size();) {
      uint32_t cp = 0;
      std::size_t n = decodeUtf8(normal, i, cp);
      if (isPunctuation(cp)) {
        if (!run.empty())
          words.push_back(std::move(run));
        run.clear();
        words.emplace_back(normal, i, n);
      } else {
        run.append(normal, i, n);
      }
      i += n;
    }
    if (!run.empty())
      words.push_back(std::move(run));
  };
  for (std::size_t i = 0; i < utf8.size();) {
    uint32_t cp = 0;
    std::size_t n = decodeUtf8(utf8, i, cp);
    if (n == 0) { // not reached: the text is validated first
      ++i;
      continue;
    }
    std::string_view ch = utf8.substr(i, n);
    i += n;
    if (options.cleanText && (cp == 0 || cp == 0xFFFD || isControl(cp)))
      continue;
    if (isWhitespace(cp)) {
      flush();
    } else if (options.chineseChars && isChinese(cp)) {
      flush();
      word.assign(ch);
      flush();
    } else {
      word.append(ch);
    }
  }
  flush();
}

void WordPieceTokenizer::encodeWord(const std::string &word,
                                    std::vector<int64_t> &ids) const {
  std::size_t chars = 0;
  for (unsigned char c : word)
    chars += (c & 0xC0) != 0x80;
  if (chars > options_.maxWordChars) {
    ids.push_back(unk_);
    return;
  }
  std::size_t first = ids.size();
  std::string candidate;
  for (std::size_t start = 0; start < word.size();) {
    // Longest match first: try every character boundary from the end.
    std::size_t end = word.size();
    int64_t found = -1;
    while (end > start) {
      candidate.clear();
      if (start > 0)
        candidate = options_.prefix;
      candidate.append(word, start, end - start);
      if (auto it = vocab_.find(candidate); it != vocab_.end()) {
        found = it->second;
        break;
      }
      do
        --end;
      while (end > start &&
             (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (found < 0) {
      ids.resize(first);
      ids.push_back(unk_);
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

bool WordPieceTokenizer::encode(std::string_view utf8,
                                std::vector<int64_t> &ids, std::string &error) {
  ids.clear();
  if (!validateUtf8(utf8, error))
    return false;
  std::vector<std::string> words;
  auto plain = [&](std::string_view text) {
    basicTokenize(text, options_, words);
    for (const std::string &word : words)
      encodeWord(word, ids);
  };
  std::size_t start = 0;
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    for (const std::string &special : specials_) {
      if (utf8.compare(i, special.size(), special) != 0)
        continue;
      plain(utf8.substr(start, i - start));
      ids.push_back(vocab_.at(special));
      i += special.size() - 1;
      start = i + 1;
      break;
    }
  }
  plain(utf8.substr(start));
  return true;
}

bool WordPieceTokenizer::encodeForModel(std::string_view a,
                                        const std::string_view *b,
                                        std::size_t maxLength,
                                        std::vector<int64_t> &ids,
                                        std::vector<int64_t> &typeIds,
                                        std::string &error) {
  ids.clear();
  typeIds.clear();
  std::vector<int64_t> first, second;
  if (!encode(a, first, error) || (b && !encode(*b, second, error)))
    return false;
  std::size_t specials = b ? 3 : 2;
  if (maxLength == 0)
    maxLength = maxLength_;
  std::size_t total = first.size() + second.size() + specials;
  if (maxLength != 0 && total > maxLength) {
    if (maxLength < specials) {
      error = fmt::format("a maximum length of {} leaves no room for the {} "
                          "special tokens",
                          maxLength, specials);
      return false;
    }
    while (first.size() + second.size() + specials > maxLength) {
      if (first.size() > second.size())
        first.pop_back();
      else
        second.pop_back();
    }
    std::fprintf(stderr,
                 "warning: the input was truncated from %zu to %zu tokens "
                 "(the maximum length)\n",
                 total, maxLength);
  }
  ids.push_back(cls_);
  ids.insert(ids.end(), first.begin(), first.end());
  ids.push_back(sep_);
  typeIds.assign(ids.size(), 0);
  if (b) {
    ids.insert(ids.end(), second.begin(), second.end());
    ids.push_back(sep_);
    typeIds.resize(ids.size(), 1);
  }
  return true;
}

std::string WordPieceTokenizer::decode(const std::vector<int64_t> &ids) const {
  std::string text;
  bool firstToken = true;
  for (int64_t id : ids) {
    if (!hasId(id)) {
      if (!firstToken)
        text += ' ';
      text += tokenizers::kReplacement;
      firstToken = false;
      continue;
    }
    const std::string &token = tokens_[id];
    if (!firstToken &&
        token.compare(0, options_.prefix.size(), options_.prefix) == 0)
      text.append(token, options_.prefix.size(), std::string::npos);
    else {
      if (!firstToken)
        text += ' ';
      text += token;
    }
    firstToken = false;
  }
  return options_.cleanupSpaces ? cleanUp(std::move(text)) : text;
}

std::optional<int64_t>
WordPieceTokenizer::tokenId(std::string_view token) const {
  if (auto it = vocab_.find(std::string(token)); it != vocab_.end())
    return it->second;
  return std::nullopt;
}

bool WordPieceTokenizer::finish(const std::string &file, std::string &error) {
  auto lookup = [&](const std::string &token, int64_t &id, bool required) {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) {
      if (required)
        error = fmt::format("{}: no token {} (the tokenizer needs it)", file,
                            support::quoteJson(token));
      return !required;
    }
    id = it->second;
    return true;
  };
  if (!lookup(unkToken_, unk_, true) || !lookup(clsToken_, cls_, true) ||
      !lookup(sepToken_, sep_, true) || !lookup(padToken_, pad_, false))
    return false;
  for (const std::string *s :
       {&unkToken_, &clsToken_, &sepToken_, &padToken_, &maskToken_})
    if (!s->empty() && vocab_.count(*s) &&
        std::find(specials_.begin(), specials_.end(), *s) == specials_.end())
      specials_.push_back(*s);
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const std::string &x, const std::string &y) {
                     return x.size() > y.size();
                   });
  return true;
}

std::unique_ptr<WordPieceTokenizer>
WordPieceTokenizer::fromVocabTxt(const std::string &dir, std::string &error) {
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/')
    prefix += '/';
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  t->path_ = dir;
  const std::string file = prefix + "vocab.txt";
  std::string text;
  if (!support::readRegularFile(file, text, error))
    return nullptr;
  std::size_t line = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string token = text.substr(start, end - start);
    start = end + 1;
    ++line;
    if (token.empty()) {
      error = fmt::format("{}:{}: empty token", file, line);
      return nullptr;
    }
    if (!support::isValidUtf8(token)) {
      error = fmt::format("{}:{}: not valid UTF-8", file, line);
      return nullptr;
    }
    auto [it, added] =
        t->vocab_.emplace(token, static_cast<int64_t>(t->tokens_.size()));
    if (!added) {
      error = fmt::format("{}:{}: token {} repeated (first on line {})", file,
                          line, support::quoteJson(token), it->second + 1);
      return nullptr;
    }
    t->tokens_.push_back(std::move(token));
  }
  if (t->tokens_.empty()) {
    error = fmt::format("{}: empty vocabulary", file);
    return nullptr;
  }
  if (!readConfig(prefix + "tokenizer_config.json", true, t->options_,
                  {&t->unkToken_, &t->clsToken_, &t->sepToken_, &t->padToken_,
                   &t->maskToken_},
                  t->maxLength_, error) ||
      !t->finish(file, error))
    return nullptr;
  return t;
}

std::unique_ptr<WordPieceTokenizer>
WordPieceTokenizer::fromTokenizerJson(const std::string &path, const Json &root,
                                      std::string &error) {
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  t->path_ = path;
  Options &o = t->options_;
  auto bad = [&](const std::string &where, const std::string &what) {
    error = fmt::format("{}: {}: {}", path, where, what);
    return nullptr;
  };
  auto typeOf = [](const Json &j) -> std::string {
    return j.is_object() && j.contains("type") && j["type"].is_string()
               ? j["type"].get<std::string>()
               : "";
  };
  const Json &model = root["model"];
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return bad("model.vocab", "expected an object of token -> id");
  for (const auto &[token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= (int64_t(1) << 31))
      return bad("model.vocab", fmt::format("the id of {} is not an integer "
                                            "in [0, 2^31)",
                                            support::quoteJson(token)));
    int64_t v = id.get<int64_t>();
    if (static_cast<std::size_t>(v) >= t->tokens_.size())
      t->tokens_.resize(v + 1);
    if (!t->tokens_[v].empty() || token.empty())
      return bad("model.vocab",
                 fmt::format("id {} given twice (or to an empty token)", v));
    t->tokens_[v] = token;
    t->vocab_.emplace(token, v);
  }
  if (model.contains("unk_token") && model["unk_token"].is_string())
    t->unkToken_ = model["unk_token"].get<std::string>();
  if (model.contains("continuing_subword_prefix") &&
      model["continuing_subword_prefix"].is_string())
    o.prefix = model["continuing_subword_prefix"].get<std::string>();
  if (model.contains("max_input_chars_per_word")) {
    const Json &m = model["max_input_chars_per_word"];
    // Matching a word costs up to the square of its length: the value is
    // bounded (a 100 KB word took over 20 s at 2^63 - 1). Hugging Face's
    // default, and every BERT checkpoint's, is 100.
    constexpr uint64_t kMaxWordChars = 1000;
    if (!m.is_number_unsigned())
      return bad("model.max_input_chars_per_word",
                 "expected a non-negative integer");
    if (m.get<uint64_t>() > kMaxWordChars)
      return bad("model.max_input_chars_per_word",
                 fmt::format("{} is more than tfmc's limit of {} (Hugging "
                             "Face's default is 100)",
                             m.get<uint64_t>(), kMaxWordChars));
    o.maxWordChars = m.get<std::size_t>();
  }

  const Json &norm = root.contains("normalizer") ? root["normalizer"] : Json();
  if (norm.is_null()) {
    o.cleanText = o.chineseChars = o.lowercase = o.stripAccents = false;
  } else if (typeOf(norm) == "BertNormalizer") {
    std::string where = "normalizer.";
    if (!getBool(norm, "clean_text", o.cleanText, path, where, error) ||
        !getBool(norm, "handle_chinese_chars", o.chineseChars, path, where,
                 error) ||
        !getBool(norm, "lowercase", o.lowercase, path, where, error))
      return nullptr;
    o.stripAccents = o.lowercase;
    if (!getBool(norm, "strip_accents", o.stripAccents, path, where, error))
      return nullptr;
  } else {
    return bad("normalizer", fmt::format("type '{}' is not supported with "
                                         "WordPiece (BertNormalizer is)",
                                         typeOf(norm)));
  }
  const Json &pre =
      root.contains("pre_tokenizer") ? root["pre_tokenizer"] : Json();
  if (typeOf(pre) != "BertPreTokenizer")
    return bad("pre_tokenizer",
               fmt::format("type '{}' is not supported with WordPiece "
                           "(BertPreTokenizer is)",
                           pre.is_null() ? "null" : typeOf(pre)));
  const Json &dec = root.contains("decoder") ? root["decoder"] : Json();
  if (!dec.is_null()) {
    if (typeOf(dec) != "WordPiece")
      return bad("decoder", fmt::format("type '{}' is not supported with "
                                        "WordPiece (WordPiece is)",
                                        typeOf(dec)));
    if (dec.contains("prefix") && dec["prefix"].is_string() &&
        dec["prefix"].get<std::string>() != o.prefix)
      return bad("decoder.prefix", "differs from the model's "
                                   "continuing_subword_prefix");
  }
  const Json &post =
      root.contains("post_processor") ? root["post_processor"] : Json();
  if (typeOf(post) == "BertProcessing") {
    for (const char *key : {"cls", "sep"}) {
      if (!post.contains(key) || !post[key].is_array() ||
          post[key].size() != 2 || !post[key][0].is_string())
        return bad(fmt::format("post_processor.{}", key),
                   "expected [token, id]");
      (key[0] == 'c' ? t->clsToken_ : t->sepToken_) =
          post[key][0].get<std::string>();
    }
  } else if (typeOf(post) == "TemplateProcessing") {
    const Json &single = post["single"];
    auto special = [&](const Json &piece, std::string &token) {
      if (piece.is_object() && piece.contains("SpecialToken") &&
          piece["SpecialToken"].contains("id") &&
          piece["SpecialToken"]["id"].is_string())
        token = piece["SpecialToken"]["id"].get<std::string>();
    };
    if (single.is_array() && single.size() == 3) {
      special(single[0], t->clsToken_);
      special(single[2], t->sepToken_);
    }
  } else if (!post.is_null()) {
    return bad("post_processor", fmt::format("type '{}' is not supported with "
                                             "WordPiece",
                                             typeOf(post)));
  }
  if (root.contains("added_tokens") && root["added_tokens"].is_array()) {
    for (const Json &added : root["added_tokens"]) {
      if (!added.is_object() || !added.contains("content") ||
          !added["content"].is_string() || !added.contains("id") ||
          !added["id"].is_number_integer())
        return bad("added_tokens", "expected objects with content and id");
      std::string content = added["content"].get<std::string>();
      auto it = t->vocab_.find(content);
      if (it == t->vocab_.end() || it->second != added["id"].get<int64_t>())
        return bad("added_tokens",
                   fmt::format("{} is not in model.vocab with id {}",
                               support::quoteJson(content),
                               added["id"].dump()));
      t->specials_.push_back(content);
    }
  }
  // tokenizer_config.json beside it: decoding's clean-up, model_max_length.
  std::string dir = path.substr(0, path.rfind('/') + 1);
  std::string ignored;
  if (!readConfig(dir + "tokenizer_config.json", false, o,
                  {&ignored, &ignored, &ignored, &ignored, &ignored},
                  t->maxLength_, error))
    return nullptr;
  if (dec.contains("cleanup") && dec["cleanup"].is_boolean() &&
      dec["cleanup"].get<bool>())
    o.cleanupSpaces = true;
  if (!t->finish(path, error))
    return nullptr;
  return t;
}

} // namespace tfmc::runtime
