//===- ToolCalls.cpp - A model's tool calls in its text -------------------===//

#include "runtime/serve/ToolCalls.h"

#include "support/Json.h"

#include <nlohmann/json.hpp>

namespace tfmc::runtime::serve {
namespace {

using json = nlohmann::ordered_json;

std::string_view trimmed(std::string_view text) {
  const char *space = " \t\r\n";
  const std::size_t first = text.find_first_not_of(space);
  if (first == std::string_view::npos)
    return {};
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

/// A JSON value, or nothing (support/Json.h's bounded reader).
std::optional<json> parsed(std::string_view text) {
  support::JsonError error;
  return support::parseJson<json>(trimmed(text), error);
}

/// One call from {"name": N, ARGS: {...}} (ARGS "arguments" or, for Llama
/// 3, "parameters"), with no other key.
std::optional<ToolCall> callOf(const json &object, bool parameters) {
  if (!object.is_object() || !object.contains("name") ||
      !object["name"].is_string() || object["name"].get<std::string>().empty())
    return std::nullopt;
  const char *key = parameters && object.contains("parameters")
                        ? "parameters"
                        : "arguments";
  if (object.size() != (object.contains(key) ? 2u : 1u))
    return std::nullopt;
  json arguments = object.contains(key) ? object[key] : json::object();
  // An argument object written as a string of JSON (some models do).
  if (arguments.is_string())
    if (std::optional<json> inner = parsed(arguments.get<std::string>()))
      arguments = *inner;
  if (!arguments.is_object())
    return std::nullopt;
  return ToolCall{object["name"].get<std::string>(), arguments.dump()};
}

std::optional<ParsedAnswer> hermes(std::string_view text) {
  static constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  ParsedAnswer answer;
  std::string content;
  std::size_t at = 0;
  for (;;) {
    const std::size_t open = text.find(kOpen, at);
    if (open == std::string_view::npos)
      break;
    const std::size_t close = text.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos)
      return std::nullopt; // a call cut off: no call at all
    content += text.substr(at, open - at);
    std::optional<json> object =
        parsed(text.substr(open + kOpen.size(), close - open - kOpen.size()));
    std::optional<ToolCall> call =
        object ? callOf(*object, false) : std::nullopt;
    if (!call)
      return std::nullopt;
    answer.calls.push_back(std::move(*call));
    at = close + kClose.size();
  }
  if (answer.calls.empty())
    return std::nullopt;
  content += text.substr(at);
  answer.content = std::string(trimmed(content));
  return answer;
}

std::optional<ParsedAnswer> llama3(std::string_view text) {
  std::string_view body = trimmed(text);
  static constexpr std::string_view kTag = "<|python_tag|>";
  if (body.substr(0, kTag.size()) == kTag)
    body = trimmed(body.substr(kTag.size()));
  if (body.empty() || body.front() != '{')
    return std::nullopt;
  std::optional<json> object = parsed(body);
  std::optional<ToolCall> call = object ? callOf(*object, true) : std::nullopt;
  if (!call)
    return std::nullopt;
  ParsedAnswer answer;
  answer.calls.push_back(std::move(*call));
  return answer;
}

std::optional<ParsedAnswer> mistral(std::string_view text) {
  static constexpr std::string_view kMarker = "[TOOL_CALLS]";
  const std::size_t marker = text.find(kMarker);
  if (marker == std::string_view::npos)
    return std::nullopt;
  std::optional<json> list = parsed(text.substr(marker + kMarker.size()));
  if (!list || !list->is_array() || list->empty())
    return std::nullopt;
  ParsedAnswer answer;
  for (const json &item : *list) {
    std::optional<ToolCall> call = callOf(item, false);
    if (!call)
      return std::nullopt;
    answer.calls.push_back(std::move(*call));
  }
  answer.content = std::string(trimmed(text.substr(0, marker)));
  return answer;
}

} // namespace

ToolCallSyntax toolCallSyntax(std::string_view source) {
  if (source.find("<tool_call>") != std::string_view::npos)
    return ToolCallSyntax::Hermes;
  if (source.find("[TOOL_CALLS]") != std::string_view::npos)
    return ToolCallSyntax::Mistral;
  if (source.find("<|python_tag|>") != std::string_view::npos ||
      source.find("\"parameters\": dictionary") != std::string_view::npos)
    return ToolCallSyntax::Llama3Json;
  return ToolCallSyntax::None;
}

const char *toString(ToolCallSyntax syntax) {
  switch (syntax) {
  case ToolCallSyntax::Hermes:
    return "hermes";
  case ToolCallSyntax::Llama3Json:
    return "llama3-json";
  case ToolCallSyntax::Mistral:
    return "mistral";
  case ToolCallSyntax::None:
    break;
  }
  return "none";
}

std::optional<ParsedAnswer> parseToolCalls(ToolCallSyntax syntax,
                                           std::string_view text) {
  switch (syntax) {
  case ToolCallSyntax::Hermes:
    return hermes(text);
  case ToolCallSyntax::Llama3Json:
    return llama3(text);
  case ToolCallSyntax::Mistral:
    return mistral(text);
  case ToolCallSyntax::None:
    break;
  }
  return std::nullopt;
}

} // namespace tfmc::runtime::serve
