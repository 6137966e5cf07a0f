//===- OpenAiApi.cpp - OpenAI's request and response bodies ---------------===//

#include "runtime/serve/OpenAiApi.h"

#include "support/Json.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace tfmc::runtime::serve {

using nlohmann::json;

std::string ApiError::body() const {
  json error = {{"message", message},
                {"type", type},
                {"param", param.empty() ? json(nullptr) : json(param)},
                {"code", code.empty() ? json(nullptr) : json(code)}};
  return json{{"error", error}}.dump();
}

namespace {

/// Whether an integer JSON value is an int64_t: nlohmann reads integers
/// from 2^63 to 2^64 - 1 as unsigned, and get<int64_t>() would wrap them.
bool fitsInt64(const json &value) {
  return !value.is_number_unsigned() ||
         value.get<uint64_t>() <=
             static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

/// Field checks that fill `error` and return false.
class Fields {
public:
  Fields(const json &body, ApiError &error) : body(body), error(error) {}

  bool fail(const std::string &param, std::string message) {
    error = ApiError();
    error.param = param;
    error.message = std::move(message);
    return false;
  }

  const json *find(const char *name) const {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  }

  bool integer(const char *name, std::optional<int64_t> &out, int64_t least) {
    const json *value = find(name);
    if (!value)
      return true;
    if (!value->is_number_integer())
      return fail(name, fmt::format("{} must be an integer, got {}", name,
                                    support::oneLine(value->dump())));
    // An integer is quoted as the client wrote it (dump() prints every
    // 64-bit integer exactly), never as the int64_t it was read into.
    if (!fitsInt64(*value))
      return fail(name, fmt::format("{} = {} is too large (at most {})", name,
                                    value->dump(),
                                    std::numeric_limits<int64_t>::max()));
    const int64_t number = value->get<int64_t>();
    if (number < least)
      return fail(name, fmt::format("{} must be at least {}, got {}", name,
                                    least, value->dump()));
    out = number;
    return true;
  }

  bool real(const char *name, double &out) {
    const json *value = find(name);
    if (!value)
      return true;
    if (!value->is_number())
      return fail(name, fmt::format("{} must be a number, got {}", name,
                                    support::oneLine(value->dump())));
    out = value->get<double>();
    return true;
  }

  bool boolean(const char *name, bool &out) {
    const json *value = find(name);
    if (!value)
      return true;
    if (!value->is_boolean())
      return fail(name, fmt::format("{} must be true or false, got {}", name,
                                    support::oneLine(value->dump())));
    out = value->get<bool>();
    return true;
  }

  /// logit_bias: an object of token ids (decimal strings) to biases in
  /// [-100, 100], OpenAI's.
  bool logitBias(std::vector<std::pair<int64_t, double>> &out) {
    const json *value = find("logit_bias");
    if (!value)
      return true;
    if (!value->is_object())
      return fail("logit_bias",
                  fmt::format("logit_bias must be an object of token ids to "
                              "biases, got {}",
                              support::oneLine(value->dump())));
    for (auto entry = value->begin(); entry != value->end(); ++entry) {
      const std::string &key = entry.key();
      int64_t id = -1;
      if (!key.empty() && key.size() <= 18 &&
          key.find_first_not_of("0123456789") == std::string::npos)
        id = std::stoll(key);
      if (id < 0)
        return fail("logit_bias",
                    fmt::format("logit_bias: {} is not a token id (a "
                                "decimal string)",
                                support::quote(key)));
      const json &bias = entry.value();
      if (!bias.is_number() || !(bias.get<double>() >= -100) ||
          !(bias.get<double>() <= 100))
        return fail("logit_bias",
                    fmt::format("logit_bias[{}] must be a number in [-100, "
                                "100], got {}",
                                support::quote(key),
                                support::oneLine(bias.dump())));
      out.emplace_back(id, bias.get<double>());
    }
    return true;
  }

  /// logprobs: chat's `logprobs` (true or false) and `top_logprobs` (0 ..
  /// 20, with logprobs true), or completions' `logprobs` (null or 0 .. 5),
  /// as the alternatives to report (-1: none).
  bool logprobs(bool chat, int64_t &out) {
    out = -1;
    std::optional<int64_t> top;
    if (chat) {
      bool wanted = false;
      if (!boolean("logprobs", wanted) || !integer("top_logprobs", top, 0))
        return false;
      if (top && *top > 20)
        return fail("top_logprobs",
                    fmt::format("top_logprobs must be at most 20, got {}",
                                *top));
      if (top && !wanted)
        return fail("top_logprobs", "top_logprobs needs logprobs: true");
      if (wanted)
        out = top.value_or(0);
      return true;
    }
    if (!integer("logprobs", top, 0))
      return false;
    if (top && *top > 5)
      return fail("logprobs",
                  fmt::format("logprobs must be at most 5, got {}", *top));
    out = top.value_or(-1);
    return neutral("top_logprobs", json(nullptr),
                   "a completion's alternatives are its logprobs count");
  }

  /// A field this server implements only at its neutral value.
  bool neutral(const char *name, const json &allowed, const char *what) {
    const json *value = find(name);
    if (!value || *value == allowed ||
        (value->is_number() && allowed.is_number() &&
         value->get<double>() == allowed.get<double>()))
      return true;
    return fail(name, fmt::format("{} = {} is not supported: {}", name,
                                  support::oneLine(value->dump()), what));
  }

  bool model(const std::string &served, std::string &out) {
    const json *value = find("model");
    if (!value)
      return fail("model", "model is required");
    if (!value->is_string())
      return fail("model", fmt::format("model must be a string, got {}",
                                       support::oneLine(value->dump())));
    out = value->get<std::string>();
    if (out != served) {
      fail("model", fmt::format("model {} is not served here (this server "
                                "serves {})",
                                support::quote(out), support::quote(served)));
      error.code = "model_not_found";
      return false;
    }
    return true;
  }

  /// Token ids: a non-empty array of non-negative integers.
  bool ids(const json &value, const std::string &param,
           std::vector<int64_t> &out) {
    out.clear();
    if (value.empty())
      return fail(param, param + " is empty");
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_number_integer() || !fitsInt64(value[i]) ||
          value[i].get<int64_t>() < 0)
        return fail(param, fmt::format("{}[{}] = {} is not a token id", param,
                                       i, support::oneLine(value[i].dump())));
      out.push_back(value[i].get<int64_t>());
    }
    return true;
  }

private:
  const json &body;
  ApiError &error;
};

