//===- ChatTemplateTest.cpp - The chat template engine's API --------------===//
//
// runtime/serve/ChatTemplate.h where the comparisons with @huggingface/jinja
// and Jinja2 (test/Serve/) cannot look: its errors (one line naming the
// template's line and column and what was expected), raise_exception's
// message, the bounds a hostile template meets, the inputs, threads. Plus
// the real templates' renderings that other implementations publish, so
// that a build without node or python3-jinja2 still checks them.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/ChatTemplate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

using tfmc::runtime::ChatMessage;
using tfmc::runtime::ChatTemplate;
using tfmc::runtime::ChatTemplateError;
using tfmc::runtime::ChatTemplateInputs;
using tfmc::runtime::ChatTemplateLimits;
using Kind = ChatTemplateError::Kind;

namespace {

/// The error parsing `source` gives (the test fails if it parses).
ChatTemplateError parseError(const std::string &source, const ChatTemplateLimits &limits = {}) {
  ChatTemplateError error;
  EXPECT_FALSE(ChatTemplate::parse(source, error, limits)) << source;
  return error;
}

/// Renders `source`; the output, or "ERROR " and the error's message.
std::string render(const std::string &source, const ChatTemplateInputs &inputs = {},
                   const ChatTemplateLimits &limits = {}, ChatTemplateError *errorOut = nullptr) {
  ChatTemplateError error;
  auto chat = ChatTemplate::parse(source, error, limits);
  if (chat) {
    if (auto text = chat->render(inputs, error))
      return *text;
  }
  if (errorOut)
    *errorOut = error;
  return "ERROR " + error.message();
}

ChatTemplateError renderError(const std::string &source, const ChatTemplateInputs &inputs = {},
                              const ChatTemplateLimits &limits = {}) {
  ChatTemplateError error;
  std::string out = render(source, inputs, limits, &error);
  EXPECT_EQ(out.rfind("ERROR ", 0), 0u) << "rendered: " << out;
  return error;
}

std::string fixture(const std::string &name) {
  std::ifstream in(std::string(TFMC_SOURCE_DIR) + "/test/fixtures/chat_templates/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str())["chat_template"].get<std::string>();
}

// --- Syntax errors: one line, the place, what was expected ------------------

TEST(ChatTemplateSyntax, UnterminatedTags) {
  ChatTemplateError e = parseError("Hello {{ name ");
  EXPECT_EQ(e.kind, Kind::Syntax);
  EXPECT_EQ(e.message(), "chat template:1:7: unterminated tag: expected '}}' before the end of the template");
  EXPECT_EQ(parseError("a\n  {% if x").message(),
            "chat template:2:3: unterminated tag: expected '%}' before the end of the template");
  EXPECT_EQ(parseError("{# note").message(), "chat template:1:1: unterminated comment: expected '#}'");
  EXPECT_EQ(parseError("{{ 'abc }}").message(), "chat template:1:4: unterminated string");
}

TEST(ChatTemplateSyntax, UnclosedBlocksNameTheirOpener) {
  EXPECT_EQ(parseError("x\n{% if a %}\n  {% for m in messages %}{{ m }}\n{% endif %}").message(),
            "chat template:4:4: unexpected 'endif' with no block open that it closes");
  EXPECT_EQ(parseError("{% for m in messages %}{{ m }}").message(),
            "chat template:1:31: expected 'endfor' or 'else' to close the 'for' at 1:1, found the end of the "
            "template");
  EXPECT_EQ(parseError("{% if a %}x{% elif b %}y").message(),
            "chat template:1:25: expected 'elif', 'else' or 'endif' to close the 'if' at 1:1, found the end of the "
            "template");
}

TEST(ChatTemplateSyntax, UnknownFiltersAndTestsAtParseTime) {
  EXPECT_EQ(parseError("{{ messages | shout }}").message(), "chat template:1:15: no filter named 'shout'");
  EXPECT_EQ(parseError("{% if x is shiny %}{% endif %}").message(), "chat template:1:12: no test named 'shiny'");
  // Jinja2 refuses them when compiling, so a template that names one fails
  // even where the filter is never reached.
  EXPECT_EQ(parseError("{% if false %}{{ x | wordwrap }}{% endif %}").kind, Kind::Syntax);
}

TEST(ChatTemplateSyntax, ExpectedWhatAndFound) {
  EXPECT_EQ(parseError("{{ 1 + }}").message(), "chat template:1:8: expected an expression, found '}}'");
  // As in Jinja2, `in` can name the loop variable; the `in` is then missing.
  EXPECT_EQ(parseError("{% for in messages %}{% endfor %}").message(),
            "chat template:1:11: expected 'in' after the loop variable, found 'messages'");
  EXPECT_EQ(parseError("{% for m of messages %}{% endfor %}").message(),
            "chat template:1:10: expected 'in' after the loop variable, found 'of'");
  EXPECT_EQ(parseError("{% if x %}{% else if %}{% endif %}").message(),
            "chat template:1:19: expected '%}' after 'else', found 'if'");
  EXPECT_EQ(parseError("{{ f(a=1, 2) }}").message(),
            "chat template:1:11: a positional argument follows a keyword argument");
  EXPECT_EQ(parseError("{{ [1, 2) }}").message(), "chat template:1:9: unexpected ')', expected ']'");
  EXPECT_EQ(parseError("{{ a ! b }}").message(), "chat template:1:6: unexpected character '!'");
  EXPECT_EQ(parseError("{% frobnicate %}").message(), "chat template:1:4: unknown tag 'frobnicate'");
  EXPECT_EQ(parseError("{% break %}").message(), "chat template:1:4: 'break' outside a for loop");
}

TEST(ChatTemplateSyntax, ColumnsCountCharacters) {
  // Two-byte é and a four-byte emoji before the error: columns are
  // characters, as an editor shows them.
  EXPECT_EQ(parseError("é😀 {{ 1 + }}").message(), "chat template:1:11: expected an expression, found '}}'");
  EXPECT_EQ(parseError("a\r\nb\r\n{{ ) }}").message(), "chat template:3:4: unexpected ')'");
}

TEST(ChatTemplateSyntax, RefusedConstructsAreErrors) {
  EXPECT_EQ(parseError("{% raw %}{{ x }}{% endraw %}").message(), "chat template:1:1: 'raw' blocks are not supported");
  EXPECT_EQ(parseError("{% include 'x' %}").message(), "chat template:1:4: 'include' tags are not supported");
  EXPECT_EQ(parseError("{% for x in xs recursive %}{% endfor %}").message(),
            "chat template:1:16: recursive loops are not supported");
  EXPECT_EQ(parseError("{{ f(*args) }}").message(), "chat template:1:6: argument unpacking (* and **) is not supported");
  EXPECT_EQ(parseError("{{ 0x1F }}").message(), "chat template:1:4: hexadecimal, octal and binary literals are not supported");
  EXPECT_EQ(parseError("{% macro m() %}{{ varargs }}{% endmacro %}").message(),
            "chat template:1:19: macros using 'varargs' are not supported");
  EXPECT_EQ(parseError("{% if x %}{% macro m() %}{% endmacro %}{% endif %}").message(),
            "chat template:1:11: macros are supported at the top level of the template only");
  EXPECT_EQ(parseError("{{ '\\N{BULLET}' }}").message(), "chat template:1:4: \\N{...} escapes are not supported");
}

TEST(ChatTemplateSyntax, TemplateTextMustBeUtf8) {
  EXPECT_EQ(parseError("ok\n\xff").message(), "chat template:2:1: the template is not valid UTF-8");
  EXPECT_EQ(parseError(std::string("a\0b", 3)).message(), "chat template:1:2: the template contains a NUL character");
}

TEST(ChatTemplateSyntax, MessagesAreOneLine) {
  // A reason quotes template text; a name with a newline cannot be one,
  // but raise_exception's message can hold anything.
  ChatTemplateError e = renderError("{{ raise_exception('first line\nsecond line') }}");
  EXPECT_EQ(e.kind, Kind::Raised);
  EXPECT_EQ(e.reason, "first line\nsecond line");
  EXPECT_EQ(e.message(), "chat template:1:4: the template raised: first line\\nsecond line");
  EXPECT_EQ(e.message().find('\n'), std::string::npos);
}

// --- Rendering errors ----------------------------------------------------------

TEST(ChatTemplateRender, RaiseExceptionGivesItsMessage) {
  ChatTemplateInputs inputs;
  inputs.messages = {{"user", "a"}, {"user", "b"}};
  inputs.bosToken = "<s>";
  inputs.eosToken = "</s>";
  std::string llama2 = fixture("llama-2-7b-chat-hf.json");
  ChatTemplateError e = renderError(llama2, inputs);
  EXPECT_EQ(e.kind, Kind::Raised);
  EXPECT_EQ(e.reason, "Conversation roles must alternate user/assistant/user/assistant/...");
  EXPECT_EQ(e.line, 1u); // the raise_exception call in the one-line template
  EXPECT_EQ(e.column, llama2.find("raise_exception(") + 1);
  ChatTemplateError number = renderError("{{ raise_exception(42) }}");
  EXPECT_EQ(number.reason, "42");
}

TEST(ChatTemplateRender, ErrorsNameTheFailingExpression) {
  EXPECT_EQ(renderError("line one\n  {{ user.name }}").message(), "chat template:2:10: 'user' is undefined");
  EXPECT_EQ(renderError("{{ 'a' + 1 }}").message(), "chat template:1:8: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(renderError("{{ messages[0]['role'] }}").message(), "chat template:1:15: list object has no element 0");
  EXPECT_EQ(renderError("{{ 1 // 0 }}").message(), "chat template:1:6: integer division or modulo by zero");
  EXPECT_EQ(renderError("{% for x in 5 %}{% endfor %}").message(), "chat template:1:13: 'int' object is not iterable");
  ChatTemplateError e = renderError("{{ undefined_function() }}");
  EXPECT_EQ(e.kind, Kind::Render);
  EXPECT_EQ(e.message(), "chat template:1:4: 'undefined_function' is undefined");
}

TEST(ChatTemplateRender, RefusalsAreErrorsNotOtherText) {
  // Where Python would give what this engine does not model, an error.
  EXPECT_EQ(renderError("{{ 'héllo'|upper }}").message(),
            "chat template:1:12: upper of text outside ASCII is not supported");
  EXPECT_EQ(renderError("{{ ['é'] }}").message(),
            "chat template:1:4: printing a list, tuple or dict that holds non-ASCII text is not supported");
  EXPECT_EQ(renderError("{{ range(3) }}").message(), "chat template:1:4: printing a range is not supported");
  EXPECT_EQ(renderError("{{ 'x %s' % 1 }}").message(), "chat template:1:11: string formatting with '%' is not supported");
  EXPECT_EQ(renderError("{{ 9223372036854775807 + 1 }}").kind, Kind::Limit);
  EXPECT_EQ(renderError("{{ strftime_now('%Y') }}").message(), "chat template:1:4: strftime_now() is not supported");
  EXPECT_EQ(render("{{ strftime_now is defined }}"), "True");
}

// --- Bounds --------------------------------------------------------------------

TEST(ChatTemplateLimits, OutputSize) {
  ChatTemplateLimits limits;
  limits.maxOutputBytes = 1000;
  EXPECT_EQ(render("{% for i in range(99) %}0123456789{% endfor %}", {}, limits).size(), 990u);
  ChatTemplateError e = renderError("{% for i in range(101) %}0123456789{% endfor %}", {}, limits);
  EXPECT_EQ(e.kind, Kind::Limit);
  EXPECT_EQ(e.message(), "chat template:1:26: the output is longer than 1000 bytes");
  // One string may not outgrow the output either, checked before it is built.
  EXPECT_EQ(renderError("{% set s = 'x' * 4000000000 %}", {}, limits).message(),
            "chat template:1:16: a string longer than 1000 bytes");
  EXPECT_EQ(renderError("{% set s = ['x'] * 4000000000 %}", {}, limits).kind, Kind::Limit);
}

TEST(ChatTemplateLimits, WorkOnTheWay) {
  // Strings built and dropped count too: doubling a string 20 times in a
  // namespace writes nothing but builds 2 MB.
  ChatTemplateLimits limits;
  limits.maxWorkBytes = 1 << 20;
  const char *doubling = "{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}";
  ChatTemplateError e = renderError(doubling, {}, limits);
  EXPECT_EQ(e.kind, Kind::Limit);
  EXPECT_NE(e.reason.find("more than 1048576 bytes of strings and lists"), std::string::npos) << e.reason;
  EXPECT_EQ(render(doubling), ""); // within the default bounds
}

TEST(ChatTemplateLimits, LoopIterations) {
  ChatTemplateLimits limits;
  limits.maxIterations = 5000;
  EXPECT_EQ(renderError("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", {}, limits).reason,
            "the template ran more than 5000 loop iterations");
  // The default bound stops a loop of 10^10 iterations in a few seconds at
  // most, not hours.
  auto start = std::chrono::steady_clock::now();
  ChatTemplateError e = renderError(
      "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}");
  EXPECT_EQ(e.kind, Kind::Limit);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(renderError("{{ range(100001)|length }}").reason,
            "range too big: the sandbox blocks ranges larger than 100000 items");
}

TEST(ChatTemplateLimits, RecursionAndNesting) {
  ChatTemplateError e = renderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.kind, Kind::Limit);
  EXPECT_NE(e.reason.find("evaluation nested deeper than 500 levels"), std::string::npos) << e.reason;
  // Parentheses, blocks and operator chains nest in the parser's bound.
  EXPECT_EQ(parseError("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}").message(),
            "chat template:1:104: nested deeper than 200 levels");
  std::string ifs;
  for (int i = 0; i < 300; ++i)
    ifs += "{% if true %}";
  EXPECT_EQ(parseError(ifs).kind, Kind::Syntax);
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i)
    chain += " + 1";
  EXPECT_NE(parseError(chain + " }}").reason.find("expression nested deeper than 200 levels"), std::string::npos);
  // Values nested by a loop: bounded where they are built.
  EXPECT_EQ(renderError("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}").reason,
            "a list or dict nested deeper than 128 levels");
}

TEST(ChatTemplateLimits, TemplateSize) {
  ChatTemplateLimits limits;
  limits.maxTemplateBytes = 10;
  EXPECT_EQ(parseError("{{ 'long enough' }}", limits).message(),
            "chat template: the template is longer than 10 bytes");
}

// --- Inputs --------------------------------------------------------------------

TEST(ChatTemplateInputs, TokensAndVariables) {
  ChatTemplateInputs inputs;
  inputs.messages = {{"user", "Hi"}};
  EXPECT_EQ(render("{{ bos_token is defined }}|{{ eos_token is defined }}|{{ add_generation_prompt }}", inputs),
            "False|False|False");
  inputs.bosToken = "<s>";
  inputs.addGenerationPrompt = true;
  inputs.variables = nlohmann::ordered_json::parse(
      R"({"tools": [{"name": "search", "parameters": {"q": "string", "n": 3, "x": 1.5, "ok": true, "z": null}}]})");
  EXPECT_EQ(render("{{ bos_token }}{{ tools[0].name }}:{{ tools|tojson }}", inputs),
            "<s>search:[{\"name\": \"search\", \"parameters\": {\"q\": \"string\", \"n\": 3, \"x\": 1.5, \"ok\": true, "
            "\"z\": null}}]");
}

TEST(ChatTemplateInputs, BadInputsAreErrors) {
  ChatTemplateInputs inputs;
  inputs.messages = {{"user", "bad \xc3"}};
  ChatTemplateError e = renderError("{{ messages }}", inputs);
  EXPECT_EQ(e.kind, Kind::Input);
  EXPECT_EQ(e.message(), "chat template: message 0 is not valid UTF-8");
  inputs.messages = {};
  inputs.variables = {{"messages", 1}};
  EXPECT_EQ(renderError("x", inputs).message(), "chat template: variable 'messages' is given twice");
  inputs.variables = nlohmann::ordered_json::array();
  EXPECT_EQ(renderError("x", inputs).message(), "chat template: the extra variables are not a JSON object");
  inputs.variables = {{"big", 18446744073709551615ull}};
  EXPECT_EQ(renderError("x", inputs).message(),
            "chat template: variable 'big': an integer beyond 64 bits: 18446744073709551615");
}

// --- Reuse and threads ---------------------------------------------------------

TEST(ChatTemplateApi, ParsedOnceRenderedOnManyThreads) {
  ChatTemplateError error;
  auto chat = ChatTemplate::parse(fixture("qwen2-7b-instruct.json"), error);
  ASSERT_TRUE(chat) << error.message();
  std::vector<std::string> outputs(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < outputs.size(); ++t)
    threads.emplace_back([&, t] {
      ChatTemplateInputs inputs;
      inputs.messages = {{"user", "question " + std::to_string(t)}};
      inputs.addGenerationPrompt = true;
      ChatTemplateError threadError;
      for (int i = 0; i < 200; ++i)
        if (auto text = chat->render(inputs, threadError))
          outputs[t] = *text;
    });
  for (auto &thread : threads)
    thread.join();
  for (std::size_t t = 0; t < outputs.size(); ++t)
    EXPECT_EQ(outputs[t], "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nquestion " +
                              std::to_string(t) + "<|im_end|>\n<|im_start|>assistant\n");
}

// --- Published renderings of the real templates ------------------------------
//
// Outputs other implementations' tests state for these templates, so that a
// build without node or Jinja2 (where test/Serve/ is UNSUPPORTED) still
// checks the engine on them.

TEST(ChatTemplatePublished, ZephyrAsHuggingFaceJinjaTestsIt) {
  // huggingface.js packages/jinja/test/e2e.test.js, "HuggingFaceH4/
  // zephyr-7b-beta (add_generation_prompt=true)": TinyLlama's template.
  ChatTemplateInputs inputs;
  inputs.messages = {{"system", "You are a friendly chatbot who always responds in the style of a pirate"},
                     {"user", "How many helicopters can a human eat in one sitting?"}};
  inputs.eosToken = "</s>";
  inputs.addGenerationPrompt = true;
  EXPECT_EQ(render(fixture("tinyllama-1.1b-chat-v1.0.json"), inputs),
            "<|system|>\nYou are a friendly chatbot who always responds in the style of a pirate</s>\n<|user|>\nHow many "
            "helicopters can a human eat in one sitting?</s>\n<|assistant|>\n");
}

TEST(ChatTemplatePublished, MistralAsItsRustTestStatesIt) {
  ChatTemplateInputs inputs;
  inputs.messages = {{"user", "Hello, how are you?"},
                     {"assistant", "I'm doing great. How can I help you today?"},
                     {"user", "I'd like to show off how chat templating works!"}};
  inputs.bosToken = "<s>";
  inputs.eosToken = "</s>";
  EXPECT_EQ(render(fixture("mistral-7b-instruct-v0.1.json"), inputs),
            "<s> [INST] Hello, how are you? [/INST] I'm doing great. How can I help you today?</s> [INST] I'd like to "
            "show off how chat templating works! [/INST]");
}

TEST(ChatTemplatePublished, Llama2AsMetaDocumentsIt) {
  // Meta's Llama 2 chat format: <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n
  // {user} [/INST].
  ChatTemplateInputs inputs;
  inputs.messages = {{"system", "You are a friendly chatbot who always responds in the style of a pirate"},
                     {"user", "How many helicopters can a human eat in one sitting?"}};
  inputs.bosToken = "<s>";
  inputs.eosToken = "</s>";
  EXPECT_EQ(render(fixture("llama-2-7b-chat-hf.json"), inputs),
            "<s>[INST] <<SYS>>\nYou are a friendly chatbot who always responds in the style of a pirate\n<</SYS>>\n\nHow "
            "many helicopters can a human eat in one sitting? [/INST]");
}

} // namespace
