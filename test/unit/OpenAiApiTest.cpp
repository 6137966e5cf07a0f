//===- OpenAiApiTest.cpp - serve's request checks ------------------------===//
//
// parseCompletionRequest against hand-written bodies: each refusal names
// its field (`param`, as OpenAI's API does) and quotes the value as the
// client wrote it.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/OpenAiApi.h"

#include <gtest/gtest.h>

#include <string>

using namespace tfmc::runtime::serve;

namespace {

/// The error of a body that must be refused, or a failure if it is taken.
ApiError refusal(const std::string &body, bool chat) {
  CompletionRequest request;
  ApiError error;
  EXPECT_FALSE(parseCompletionRequest(body, chat, "m", request, error))
      << body;
  EXPECT_EQ(error.status, 400);
  return error;
}

CompletionRequest accepted(const std::string &body, bool chat) {
  CompletionRequest request;
  ApiError error;
  EXPECT_TRUE(parseCompletionRequest(body, chat, "m", request, error))
      << body << ": " << error.message;
  return request;
}

TEST(OpenAiApi, TokenIdsPastInt64AreQuotedAsSent) {
  ApiError error = refusal(
      R"({"model": "m", "prompt": [9223372036854775808]})", false);
  EXPECT_EQ(error.param, "prompt");
  EXPECT_EQ(error.message, "prompt[0] = 9223372036854775808 is not a token id");
  error = refusal(R"({"model": "m", "prompt": [1, 18446744073709551615]})",
                  false);
  EXPECT_EQ(error.message,
            "prompt[1] = 18446744073709551615 is not a token id");
  error = refusal(R"({"model": "m", "prompt": [[3, -1]]})", false);
  EXPECT_EQ(error.message, "prompt[1] = -1 is not a token id");
  // The largest int64 is an id as far as the body goes (the vocabulary
  // check comes later, in the server).
  EXPECT_EQ(accepted(R"({"model": "m", "prompt": [9223372036854775807]})",
                     false)
                .promptIds,
            std::vector<int64_t>{9223372036854775807});
}

TEST(OpenAiApi, IntegersPastInt64AreQuotedAsSent) {
  ApiError error = refusal(
      R"({"model": "m", "prompt": "x", "max_tokens": 9223372036854775808})",
      false);
  EXPECT_EQ(error.param, "max_tokens");
  EXPECT_EQ(error.message, "max_tokens = 9223372036854775808 is too large (at "
                           "most 9223372036854775807)");
  error = refusal(
      R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
          "max_completion_tokens": 18446744073709551615})",
      true);
  EXPECT_EQ(error.param, "max_completion_tokens");
  EXPECT_EQ(error.message,
            "max_completion_tokens = 18446744073709551615 is too large (at "
            "most 9223372036854775807)");
  error = refusal(R"({"model": "m", "prompt": "x", "seed": 9223372036854775808})",
                  false);
  EXPECT_EQ(error.param, "seed");
  error = refusal(R"({"model": "m", "prompt": "x", "max_tokens": 0})", false);
  EXPECT_EQ(error.message, "max_tokens must be at least 1, got 0");
  EXPECT_EQ(accepted(R"({"model": "m", "prompt": "x",
                         "max_tokens": 9223372036854775807})",
                     false)
                .maxTokens,
            9223372036854775807);
}

TEST(OpenAiApi, UnknownRolesAreRefused) {
  ApiError error = refusal(R"({"model": "m", "messages": [
      {"role": "user", "content": "hi"},
      {"role": "wizard", "content": "hello"}]})",
                           true);
  EXPECT_EQ(error.param, "messages[1].role");
  EXPECT_EQ(error.message, "messages[1].role = 'wizard' is not a role "
                           "(system, developer, user, assistant, tool or "
                           "function)");
  CompletionRequest request = accepted(R"({"model": "m", "messages": [
      {"role": "system", "content": "a"}, {"role": "developer", "content": "b"},
      {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"},
      {"role": "tool", "content": "e"}, {"role": "function", "content": "f"}]})",
                                       true);
  ASSERT_EQ(request.messages.size(), 6u);
  EXPECT_EQ(request.messages[5].role, "function");
  EXPECT_EQ(request.messages[5].content, "f");
}

TEST(OpenAiApi, MessagesWithoutContentAreRefused) {
  ApiError error = refusal(R"({"model": "m", "messages": [
      {"role": "system", "content": "a"}, {"role": "user"}]})",
                           true);
  EXPECT_EQ(error.param, "messages[1].content");
  EXPECT_EQ(error.message, "messages[1].content is required");
  error = refusal(R"({"model": "m", "messages": [
      {"role": "user", "content": null}]})",
                  true);
  EXPECT_EQ(error.param, "messages[0].content");
  // An assistant message that carries tool calls may go without content
  // (null in the template); its calls reach the template with their
  // arguments as the object their JSON text holds.
  CompletionRequest calls = accepted(R"({"model": "m", "messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "tool_calls": [{"id": "1", "type": "function",
       "function": {"name": "f", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "1", "content": "20C"}]})",
                                     true);
  EXPECT_TRUE(calls.messages[1].contentNull);
  EXPECT_EQ(calls.messages[1].extra["tool_calls"][0]["function"]["arguments"]["city"],
            "Paris");
  EXPECT_EQ(calls.messages[2].extra["tool_call_id"], "1");
  error = refusal(R"({"model": "m", "messages": [{"role": "user", "content": "x",
      "tool_calls": [{"type": "function", "function": {"name": "f"}}]}]})",
                  true);
  EXPECT_EQ(error.param, "messages[0].tool_calls");
  EXPECT_EQ(error.message, "messages[0].tool_calls: only an assistant's "
                           "message carries tool calls");
  error = refusal(R"({"model": "m", "messages": [{"role": "assistant",
      "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}]})",
                  true);
  EXPECT_EQ(error.param, "messages[0].tool_calls");
  error = refusal(R"({"model": "m", "messages": [{"role": "assistant",
      "content": null, "function_call": {"name": "f", "arguments": "{}"}}]})",
                  true);
  EXPECT_EQ(error.param, "messages[0].function_call");
  // Empty content is content.
  EXPECT_EQ(accepted(R"({"model": "m", "messages": [
      {"role": "user", "content": ""}]})",
                     true)
                .messages[0]
                .content,
            "");
}

} // namespace
