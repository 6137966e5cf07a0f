//===- ChatSetup.cpp - A tokenizer's chat template and its tokens ---------===//

#include "runtime/serve/ChatSetup.h"

#include "runtime/tokenizers/GgufTokenizer.h"
#include "support/FileIO.h"
#include "support/Json.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>

namespace tfmc::runtime::serve {

namespace {

bool parseTemplate(const std::string &source, const std::string &where,
                   ChatSetup &setup, std::string &error) {
  ChatTemplateError templateError;
  setup.chatTemplate = ChatTemplate::parse(source, templateError);
  setup.toolCalls = toolCallSyntax(source);
  if (!setup.chatTemplate)
    error = fmt::format("{}: {}", where, templateError.message());
  return setup.chatTemplate.has_value();
}

} // namespace

bool readChatSetup(const std::string &dir, const Tokenizer &tokenizer,
                   ChatSetup &setup, std::string &error) {
  setup = ChatSetup();
  if (GgufChatInfo gguf; ggufChatInfo(tokenizer, gguf)) {
    // A GGUF file: its tokenizer.chat_template and bos/eos tokens' texts.
    setup.missing = fmt::format("{} has no tokenizer.chat_template",
                                support::oneLine(dir));
    setup.bos = gguf.bos;
    setup.eos = gguf.eos;
    return !gguf.chatTemplate ||
           parseTemplate(*gguf.chatTemplate,
                         fmt::format("{}: key 'tokenizer.chat_template'",
                                     support::oneLine(dir)),
                         setup, error);
  }
  const std::string path = dir + "/tokenizer_config.json";
  setup.missing =
      fmt::format("{} has no chat_template", support::oneLine(path));
  std::string text;
  support::ReadFailure failure;
  if (!support::readRegularFile(path, text, failure)) {
    if (failure.systemError == ENOENT)
      return true;
    error = fmt::format("{}: {}", support::oneLine(path), failure.reason);
    return false;
  }
  support::JsonError jsonError;
  std::optional<nlohmann::ordered_json> config =
      support::parseJson<nlohmann::ordered_json>(text, jsonError);
  if (!config) {
    error = jsonError.message(path);
    return false;
  }
  if (!config->is_object()) {
    error = fmt::format("{}: expected a JSON object", support::oneLine(path));
    return false;
  }
  std::optional<std::string> source;
  std::string message;
  if (!readSpecialToken(*config, "bos_token", setup.bos, message) ||
      !readSpecialToken(*config, "eos_token", setup.eos, message) ||
      !readChatTemplateSource(*config, source, message)) {
    error = fmt::format("{}: {}", support::oneLine(path), message);
    return false;
  }
  return !source || parseTemplate(*source, support::oneLine(path), setup, error);
}

} // namespace tfmc::runtime::serve