bool parseBody(std::string_view text, json &body, ApiError &error) {
  // support/Json: nesting bounded (what walks a value recurses), keys
  // unique.
  support::JsonError jsonError;
  std::optional<json> parsed = support::parseJson(text, jsonError);
  if (!parsed) {
    error = ApiError();
    error.message = "the body is not valid JSON: " +
                    support::oneLine(jsonError.describe());
    return false;
  }
  body = std::move(*parsed);
  if (!body.is_object()) {
    error = ApiError();
    error.message = "the body must be a JSON object";
    return false;
  }
  return true;
}

/// The roles OpenAI's chat API accepts; any other is a 400 there too.
bool knownRole(const std::string &role) {
  for (const char *known :
       {"system", "developer", "user", "assistant", "tool", "function"})
    if (role == known)
      return true;
  return false;
}

/// An assistant message's tool_calls (OpenAI's: a list of {"id", "type":
/// "function", "function": {"name", "arguments"}}) as the templates read
/// them: each call's arguments, a string of JSON, as the object it holds
/// (transformers' templates iterate over them; a string that holds no
/// object stays a string).
bool messageToolCalls(const json &calls, std::size_t index, Fields &fields,
                      json &out) {
  const std::string param = fmt::format("messages[{}].tool_calls", index);
  if (!calls.is_array() || calls.empty())
    return fields.fail(param, param + " must be a non-empty list of calls");
  out = json::array();
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const json &call = calls[c];
    const json *function =
        call.is_object() && call.contains("function") ? &call["function"]
                                                      : nullptr;
    if (!function || !function->is_object() ||
        !function->contains("name") || !(*function)["name"].is_string() ||
        (call.contains("type") && call["type"] != "function") ||
        (function->contains("arguments") &&
         !(*function)["arguments"].is_string()))
      return fields.fail(param,
                         fmt::format("{}[{}] must be {{\"type\": \"function\", "
                                     "\"function\": {{\"name\": ..., "
                                     "\"arguments\": \"...\"}}}}",
                                     param, c));
    json arguments = function->value("arguments", std::string("{}"));
    support::JsonError error;
    if (std::optional<json> object = support::parseJson<json>(
            arguments.get<std::string>(), error);
        object && object->is_object())
      arguments = *object;
    json item = {{"type", "function"},
                 {"function",
                  {{"name", (*function)["name"]}, {"arguments", arguments}}}};
    if (call.contains("id"))
      item["id"] = call["id"];
    out.push_back(item);
  }
  return true;
}

