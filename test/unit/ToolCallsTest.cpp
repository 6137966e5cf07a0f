//===- ToolCallsTest.cpp - Tool calls read out of a model's text ----------===//
//
// runtime/serve/ToolCalls.h against hand-written answers in each syntax:
// the calls and the content around them, and answers that are not whole
// calls staying plain content.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/ToolCalls.h"

#include <gtest/gtest.h>

namespace tfmc::runtime::serve {
namespace {

TEST(ToolCalls, SyntaxFromTheTemplate) {
  EXPECT_EQ(toolCallSyntax("... <tool_call>\\n{\"name\": ...} ..."),
            ToolCallSyntax::Hermes);
  EXPECT_EQ(toolCallSyntax("{{- '[TOOL_CALLS] ' + calls }}"),
            ToolCallSyntax::Mistral);
  EXPECT_EQ(toolCallSyntax("Respond in the format {\"name\": function name, "
                           "\"parameters\": dictionary of argument name"),
            ToolCallSyntax::Llama3Json);
  EXPECT_EQ(toolCallSyntax("{{ messages[0].content }}"), ToolCallSyntax::None);
}

TEST(ToolCalls, Hermes) {
  std::optional<ParsedAnswer> answer = parseToolCalls(
      ToolCallSyntax::Hermes,
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>{\"name\": "
      "\"now\", \"arguments\": {}}</tool_call>");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->content, "Let me look.");
  ASSERT_EQ(answer->calls.size(), 2u);
  EXPECT_EQ(answer->calls[0].name, "get_weather");
  EXPECT_EQ(answer->calls[0].arguments, "{\"city\":\"Paris\",\"days\":2}");
  EXPECT_EQ(answer->calls[1].name, "now");
  EXPECT_EQ(answer->calls[1].arguments, "{}");
  // Arguments written as a string of JSON are read as the object.
  answer = parseToolCalls(ToolCallSyntax::Hermes,
                          "<tool_call>{\"name\": \"f\", \"arguments\": "
                          "\"{\\\"a\\\": 1}\"}</tool_call>");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(answer->content, "");
}

TEST(ToolCalls, NotWholeCallsArePlainContent) {
  for (const char *text :
       {"no call here", "<tool_call>{\"name\": \"f\", \"arguments\": {}}",
        "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",
        "<tool_call>{\"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": {}, \"x\": 1}</tool_call>",
        "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>"})
    EXPECT_FALSE(parseToolCalls(ToolCallSyntax::Hermes, text)) << text;
  EXPECT_FALSE(parseToolCalls(ToolCallSyntax::None,
                              "<tool_call>{\"name\": \"f\"}</tool_call>"));
}

TEST(ToolCalls, Llama3Json) {
  std::optional<ParsedAnswer> answer = parseToolCalls(
      ToolCallSyntax::Llama3Json,
      " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->calls.size(), 1u);
  EXPECT_EQ(answer->calls[0].name, "get_weather");
  EXPECT_EQ(answer->calls[0].arguments, "{\"city\":\"Paris\"}");
  answer = parseToolCalls(ToolCallSyntax::Llama3Json,
                          "<|python_tag|>{\"name\": \"f\", \"arguments\": {}}");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->calls[0].name, "f");
  EXPECT_FALSE(parseToolCalls(ToolCallSyntax::Llama3Json,
                              "The answer is {\"name\": \"f\"}"));
  EXPECT_FALSE(parseToolCalls(ToolCallSyntax::Llama3Json,
                              "{\"name\": \"f\", \"parameters\": {}} and more"));
}

TEST(ToolCalls, Mistral) {
  std::optional<ParsedAnswer> answer = parseToolCalls(
      ToolCallSyntax::Mistral,
      "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": "
      "\"b\", \"arguments\": {}}]");
  ASSERT_TRUE(answer);
  ASSERT_EQ(answer->calls.size(), 2u);
  EXPECT_EQ(answer->calls[1].name, "b");
  EXPECT_FALSE(parseToolCalls(ToolCallSyntax::Mistral, "[TOOL_CALLS] []"));
  EXPECT_FALSE(parseToolCalls(ToolCallSyntax::Mistral, "plain"));
}

} // namespace
} // namespace tfmc::runtime::serve
