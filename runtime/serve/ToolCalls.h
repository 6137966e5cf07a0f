//===- ToolCalls.h - A model's tool calls in its text, as OpenAI's ---*- C++ -*-===//
//
// Chat templates that render `tools` ask the model to answer a call in the
// syntax its family was trained on; the server reads that syntax back out
// of the generated text into OpenAI's `tool_calls` (docs/serving.md). The
// syntax is the template's, recognised by the markers its text holds:
//   - Hermes (Qwen2.5, Hermes, and the templates that copy them): one or
//     more `<tool_call>{"name": N, "arguments": {...}}</tool_call>` blocks,
//     text outside them the message's content;
//   - Llama 3.1 / 3.2 (its JSON tool format): the whole answer one JSON
//     object {"name": N, "parameters": {...}} (or "arguments"), optionally
//     after `<|python_tag|>`;
//   - Mistral (v0.3's): `[TOOL_CALLS]` then a JSON list of {"name",
//     "arguments"} objects, text before it the content.
// An answer that does not parse whole in its syntax is plain content (as
// vLLM's parsers treat it): a call is never guessed from part of one.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TOOLCALLS_H
#define TFMC_RUNTIME_SERVE_TOOLCALLS_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime::serve {

enum class ToolCallSyntax { None, Hermes, Llama3Json, Mistral };

/// The syntax a chat template asks for, from its source; None when it
/// shows none of the markers above.
ToolCallSyntax toolCallSyntax(std::string_view templateSource);
const char *toString(ToolCallSyntax syntax);

struct ToolCall {
  std::string name;
  std::string arguments; ///< a JSON object's text, as OpenAI gives it
};

struct ParsedAnswer {
  std::string content; ///< the text around the calls, trimmed
  std::vector<ToolCall> calls;
};

/// The calls of `text` in `syntax`, or nothing when it holds none (or not
/// whole): the answer is then `text` as it is.
std::optional<ParsedAnswer> parseToolCalls(ToolCallSyntax syntax,
                                           std::string_view text);

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_TOOLCALLS_H