/// A message's content: a string, or a list of text parts (joined); null
/// or absent only beside an assistant's tool_calls. Its tool_calls,
/// tool_call_id and name go to the template too (ChatMessage::extra);
/// function_call (OpenAI's older form) is refused by name.
bool messageContent(const json &message, std::size_t index, Fields &fields,
                    ChatMessage &out) {
  const std::string param = fmt::format("messages[{}].content", index);
  if (message.contains("function_call") && !message["function_call"].is_null())
    return fields.fail(
        fmt::format("messages[{}].function_call", index),
        fmt::format("messages[{}].function_call is not supported (give "
                    "tool_calls)",
                    index));
  bool calls = false;
  if (message.contains("tool_calls") && !message["tool_calls"].is_null()) {
    if (out.role != "assistant")
      return fields.fail(fmt::format("messages[{}].tool_calls", index),
                         fmt::format("messages[{}].tool_calls: only an "
                                     "assistant's message carries tool calls",
                                     index));
    json converted;
    if (!messageToolCalls(message["tool_calls"], index, fields, converted))
      return false;
    out.extra["tool_calls"] = converted;
    calls = true;
  }
  for (const char *name : {"tool_call_id", "name"})
    if (message.contains(name) && !message[name].is_null()) {
      if (!message[name].is_string())
        return fields.fail(fmt::format("messages[{}].{}", index, name),
                           fmt::format("messages[{}].{} must be a string",
                                       index, name));
      out.extra[name] = message[name];
    }
  auto found = message.find("content");
  if ((found == message.end() || found->is_null()) && calls) {
    out.contentNull = true;
    return true;
  }
  if (found == message.end() || found->is_null())
    return fields.fail(param, param + " is required");
  const json &content = *found;
  if (content.is_string()) {
    out.content = content.get<std::string>();
    return true;
  }
  if (!content.is_array())
    return fields.fail(param, param + " must be a string or a list of parts");
  out.content.clear();
  for (std::size_t p = 0; p < content.size(); ++p) {
    const json &part = content[p];
    if (!part.is_object() || part.value("type", json()) != "text" ||
        !part.contains("text") || !part["text"].is_string())
      return fields.fail(
          param, fmt::format("{}[{}]: only text parts ({{\"type\": \"text\", "
                             "\"text\": ...}}) are supported",
                             param, p));
    out.content += part["text"].get<std::string>();
  }
  return true;
}

