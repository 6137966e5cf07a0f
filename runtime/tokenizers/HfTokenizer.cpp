//===- HfTokenizer.cpp - tokenizer.json (Hugging Face tokenizers) ---------===//
//
// See HfTokenizer.h. The pipeline is the `tokenizers` library's: added
// tokens split the raw text; each other segment is normalized, split by the
// pre-tokenizers into pieces, and each piece goes through the BPE model.
// nlohmann's exceptions stop in the loader; nothing else throws but
// std::bad_alloc.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/HfTokenizer.h"
#include "support/Text.h"
#include "runtime/tokenizers/Common.h"
#include "support/Json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <oniguruma.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace tfmc::runtime {
namespace tokenizers {

bool Regex::compile(const std::string &pattern, std::string &error) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
  OnigRegex regex = nullptr;
  OnigErrorInfo info;
  const auto *begin = reinterpret_cast<const OnigUChar *>(pattern.data());
  int status = onig_new(&regex, begin, begin + pattern.size(),
                        ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                        ONIG_SYNTAX_RUBY, &info);
  if (status != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, status, &info);
    error = support::oneLine(reinterpret_cast<char *>(message));
    return false;
  }
  regex_ = std::shared_ptr<void>(regex, [](void *r) {
    onig_free(static_cast<OnigRegex>(r));
  });
  return true;
}

std::vector<std::pair<std::size_t, std::size_t>>
Regex::findAll(const std::string &text) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  auto *regex = static_cast<OnigRegex>(regex_.get());
  const auto *begin = reinterpret_cast<const OnigUChar *>(text.data());
  const auto *end = begin + text.size();
  std::unique_ptr<OnigRegion, void (*)(OnigRegion *)> region(
      onig_region_new(), [](OnigRegion *r) { onig_region_free(r, 1); });
  std::size_t at = 0;
  while (at <= text.size()) {
    int found = onig_search(regex, begin, end, begin + at, end, region.get(),
                            ONIG_OPTION_NONE);
    if (found < 0)
      break; // ONIG_MISMATCH (or a resource limit: the rest is one gap)
    std::size_t start = region->beg[0], stop = region->end[0];
    if (stop == start) {
      // Step over one character.
      uint32_t cp = 0;
      std::size_t length =
          start < text.size() ? decodeUtf8(text, start, cp) : 1;
      at = start + std::max<std::size_t>(length, 1);
      continue;
    }
    matches.emplace_back(start, stop);
    at = stop;
  }
  return matches;
}

} // namespace tokenizers

