//===- MarianTokenizer.cpp - Marian source.spm + vocab.json ---------------===//
//
// See MarianTokenizer.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/MarianTokenizer.h"
#include "runtime/tokenizers/SentencePieceTokenizer.h"
#include "support/FileIO.h"
#include "support/Text.h"
#include "runtime/tokenizers/Common.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <algorithm>

namespace tfmc::runtime {
namespace {

using Json = nlohmann::json;

/// Hugging Face's ">>.+<<" language codes: the one at the start of `text`
/// (if any) into `code`, every match removed from `text`.
void splitLanguageCode(std::string_view text, std::string &code,
                       std::string &rest) {
  code.clear();
  rest.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, ">>") == 0) {
      std::size_t eol = text.find('\n', i);
      std::string_view line =
          text.substr(i, eol == std::string_view::npos ? eol : eol - i);
      std::size_t close = line.rfind("<<");
      if (close != std::string_view::npos && close >= 3) {
        if (i == 0)
          code = std::string(line.substr(0, close + 2));
        i += close + 2;
        continue;
      }
    }
    rest += text[i++];
  }
}

class MarianTokenizer final : public Tokenizer {
public:
  explicit MarianTokenizer(std::string dir) : dir_(std::move(dir)) {}

  bool load(std::string &error) {
    std::string prefix = dir_;
    if (!prefix.empty() && prefix.back() != '/')
      prefix += '/';
    for (const char *name : {"source.spm", "target.spm", "vocab.json"})
      if (!tokenizers::exists(prefix + name)) {
        error = fmt::format("{}: missing {} (a Marian tokenizer needs "
                            "source.spm, target.spm and vocab.json)",
                            dir_, name);
        return false;
      }
    if (!loadSentencePieceModel(prefix + "source.spm", source_, error) ||
        !loadSentencePieceModel(prefix + "target.spm", target_, error))
      return false;

    std::string eos = "</s>", unk = "<unk>", pad = "<pad>";
    const std::string configPath = prefix + "tokenizer_config.json";
    if (tokenizers::exists(configPath)) {
      Json config;
      if (!tokenizers::readJsonFile(configPath, config, error))
        return false;
      if (!config.is_object()) {
        error = fmt::format("{}: expected a JSON object", configPath);
        return false;
      }
      for (auto [key, value] :
           {std::pair<const char *, std::string *>{"eos_token", &eos},
            {"unk_token", &unk},
            {"pad_token", &pad}}) {
        if (!config.contains(key) || config[key].is_null())
          continue;
        const Json &v = config[key];
        if (v.is_string())
          *value = v.get<std::string>();
        else if (v.is_object() && v.contains("content") &&
                 v["content"].is_string())
          *value = v["content"].get<std::string>();
        else {
          error = fmt::format("{}: {} must be a string", configPath, key);
          return false;
        }
      }
      if (config.contains("separate_vocabs") &&
          config["separate_vocabs"].is_boolean() &&
          config["separate_vocabs"].get<bool>()) {
        error = fmt::format("{}: separate_vocabs (a target_vocab.json) is not "
                            "supported",
                            configPath);
        return false;
      }
    }

    const std::string vocabPath = prefix + "vocab.json";
    Json vocab;
    if (!tokenizers::readJsonFile(vocabPath, vocab, error))
      return false;
    if (!vocab.is_object()) {
      error =
          fmt::format("{}: expected a JSON object of piece -> id", vocabPath);
      return false;
    }
    for (const auto &[piece, id] : vocab.items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
          id.get<int64_t>() >= (int64_t(1) << 31)) {
        error = fmt::format("{}: the id of {} is not an integer in [0, 2^31)",
                            vocabPath, support::quoteJson(piece));
        return false;
      }
      int64_t v = id.get<int64_t>();
      if (pieces_.has(v)) {
        error = fmt::format("{}: id {} is given to both {} and {}", vocabPath,
                            v, support::quoteJson(pieces_.at(v)),
                            support::quoteJson(piece));
        return false;
      }
      pieces_.insert(v, piece);
      ids_.emplace(piece, v);
    }
    for (auto [token, id] :
         {std::pair<const std::string *, int64_t *>{&eos, &eos_},
          {&unk, &unk_},
          {&pad, &pad_}}) {
      auto it = ids_.find(*token);
      if (it == ids_.end()) {
        if (id == &pad_)
          continue;
        error = fmt::format("{}: no {} (the tokenizer needs it)", vocabPath,
                            support::quoteJson(*token));
        return false;
      }
      *id = it->second;
      if (!token->empty())
        specials_.push_back(*token);
    }
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const std::string &x, const std::string &y) {
                       return x.size() > y.size();
                     });
    return true;
  }

  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override {
    ids.clear();
    if (!validateUtf8(utf8, error))
      return false;
    // Special tokens in the text are kept whole (longest first); each chunk
    // between them is a text of its own, language code included.
    std::vector<std::string> pieces;
    auto chunk = [&](std::string_view text) {
      if (text.empty())
        return true;
      std::string code, rest;
      splitLanguageCode(text, code, rest);
      if (!code.empty())
        pieces.push_back(code);
      std::vector<std::string> spm;
      sentencepiece::util::Status status = source_.Encode(rest, &spm);
      if (!status.ok()) {
        error = fmt::format("{}: {}", dir_, support::oneLine(status.ToString()));
        return false;
      }
      pieces.insert(pieces.end(), spm.begin(), spm.end());
      return true;
    };
    std::size_t start = 0;
    for (std::size_t i = 0; i < utf8.size(); ++i) {
      for (const std::string &special : specials_) {
        if (utf8.compare(i, special.size(), special) != 0)
          continue;
        if (!chunk(utf8.substr(start, i - start)))
          return false;
        pieces.push_back(special);
        i += special.size() - 1;
        start = i + 1;
        break;
      }
    }
    if (!chunk(utf8.substr(start)))
      return false;
    for (const std::string &piece : pieces) {
      auto it = ids_.find(piece);
      ids.push_back(it == ids_.end() ? unk_ : it->second);
    }
    return true;
  }

  std::string decode(const std::vector<int64_t> &ids) const override {
    std::string text;
    std::vector<std::string> run;
    auto flush = [&] {
      std::string piece;
      if (!run.empty() && target_.Decode(run, &piece).ok())
        text += piece;
      run.clear();
    };
    for (int64_t id : ids) {
      if (!hasId(id)) {
        flush();
        text += tokenizers::kReplacement;
      } else if (id != eos_ && id != unk_ && id != pad_) {
        run.push_back(pieces_.at(id));
      }
    }
    flush();
    // Hugging Face replaces what is left of "▁" and strips the text.
    std::string out;
    for (std::size_t at = 0, next; at < text.size(); at = next) {
      next = text.find("\xE2\x96\x81", at);
      if (next == std::string::npos) {
        out.append(text, at, std::string::npos);
        break;
      }
      out.append(text, at, next - at).push_back(' ');
      next += 3;
    }
    std::size_t b = out.find_first_not_of(" \t\n\r\f\v");
    if (b == std::string::npos)
      return "";
    std::size_t e = out.find_last_not_of(" \t\n\r\f\v");
    return out.substr(b, e - b + 1);
  }

  bool hasId(int64_t id) const override { return pieces_.has(id); }
  int64_t vocabSize() const override { return pieces_.size(); }
  std::optional<int64_t> tokenId(std::string_view token) const override {
    if (auto it = ids_.find(std::string(token)); it != ids_.end())
      return it->second;
    return std::nullopt;
  }
  const std::string &directory() const override { return dir_; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    prefix.clear();
    suffix.assign(1, eos_);
    return true;
  }

private:
  std::string dir_;
  sentencepiece::SentencePieceProcessor source_, target_;
  std::unordered_map<std::string, int64_t> ids_;
  tokenizers::TokenTable pieces_; // vocab.json: id -> piece (gaps allowed)
  int64_t eos_ = -1, unk_ = -1, pad_ = -1;
  /// eos, unk and pad as spelled: matched whole in the text, longest first.
  std::vector<std::string> specials_;
};

} // namespace

std::unique_ptr<Tokenizer> loadMarianTokenizer(const std::string &dir,
                                               std::string &error) {
  auto tokenizer = std::make_unique<MarianTokenizer>(dir);
  if (!tokenizer->load(error))
    return nullptr;
  return tokenizer;
}

} // namespace tfmc::runtime
