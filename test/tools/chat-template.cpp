//===- chat-template.cpp - tfmc-chat-template: the chat template engine ---===//
//
//   tfmc-chat-template CONFIG --cases CASES.json
//   tfmc-chat-template CONFIG --messages MESSAGES.json [--add-generation-prompt]
//
// Renders the chat template of CONFIG, a tokenizer_config.json (its
// "chat_template", "bos_token" and "eos_token": a string, an AddedToken
// object {"content": ...}, or null/absent for none), with
// runtime/serve/ChatTemplate.h.
//
// --messages: one conversation (a JSON array of {"role", "content"}), the
// rendered text printed raw.
//
// --cases: each element of CASES.json, a JSON array of objects
//   {"name": N, "messages": [...], "add_generation_prompt": bool,
//    "bos_token": T, "eos_token": T, "variables": {...}, "template": S}
// (all but "name" optional; bos/eos_token override CONFIG's, null removes
// one; "template" renders that template text instead of CONFIG's, which is
// then optional: `tfmc-chat-template --cases CASES.json`), printing one JSON
// line per case:
//   {"name": N, "output": TEXT}                 rendered
//   {"name": N, "raised": MESSAGE}              raise_exception(MESSAGE)
//   {"name": N, "error": LINE, "kind": KIND}    any other failure (KIND:
//                                               syntax, render, limit, input)
// test/Serve/Inputs/render.mjs (@huggingface/jinja) and render_jinja2.py
// (Jinja2, as transformers renders) print the same for the comparisons.
// Errors of the tool itself (unreadable files, bad JSON, a template that
// does not parse with --messages) are one line `tfmc-chat-template: error:
// ...` and exit 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/ChatTemplate.h"
#include "support/FileIO.h"
#include "support/Json.h"

#include <cstdio>
#include <optional>
#include <string>

using tfmc::runtime::ChatMessage;
using tfmc::runtime::ChatTemplate;
using tfmc::runtime::ChatTemplateError;
using tfmc::runtime::ChatTemplateInputs;
using tfmc::runtime::readChatTemplateSource;
using tfmc::runtime::readSpecialToken;
using Json = nlohmann::ordered_json;

namespace {

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tfmc-chat-template: error: %s\n", message.c_str());
  return 1;
}

bool readJson(const std::string &path, Json &json, std::string &error) {
  std::string text;
  if (!tfmc::support::readRegularFile(path, text, error))
    return false;
  tfmc::support::JsonError jsonError;
  auto parsed = tfmc::support::parseJson<Json>(text, jsonError);
  if (!parsed) {
    error = jsonError.message(path);
    return false;
  }
  json = std::move(*parsed);
  return true;
}

const char *kindName(ChatTemplateError::Kind kind) {
  switch (kind) {
  case ChatTemplateError::Kind::Syntax: return "syntax";
  case ChatTemplateError::Kind::Render: return "render";
  case ChatTemplateError::Kind::Raised: return "raised";
  case ChatTemplateError::Kind::Limit: return "limit";
  case ChatTemplateError::Kind::Input: return "input";
  }
  return "error";
}