namespace {

using Json = nlohmann::json;
using namespace tokenizers;

/// A text piece on its way through the pipeline; `atStart`: it begins at
/// offset 0 of the text given to encode (Metaspace's prepend_scheme
/// "first" prepends only there).
struct Piece {
  std::string text;
  bool atStart;
};

/// Reported by the loader: the JSON path and what is wrong there.
struct LoadError {
  std::string path;
  std::string message;
};

[[noreturn]] void refuse(const std::string &path, const std::string &message) {
  throw LoadError{path, message};
}

const Json &member(const Json &object, const std::string &path,
                   const char *key) {
  if (!object.is_object() || !object.contains(key))
    refuse(path, fmt::format("missing \"{}\"", key));
  return object[key];
}

std::string stringMember(const Json &object, const std::string &path,
                         const char *key) {
  const Json &value = member(object, path, key);
  if (!value.is_string())
    refuse(path + "." + key, "expected a string");
  return value.get<std::string>();
}

/// Metaspace's `replacement`: one character, as Hugging Face's tokenizers
/// require (a Rust `char`). An empty one never matched anything new, and
/// its decoder's replace loop never ended (issue 25).
std::string metaspaceReplacement(const Json &object, const std::string &path) {
  std::string replacement = stringMember(object, path, "replacement");
  // nlohmann's parser has checked the UTF-8: count the lead bytes.
  std::size_t characters = 0;
  for (unsigned char c : replacement)
    characters += (c & 0xC0) != 0x80;
  if (characters != 1)
    refuse(path + ".replacement",
           replacement.empty() ? "empty; expected one character"
                               : "expected one character");
  return replacement;
}

bool boolMember(const Json &object, const std::string &path, const char *key,
                bool fallback) {
  if (!object.contains(key) || object[key].is_null())
    return fallback;
  if (!object[key].is_boolean())
    refuse(path + "." + key, "expected true or false");
  return object[key].get<bool>();
}

std::string typeOf(const Json &component, const std::string &path) {
  if (!component.is_object())
    refuse(path, fmt::format("expected an object, got {}",
                             component.type_name()));
  return stringMember(component, path, "type");
}

/// A JSON scalar as messages show it (cut); containers by kind.
std::string describeValue(const Json &value) {
  if (value.is_string())
    return support::quoteJson(value.get<std::string>());
  if (value.is_array() || value.is_object())
    return value.is_array() ? "(an array)" : "(an object)";
  return value.dump();
}

[[noreturn]] void unsupported(const std::string &path, const char *what,
                              const std::string &type) {
  refuse(path, fmt::format("{} type {} is not supported", what,
                           support::quoteJson(type)));
}

/// Replace's and Split's `pattern`: {"String": s} or {"Regex": r}.
struct Pattern {
  bool isRegex = false;
  std::string text;
};

Pattern patternMember(const Json &object, const std::string &path) {
  const Json &pattern = member(object, path, "pattern");
  Pattern result;
  if (pattern.is_object() && pattern.size() == 1 &&
      pattern.contains("String") && pattern["String"].is_string()) {
    result.text = pattern["String"].get<std::string>();
  } else if (pattern.is_object() && pattern.size() == 1 &&
             pattern.contains("Regex") && pattern["Regex"].is_string()) {
    result.isRegex = true;
    result.text = pattern["Regex"].get<std::string>();
  } else {
    refuse(path + ".pattern", "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  if (result.text.empty())
    refuse(path + ".pattern", "empty pattern");
  return result;
}

//===----------------------------------------------------------------------===//
// Oniguruma
//===----------------------------------------------------------------------===//

Regex compileRegex(const std::string &pattern, const std::string &path) {
  Regex regex;
  std::string reason;
  if (!regex.compile(pattern, reason))
    refuse(path, fmt::format("regex {}: {}", support::quoteJson(pattern),
                             reason));
  return regex;
}

std::vector<std::pair<std::size_t, std::size_t>>
findAll(const Regex &regex, const std::string &text) {
  return regex.findAll(text);
}

//===----------------------------------------------------------------------===//
// Components
//===----------------------------------------------------------------------===//

struct Normalizer {
  enum Kind { Prepend, Replace, Nfc } kind;
  std::string from, to;

  void apply(std::string &text) const {
    switch (kind) {
    case Prepend:
      if (!text.empty())
        text.insert(0, to);
      return;
    case Replace:
      replaceAll(text, from, to);
      return;
    case Nfc: {
      utf8proc_uint8_t *composed = nullptr;
      utf8proc_ssize_t length = utf8proc_map(
          reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
          static_cast<utf8proc_ssize_t>(text.size()), &composed,
          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
      if (length >= 0) // the text is valid UTF-8: this always holds
        text.assign(reinterpret_cast<char *>(composed), length);
      std::free(composed);
      return;
    }
    }
  }
};

struct PreTokenizer {
  enum Kind { Split, ByteLevel, Metaspace, Digits } kind;
  // Split
  Pattern pattern;
  Regex regex;
  bool removeMatches = false; // behavior Removed (else Isolated)
  // ByteLevel
  bool addPrefixSpace = false;
  bool useRegex = true;
  // Metaspace
  std::string replacement;
  enum Scheme { Always, First, Never } prependScheme = Always;
  bool split = true;
  // Digits
  bool individualDigits = false;

  void apply(std::vector<Piece> &pieces) const;
};

/// Splits `piece` at [start, end) ranges: each range is a piece (unless
/// `dropRanges`), and so is each non-empty gap.
void splitAt(const Piece &piece,
             const std::vector<std::pair<std::size_t, std::size_t>> &ranges,
             bool dropRanges, std::vector<Piece> &out) {
  std::size_t at = 0;
  auto emit = [&](std::size_t from, std::size_t to) {
    if (to > from)
      out.push_back(Piece{piece.text.substr(from, to - from),
                          piece.atStart && from == 0});
  };
  for (const auto &[start, stop] : ranges) {
    emit(at, start);
    if (!dropRanges)
      emit(start, stop);
    at = stop;
  }
  emit(at, piece.text.size());
}

void PreTokenizer::apply(std::vector<Piece> &pieces) const {
  std::vector<Piece> out;
  for (Piece &piece : pieces) {
    switch (kind) {
    case Split: {
      std::vector<std::pair<std::size_t, std::size_t>> ranges;
      if (pattern.isRegex) {
        ranges = findAll(regex, piece.text);
      } else {
        for (std::size_t hit, at = 0;
             (hit = piece.text.find(pattern.text, at)) != std::string::npos;
             at = hit + pattern.text.size())
          ranges.emplace_back(hit, hit + pattern.text.size());
      }
      splitAt(piece, ranges, removeMatches, out);
      break;
    }
    case ByteLevel: {
      std::string text = piece.text;
      if (addPrefixSpace && (text.empty() || text[0] != ' '))
        text.insert(0, " ");
      std::vector<std::string_view> views;
      std::string unused;
      if (useRegex)
        Gpt2Tokenizer::pretokenize(text, views, unused); // text is valid
      else
        views.push_back(text);
      const std::array<uint32_t, 256> &table = byteTable();
      bool first = piece.atStart;
      for (std::string_view view : views) {
        Piece mapped{std::string(), first};
        first = false;
        for (char c : view)
          appendUtf8(mapped.text, table[static_cast<unsigned char>(c)]);
        out.push_back(std::move(mapped));
      }
      break;
    }
    case Metaspace: {
      std::string text = piece.text;
      replaceAll(text, " ", replacement);
      bool prepend = prependScheme == Always ||
                     (prependScheme == First && piece.atStart);
      if (prepend && text.rfind(replacement, 0) != 0)
        text.insert(0, replacement);
      if (!split) {
        out.push_back(Piece{std::move(text), piece.atStart});
        break;
      }
      // Each replacement starts a piece (MergedWithNext).
      std::size_t start = 0;
      for (std::size_t hit = text.find(replacement, 1);
           hit != std::string::npos;
           hit = text.find(replacement, hit + replacement.size())) {
        out.push_back(
            Piece{text.substr(start, hit - start), piece.atStart && !start});
        start = hit;
      }
      if (start < text.size())
        out.push_back(Piece{text.substr(start), piece.atStart && !start});
      break;
    }
    case Digits: {
      std::vector<std::pair<std::size_t, std::size_t>> ranges;
      for (std::size_t i = 0; i < piece.text.size();) {
        uint32_t cp = 0;
        std::size_t length = decodeUtf8(piece.text, i, cp);
        if (classify(cp) == kNumber) {
          if (!individualDigits && !ranges.empty() && ranges.back().second == i)
            ranges.back().second = i + length;
          else
            ranges.emplace_back(i, i + length);
        }
        i += length;
      }
      splitAt(piece, ranges, false, out);
      break;
    }
    }
  }
  pieces = std::move(out);
}

struct Decoder {
  enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
  std::string from, to; // Replace; Metaspace: from = the replacement
  std::string content;  // Strip
  std::size_t start = 0, stop = 0;
  bool stripFirst = true; // Metaspace: prepend_scheme is not "never"

  void apply(std::vector<std::string> &tokens) const;
};

void Decoder::apply(std::vector<std::string> &tokens) const {
  switch (kind) {
  case ByteLevel:
    for (std::string &token : tokens)
      token = tokenToBytes(token);
    return;
  case Replace:
    for (std::string &token : tokens)
      replaceAll(token, from, to);
    return;
  case ByteFallback:
    for (std::string &token : tokens)
      if (int value = byteFallbackValue(token); value >= 0)
        token = std::string(1, static_cast<char>(value));
    return;
  case Fuse: {
    std::string fused;
    for (const std::string &token : tokens)
      fused += token;
    tokens.assign(1, std::move(fused));
    return;
  }
  case Strip:
    for (std::string &token : tokens) {
      std::size_t begin = 0, end = token.size();
      for (std::size_t k = 0; k < start && end - begin >= content.size() &&
                              token.compare(begin, content.size(), content) == 0;
           ++k)
        begin += content.size();
      for (std::size_t k = 0;
           k < stop && end - begin >= content.size() &&
           token.compare(end - content.size(), content.size(), content) == 0;
           ++k)
        end -= content.size();
      token = token.substr(begin, end - begin);
    }
    return;
  case Metaspace:
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      replaceAll(tokens[i], from, " ");
      if (i == 0 && stripFirst && !tokens[i].empty() && tokens[i][0] == ' ')
        tokens[i].erase(0, 1);
    }
    return;
  }
}

//===----------------------------------------------------------------------===//
// The tokenizer
//===----------------------------------------------------------------------===//

class HfTokenizer final : public Tokenizer {
public:
  static std::unique_ptr<Tokenizer> load(const std::string &path,
                                         std::string &error);

  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override;
  std::string decode(const std::vector<int64_t> &ids) const override;
  bool hasId(int64_t id) const override { return idToToken_.has(id); }
  int64_t vocabSize() const override { return idToToken_.size(); }
  std::optional<int64_t> tokenId(std::string_view token) const override {
    std::string key(token);
    for (const AddedToken &added : added_)
      if (added.content == key)
        return added.id;
    auto it = bpe_.vocab.find(key);
    if (it == bpe_.vocab.end())
      return std::nullopt;
    return it->second;
  }
  const std::string &directory() const override { return path_; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    if (!hasTemplate_)
      return false;
    prefix = templatePrefix_;
    suffix = templateSuffix_;
    return true;
  }

private:
  void parse(const Json &root);
  void parseNormalizer(const Json &component, const std::string &path);
  void parsePreTokenizer(const Json &component, const std::string &path);
  void parseDecoder(const Json &component, const std::string &path);
  void parsePostProcessor(const Json &component, const std::string &path);
  void parseModel(const Json &model);
  void parseAddedTokens(const Json &tokens);
  void setToken(int64_t id, const std::string &token, const std::string &path);
  int32_t idOf(const std::string &token, const std::string &path) const;

  void encodePiece(const std::string &piece, std::vector<int64_t> &ids);

  std::string path_;
  std::vector<Normalizer> normalizers_;
  std::vector<PreTokenizer> preTokenizers_;
  std::vector<Decoder> decoders_;
  bool hasTemplate_ = false;
  std::vector<int64_t> templatePrefix_, templateSuffix_;

  /// The model: vocabulary, merges, byte fallback and unk.
  BpeModel bpe_;
  tokenizers::TokenTable idToToken_; // gaps allowed
  /// Added tokens, longest first (the longest match wins).
  /// An added token: matched in the raw text; lstrip and rstrip make the
  /// match take the White_Space before and after it (Phi-3's chat tokens).
  struct AddedToken {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  std::vector<AddedToken> added_;
};

void HfTokenizer::setToken(int64_t id, const std::string &token,
                           const std::string &path) {
  constexpr int64_t kMaxId = (int64_t(1) << 31) - 1;
  if (id < 0 || id >= kMaxId)
    refuse(path, fmt::format("id {} is out of range", id));
  if (token.empty())
    refuse(path, "empty token");
  idToToken_.assign(id, token);
}

int32_t HfTokenizer::idOf(const std::string &token,
                          const std::string &path) const {
  std::optional<int64_t> id = tokenId(token);
  if (!id)
    refuse(path, fmt::format("token {} is not in the vocabulary",
                             support::quoteJson(token)));
  return static_cast<int32_t>(*id);
}

void HfTokenizer::parseNormalizer(const Json &component,
                                  const std::string &path) {
  if (component.is_null())
    return;
  std::string type = typeOf(component, path);
  if (type == "Sequence") {
    const Json &list = member(component, path, "normalizers");
    if (!list.is_array())
      refuse(path + ".normalizers", "expected an array");
    for (std::size_t k = 0; k < list.size(); ++k)
      parseNormalizer(list[k], fmt::format("{}.normalizers[{}]", path, k));
  } else if (type == "Prepend") {
    normalizers_.push_back(
        {Normalizer::Prepend, "", stringMember(component, path, "prepend")});
  } else if (type == "Replace") {
    Pattern pattern = patternMember(component, path);
    if (pattern.isRegex)
      refuse(path + ".pattern", "a Regex pattern in Replace is not supported");
    normalizers_.push_back({Normalizer::Replace, pattern.text,
                            stringMember(component, path, "content")});
  } else if (type == "NFC") {
    normalizers_.push_back({Normalizer::Nfc, "", ""});
  } else {
    unsupported(path, "normalizer", type);
  }
}

void HfTokenizer::parsePreTokenizer(const Json &component,
                                    const std::string &path) {
  if (component.is_null())
    return;
  std::string type = typeOf(component, path);
  PreTokenizer step;
  if (type == "Sequence") {
    const Json &list = member(component, path, "pretokenizers");
    if (!list.is_array())
      refuse(path + ".pretokenizers", "expected an array");
    for (std::size_t k = 0; k < list.size(); ++k)
      parsePreTokenizer(list[k], fmt::format("{}.pretokenizers[{}]", path, k));
    return;
  }
  if (type == "Split") {
    step.kind = PreTokenizer::Split;
    step.pattern = patternMember(component, path);
    if (step.pattern.isRegex)
      step.regex = compileRegex(step.pattern.text, path + ".pattern");
    std::string behavior = stringMember(component, path, "behavior");
    if (behavior == "Removed")
      step.removeMatches = true;
    else if (behavior != "Isolated")
      refuse(path + ".behavior", fmt::format("behavior {} is not supported",
                                             support::quoteJson(behavior)));
    if (boolMember(component, path, "invert", false))
      refuse(path + ".invert", "invert = true is not supported");
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizer::ByteLevel;
    step.addPrefixSpace =
        boolMember(component, path, "add_prefix_space", true);
    step.useRegex = boolMember(component, path, "use_regex", true);
  } else if (type == "Metaspace") {
    step.kind = PreTokenizer::Metaspace;
    step.replacement = metaspaceReplacement(component, path);
    step.split = boolMember(component, path, "split", true);
    std::string scheme = "always";
    if (component.contains("prepend_scheme"))
      scheme = stringMember(component, path, "prepend_scheme");
    else if (!boolMember(component, path, "add_prefix_space", true))
      scheme = "never";
    if (scheme == "always")
      step.prependScheme = PreTokenizer::Always;
    else if (scheme == "first")
      step.prependScheme = PreTokenizer::First;
    else if (scheme == "never")
      step.prependScheme = PreTokenizer::Never;
    else
      refuse(path + ".prepend_scheme",
             fmt::format("unknown scheme {}", support::quoteJson(scheme)));
  } else if (type == "Digits") {
    step.kind = PreTokenizer::Digits;
    step.individualDigits =
        boolMember(component, path, "individual_digits", false);
  } else {
    unsupported(path, "pre_tokenizer", type);
  }
  preTokenizers_.push_back(std::move(step));
}

void HfTokenizer::parseDecoder(const Json &component,
                               const std::string &path) {
  if (component.is_null())
    return;
  std::string type = typeOf(component, path);
  Decoder step;
  if (type == "Sequence") {
    const Json &list = member(component, path, "decoders");
    if (!list.is_array())
      refuse(path + ".decoders", "expected an array");
    for (std::size_t k = 0; k < list.size(); ++k)
      parseDecoder(list[k], fmt::format("{}.decoders[{}]", path, k));
    return;
  }
  if (type == "ByteLevel") {
    step.kind = Decoder::ByteLevel;
  } else if (type == "Replace") {
    step.kind = Decoder::Replace;
    Pattern pattern = patternMember(component, path);
    if (pattern.isRegex)
      refuse(path + ".pattern", "a Regex pattern in Replace is not supported");
    step.from = pattern.text;
    step.to = stringMember(component, path, "content");
  } else if (type == "ByteFallback") {
    step.kind = Decoder::ByteFallback;
  } else if (type == "Fuse") {
    step.kind = Decoder::Fuse;
  } else if (type == "Strip") {
    step.kind = Decoder::Strip;
    step.content = stringMember(component, path, "content");
    for (const char *key : {"start", "stop"}) {
      const Json &value = member(component, path, key);
      if (!value.is_number_unsigned())
        refuse(path + "." + key, "expected a non-negative integer");
      (key[2] == 'a' ? step.start : step.stop) = value.get<std::size_t>();
    }
    if (step.content.empty())
      refuse(path + ".content", "empty content");
  } else if (type == "Metaspace") {
    step.kind = Decoder::Metaspace;
    step.from = metaspaceReplacement(component, path);
    if (component.contains("prepend_scheme"))
      step.stripFirst =
          stringMember(component, path, "prepend_scheme") != "never";
    else
      step.stripFirst = boolMember(component, path, "add_prefix_space", true);
  } else {
    unsupported(path, "decoder", type);
  }
  decoders_.push_back(std::move(step));
}

void HfTokenizer::parsePostProcessor(const Json &component,
                                     const std::string &path) {
  if (component.is_null())
    return;
  std::string type = typeOf(component, path);
  if (type == "Sequence") {
    const Json &list = member(component, path, "processors");
    if (!list.is_array())
      refuse(path + ".processors", "expected an array");
    for (std::size_t k = 0; k < list.size(); ++k)
      parsePostProcessor(list[k], fmt::format("{}.processors[{}]", path, k));
  } else if (type == "ByteLevel") {
    // Offsets only: no ids change.
  } else if (type == "TemplateProcessing") {
    // `single`: [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}]
    // with `special_tokens`: {"<s>": {"ids": [1]}}.
    const Json &single = member(component, path, "single");
    const Json &specials = member(component, path, "special_tokens");
    if (!single.is_array())
      refuse(path + ".single", "expected an array");
    hasTemplate_ = true;
    templatePrefix_.clear();
    templateSuffix_.clear();
    bool seenSequence = false;
    for (std::size_t k = 0; k < single.size(); ++k) {
      std::string at = fmt::format("{}.single[{}]", path, k);
      const Json &item = single[k];
      if (item.is_object() && item.contains("Sequence")) {
        seenSequence = true;
        continue;
      }
      if (!item.is_object() || !item.contains("SpecialToken"))
        refuse(at, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      std::string name = stringMember(item["SpecialToken"], at, "id");
      if (!specials.is_object() || !specials.contains(name))
        refuse(path + ".special_tokens",
               fmt::format("no entry for {}", support::quoteJson(name)));
      const Json &ids = member(specials[name], path + ".special_tokens", "ids");
      if (!ids.is_array())
        refuse(path + ".special_tokens", "expected an array of ids");
      for (const Json &id : ids) {
        if (!id.is_number_unsigned() || !hasId(id.get<int64_t>()))
          refuse(path + ".special_tokens",
                 fmt::format("{}: id {} is not in the vocabulary",
                             support::quoteJson(name), id.dump()));
        (seenSequence ? templateSuffix_ : templatePrefix_)
            .push_back(id.get<int64_t>());
      }
    }
  } else {
    unsupported(path, "post_processor", type);
  }
}

void HfTokenizer::parseModel(const Json &model) {
  const std::string path = "model";
  if (!model.is_object())
    refuse(path, "expected an object");
  std::string type = model.contains("type") ? typeOf(model, path) : "BPE";
  if (type != "BPE")
    unsupported(path, "model", type);
  if (model.contains("dropout") && !model["dropout"].is_null())
    refuse("model.dropout", "dropout is not supported");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() &&
        !(model[key].is_string() && model[key].get<std::string>().empty()))
      refuse(std::string("model.") + key,
             fmt::format("{} {} is not supported", key,
                         describeValue(model[key])));
  bpe_.byteFallback = boolMember(model, path, "byte_fallback", false);
  bpe_.fuseUnk = boolMember(model, path, "fuse_unk", false);
  bpe_.ignoreMerges = boolMember(model, path, "ignore_merges", false);

  const Json &vocab = member(model, path, "vocab");
  if (!vocab.is_object() || vocab.empty())
    refuse("model.vocab", "expected a non-empty object mapping tokens to ids");
  for (const auto &[token, id] : vocab.items()) {
    if (!id.is_number_integer())
      refuse("model.vocab", fmt::format("token {}: expected an integer id",
                                        support::quoteJson(token)));
    std::string at = fmt::format("model.vocab[{}]", support::quoteJson(token));
    if (idToToken_.has(id.get<int64_t>()))
      refuse(at, fmt::format("id {} is also token {}", id.get<int64_t>(),
                             support::quoteJson(idToToken_.at(id.get<int64_t>()))));
    setToken(id.get<int64_t>(), token, at);
    bpe_.vocab.emplace(token, static_cast<int32_t>(id.get<int64_t>()));
  }
  if (model.contains("unk_token") && !model["unk_token"].is_null())
    bpe_.unk = idOf(stringMember(model, path, "unk_token"), "model.unk_token");
  if (bpe_.byteFallback)
    for (int b = 0; b < 256; ++b) {
      auto it = bpe_.vocab.find(fmt::format("<0x{:02X}>", b));
      if (it != bpe_.vocab.end())
        bpe_.byteFallbackIds[b] = it->second;
    }

  const Json &merges = member(model, path, "merges");
  if (!merges.is_array())
    refuse("model.merges", "expected an array");
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    std::string at = fmt::format("model.merges[{}]", rank);
    const Json &merge = merges[rank];
    std::string left, right;
    if (merge.is_string()) {
      const std::string &text = merge.get_ref<const std::string &>();
      std::size_t space = text.find(' ');
      if (space == std::string::npos || space == 0 ||
          space + 1 == text.size() || text.find(' ', space + 1) != std::string::npos)
        refuse(at, fmt::format("expected two tokens separated by one space, "
                               "got {}",
                               support::quoteJson(text)));
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      refuse(at, "expected \"LEFT RIGHT\" or [\"LEFT\", \"RIGHT\"]");
    }
    // The first of duplicate merges wins, as in `tokenizers`.
    std::string missing;
    if (!bpe_.addMerge(left, right, static_cast<int32_t>(rank), missing))
      refuse(at, fmt::format("token {} is not in model.vocab",
                             support::quoteJson(missing)));
  }
}

void HfTokenizer::parseAddedTokens(const Json &tokens) {
  if (tokens.is_null())
    return;
  if (!tokens.is_array())
    refuse("added_tokens", "expected an array");
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    std::string at = fmt::format("added_tokens[{}]", k);
    const Json &token = tokens[k];
    std::string content = stringMember(token, at, "content");
    const Json &id = member(token, at, "id");
    if (!id.is_number_integer())
      refuse(at + ".id", "expected an integer");
    if (boolMember(token, at, "single_word", false))
      refuse(at + ".single_word",
             fmt::format("single_word = true is not supported (token {})",
                         support::quoteJson(content)));
    setToken(id.get<int64_t>(), content, at);
    added_.push_back({content, static_cast<int32_t>(id.get<int64_t>()),
                      boolMember(token, at, "lstrip", false),
                      boolMember(token, at, "rstrip", false)});
  }
  std::stable_sort(added_.begin(), added_.end(),
                   [](const AddedToken &a, const AddedToken &b) {
                     return a.content.size() > b.content.size();
                   });
}

void HfTokenizer::parse(const Json &root) {
  if (!root.is_object())
    refuse("(root)", "expected a JSON object");
  parseModel(member(root, "(root)", "model"));
  parseAddedTokens(root.value("added_tokens", Json()));
  if (root.contains("truncation") && !root["truncation"].is_null())
    refuse("truncation", "truncation is not supported");
  if (root.contains("padding") && !root["padding"].is_null())
    refuse("padding", "padding is not supported");
  parseNormalizer(root.value("normalizer", Json()), "normalizer");
  parsePreTokenizer(root.value("pre_tokenizer", Json()), "pre_tokenizer");
  parseDecoder(root.value("decoder", Json()), "decoder");
  parsePostProcessor(root.value("post_processor", Json()), "post_processor");
}

std::unique_ptr<Tokenizer> HfTokenizer::load(const std::string &path,
                                             std::string &error) {
  Json root;
  if (!readJsonFile(path, root, error))
    return nullptr;
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer());
  tokenizer->path_ = path;
  try {
    tokenizer->parse(root);
  } catch (const LoadError &e) {
    error = fmt::format("{}: {}: {}", path, e.path, e.message);
    return nullptr;
  } catch (const Json::exception &e) {
    error = fmt::format("{}: {}", path,
                        support::oneLine(support::jsonReason(e.what())));
    return nullptr;
  }
  return tokenizer;
}

//===----------------------------------------------------------------------===//
// Encoding and decoding
//===----------------------------------------------------------------------===//

void HfTokenizer::encodePiece(const std::string &piece,
                              std::vector<int64_t> &ids) {
  bpe_.encodePiece(piece, ids);
}

bool HfTokenizer::encode(std::string_view utf8, std::vector<int64_t> &ids,
                         std::string &error) {
  ids.clear();
  if (!validateUtf8(utf8, error))
    return false;
  auto encodeSegment = [&](std::size_t from, std::size_t to) {
    if (to <= from)
      return;
    std::string text(utf8.substr(from, to - from));
    for (const Normalizer &normalizer : normalizers_)
      normalizer.apply(text);
    std::vector<Piece> pieces{Piece{std::move(text), from == 0}};
    for (const PreTokenizer &step : preTokenizers_)
      step.apply(pieces);
    for (const Piece &piece : pieces)
      encodePiece(piece.text, ids);
  };
  auto spaceAt = [&](std::size_t at, std::size_t &length) {
    uint32_t cp = 0;
    length = decodeUtf8(utf8, at, cp);
    return length > 0 && classify(cp) == kSpace;
  };
  // Added tokens first: the longest that matches at the leftmost position;
  // with lstrip (rstrip) the match also takes the White_Space before (after)
  // it, which the text around it then loses (tokenizers' AddedVocabulary).
  std::size_t segment = 0;
  for (std::size_t i = 0; i < utf8.size();) {
    const AddedToken *match = nullptr;
    for (const AddedToken &added : added_)
      if (utf8.compare(i, added.content.size(), added.content) == 0) {
        match = &added;
        break;
      }
    if (!match) {
      ++i;
      continue;
    }
    std::size_t before = i, length = 0;
    while (match->lstrip && before > segment) {
      std::size_t start = before - 1;
      while (start > segment && (uint8_t(utf8[start]) & 0xC0) == 0x80)
        --start;
      if (!spaceAt(start, length) || start + length != before)
        break;
      before = start;
    }
    encodeSegment(segment, before);
    ids.push_back(match->id);
    i += match->content.size();
    while (match->rstrip && i < utf8.size() && spaceAt(i, length))
      i += length;
    segment = i;
  }
  encodeSegment(segment, utf8.size());
  return true;
}

std::string HfTokenizer::decode(const std::vector<int64_t> &ids) const {
  // An id that is no token stands as U+FFFD, which every decoder keeps.
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids)
    tokens.push_back(hasId(id) ? idToToken_.at(id) : std::string(kReplacement));
  for (const Decoder &decoder : decoders_)
    decoder.apply(tokens);
  std::string text;
  for (const std::string &token : tokens)
    text += token;
  return text;
}

} // namespace

std::unique_ptr<Tokenizer> loadHfTokenizer(const std::string &path,
                                           std::string &error) {
  return HfTokenizer::load(path, error);
}

} // namespace tfmc::runtime
