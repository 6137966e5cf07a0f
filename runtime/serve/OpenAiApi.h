//===- OpenAiApi.h - OpenAI's request and response bodies -------*- C++ -*-===//
//
// What `NAME serve` reads from and writes to the wire, without the HTTP:
// the bodies of POST /v1/completions, /v1/chat/completions and
// /v1/embeddings checked field by field into plain structs, and the
// response, chunk and error bodies in OpenAI's shapes
// (https://platform.openai.com/docs/api-reference). A bad field is an
// ApiError naming it (`param`), as OpenAI's own 400s do; fields this server
// does not implement are refused unless they hold their neutral value
// (n = 1, echo = false, logprobs off, penalties 0), never ignored; fields
// that change nothing here (user, metadata, ...) are ignored.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_OPENAIAPI_H
#define TFMC_RUNTIME_SERVE_OPENAIAPI_H

#include "runtime/serve/ChatTemplate.h"
#include "runtime/serve/ToolCalls.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime::serve {

/// An error response: HTTP status and OpenAI's error object.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; // the field, or empty (null)
  std::string code;  // or empty (null)
  /// {"error": {"message", "type", "param", "code"}}
  std::string body() const;
};

/// A token as a response's logprobs report it: its id, the text it adds in
/// context, and its log-probability.
struct LoggedToken {
  int64_t id = 0;
  std::string text;
  double logprob = 0;
};
/// A chosen token's, and the most probable alternatives'.
struct TokenLogprobEntry {
  LoggedToken chosen;
  std::vector<LoggedToken> top;
};

/// A completion or chat completion request.
struct CompletionRequest {
  bool chat = false;
  std::string model;
  /// Completions: the prompt as text, or as token ids.
  std::optional<std::string> promptText;
  std::vector<int64_t> promptIds;
  /// Chat: the conversation, and the template's extra variables as JSON
  /// (tools), or empty.
  std::vector<ChatMessage> messages;
  std::string templateVariables;
  /// Chat: tools were given and tool_choice is not "none": the answer's
  /// tool calls are read out of its text (ToolCalls.h).
  bool toolsOffered = false;
  /// response_format: "" (text), "json_object" or "json_schema" (with
  /// responseSchema, the schema's JSON in the body's key order).
  std::string responseFormat;
  std::string responseSchema;
  /// Chat: tool_choice "required" or "function" (toolChoiceName) makes
  /// the answer a call, in the template's syntax; toolsJson: the tools in
  /// the body's key order. Empty: the model chooses.
  std::string toolChoice;
  std::string toolChoiceName;
  std::string toolsJson;
  std::optional<int64_t> maxTokens;
  double temperature = 1;
  double topP = 1;
  int64_t topK = 0;
  double repetitionPenalty = 1;
  /// OpenAI's penalties (-2 .. 2) and logit_bias ((token id, bias -100 ..
  /// 100) pairs; the ids are checked against the vocabulary by the server).
  double presencePenalty = 0;
  double frequencyPenalty = 0;
  std::vector<std::pair<int64_t, double>> logitBias;
  /// logprobs: -1, none; else the alternatives each token reports (chat's
  /// top_logprobs, 0 .. 20; completions' logprobs, 0 .. 5).
  int64_t logprobs = -1;
  /// Choices (OpenAI's n, 1 .. kMaxChoices).
  int64_t n = 1;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool includeUsage = false; // stream_options.include_usage
};

struct EmbeddingRequest {
  std::string model;
  /// Each input, as text or as token ids.
  std::vector<std::optional<std::string>> texts;
  std::vector<std::vector<int64_t>> ids;
  bool base64 = false; // encoding_format
};

/// Parses and checks a body; `model` is the one model served.
bool parseCompletionRequest(std::string_view body, bool chat,
                            const std::string &model,
                            CompletionRequest &request, ApiError &error);
bool parseEmbeddingRequest(std::string_view body, const std::string &model,
                           EmbeddingRequest &request, ApiError &error);

/// What a finished (or streamed) completion reports.
struct CompletionResult {
  std::string id; // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string text;
  std::vector<int64_t> tokens;
  std::vector<TokenLogprobEntry> logprobs; // with request.logprobs >= 0
  /// The calls read out of `text` (which is then the content around
  /// them): the message's tool_calls, finish_reason "tool_calls".
  std::vector<ToolCall> toolCalls;
  std::string finishReason; // "stop" or "length"
  int64_t promptTokens = 0;
};

/// The most choices a request may ask for (OpenAI's limit).
constexpr int64_t kMaxChoices = 128;

/// A whole answer: one choice per result (choice i the i-th), the usage
/// counting the prompt once and every choice's tokens.
std::string completionBody(const CompletionRequest &request,
                           const std::vector<CompletionResult> &results);
/// One server-sent event's JSON: a piece of text (and its tokens), or the
/// last piece with its finish reason; chat's first chunk carries the role.
/// `logprobs`: the piece's tokens' (with request.logprobs >= 0), the text
/// of the ones before them `textOffset` characters long.
std::string completionChunk(const CompletionRequest &request,
                            const CompletionResult &result,
                            const std::string &text,
                            const std::vector<int64_t> &tokens,
                            const std::string &finishReason, bool role,
                            const std::vector<TokenLogprobEntry> &logprobs = {},
                            int64_t textOffset = 0, int64_t index = 0);
/// A chat stream's chunk of a choice's tool calls (each whole, with its
/// index, id and arguments), after its content.
std::string toolCallsChunk(const CompletionRequest &request,
                           const CompletionResult &result, int64_t index);
/// Characters (code points) of UTF-8 `text`: completions' text_offset.
int64_t textCharacters(const std::string &text);
/// The usage chunk of stream_options.include_usage (no choices).
std::string usageChunk(const CompletionRequest &request,
                       const std::vector<CompletionResult> &results);

std::string embeddingBody(const std::string &model,
                          const std::vector<std::vector<float>> &vectors,
                          int64_t promptTokens, bool base64);

/// GET /v1/models, and GET /v1/models/ID.
std::string modelsBody(const std::string &model, int64_t created);
std::string modelBody(const std::string &model, int64_t created);

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_OPENAIAPI_H
