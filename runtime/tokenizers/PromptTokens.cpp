//===- PromptTokens.cpp - Which tokenizer, and BOS/EOS --------------------===//
//
// loadTokenizer: a GGUF file's metadata (GgufTokenizer.h: a regular file
// named *.gguf or starting with "GGUF"), else the first of tokenizer.json (WordPieceTokenizer when its
// model is WordPiece, else HfTokenizer), tokenizer.model, source.spm or
// target.spm (MarianTokenizer), vocab.json (+ merges.txt), vocab.txt
// (WordPieceTokenizer) present in the directory.
//
// readPromptTokens, the rules (a GGUF file: readGgufPromptTokens; else a
// Hugging Face checkpoint's files):
//   BOS (prefix) and suffix:
//     1. tokenizer_config.json's add_bos_token / add_eos_token, where
//        present, decide each side: bos_token (eos_token) is added, a
//        string or {"content": ...}, looked up in the tokenizer;
//     2. otherwise what the tokenizer's own file says: tokenizer.json's
//        post_processor (TemplateProcessing: the special tokens before and
//        after $A), tokenizer.model's bos_id (as Hugging Face's
//        LlamaTokenizer, whose add_bos_token defaults to true), BERT's
//        [CLS] ... [SEP], Marian's ... </s>;
//     3. otherwise nothing (GPT-2's vocab.json + merges.txt).
//   EOS (where generation stops): generation_config.json's eos_token_id,
//   else config.json's (an integer or a list of integers: stop at any),
//   else none. `generate --eos` replaces them.
//   Decoder start (an encoder-decoder's first decoder token):
//   generation_config.json's decoder_start_token_id, else config.json's,
//   else none. `generate --bos` replaces it.
//   Bad words (sequences generation never produces; Hugging Face's
//   NoBadWordsLogitsProcessor): generation_config.json's bad_words_ids,
//   else config.json's (as GenerationConfig.from_model_config takes it), a
//   list of non-empty lists of non-negative ids; else none. `generate
//   --bad-words` replaces them.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/Tokenizer.h"
#include "runtime/tokenizers/Common.h"
#include "support/Text.h"
#include "runtime/tokenizers/GgufTokenizer.h"
#include "runtime/tokenizers/HfTokenizer.h"
#include "runtime/tokenizers/MarianTokenizer.h"
#include "runtime/tokenizers/WordPieceTokenizer.h"
#include "runtime/tokenizers/SentencePieceTokenizer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include <sys/stat.h>

namespace tfmc::runtime {

using Json = nlohmann::json;
using namespace tokenizers;

std::unique_ptr<Tokenizer> loadTokenizer(const std::string &dir,
                                         std::string &error) {
  if (isGgufFile(dir))
    return loadGgufTokenizer(dir, error);
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = fmt::format("{}: {} (a tokenizer is a directory holding "
                        "tokenizer.json, tokenizer.model, source.spm, "
                        "vocab.json and merges.txt, or vocab.txt, or a GGUF "
                        "file)",
                        dir,
                        ::stat(dir.c_str(), &info) != 0 ? "no such file or directory"
                                                        : "not a directory");
    return nullptr;
  }
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/')
    prefix += '/';
  if (exists(prefix + "tokenizer.json")) {
    // A WordPiece model (BERT) is WordPieceTokenizer's; the rest HfTokenizer's.
    const std::string path = prefix + "tokenizer.json";
    Json root;
    if (!readJsonFile(path, root, error))
      return nullptr;
    if (root.is_object() && root.contains("model") &&
        root["model"].is_object() && root["model"].contains("type") &&
        root["model"]["type"] == "WordPiece")
      return WordPieceTokenizer::fromTokenizerJson(path, root, error);
    return loadHfTokenizer(path, error);
  }
  if (exists(prefix + "tokenizer.model"))
    return loadSentencePieceTokenizer(prefix + "tokenizer.model", error);
  if (exists(prefix + "source.spm") || exists(prefix + "target.spm"))
    return loadMarianTokenizer(dir, error);
  if (exists(prefix + "vocab.json") || exists(prefix + "merges.txt")) {
    std::optional<Gpt2Tokenizer> gpt2 = Gpt2Tokenizer::load(dir, error);
    if (!gpt2)
      return nullptr;
    return std::make_unique<Gpt2Tokenizer>(std::move(*gpt2));
  }
  if (exists(prefix + "vocab.txt"))
    return WordPieceTokenizer::fromVocabTxt(dir, error);
  error = fmt::format("{}: no tokenizer (expected tokenizer.json, "
                      "tokenizer.model, source.spm, vocab.json and merges.txt, "
                      "or vocab.txt)",
                      dir);
  return nullptr;
}

namespace {

/// A JSON file of the directory, or null when it is absent.
bool readOptional(const std::string &path, Json &root, std::string &error) {
  root = Json();
  if (!exists(path))
    return true;
  if (!readJsonFile(path, root, error))
    return false;
  if (!root.is_object()) {
    error = fmt::format("{}: expected a JSON object", path);
    return false;
  }
  return true;
}

/// tokenizer_config.json's bos_token / eos_token: a string or an added
/// token object {"content": ...}.
bool specialTokenId(const Json &config, const std::string &path,
                    const char *key, const Tokenizer &tokenizer, int64_t &id,
                    std::string &error) {
  const Json *value = config.contains(key) ? &config[key] : nullptr;
  if (value && value->is_object() && value->contains("content"))
    value = &(*value)["content"];
  if (!value || !value->is_string()) {
    error = fmt::format("{}: {} needs {} (a token string)", path,
                        key[4] == 'b' ? "add_bos_token" : "add_eos_token", key);
    return false;
  }
  std::optional<int64_t> found = tokenizer.tokenId(value->get<std::string>());
  if (!found) {
    error = fmt::format("{}: {} {} is not a token of {}", path, key,
                        support::quoteJson(value->get<std::string>()),
                        tokenizer.directory());
    return false;
  }
  id = *found;
  return true;
}

/// The directory's generation settings: generation_config.json, else
/// config.json for each key (as GenerationConfig.from_model_config falls
/// back). Each file is read at most once, when a key first needs it.
class GenerationSettings {
public:
  explicit GenerationSettings(const std::string &prefix)
      : paths{prefix + "generation_config.json", prefix + "config.json"} {}

