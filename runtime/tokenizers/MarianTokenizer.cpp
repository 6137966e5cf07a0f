//===- MarianTokenizer.cpp - Marian's source.spm / target.spm -------------===//

#include "runtime/tokenizers/MarianTokenizer.h"

#include "runtime/FileIO.h"
#include "runtime/Text.h"
#include "runtime/tokenizers/Common.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tfmc::runtime {
namespace {

using namespace tokenizers;
using Json = nlohmann::json;

/// SentencePiece's word-boundary mark, U+2581.
constexpr const char kBoundary[] = "\xE2\x96\x81";

bool loadModel(const std::string &path,
               sentencepiece::SentencePieceProcessor &model,
               std::string &error) {
  std::string bytes;
  if (!readRegularFile(path, bytes, error)) {
    error = fmt::format("{}: {}", path, error);
    return false;
  }
  sentencepiece::util::Status status = model.LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    std::string reason = status.error_message();
    if (std::size_t end = reason.find("] "); end != std::string::npos)
      reason = reason.substr(end + 2);
    if (reason.empty() || reason.find("ParseFromArray") != std::string::npos)
      reason = "the protobuf does not parse";
    error = fmt::format("{}: not a valid SentencePiece model ({})", path,
                        oneLine(reason));
    return false;
  }
  return true;
}

class MarianTokenizer final : public Tokenizer {
public:
  bool encode(std::string_view utf8, std::vector<int64_t> &ids,
              std::string &error) override {
    ids.clear();
    if (!validateUtf8(utf8, error))
      return false;
    std::string text(utf8);
    // A leading language code, >>xx<<, is a token of its own.
    if (text.rfind(">>", 0) == 0) {
      std::size_t end = text.find("<<", 2);
      if (end != std::string::npos && end > 2) {
        ids.push_back(idOf(text.substr(0, end + 2)));
        text = text.substr(end + 2);
      }
    }
    std::vector<std::string> pieces;
    sentencepiece::util::Status status = source.Encode(text, &pieces);
    if (!status.ok()) {
      error = fmt::format("{}: {}", dir, oneLine(status.ToString()));
      return false;
    }
    for (const std::string &piece : pieces)
      ids.push_back(idOf(piece));
    return true;
  }

  std::string decode(const std::vector<int64_t> &ids) const override {
    std::vector<std::string> pieces;
    std::string text;
    for (int64_t id : ids) {
      auto it = pieceOf.find(id);
      if (it == pieceOf.end()) {
        text += joined(pieces);
        pieces.clear();
        text += kReplacement;
        continue;
      }
      if (id == eos || id == pad || id == unk)
        continue;
      pieces.push_back(it->second);
    }
    text += joined(pieces);
    // HF: the boundary marks left are spaces, and the ends are stripped.
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      if (text.compare(i, 3, kBoundary) == 0) {
        out += ' ';
        i += 3;
      } else {
        out += text[i++];
      }
    }
    std::size_t first = out.find_first_not_of(' ');
    if (first == std::string::npos)
      return "";
    return out.substr(first, out.find_last_not_of(' ') - first + 1);
  }

  bool hasId(int64_t id) const override { return pieceOf.count(id) != 0; }
  int64_t vocabSize() const override {
    return pieceOf.empty() ? 0 : pieceOf.rbegin()->first + 1;
  }
  std::optional<int64_t> tokenId(std::string_view token) const override {
    auto it = vocab.find(std::string(token));
    if (it == vocab.end())
      return std::nullopt;
    return it->second;
  }
  const std::string &directory() const override { return dir; }
  bool ownSpecials(std::vector<int64_t> &prefix,
                   std::vector<int64_t> &suffix) const override {
    prefix.clear();
    suffix = {eos};
    return true;
  }

  std::string dir;
  sentencepiece::SentencePieceProcessor source, target;
  std::unordered_map<std::string, int64_t> vocab;
  std::map<int64_t, std::string> pieceOf;
  int64_t unk = -1, eos = -1, pad = -1;

private:
  int64_t idOf(const std::string &piece) const {
    auto it = vocab.find(piece);
    return it == vocab.end() ? unk : it->second;
  }
  std::string joined(const std::vector<std::string> &pieces) const {
    std::string text;
    if (!pieces.empty() && !target.Decode(pieces, &text).ok())
      return kReplacement;
    return text;
  }
};

bool stringOption(const Json &config, const char *key, const std::string &path,
                  const char *fallback, std::string &value,
                  std::string &error) {
  value = fallback;
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

} // namespace

std::unique_ptr<Tokenizer> loadMarianTokenizer(const std::string &dir,
                                               std::string &error) {
  auto tokenizer = std::make_unique<MarianTokenizer>();
  tokenizer->dir = dir;
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/')
    prefix += '/';
  for (const char *name : {"source.spm", "target.spm", "vocab.json"})
    if (!exists(prefix + name)) {
      error = fmt::format("{}: a Marian tokenizer needs source.spm, "
                          "target.spm and vocab.json; {} is missing",
                          dir, name);
      return nullptr;
    }
  if (!loadModel(prefix + "source.spm", tokenizer->source, error) ||
      !loadModel(prefix + "target.spm", tokenizer->target, error))
    return nullptr;
  const std::string vocabPath = prefix + "vocab.json";
  Json vocab;
  if (!readJsonFile(vocabPath, vocab, error))
    return nullptr;
  if (!vocab.is_object() || vocab.empty()) {
    error = fmt::format("{}: expected a JSON object of pieces and their ids",
                        vocabPath);
    return nullptr;
  }
  for (auto &[piece, value] : vocab.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() >= (int64_t(1) << 31)) {
      error = fmt::format("{}: the id of {} is not an integer in [0, 2^31)",
                          vocabPath, quoteToken(piece));
      return nullptr;
    }
    int64_t id = value.get<int64_t>();
    if (!tokenizer->pieceOf.emplace(id, piece).second) {
      error = fmt::format("{}: id {} is both {} and {}", vocabPath, id,
                          quoteToken(tokenizer->pieceOf[id]),
                          quoteToken(piece));
      return nullptr;
    }
    tokenizer->vocab.emplace(piece, id);
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
    if (config.value("separate_vocabs", false) == true) {
      error = fmt::format("{}: separate_vocabs (a target vocabulary of its "
                          "own) is not supported",
                          configPath);
      return nullptr;
    }
  }
  std::string unk, eos, pad;
  if (!stringOption(config, "unk_token", configPath, "<unk>", unk, error) ||
      !stringOption(config, "eos_token", configPath, "</s>", eos, error) ||
      !stringOption(config, "pad_token", configPath, "<pad>", pad, error))
    return nullptr;
  for (auto [name, token, slot] :
       {std::tuple{"unk_token", &unk, &tokenizer->unk},
        std::tuple{"eos_token", &eos, &tokenizer->eos},
        std::tuple{"pad_token", &pad, &tokenizer->pad}}) {
    auto it = tokenizer->vocab.find(*token);
    if (it == tokenizer->vocab.end()) {
      error = fmt::format("{}: the {} {} is not in it", vocabPath, name,
                          quoteToken(*token));
      return nullptr;
    }
    *slot = it->second;
  }
  return tokenizer;
}

} // namespace tfmc::runtime