/// response_format: text (nothing), json_object, or json_schema (its
/// schema kept as the body spells it: the order of its properties is the
/// order they are written in).
bool responseFormat(std::string_view text, Fields &fields,
                    CompletionRequest &request) {
  const json *format = fields.find("response_format");
  if (!format || format->is_null())
    return true;
  const char *shape = "response_format must be {\"type\": \"text\"}, "
                      "{\"type\": \"json_object\"} or {\"type\": "
                      "\"json_schema\", \"json_schema\": {\"name\": ..., "
                      "\"schema\": {...}}}";
  if (!format->is_object() || !format->contains("type") ||
      !(*format)["type"].is_string())
    return fields.fail("response_format", shape);
  const std::string type = (*format)["type"].get<std::string>();
  if (type == "text")
    return true;
  if (type == "json_object") {
    request.responseFormat = type;
    return true;
  }
  if (type != "json_schema")
    return fields.fail("response_format",
                       fmt::format("response_format type {} is not text, "
                                   "json_object or json_schema",
                                   support::quote(type)));
  const json *spec = format->contains("json_schema")
                         ? &(*format)["json_schema"]
                         : nullptr;
  if (!spec || !spec->is_object() || !spec->contains("name") ||
      !(*spec)["name"].is_string() ||
      (spec->contains("schema") && !(*spec)["schema"].is_object()))
    return fields.fail("response_format", shape);
  // The same body, read again keeping its keys' order.
  support::JsonError jsonError;
  std::optional<nlohmann::ordered_json> ordered =
      support::parseJson<nlohmann::ordered_json>(text, jsonError);
  request.responseFormat = type;
  request.responseSchema =
      spec->contains("schema")
          ? (*ordered)["response_format"]["json_schema"]["schema"].dump()
          : "{}";
  return true;
}

/// tool_choice: "none" and "auto" leave the choice to the model;
/// "required" and a named function make it call one (through constrained
/// sampling, the server's part).
bool toolChoice(std::string_view text, Fields &fields,
                CompletionRequest &request) {
  const json *choice = fields.find("tool_choice");
  if (!choice || *choice == "none" || *choice == "auto")
    return true;
  const bool named = choice->is_object() &&
                     choice->value("type", json()) == "function" &&
                     choice->contains("function") &&
                     (*choice)["function"].is_object() &&
                     (*choice)["function"].contains("name") &&
                     (*choice)["function"]["name"].is_string();
  if (*choice != "required" && !named)
    return fields.fail("tool_choice",
                       fmt::format("tool_choice = {} is not \"none\", "
                                   "\"auto\", \"required\" or {{\"type\": "
                                   "\"function\", \"function\": {{\"name\": "
                                   "...}}}}",
                                   support::oneLine(choice->dump())));
  const json *tools = fields.find("tools");
  if (!request.chat || !tools || !tools->is_array() || tools->empty())
    return fields.fail("tool_choice", "tool_choice requires a chat request "
                                      "with tools");
  for (std::size_t i = 0; i < tools->size(); ++i) {
    const json &tool = (*tools)[i];
    if (!tool.is_object() || !tool.contains("function") ||
        !tool["function"].is_object() || !tool["function"].contains("name") ||
        !tool["function"]["name"].is_string())
      return fields.fail("tools", fmt::format("tools[{}] must be {{\"type\": "
                                              "\"function\", \"function\": "
                                              "{{\"name\": ..., \"parameters\": "
                                              "{{...}}}}}}",
                                              i));
  }
  if (named) {
    const std::string name = (*choice)["function"]["name"].get<std::string>();
    bool known = false;
    for (const json &tool : *tools)
      known |= tool["function"]["name"] == name;
    if (!known)
      return fields.fail("tool_choice",
                         fmt::format("tool_choice names the function {}, "
                                     "which tools does not list",
                                     support::quote(name)));
    request.toolChoiceName = name;
  }
  request.toolChoice = named ? "function" : "required";
  // The tools as the body spells them (their parameters' key order).
  support::JsonError jsonError;
  std::optional<nlohmann::ordered_json> ordered =
      support::parseJson<nlohmann::ordered_json>(text, jsonError);
  request.toolsJson = (*ordered)["tools"].dump();
  return true;
}

} // namespace