bool readMessages(const Json &json, std::vector<ChatMessage> &messages, std::string &error) {
  if (!json.is_array()) {
    error = "messages must be a JSON array";
    return false;
  }
  for (const Json &message : json) {
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string() ||
        !message.contains("content") || !message["content"].is_string()) {
      error = "each message must be an object with string \"role\" and \"content\"";
      return false;
    }
    messages.push_back({message["role"].get<std::string>(), message["content"].get<std::string>()});
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string configPath, casesPath, messagesPath;
  bool addGenerationPrompt = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--cases" && i + 1 < argc)
      casesPath = argv[++i];
    else if (arg == "--messages" && i + 1 < argc)
      messagesPath = argv[++i];
    else if (arg == "--add-generation-prompt")
      addGenerationPrompt = true;
    else if (!arg.empty() && arg[0] != '-' && configPath.empty())
      configPath = arg;
    else
      return fail("usage: tfmc-chat-template [CONFIG] (--cases CASES.json | --messages MESSAGES.json "
                  "[--add-generation-prompt])");
  }
  if (casesPath.empty() == messagesPath.empty() || (configPath.empty() && !messagesPath.empty()))
    return fail("usage: tfmc-chat-template [CONFIG] (--cases CASES.json | --messages MESSAGES.json "
                "[--add-generation-prompt])");

  std::string error;
  std::optional<std::string> templateText, bos, eos;
  if (!configPath.empty()) {
    Json config;
    if (!readJson(configPath, config, error))
      return fail(error);
    if (!config.is_object() || !readChatTemplateSource(config, templateText, error) ||
        !readSpecialToken(config, "bos_token", bos, error) ||
        !readSpecialToken(config, "eos_token", eos, error))
      return fail(configPath + ": " + (error.empty() ? "expected a JSON object" : error));
    if (!templateText)
      return fail(configPath + ": no \"chat_template\"");
  }

  if (!messagesPath.empty()) {
    Json messages;
    ChatTemplateInputs inputs;
    if (!readJson(messagesPath, messages, error) || !readMessages(messages, inputs.messages, error))
      return fail(error);
    inputs.addGenerationPrompt = addGenerationPrompt;
    inputs.bosToken = bos;
    inputs.eosToken = eos;
    ChatTemplateError templateError;
    auto chat = ChatTemplate::parse(*templateText, templateError);
    if (!chat)
      return fail(configPath + ": " + templateError.message());
    auto text = chat->render(inputs, templateError);
    if (!text)
      return fail(templateError.message());
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }

  Json cases;
  if (!readJson(casesPath, cases, error))
    return fail(error);
  if (!cases.is_array())
    return fail(casesPath + ": not a JSON array of cases");
  std::optional<ChatTemplate> configTemplate;
  ChatTemplateError configError;
  if (templateText)
    configTemplate = ChatTemplate::parse(*templateText, configError);
  for (const Json &c : cases) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
      return fail(casesPath + ": each case must be an object with a string \"name\"");
    Json line = Json::object();
    line["name"] = c["name"];
    ChatTemplateInputs inputs;
    if (c.contains("messages") && !readMessages(c["messages"], inputs.messages, error))
      return fail(casesPath + ": case " + c["name"].get<std::string>() + ": " + error);
    inputs.addGenerationPrompt = c.value("add_generation_prompt", false);
    inputs.bosToken = bos;
    inputs.eosToken = eos;
    if (c.contains("bos_token"))
      readSpecialToken(c, "bos_token", inputs.bosToken, error);
    if (c.contains("eos_token"))
      readSpecialToken(c, "eos_token", inputs.eosToken, error);
    if (c.contains("variables"))
      inputs.variables = c["variables"];
    if (!error.empty())
      return fail(casesPath + ": case " + c["name"].get<std::string>() + ": " + error);

    std::optional<ChatTemplate> own;
    const std::optional<ChatTemplate> *chat = &configTemplate;
    ChatTemplateError templateError = configError;
    if (c.contains("template")) {
      if (!c["template"].is_string())
        return fail(casesPath + ": case " + c["name"].get<std::string>() + ": \"template\" must be a string");
      own = ChatTemplate::parse(c["template"].get<std::string>(), templateError);
      chat = &own;
    } else if (!templateText) {
      return fail(casesPath + ": case " + c["name"].get<std::string>() + " has no template and no CONFIG is given");
    }
    std::optional<std::string> text;
    if (*chat)
      text = (*chat)->render(inputs, templateError);
    if (text) {
      line["output"] = *text;
    } else if (templateError.kind == ChatTemplateError::Kind::Raised) {
      line["raised"] = templateError.reason;
    } else {
      line["error"] = templateError.message();
      line["kind"] = kindName(templateError.kind);
    }
    std::string dumped = line.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::printf("%s\n", dumped.c_str());
  }
  return 0;
}