  /// `key`'s value in the first file that gives it (not null), with that
  /// file's path in `file`; null when neither does. False, with `error`,
  /// on a malformed file.
  bool get(const char *key, Json &value, std::string &file,
           std::string &error) {
    value = Json();
    for (std::size_t i = 0; i < 2; ++i) {
      if (!read[i]) {
        if (!readOptional(paths[i], roots[i], error))
          return false;
        read[i] = true;
      }
      if (!roots[i].is_null() && roots[i].contains(key) &&
          !roots[i][key].is_null()) {
        value = roots[i][key];
        file = paths[i];
        return true;
      }
    }
    return true;
  }

private:
  std::string paths[2];
  Json roots[2];
  bool read[2] = {false, false};
};

} // namespace

bool readPromptTokens(const std::string &dir, const Tokenizer &tokenizer,
                      PromptTokens &tokens, std::string &error) {
  tokens = PromptTokens();
  if (isGgufFile(dir))
    return readGgufPromptTokens(tokenizer, tokens, error);
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/')
    prefix += '/';

  tokenizer.ownSpecials(tokens.prefix, tokens.suffix);
  const std::string configPath = prefix + "tokenizer_config.json";
  Json config;
  if (!readOptional(configPath, config, error))
    return false;
  for (const char *flag : {"add_bos_token", "add_eos_token"}) {
    if (config.is_null() || !config.contains(flag) || config[flag].is_null())
      continue;
    if (!config[flag].is_boolean()) {
      error = fmt::format("{}: {} must be true or false", configPath, flag);
      return false;
    }
    bool bos = flag[4] == 'b';
    std::vector<int64_t> &side = bos ? tokens.prefix : tokens.suffix;
    side.clear();
    if (config[flag].get<bool>()) {
      int64_t id = 0;
      if (!specialTokenId(config, configPath, bos ? "bos_token" : "eos_token",
                          tokenizer, id, error))
        return false;
      side.push_back(id);
    }
  }

  // Generation settings: generation_config.json's, else config.json's.
  GenerationSettings settings(prefix);
  Json value;
  std::string file;
  if (!settings.get("eos_token_id", value, file, error))
    return false;
  if (!value.is_null()) {
    std::vector<Json> items = value.is_array()
                                  ? std::vector<Json>(value.begin(), value.end())
                                  : std::vector<Json>{value};
    for (const Json &item : items) {
      if (!item.is_number_integer() || item.get<int64_t>() < 0) {
        error = fmt::format("{}: eos_token_id must be a non-negative "
                            "integer or a list of them",
                            file);
        return false;
      }
      tokens.eos.push_back(item.get<int64_t>());
    }
  }
  if (!settings.get("decoder_start_token_id", value, file, error))
    return false;
  if (!value.is_null()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      error = fmt::format("{}: decoder_start_token_id must be a "
                          "non-negative integer",
                          file);
      return false;
    }
    tokens.decoderStart = value.get<int64_t>();
  }
  if (!settings.get("bad_words_ids", value, file, error))
    return false;
  if (!value.is_null()) {
    auto valid = [](const Json &word) {
      if (!word.is_array() || word.empty())
        return false;
      for (const Json &id : word)
        if (!id.is_number_integer() || id.get<int64_t>() < 0)
          return false;
      return true;
    };
    if (!value.is_array() || !std::all_of(value.begin(), value.end(), valid)) {
      error = fmt::format("{}: bad_words_ids must be a list of non-empty "
                          "lists of non-negative integers",
                          file);
      return false;
    }
    for (const Json &word : value)
      tokens.badWords.push_back(word.get<std::vector<int64_t>>());
  }
  return true;
}

std::vector<int64_t> PromptTokens::eosWithin(int64_t vocab) const {
  std::vector<int64_t> kept;
  for (int64_t id : eos)
    if (id < vocab)
      kept.push_back(id);
  return kept;
}

std::vector<std::vector<int64_t>>
PromptTokens::badWordsWithin(int64_t vocab) const {
  std::vector<std::vector<int64_t>> kept;
  for (const std::vector<int64_t> &word : badWords)
    if (std::all_of(word.begin(), word.end(),
                    [&](int64_t id) { return id < vocab; }))
      kept.push_back(word);
  return kept;
}

bool encodeModelText(Tokenizer &tokenizer, const PromptTokens &tokens,
                     std::string_view text, const std::string_view *pair,
                     int64_t maxLen, std::vector<int64_t> &ids,
                     std::vector<int64_t> &types, std::string &error) {
  ids.clear();
  types.clear();
  if (auto *wordPiece = dynamic_cast<WordPieceTokenizer *>(&tokenizer))
    return wordPiece->encodeForModel(text, pair,
                                     static_cast<std::size_t>(maxLen), ids,
                                     types, error);
  if (!tokenizer.encode(text, ids, error))
    return false;
  tokens.surround(ids);
  return true;
}

} // namespace tfmc::runtime
