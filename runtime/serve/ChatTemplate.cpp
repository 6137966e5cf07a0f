//===- ChatTemplate.cpp - Hugging Face chat templates ---------------------===//

#include "runtime/serve/ChatTemplate.h"

#include "runtime/serve/TemplateEval.h"
#include "support/Text.h"
#include "support/Utf8.h"

#include <new>

namespace tfmc::runtime {

using jinja::TemplateFailure;

struct ChatTemplate::Impl {
  jinja::Program program;
  ChatTemplateLimits limits;
};

ChatTemplate::ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::~ChatTemplate() = default;

std::string ChatTemplateError::message() const {
  std::string out = "chat template";
  if (line > 0)
    out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (kind == Kind::Raised)
    out += "the template raised: " + support::escapeText(reason, support::kMaxMessageBytes);
  else
    out += reason;
  return support::oneLine(out);
}

namespace {

ChatTemplateError toError(const TemplateFailure &failure) {
  ChatTemplateError error;
  switch (failure.kind) {
  case TemplateFailure::Kind::Syntax: error.kind = ChatTemplateError::Kind::Syntax; break;
  case TemplateFailure::Kind::Render: error.kind = ChatTemplateError::Kind::Render; break;
  case TemplateFailure::Kind::Raised: error.kind = ChatTemplateError::Kind::Raised; break;
  case TemplateFailure::Kind::Limit: error.kind = ChatTemplateError::Kind::Limit; break;
  }
  error.line = failure.location.line;
  error.column = failure.location.column;
  error.reason = failure.reason;
  return error;
}

ChatTemplateError inputError(std::string reason) {
  ChatTemplateError error;
  error.kind = ChatTemplateError::Kind::Input;
  error.reason = std::move(reason);
  return error;
}

/// `body`'s result, or nullopt with `error` set: nothing it throws leaves
/// the API (a template's failure, memory, and what no path should throw: a
/// library's own exception, reported as an internal error).
template <typename Body>
auto guarded(ChatTemplateError &error, Body &&body) -> decltype(body()) {
  try {
    return body();
  } catch (const TemplateFailure &failure) {
    error = toError(failure);
  } catch (const std::bad_alloc &) {
    error = ChatTemplateError{};
    error.kind = ChatTemplateError::Kind::Limit;
    error.reason = "out of memory";
  } catch (const std::exception &e) {
    error = ChatTemplateError{};
    error.kind = ChatTemplateError::Kind::Render;
    error.reason = std::string("internal error: ") + e.what();
  }
  return std::nullopt;
}

} // namespace

std::optional<ChatTemplate> ChatTemplate::parse(std::string_view source, ChatTemplateError &error,
                                                const ChatTemplateLimits &limits) {
  return guarded(error, [&]() -> std::optional<ChatTemplate> {
    auto impl = std::make_shared<Impl>();
    impl->limits = limits;
    impl->program = jinja::parseTemplate(source, {limits.maxTemplateBytes, limits.maxNesting});
    return ChatTemplate(std::move(impl));
  });
}

std::optional<std::string> ChatTemplate::render(const ChatTemplateInputs &inputs, ChatTemplateError &error) const {
  const ChatTemplateLimits &limits = impl_->limits;
  return guarded(error, [&]() -> std::optional<std::string> {
    jinja::Scope globals(nullptr);
    jinja::addBuiltinGlobals(globals);
    jinja::ValueList messages;
    for (std::size_t i = 0; i < inputs.messages.size(); ++i) {
      const ChatMessage &message = inputs.messages[i];
      if (!support::isValidUtf8(message.role) || !support::isValidUtf8(message.content)) {
        error = inputError("message " + std::to_string(i) + " is not valid UTF-8");
        return std::nullopt;
      }
      jinja::Dict fields;
      fields.entries.emplace_back("role", jinja::Value::string(message.role));
      fields.entries.emplace_back("content", message.contentNull
                                                 ? jinja::Value::none()
                                                 : jinja::Value::string(message.content));
      for (const auto &[name, value] : message.extra.items()) {
        if (name == "role" || name == "content") {
          error = inputError("message " + std::to_string(i) + "'s " + name + " is given twice");
          return std::nullopt;
        }
        try {
          fields.entries.emplace_back(name, jinja::fromJson(value));
        } catch (const std::exception &e) {
          error = inputError("message " + std::to_string(i) + "'s " + name + ": " + e.what());
          return std::nullopt;
        }
      }
      messages.push_back(jinja::Value::dict(std::move(fields)));
    }
    globals.set("messages", jinja::Value::list(std::move(messages)));
    globals.set("add_generation_prompt", jinja::Value::boolean(inputs.addGenerationPrompt));
    for (const auto *token : {&inputs.bosToken, &inputs.eosToken}) {
      const char *name = token == &inputs.bosToken ? "bos_token" : "eos_token";
      if (!*token)
        continue;
      if (!support::isValidUtf8(**token)) {
        error = inputError(std::string(name) + " is not valid UTF-8");
        return std::nullopt;
      }
      globals.set(name, jinja::Value::string(**token));
    }
    if (!inputs.variables.is_object()) {
      error = inputError("the extra variables are not a JSON object");
      return std::nullopt;
    }
    for (const auto &[name, value] : inputs.variables.items()) {
      if (name == "messages" || name == "add_generation_prompt" || name == "bos_token" || name == "eos_token") {
        error = inputError("variable " + support::quote(name) + " is given twice");
        return std::nullopt;
      }
      try {
        globals.set(name, jinja::fromJson(value));
      } catch (const TemplateFailure &failure) {
        error = inputError("variable " + support::quote(name) + ": " + failure.reason);
        return std::nullopt;
      }
    }
    jinja::Interpreter interpreter({limits.maxOutputBytes, limits.maxWorkBytes, limits.maxIterations, limits.maxDepth});
    return interpreter.render(impl_->program, globals);
  });
}

bool readSpecialToken(const nlohmann::ordered_json &config, const char *name,
                      std::optional<std::string> &token, std::string &error) {
  token.reset();
  auto it = config.find(name);
  if (it == config.end() || it->is_null())
    return true;
  if (it->is_string()) {
    token = it->get<std::string>();
    return true;
  }
  if (it->is_object() && it->contains("content") &&
      (*it)["content"].is_string()) {
    token = (*it)["content"].get<std::string>();
    return true;
  }
  error = std::string(name) + " is neither a string nor a token object";
  return false;
}

bool readChatTemplateSource(const nlohmann::ordered_json &config,
                            std::optional<std::string> &source,
                            std::string &error) {
  source.reset();
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null())
    return true;
  if (it->is_string()) {
    source = it->get<std::string>();
    return true;
  }
  if (it->is_array()) {
    for (const nlohmann::ordered_json &named : *it)
      if (named.is_object() && named.value("name", "") == "default" &&
          named.contains("template") && named["template"].is_string())
        source = named["template"].get<std::string>();
    if (source)
      return true;
    error = "chat_template lists no template named \"default\"";
    return false;
  }
  error = "chat_template must be a string or a list of named templates";
  return false;
}

} // namespace tfmc::runtime
