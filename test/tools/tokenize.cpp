//===- tokenize.cpp - tfmc-tokenize: the runtime's tokenizers -------------===//
//
//   tfmc-tokenize DIR --text TEXT
//   tfmc-tokenize DIR --file FILE
//   tfmc-tokenize DIR --json TEXTS.json
//   tfmc-tokenize DIR --decode IDS_FILE
//   tfmc-tokenize DIR --prompt TEXT
//   tfmc-tokenize DIR --bert TEXTS.json MAX_LENGTH
//
// Loads the tokenizer in DIR (loadTokenizer: tokenizer.json,
// tokenizer.model, or vocab.json + merges.txt) and encodes one text
// (TEXT, or FILE's bytes exactly), printing
//   ids: 15496 995
//   text: Hello world
// (the ids, then their decoding, raw, followed by a newline), or each string
// of TEXTS.json (a JSON array of strings), printing one JSON line per text:
//   {"ids":[15496,995],"text":"Hello world"}
// --prompt prints the ids generate --text would give the model (with the
// BOS/suffix of readPromptTokens) and the ids generation stops at:
//   ids: 1 15043
//   eos: 2
// --bert (a WordPiece tokenizer only) encodes each element of TEXTS.json, a
// text or a [text, text] pair, as BERT's inputs ([CLS] A [SEP] (B [SEP]),
// truncated to MAX_LENGTH, 0 for the tokenizer's own limit), one JSON line
// each: {"ids":[...],"type_ids":[...],"text":"..."}.
// Errors (bad tokenizer, text that is not UTF-8, bad arguments) are one line
// `tfmc-tokenize: error: ...` and exit 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/Tokenizer.h"
#include "runtime/tokenizers/WordPieceTokenizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using tfmc::runtime::PromptTokens;
using tfmc::runtime::Tokenizer;
using Json = nlohmann::json;

namespace {

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tfmc-tokenize: error: %s\n", message.c_str());
  return 1;
}

bool readFile(const std::string &path, std::string &contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  contents = std::move(buffer).str();
  return !in.bad();
}

const char kUsage[] =
    "usage: tfmc-tokenize DIR (--text TEXT | --file FILE | --json TEXTS.json "
    "| --decode IDS_FILE | --prompt TEXT | --bert TEXTS.json MAX_LENGTH)";

/// --bert: see the file comment.
int encodeBert(Tokenizer &tokenizer, const std::string &path,
               const std::string &maxText) {
  auto *bert = dynamic_cast<tfmc::runtime::WordPieceTokenizer *>(&tokenizer);
  if (!bert)
    return fail(tokenizer.directory() + ": not a WordPiece tokenizer");
  char *end = nullptr;
  unsigned long long maxLength = std::strtoull(maxText.c_str(), &end, 10);
  if (maxText.empty() || *end != '\0' || maxText[0] == '-')
    return fail("MAX_LENGTH must be a non-negative integer");
  std::string input, error;
  if (!readFile(path, input))
    return fail(fmt::format("{}: cannot read", path));
  Json texts;
  try {
    texts = Json::parse(input);
  } catch (const Json::exception &e) {
    return fail(fmt::format("{}: invalid JSON: {}", path, e.what()));
  }
  if (!texts.is_array())
    return fail(fmt::format("{}: expected a JSON array", path));
  std::vector<int64_t> ids, typeIds;
  std::string output; // printed once all elements are encoded
  for (std::size_t k = 0; k < texts.size(); ++k) {
    const Json &item = texts[k];
    std::string a, b;
    bool pair = item.is_array() && item.size() == 2 && item[0].is_string() &&
                item[1].is_string();
    if (pair) {
      a = item[0].get<std::string>();
      b = item[1].get<std::string>();
    } else if (item.is_string()) {
      a = item.get<std::string>();
    } else {
      return fail(fmt::format("{}: element {} is neither a string nor a pair "
                              "of strings",
                              path, k));
    }
    std::string_view second(b);
    if (!bert->encodeForModel(a, pair ? &second : nullptr, maxLength, ids,
                              typeIds, error))
      return fail(fmt::format("{}: element {}: {}", path, k, error));
    Json line = {{"ids", ids}, {"type_ids", typeIds},
                 {"text", bert->decode(ids)}};
    output += line.dump(-1, ' ', false, Json::error_handler_t::replace);
    output += '\n';
  }
  fmt::print("{}", output);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 5 && std::string(argv[2]) == "--bert"))
    return fail(kUsage);
  const std::string dir = argv[1], mode = argv[2], value = argv[3];
  if (mode != "--text" && mode != "--file" && mode != "--json" &&
      mode != "--decode" && mode != "--prompt" && mode != "--bert")
    return fail(kUsage);

  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      tfmc::runtime::loadTokenizer(dir, error);
  if (!tokenizer)
    return fail(error);

  if (mode == "--bert")
    return encodeBert(*tokenizer, value, argv[4]);
  std::string input = value;
  if (mode == "--prompt") {
    PromptTokens tokens;
    std::vector<int64_t> ids;
    if (!readPromptTokens(dir, *tokenizer, tokens, error) ||
        !tokenizer->encode(input, ids, error))
      return fail(error);
    tokens.surround(ids);
    fmt::print("ids: {}\neos: {}\n", fmt::join(ids, " "),
               fmt::join(tokens.eos, " "));
    return 0;
  }
  if (mode != "--text" && !readFile(value, input))
    return fail(fmt::format("{}: cannot read", value));

  std::vector<int64_t> ids;
  if (mode == "--decode") {
    // Ids separated by spaces, commas or new lines: the text they decode to.
    std::istringstream stream(input);
    std::string item;
    while (stream >> item) {
      for (char &c : item)
        if (c == ',')
          c = ' ';
      std::istringstream numbers(item);
      for (int64_t id; numbers >> id;)
        ids.push_back(id);
    }
    fmt::print("{}\n", Tokenizer::toValidUtf8(tokenizer->decode(ids)));
    return 0;
  }
  if (mode != "--json") {
    if (!tokenizer->encode(input, ids, error))
      return fail(error);
    fmt::print("ids: {}\ntext: {}\n", fmt::join(ids, " "),
               tokenizer->decode(ids));
    return 0;
  }

  Json texts;
  try {
    texts = Json::parse(input);
  } catch (const Json::exception &e) {
    return fail(fmt::format("{}: invalid JSON: {}", value, e.what()));
  }
  if (!texts.is_array())
    return fail(fmt::format("{}: expected a JSON array of strings", value));
  for (std::size_t k = 0; k < texts.size(); ++k) {
    if (!texts[k].is_string())
      return fail(fmt::format("{}: element {} is not a string", value, k));
    if (!tokenizer->encode(texts[k].get<std::string>(), ids, error))
      return fail(fmt::format("{}: element {}: {}", value, k, error));
    Json line = {{"ids", ids}, {"text", tokenizer->decode(ids)}};
    fmt::print("{}\n",
               line.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  return 0;
}