bool parseCompletionRequest(std::string_view text, bool chat,
                            const std::string &model,
                            CompletionRequest &request, ApiError &error) {
  json body;
  if (!parseBody(text, body, error))
    return false;
  Fields fields(body, error);
  request = CompletionRequest();
  request.chat = chat;
  if (!fields.model(model, request.model))
    return false;
  if (chat) {
    const json *messages = fields.find("messages");
    if (!messages)
      return fields.fail("messages", "messages is required");
    if (!messages->is_array() || messages->empty())
      return fields.fail("messages", "messages must be a non-empty list");
    for (std::size_t m = 0; m < messages->size(); ++m) {
      const json &message = (*messages)[m];
      if (!message.is_object() || !message.contains("role") ||
          !message["role"].is_string())
        return fields.fail(fmt::format("messages[{}]", m),
                           fmt::format("messages[{}] must be an object with "
                                       "a string role",
                                       m));
      ChatMessage chatMessage;
      chatMessage.role = message["role"].get<std::string>();
      if (!knownRole(chatMessage.role))
        return fields.fail(
            fmt::format("messages[{}].role", m),
            fmt::format("messages[{}].role = {} is not a role (system, "
                        "developer, user, assistant, tool or function)",
                        m, support::quote(chatMessage.role)));
      if (!messageContent(message, m, fields, chatMessage))
        return false;
      request.messages.push_back(std::move(chatMessage));
    }
    if (const json *tools = fields.find("tools")) {
      request.templateVariables = json{{"tools", *tools}}.dump();
      const json *choice = fields.find("tool_choice");
      request.toolsOffered = tools->is_array() && !tools->empty() &&
                             !(choice && *choice == "none");
    }
  } else {
    const json *prompt = fields.find("prompt");
    if (!prompt)
      return fields.fail("prompt", "prompt is required");
    // A string, a list of ids, or a list of one of either.
    const json *one = prompt;
    if (prompt->is_array() && !prompt->empty() &&
        ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
      if (prompt->size() != 1)
        return fields.fail("prompt",
                           fmt::format("prompt: one prompt per request ({} "
                                       "given)",
                                       prompt->size()));
      one = &(*prompt)[0];
    }
    if (one->is_string()) {
      request.promptText = one->get<std::string>();
      if (request.promptText->empty())
        return fields.fail("prompt", "prompt is empty");
    } else if (one->is_array()) {
      if (!fields.ids(*one, "prompt", request.promptIds))
        return false;
    } else {
      return fields.fail("prompt", "prompt must be a string or a list of "
                                   "token ids");
    }
  }
  const char *maxName = chat && fields.find("max_completion_tokens")
                            ? "max_completion_tokens"
                            : "max_tokens";
  std::optional<int64_t> seed, topK, n;
  if (!fields.integer(maxName, request.maxTokens, 1) ||
      !fields.real("temperature", request.temperature) ||
      !fields.real("top_p", request.topP) ||
      !fields.integer("top_k", topK, 0) ||
      !fields.real("repetition_penalty", request.repetitionPenalty) ||
      !fields.integer("seed", seed, 0) ||
      !fields.boolean("stream", request.stream) ||
      !fields.integer("n", n, 1) ||
      !fields.neutral("best_of", 1, "one choice per request") ||
      !fields.neutral("echo", false, "the prompt is not repeated") ||
      !fields.logprobs(chat, request.logprobs) ||
      !fields.real("presence_penalty", request.presencePenalty) ||
      !fields.real("frequency_penalty", request.frequencyPenalty) ||
      !fields.logitBias(request.logitBias) ||
      !fields.neutral("suffix", json(nullptr),
                      "a completion continues its prompt (no text is "
                      "inserted before a suffix)") ||
      !fields.neutral("modalities", json::array({"text"}),
                      "the model writes text only"))
    return false;
  if (!responseFormat(text, fields, request))
    return false;
  if (!toolChoice(text, fields, request))
    return false;
  if (!(request.temperature >= 0 && request.temperature <= 2))
    return fields.fail("temperature",
                       fmt::format("temperature must be in [0, 2] (0: "
                                   "greedy), got {}",
                                   request.temperature));
  if (!(request.topP > 0 && request.topP <= 1))
    return fields.fail("top_p", fmt::format("top_p must be in (0, 1], got {}",
                                            request.topP));
  if (!(request.repetitionPenalty > 0 &&
        std::isfinite(request.repetitionPenalty)))
    return fields.fail("repetition_penalty",
                       fmt::format("repetition_penalty must be positive, got "
                                   "{}",
                                   request.repetitionPenalty));
  for (auto [name, value] : {std::pair{"presence_penalty",
                                       request.presencePenalty},
                             std::pair{"frequency_penalty",
                                       request.frequencyPenalty}})
    if (!(value >= -2 && value <= 2))
      return fields.fail(name, fmt::format("{} must be in [-2, 2], got {}",
                                           name, value));
  request.topK = topK.value_or(0);
  request.n = n.value_or(1);
  if (request.n > kMaxChoices)
    return fields.fail("n", fmt::format("n must be at most {}, got {}",
                                        kMaxChoices, request.n));
  if (seed)
    request.seed = static_cast<uint64_t>(*seed);
  if (const json *stop = fields.find("stop")) {
    if (stop->is_string()) {
      request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= 4) {
      for (const json &item : *stop) {
        if (!item.is_string())
          return fields.fail("stop", "stop must be a string or a list of up "
                                     "to 4 strings");
        request.stop.push_back(item.get<std::string>());
      }
    } else {
      return fields.fail("stop",
                         "stop must be a string or a list of up to 4 strings");
    }
    for (const std::string &s : request.stop)
      if (s.empty())
        return fields.fail("stop", "stop holds an empty string");
  }
  if (const json *options = fields.find("stream_options")) {
    if (!options->is_object())
      return fields.fail("stream_options", "stream_options must be an object");
    if (!request.stream)
      return fields.fail("stream_options",
                         "stream_options is only allowed with stream = true");
    json usage = options->value("include_usage", json(false));
    if (!usage.is_boolean())
      return fields.fail("stream_options",
                         "stream_options.include_usage must be true or false");
    request.includeUsage = usage.get<bool>();
  }
  return true;
}

