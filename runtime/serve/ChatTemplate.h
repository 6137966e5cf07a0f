//===- ChatTemplate.h - Hugging Face chat templates -------------*- C++ -*-===//
//
// A model's chat template (tokenizer_config.json's "chat_template": a Jinja
// template) turns an OpenAI-style list of messages into the prompt text the
// model was trained on. transformers renders it with Python's Jinja2 in an
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True),
// with raise_exception() and its own tojson; this is a small engine with
// Jinja2's semantics for the part of the language chat templates use,
// checked byte for byte against @huggingface/jinja (test/Serve/
// chat-templates.test, where it agrees with Jinja2) and against Jinja2
// itself (chat-templates-jinja2.test) on the real templates of TinyLlama,
// Llama 2, Mistral, Qwen2, Qwen2.5 and Llama 3.1 (test/fixtures/
// chat_templates/).
//
// Supported:
//   - {{ expr }}, {% stmt %}, {# comment #}; `-` on either side of any of
//     them strips the whitespace beside it; `+` keeps it; trim_blocks and
//     lstrip_blocks as Hugging Face sets them; \r\n read as \n; one trailing
//     newline of the template dropped.
//   - if / elif / else; for x in xs [if cond] ... [else] (loop.index,
//     index0, revindex, revindex0, first, last, length, previtem, nextitem,
//     depth, depth0, cycle()); for a, b in pairs; break, continue; set
//     (a name, a tuple of names, namespace attributes `set ns.x = ...`, and
//     `{% set x %}...{% endset %}`); macros at the top level (parameters with
//     defaults, positional and keyword arguments); transformers'
//     {% generation %} (rendered as its body).
//   - literals: strings ('...' and "..." with Python's escapes, adjacent
//     strings joined), integers, floats, true/false/none (and True/False/
//     None), lists, tuples, dicts with string keys; x.attr, x[key],
//     x[a:b:c], calls with positional and keyword arguments.
//   - operators, loosest first: `a if c else b`, or, and, not, == != < <= > >=
//     in, not in (chained as in Python), + -, ~, * / // %, **, unary - +;
//     `| filter(...)` and `is [not] test(...)` bind tightest.
//   - filters: abs, capitalize, count, default (d), first, float, indent,
//     int, items, join, last, length, list, lower, map, reject, rejectattr,
//     replace, reverse, safe, select, selectattr, sort, string, sum, title,
//     tojson (transformers': ensure_ascii, indent, separators, sort_keys),
//     trim, unique, upper.
//   - tests: defined, undefined, none, boolean, true, false, integer, float,
//     number, string, mapping, iterable, sequence, callable, odd, even,
//     divisibleby, eq/equalto/==, ne/!=, lt/<, le/<=, gt/>, ge/>=, in,
//     sameas (of none, booleans and objects), lower, upper.
//   - methods: str's capitalize, count, endswith, find, index, isalnum,
//     isalpha, isdigit, islower, isspace, isupper, join, lower, lstrip,
//     removeprefix, removesuffix, replace, rfind, rindex, rsplit, rstrip,
//     split, splitlines, startswith, strip, title, upper; dict's get, items,
//     keys, values, copy; list's and tuple's count, index, copy.
//   - globals: range (at most 100000 items, the sandbox's bound),
//     namespace, dict, raise_exception(message).
//   - values as Python has them: Undefined (a missing name, key or index:
//     prints as nothing, iterates as nothing, tests false; any other use is
//     an error), None, bool, 64-bit int, float (printed as Python's repr),
//     str (indexed by code point), list, tuple, dict (insertion order).
//
// Refused with an error (at parse time where the construct shows, else
// when reached), never rendered differently from Jinja2: unknown filters and
// tests (Jinja2 refuses them when compiling too); raw, filter, call, with,
// include, import, extends and block tags; recursive loops; macros below the
// top level or using varargs, kwargs or caller; `*`/`**` argument
// unpacking; tuple subscripts (x[a, b]); filtered set blocks; hexadecimal,
// octal and binary literals; \N{...} escapes; `%` string formatting;
// integers beyond 64 bits (Python's grow); dict keys other than strings;
// int(base=...) other than 10; str methods not listed above (format,
// center, ...), dict.fromkeys, numbers' attributes (.real, ...); attributes
// of dict views, iterators and functions; `sameas` of strings and numbers
// (Python's `is` there depends on its caching); case mapping (upper,
// lower, title, capitalize, islower, ...) and case-insensitive sorting of
// text outside ASCII (Python maps by Unicode's tables); printing a list,
// tuple or dict that holds text outside ASCII (Python escapes by Unicode's
// categories); printing what Python prints by address (functions,
// namespaces, loops, iterators) or as range(...) and dict_items(...);
// strftime_now, lipsum, cycler, joiner (defined, so `is defined` agrees,
// but failing when called).
//
// Bounds (ChatTemplateLimits; a template that reaches one fails with
// ChatTemplateError::Kind::Limit): the template's size, how deep its blocks
// and expressions nest, the output's size (which also bounds any one
// string), the bytes of all strings and lists built while rendering, the
// loop iterations, and how deep evaluation recurses (macros calling
// macros). So a hostile template can neither hang a server nor exhaust its
// memory.
//
// Errors are one line: "chat template:LINE:COLUMN: REASON", the place in the
// template's text (1-based; columns count characters). raise_exception's
// message is the reason as the template wrote it, for the caller to return
// to its client. Nothing throws out of this API. A parsed ChatTemplate is
// immutable: one may render on many threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_CHATTEMPLATE_H
#define TFMC_RUNTIME_SERVE_CHATTEMPLATE_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime {

struct ChatMessage {
  std::string role;
  std::string content;
  /// content is null (none in the template): an assistant's message that
  /// carries tool calls only.
  bool contentNull = false;
  /// The message's other fields as the template reads them (an object:
  /// tool_calls, tool_call_id, name), each a variable of the message.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

struct ChatTemplateLimits {
  /// The template's source.
  std::size_t maxTemplateBytes = 1 << 20;
  /// Blocks within blocks, and expressions within expressions (each
  /// parenthesis, operand, argument or item level counts).
  int maxNesting = 200;
  /// The rendered text; also the longest string any value may hold.
  std::size_t maxOutputBytes = 8 << 20;
  /// Bytes of all strings and lists built while rendering (the output
  /// included), which bounds both memory and time.
  std::size_t maxWorkBytes = 256 << 20;
  /// Loop iterations, and items that filters (map, select, join, sort...)
  /// walk.
  std::size_t maxIterations = 1'000'000;
  /// Nested evaluation (statements, expressions, macro calls): what bounds
  /// the stack a rendering uses (about 1 KB a level in a release build).
  int maxDepth = 500;
};

struct ChatTemplateError {
  enum class Kind {
    Syntax, // the template does not parse
    Render, // rendering failed (a type error, an Undefined used, ...)
    Raised, // the template called raise_exception(reason)
    Limit,  // a ChatTemplateLimits bound was reached
    Input,  // the inputs: a string that is not UTF-8, a name given twice
  };
  Kind kind = Kind::Syntax;
  /// The place in the template (1-based), 0 when there is none.
  std::size_t line = 0;
  std::size_t column = 0;
  /// What went wrong, unquoted: for Raised, the template's own message.
  std::string reason;

  /// "chat template:LINE:COLUMN: REASON" (raise_exception: "...: the
  /// template raised: REASON") as one line, quoted as support/Text quotes.
  std::string message() const;
};

/// What a template is rendered with. transformers passes the tokenizer's
/// special tokens; a token the tokenizer lacks is absent (Undefined).
struct ChatTemplateInputs {
  std::vector<ChatMessage> messages;
  bool addGenerationPrompt = false;
  std::optional<std::string> bosToken;
  std::optional<std::string> eosToken;
  /// Other variables (an object: name -> value), e.g. "tools"; a name that
  /// repeats one of the above is an error.
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
};

class ChatTemplate {
public:
  /// Parses `source` (the template's text); on failure returns nothing and
  /// fills `error` (kind Syntax or Limit).
  static std::optional<ChatTemplate> parse(std::string_view source, ChatTemplateError &error,
                                           const ChatTemplateLimits &limits = {});

  /// The prompt text, or nothing with `error` filled.
  std::optional<std::string> render(const ChatTemplateInputs &inputs, ChatTemplateError &error) const;

  ChatTemplate(const ChatTemplate &) = default;
  ChatTemplate &operator=(const ChatTemplate &) = default;
  ChatTemplate(ChatTemplate &&) noexcept = default;
  ChatTemplate &operator=(ChatTemplate &&) noexcept = default;
  ~ChatTemplate();

private:
  struct Impl;
  explicit ChatTemplate(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

/// tokenizer_config.json's special token `name` (bos_token, eos_token): a
/// string, an AddedToken object {"content": ...}, or null or absent (none).
/// False with `error` ("NAME is neither a string nor a token object").
bool readSpecialToken(const nlohmann::ordered_json &config, const char *name,
                      std::optional<std::string> &token, std::string &error);

/// tokenizer_config.json's chat_template: a string, or a list of named
/// templates of which transformers uses "default"; none when absent or
/// null. False with `error` for anything else.
bool readChatTemplateSource(const nlohmann::ordered_json &config,
                            std::optional<std::string> &source,
                            std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_SERVE_CHATTEMPLATE_H