bool parseEmbeddingRequest(std::string_view text, const std::string &model,
                           EmbeddingRequest &request, ApiError &error) {
  json body;
  if (!parseBody(text, body, error))
    return false;
  Fields fields(body, error);
  request = EmbeddingRequest();
  if (!fields.model(model, request.model))
    return false;
  const json *input = fields.find("input");
  if (!input)
    return fields.fail("input", "input is required");
  // A string, a list of ids, a list of strings, or a list of id lists.
  std::vector<const json *> items;
  if (input->is_string() ||
      (input->is_array() && !input->empty() && (*input)[0].is_number()))
    items.push_back(input);
  else if (input->is_array() && !input->empty())
    for (const json &item : *input)
      items.push_back(&item);
  else
    return fields.fail("input", "input must be a string, a list of token "
                                "ids, or a non-empty list of either");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const json &item = *items[i];
    std::string param = items.size() == 1 && items[0] == input
                            ? "input"
                            : fmt::format("input[{}]", i);
    if (item.is_string()) {
      if (item.get<std::string>().empty())
        return fields.fail("input", param + " is empty");
      request.texts.push_back(item.get<std::string>());
      request.ids.emplace_back();
    } else if (item.is_array()) {
      std::vector<int64_t> ids;
      if (!fields.ids(item, param, ids))
        return false;
      request.texts.push_back(std::nullopt);
      request.ids.push_back(std::move(ids));
    } else {
      return fields.fail("input", param + " must be a string or a list of "
                                          "token ids");
    }
  }
  if (const json *format = fields.find("encoding_format")) {
    if (*format == "base64")
      request.base64 = true;
    else if (*format != "float")
      return fields.fail("encoding_format",
                         "encoding_format must be \"float\" or \"base64\"");
  }
  return fields.neutral("dimensions", json(nullptr),
                        "the model's width is the only one");
}

namespace {

json usage(int64_t prompt, int64_t completion) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

json finish(const std::string &reason) {
  return reason.empty() ? json(nullptr) : json(reason);
}

/// A log-probability as JSON: OpenAI's -9999 for a token that cannot be
/// chosen (JSON has no infinity).
json logprobValue(double value) {
  return std::isfinite(value) ? json(value) : json(-9999.0);
}

json bytesOf(const std::string &text) {
  json bytes = json::array();
  for (unsigned char c : text)
    bytes.push_back(int(c));
  return bytes;
}

/// A choice's "logprobs": chat's {"content": [...], "refusal": null}, or
/// completions' {"tokens", "token_logprobs", "top_logprobs",
/// "text_offset"}; `textOffset`: characters before the first token's text.
json logprobsJson(const CompletionRequest &request,
                  const std::vector<TokenLogprobEntry> &entries,
                  int64_t textOffset) {
  if (request.chat) {
    auto token = [](const LoggedToken &t) {
      return json{{"token", t.text},
                  {"logprob", logprobValue(t.logprob)},
                  {"bytes", bytesOf(t.text)},
                  {"token_id", t.id}};
    };
    json content = json::array();
    for (const TokenLogprobEntry &entry : entries) {
      json item = token(entry.chosen);
      json top = json::array();
      for (const LoggedToken &alternative : entry.top)
        top.push_back(token(alternative));
      item["top_logprobs"] = top;
      content.push_back(item);
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (const TokenLogprobEntry &entry : entries) {
    tokens.push_back(entry.chosen.text);
    values.push_back(logprobValue(entry.chosen.logprob));
    json top = json::object();
    for (const LoggedToken &alternative : entry.top)
      if (!top.contains(alternative.text))
        top[alternative.text] = logprobValue(alternative.logprob);
    tops.push_back(top);
    offsets.push_back(textOffset);
    textOffset += textCharacters(entry.chosen.text);
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

} // namespace

/// A result's tool calls as OpenAI's message (or, `streamed`, delta) lists
/// them: ids "call_" + the response's id's suffix + the call's number.
json toolCallsJson(const CompletionResult &result, bool streamed) {
  json calls = json::array();
  const std::string stem = result.id.substr(result.id.find('-') + 1);
  for (std::size_t i = 0; i < result.toolCalls.size(); ++i) {
    json call = {{"id", fmt::format("call_{}_{}", stem, i)},
                 {"type", "function"},
                 {"function",
                  {{"name", result.toolCalls[i].name},
                   {"arguments", result.toolCalls[i].arguments}}}};
    if (streamed)
      call["index"] = i;
    calls.push_back(call);
  }
  return calls;
}

std::string toolCallsChunk(const CompletionRequest &request,
                           const CompletionResult &result, int64_t index) {
  json choice = {{"index", index},
                 {"logprobs", nullptr},
                 {"finish_reason", nullptr},
                 {"token_ids", json::array()},
                 {"delta", {{"tool_calls", toolCallsJson(result, true)}}}};
  json body = {{"id", result.id},
               {"object", "chat.completion.chunk"},
               {"created", result.created},
               {"model", request.model},
               {"choices", json::array({choice})}};
  if (request.includeUsage)
    body["usage"] = nullptr;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

int64_t textCharacters(const std::string &text) {
  int64_t count = 0;
  for (unsigned char c : text)
    count += (c & 0xC0) != 0x80;
  return count;
}

std::string completionBody(const CompletionRequest &request,
                           const std::vector<CompletionResult> &results) {
  json choices = json::array();
  int64_t generated = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CompletionResult &result = results[i];
    json choice = {{"index", i},
                   {"logprobs", request.logprobs >= 0
                                    ? logprobsJson(request, result.logprobs, 0)
                                    : json(nullptr)},
                   {"finish_reason", finish(result.finishReason)},
                   {"token_ids", result.tokens}};
    if (request.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", result.text}};
      if (!result.toolCalls.empty()) {
        choice["message"]["tool_calls"] = toolCallsJson(result, false);
        if (result.text.empty())
          choice["message"]["content"] = nullptr;
      }
    } else {
      choice["text"] = result.text;
    }
    choices.push_back(choice);
    generated += static_cast<int64_t>(result.tokens.size());
  }
  const CompletionResult &first = results.front();
  json body = {{"id", first.id},
               {"object", request.chat ? "chat.completion" : "text_completion"},
               {"created", first.created},
               {"model", request.model},
               {"choices", choices},
               {"usage", usage(first.promptTokens, generated)}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string completionChunk(const CompletionRequest &request,
                            const CompletionResult &result,
                            const std::string &text,
                            const std::vector<int64_t> &tokens,
                            const std::string &finishReason, bool role,
                            const std::vector<TokenLogprobEntry> &logprobs,
                            int64_t textOffset, int64_t index) {
  json choice = {{"index", index},
                 {"logprobs", request.logprobs >= 0 && !logprobs.empty()
                                  ? logprobsJson(request, logprobs, textOffset)
                                  : json(nullptr)},
                 {"finish_reason", finish(finishReason)},
                 {"token_ids", tokens}};
  if (request.chat) {
    json delta = json::object();
    if (role)
      delta["role"] = "assistant";
    delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  json body = {{"id", result.id},
               {"object",
                request.chat ? "chat.completion.chunk" : "text_completion"},
               {"created", result.created},
               {"model", request.model},
               {"choices", json::array({choice})}};
  if (request.includeUsage)
    body["usage"] = nullptr;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string usageChunk(const CompletionRequest &request,
                       const std::vector<CompletionResult> &results) {
  int64_t generated = 0;
  for (const CompletionResult &result : results)
    generated += static_cast<int64_t>(result.tokens.size());
  const CompletionResult &first = results.front();
  json body = {{"id", first.id},
               {"object",
                request.chat ? "chat.completion.chunk" : "text_completion"},
               {"created", first.created},
               {"model", request.model},
               {"choices", json::array()},
               {"usage", usage(first.promptTokens, generated)}};
  return body.dump();
}

namespace {

std::string base64(const std::vector<float> &values) {
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size()); // little-endian
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      chunk |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size())
      chunk |= uint32_t(uint8_t(bytes[i + 2]));
    out += alphabet[(chunk >> 18) & 63];
    out += alphabet[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[chunk & 63] : '=';
  }
  return out;
}

} // namespace

std::string embeddingBody(const std::string &model,
                          const std::vector<std::vector<float>> &vectors,
                          int64_t promptTokens, bool base64Format) {
  json data = json::array();
  for (std::size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", base64Format ? json(base64(vectors[i]))
                                               : json(vectors[i])}});
  json body = {{"object", "list"},
               {"data", data},
               {"model", model},
               {"usage",
                {{"prompt_tokens", promptTokens},
                 {"total_tokens", promptTokens}}}};
  return body.dump();
}

std::string modelBody(const std::string &model, int64_t created) {
  return json{{"id", model},
              {"object", "model"},
              {"created", created},
              {"owned_by", "tfmc"}}
      .dump();
}

std::string modelsBody(const std::string &model, int64_t created) {
  json body = {{"object", "list"},
               {"data", json::array({json::parse(modelBody(model, created))})}};
  return body.dump();
}

} // namespace tfmc::runtime::serve
