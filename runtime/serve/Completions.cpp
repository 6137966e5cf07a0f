//===- Completions.cpp - /v1/completions and /v1/chat/completions ---------===//
//
// A request becomes a Job of the ContinuousBatcher: its prompt's ids (the
// chat template rendered, or the text tokenized, or the ids given), its
// sampling, and callbacks that push each token's text (StopText.h) into a
// Channel. The worker then answers from the channel: the whole completion
// when it is done, or server-sent events as the pieces come. Either way a
// client that goes away cancels its job: its row leaves the batch before
// the next step.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/Auth.h"
#include "runtime/serve/Server.h"
#include "runtime/serve/StopText.h"
#include "runtime/serve/TokenChannel.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <random>

namespace tfmc::runtime::serve {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// How often a worker that waits for a job looks at its client.
constexpr std::chrono::milliseconds kClientPoll{250};

/// The text each token adds to a sequence, for logprobs: decoded in the
/// context of the tokens before it (the last kContext of them, as
/// TextStream decodes), so that SentencePiece's leading spaces and
/// byte-level merges come out as in the answer's text. A token that ends
/// inside a UTF-8 character adds U+FFFD where the decoder replaces the
/// unfinished bytes.
class TokenTexts {
public:
  TokenTexts(const Tokenizer &tokenizer, std::vector<int64_t> context)
      : tokenizer(tokenizer), context(std::move(context)) {}

  /// What `token` would add after the tokens so far.
  std::string textOf(int64_t token) const {
    std::vector<int64_t> window(
        context.end() - std::min<std::size_t>(context.size(), kContext),
        context.end());
    const std::string before = tokenizer.decode(window);
    window.push_back(token);
    std::string after = tokenizer.decode(window);
    return after.compare(0, before.size(), before) == 0
               ? after.substr(before.size())
               : after;
  }
  /// The entry of a chosen token, then adds it to the context.
  TokenLogprobEntry entry(int64_t token, const TokenLogprobs &logprobs) {
    TokenLogprobEntry out;
    out.chosen = {token, textOf(token), logprobs.logprob};
    for (const auto &[id, logprob] : logprobs.top)
      out.top.push_back({id, textOf(id), logprob});
    context.push_back(token);
    return out;
  }

private:
  static constexpr std::size_t kContext = 6;
  const Tokenizer &tokenizer;
  std::vector<int64_t> context;
};

} // namespace

bool Server::promptIds(const CompletionRequest &request,
                       std::vector<int64_t> &ids, ApiError &error) const {
  error = ApiError();
  std::string prompt;
  if (request.chat) {
    if (!text.chat.chatTemplate) {
      error.param = "messages";
      error.message = text.tokenizer
                          ? text.chat.missing + ": use /v1/completions"
                          : "chat needs the server to have --tokenizer DIR "
                            "with a chat_template";
      return false;
    }
    ChatTemplateInputs inputs;
    inputs.messages = request.messages;
    inputs.addGenerationPrompt = true;
    inputs.bosToken = text.chat.bos;
    inputs.eosToken = text.chat.eos;
    if (!request.templateVariables.empty())
      inputs.variables =
          nlohmann::ordered_json::parse(request.templateVariables);
    ChatTemplateError templateError;
    std::optional<std::string> rendered =
        text.chat.chatTemplate->render(inputs, templateError);
    if (!rendered) {
      error.param = "messages";
      error.message = templateError.message();
      return false;
    }
    prompt = std::move(*rendered);
  } else if (request.promptText) {
    if (!text.tokenizer) {
      error.param = "prompt";
      error.message = "a text prompt needs the server to have --tokenizer "
                      "DIR (give token ids instead)";
      return false;
    }
    prompt = *request.promptText;
  } else {
    ids = request.promptIds;
    return true;
  }
  error.param = request.chat ? "messages" : "prompt";
  if (static_cast<int64_t>(prompt.size()) >
      kMaxTextBytesPerPosition * plan.maxLen) {
    error.message = fmt::format("the prompt's text is {} bytes, more than "
                                "max_len {} tokens can hold",
                                prompt.size(), plan.maxLen);
    return false;
  }
  std::string message;
  std::unique_lock<std::mutex> encoding(encodeMutex);
  if (!text.tokenizer->encode(prompt, ids, message)) {
    error.message = message;
    return false;
  }
  // A chat template writes the special tokens itself (transformers'
  // apply_chat_template encodes without adding them).
  if (!request.chat)
    text.promptTokens.surround(ids);
  if (ids.empty()) {
    error.message = "the prompt gives no tokens";
    return false;
  }
  error.param.clear();
  return true;
}

std::shared_ptr<const JsonGrammar>
Server::toolCallGrammar(const CompletionRequest &request, ApiError &error) {
  using ordered = nlohmann::ordered_json;
  const ToolCallSyntax syntax = text.chat.toolCalls;
  if (syntax == ToolCallSyntax::None) {
    error.message = "tool_choice required (or a named function) needs a "
                    "chat template that writes tool calls (Hermes, Llama "
                    "3.1's JSON or Mistral's [TOOL_CALLS]); this one shows "
                    "none";
    return nullptr;
  }
  // One call: {"name": N, "arguments": PARAMETERS} ("parameters" in
  // Llama 3.1's syntax), for each tool the choice allows; the tools'
  // $defs move to the top, where their $refs point.
  const char *argumentsKey =
      syntax == ToolCallSyntax::Llama3Json ? "parameters" : "arguments";
  const ordered tools = ordered::parse(request.toolsJson);
  ordered calls = ordered::array(), defs = ordered::object();
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const ordered &function = tools[i]["function"];
    const std::string name = function["name"].get<std::string>();
    if (!request.toolChoiceName.empty() && name != request.toolChoiceName)
      continue;
    ordered parameters =
        function.contains("parameters") ? function["parameters"]
                                        : ordered{{"type", "object"}};
    std::string message;
    const std::string where =
        fmt::format("tools[{}].function.parameters", i);
    if (!grammars.get(parameters, where, message)) {
      error.param = "tools";
      error.message = message;
      return nullptr;
    }
    for (const char *section : {"$defs", "definitions"}) {
      if (!parameters.is_object() || !parameters.contains(section))
        continue;
      for (const auto &[key, schema] : parameters[section].items()) {
        if (defs.contains(section) && defs[section].contains(key) &&
            defs[section][key] != schema) {
          error.param = "tools";
          error.message = fmt::format("{}/{}/{}: another tool defines {} "
                                      "differently",
                                      where, section, key,
                                      support::quote(key));
          return nullptr;
        }
        defs[section][key] = schema;
      }
      parameters.erase(section);
    }
    calls.push_back({{"type", "object"},
                     {"properties",
                      {{"name", {{"const", name}}},
                       {argumentsKey, parameters}}},
                     {"required", {"name", argumentsKey}},
                     {"additionalProperties", false}});
  }
  ordered call = calls.size() == 1 ? calls[0] : ordered{{"anyOf", calls}};
  ordered schema = syntax == ToolCallSyntax::Mistral
                       ? ordered{{"type", "array"}, {"items", call},
                                 {"minItems", 1}}
                       : call;
  for (const auto &[section, entries] : defs.items())
    schema[section] = entries;
  std::string message;
  std::shared_ptr<const JsonGrammar> inner =
      grammars.get(schema, "tool_choice", message);
  if (!inner) {
    error.message = message;
    return nullptr;
  }
  switch (syntax) {
  case ToolCallSyntax::Hermes:
    return JsonGrammar::framed(*inner, "<tool_call>", "</tool_call>");
  case ToolCallSyntax::Mistral:
    return JsonGrammar::framed(*inner, "[TOOL_CALLS]", "");
  default:
    return inner;
  }
}

bool Server::responseConstraint(
    const CompletionRequest &request,
    std::function<std::shared_ptr<TokenConstraint>()> &make,
    ApiError &error) {
  make = nullptr;
  if (request.responseFormat.empty() && request.toolChoice.empty())
    return true;
  error.param = request.toolChoice.empty() ? "response_format" : "tool_choice";
  if (!request.responseFormat.empty() && !request.toolChoice.empty()) {
    error.message = "tool_choice required (or a named function) and "
                    "response_format both constrain the answer: give one";
    return false;
  }
  if (!text.tokenizer) {
    error.message = fmt::format("{} needs the server to have --tokenizer "
                                "DIR: it constrains the generated text",
                                error.param);
    return false;
  }
  std::shared_ptr<const JsonGrammar> grammar;
  if (!request.toolChoice.empty()) {
    grammar = toolCallGrammar(request, error);
    if (!grammar)
      return false;
  } else if (request.responseFormat == "json_object") {
    grammar = JsonGrammar::anyObject();
  } else {
    std::string message;
    grammar = grammars.get(
        nlohmann::ordered_json::parse(request.responseSchema),
        "response_format.json_schema.schema", message);
    if (!grammar) {
      error.message = message;
      return false;
    }
  }
  std::call_once(tokenIndexOnce, [&] {
    std::lock_guard<std::mutex> lock(encodeMutex);
    tokenIndex = std::make_shared<TokenIndex>(
        tokenBytesInContext(*text.tokenizer, plan.vocab),
        text.promptTokens.eosWithin(plan.vocab));
  });
  std::shared_ptr<const TokenIndex> index = tokenIndex;
  make = [grammar, index] {
    return std::make_shared<JsonConstraint>(grammar, index);
  };
  error.param.clear();
  return true;
}

void Server::completion(const httplib::Request &httpRequest,
                        httplib::Response &response, bool chatEndpoint) {
  const Clock::time_point arrival = Clock::now();
  CompletionRequest request;
  ApiError error;
  if (!parseCompletionRequest(httpRequest.body, chatEndpoint, settings.modelId,
                              request, error))
    return sendError(response, error);
  if (!scheduler) {
    error.param = "model";
    error.message = fmt::format("model {} does not generate: it serves "
                                "/v1/embeddings",
                                support::quote(settings.modelId));
    return sendError(response, error);
  }
  auto job = std::make_shared<Job>();
  if (!promptIds(request, job->prompt, error))
    return sendError(response, error);
  const int64_t promptLength = static_cast<int64_t>(job->prompt.size());
  // OpenAI's defaults: 16 tokens for a completion, the rest of the context
  // for a chat.
  job->maxTokens = request.maxTokens.value_or(
      request.chat ? std::max<int64_t>(1, plan.maxLen - promptLength) : 16);
  job->eos = text.promptTokens.eosWithin(plan.vocab);
  job->sampling.temperature = request.temperature;
  job->sampling.topP = request.topP;
  job->sampling.topK = request.topK;
  job->sampling.repetitionPenalty = request.repetitionPenalty;
  job->sampling.presencePenalty = request.presencePenalty;
  job->sampling.frequencyPenalty = request.frequencyPenalty;
  for (const auto &[token, bias] : request.logitBias)
    if (token >= plan.vocab) {
      error.param = "logit_bias";
      error.message = fmt::format("logit_bias: token {} is outside the "
                                  "vocabulary of {} tokens",
                                  token, plan.vocab);
      return sendError(response, error);
    }
  job->sampling.logitBias = request.logitBias;
  job->sampling.badWords = text.promptTokens.badWordsWithin(plan.vocab);
  job->sampling.seed = request.seed ? *request.seed : std::random_device{}();
  if (encoderDecoder) {
    job->bos = text.promptTokens.decoderStart;
    if (job->bos < 0) {
      error.param = "prompt";
      error.message = "an encoder-decoder needs the decoder's start token: "
                      "give the server --tokenizer DIR whose config.json "
                      "names decoder_start_token_id";
      return sendError(response, error);
    }
  }
  if (!request.stop.empty() && !text.tokenizer) {
    error.param = "stop";
    error.message = "stop needs the server to have --tokenizer DIR: it "
                    "matches the generated text";
    return sendError(response, error);
  }
  job->sampling.logprobs = request.logprobs;
  if (request.logprobs >= 0 && !text.tokenizer) {
    error.param = request.chat && request.logprobs > 0 ? "top_logprobs"
                                                       : "logprobs";
    error.message = "logprobs needs the server to have --tokenizer DIR: "
                    "each token is reported with its text";
    return sendError(response, error);
  }
  std::function<std::shared_ptr<TokenConstraint>()> constraint;
  if (!responseConstraint(request, constraint, error))
    return sendError(response, error);
  if (constraint)
    job->constraint = constraint();
  {
    std::string message, field;
    if (!scheduler->checkJob(*job, "max_tokens", message, field)) {
      error.param = field;
      error.message = message;
      return sendError(response, error);
    }
  }

  // A request the batch and the queue could never hold at once would wait
  // for room forever.
  if (request.n > plan.maxBatch + settings.maxQueue) {
    error.param = "n";
    error.message = fmt::format("n = {} is more choices than this server "
                                "holds at once (--max-batch {} + --max-queue "
                                "{})",
                                request.n, plan.maxBatch, settings.maxQueue);
    return sendError(response, error);
  }
  // n choices: n jobs of the same prompt, each with its own draws (choice
  // 0's seed is the request's S; choice i's S xor 0x9e3779b97f4a7c15 · i,
  // kept below 2^63 as a request's seed is: docs/serving.md).
  std::vector<std::shared_ptr<Job>> jobs = {job};
  for (int64_t i = 1; i < request.n; ++i) {
    auto choice = std::make_shared<Job>();
    choice->prompt = job->prompt;
    choice->bos = job->bos;
    choice->maxTokens = job->maxTokens;
    choice->eos = job->eos;
    choice->sampling = job->sampling;
    if (constraint)
      choice->constraint = constraint();
    choice->sampling.seed =
        (job->sampling.seed ^ (0x9e3779b97f4a7c15ULL * uint64_t(i))) &
        0x7fffffffffffffffULL;
    jobs.push_back(std::move(choice));
  }
  std::vector<std::shared_ptr<Channel>> channels;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Job &choice = *jobs[i];
    auto channel = std::make_shared<Channel>();
    channels.push_back(channel);
    // An encoder-decoder's text starts with no context (its prompt is the
    // source).
    auto stopText = std::make_shared<StopText>(
        text.tokenizer.get(),
        choice.bos >= 0 ? std::vector<int64_t>() : choice.prompt,
        request.stop);
    auto lastToken = std::make_shared<Clock::time_point>(arrival);
    auto count = std::make_shared<int64_t>(0);
    std::shared_ptr<TokenTexts> tokenTexts;
    if (request.logprobs >= 0)
      tokenTexts = std::make_shared<TokenTexts>(
          *text.tokenizer,
          choice.bos >= 0 ? std::vector<int64_t>{choice.bos} : choice.prompt);
    // The request's time to its first token is choice 0's.
    const bool first = i == 0;
    // The eos that ends the answer adds no text (its finish_reason says
    // it), as OpenAI's and vLLM's answers leave it out.
    choice.onToken = [this, channel, stopText, lastToken, count, arrival,
                      tokenTexts, first,
                      eos = choice.eos](int64_t token,
                                        const TokenLogprobs *logprobs) {
      const Clock::time_point now = Clock::now();
      if ((*count)++ == 0) {
        if (first)
          metrics.firstToken(secondsSince(arrival));
      } else {
        metrics.perToken(
            std::chrono::duration<double>(now - *lastToken).count());
      }
      *lastToken = now;
      bool stopped = false;
      Channel::Piece piece;
      const bool ends =
          std::find(eos.begin(), eos.end(), token) != eos.end();
      if (!ends)
        piece.text = stopText->push(token, stopped);
      piece.tokens = {token};
      if (tokenTexts && logprobs) {
        piece.logprobs = {tokenTexts->entry(token, *logprobs)};
        if (ends)
          piece.logprobs.back().chosen.text.clear();
      }
      channel->push(std::move(piece));
      return stopped ? TokenAction::StopSequence : TokenAction::Continue;
    };
    choice.onDone = [channel, stopText](FinishReason reason,
                                        const std::string &why) {
      if (reason == FinishReason::Stop || reason == FinishReason::Length) {
        std::string rest = stopText->finish();
        if (!rest.empty())
          channel->push({rest, {}, {}});
      }
      channel->finish(reason, why);
    };
  }

  auto cancelAll = [jobs] {
    for (const std::shared_ptr<Job> &choice : jobs)
      choice->cancelled = true;
  };
  for (const std::shared_ptr<Job> &choice : jobs) {
    ContinuousBatcher::Admission admission = scheduler->submit(choice);
    if (admission == ContinuousBatcher::Admission::Accepted)
      continue;
    // The choices already queued leave again.
    cancelAll();
    if (admission == ContinuousBatcher::Admission::QueueFull) {
      error.status = 429;
      error.type = "requests"; // OpenAI's type and code for a 429
      error.code = "rate_limit_exceeded";
      error.message = request.n > 1
                          ? fmt::format("the server's queue has no room for "
                                        "{} choices: retry later",
                                        request.n)
                          : "the server's queue is full: retry later";
      BatcherState state = scheduler->state();
      response.set_header(
          "Retry-After",
          std::to_string(std::max<int64_t>(
              1, static_cast<int64_t>(state.stepSeconds * 16 + 0.999))));
      return sendError(response, error);
    }
    error.status = 503;
    error.type = "server_error";
    error.message = "the server is shutting down";
    response.set_header("Connection", "close");
    return sendError(response, error);
  }

  // With tools offered, an answer in the template's tool-call syntax is
  // read into tool_calls (ToolCalls.h); a stream then holds each choice's
  // text until it ends, as the calls are known only whole.
  const ToolCallSyntax toolSyntax =
      request.toolsOffered ? text.chat.toolCalls : ToolCallSyntax::None;
  auto readToolCalls = [toolSyntax](CompletionResult &result) {
    std::optional<ParsedAnswer> parsed =
        parseToolCalls(toolSyntax, result.text);
    if (!parsed)
      return false;
    result.text = parsed->content;
    result.toolCalls = parsed->calls;
    return true;
  };
  std::vector<CompletionResult> results(jobs.size());
  const std::string id = randomId(request.chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = unixTime();
  for (CompletionResult &result : results) {
    result.id = id;
    result.created = created;
    result.promptTokens = promptLength;
  }
  // By value: the stream's provider runs after this function returns.
  auto usage = [this, prompt = promptLength](int64_t generated) {
    metrics.tokens(prompt, generated);
  };
  auto generated = [](const std::vector<CompletionResult> &all) {
    int64_t sum = 0;
    for (const CompletionResult &result : all)
      sum += static_cast<int64_t>(result.tokens.size());
    return sum;
  };

  if (!request.stream) {
    // The status depends on how the jobs end, so the answer waits for the
    // end; meanwhile a client that has closed its connection cancels them.
    std::optional<ApiError> failure;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      Channel::Taken all =
          channels[i]->takeAll(GatedHttpServer::clientGone, kClientPoll);
      CompletionResult &result = results[i];
      for (Channel::Piece &piece : all.pieces) {
        result.text += piece.text;
        result.tokens.insert(result.tokens.end(), piece.tokens.begin(),
                             piece.tokens.end());
        result.logprobs.insert(result.logprobs.end(), piece.logprobs.begin(),
                               piece.logprobs.end());
      }
      if (!all.done) {
        cancelAll();
        usage(generated(results));
        // nginx's "client closed request"; read only by a client that shut
        // down its sending half and still reads.
        ApiError gone;
        gone.status = 499;
        gone.message = "the client closed its connection";
        response.set_header("Connection", "close");
        return sendError(response, gone);
      }
      if ((all.reason == FinishReason::Error ||
           all.reason == FinishReason::Cancelled) &&
          !failure) {
        failure.emplace();
        failure->status = all.reason == FinishReason::Error ? 500 : 503;
        failure->type = "server_error";
        failure->message = all.reason == FinishReason::Error
                               ? all.error
                               : "the request was cancelled: the server is "
                                 "shutting down";
      }
      result.finishReason = finishName(all.reason);
      if (readToolCalls(result))
        result.finishReason = "tool_calls";
    }
    usage(generated(results));
    if (failure)
      return sendError(response, *failure);
    response.set_content(completionBody(request, results), "application/json");
    return;
  }

  // Server-sent events, one per piece, as the tokens come; each choice's
  // own, in the order they come.
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider(
      "text/event-stream",
      [channels, cancelAll, request, results, usage, generated, toolSyntax,
       readToolCalls](size_t, httplib::DataSink &sink) mutable {
        auto send = [&](const std::string &data) {
          std::string event = "data: " + data + "\n\n";
          return sink.write(event.data(), event.size());
        };
        auto cancel = [&] {
          cancelAll();
          usage(generated(results));
          return false;
        };
        const std::size_t n = channels.size();
        // A chat stream opens each choice with a chunk of the role alone
        // ({"role": "assistant", "content": ""}, no token), as OpenAI's do:
        // clients that merge chunks read the first token's logprobs once.
        std::vector<bool> first(n, !request.chat), finished(n, false);
        if (request.chat)
          for (std::size_t i = 0; i < n; ++i)
            if (!send(completionChunk(request, results[i], "", {}, "", true,
                                      {}, 0, static_cast<int64_t>(i))))
              return cancel();
        std::vector<int64_t> textOffset(n, 0); // characters so far
        std::optional<std::string> failure;
        // Wake now and then to notice a client that went away; with
        // several choices, look at each often.
        const auto wait = n == 1 ? kClientPoll : std::chrono::milliseconds(10);
        for (std::size_t open = n; open > 0;) {
          for (std::size_t i = 0; i < n; ++i) {
            if (finished[i])
              continue;
            Channel::Taken taken = channels[i]->take(wait);
            CompletionResult &result = results[i];
            for (Channel::Piece &piece : taken.pieces) {
              result.tokens.insert(result.tokens.end(), piece.tokens.begin(),
                                   piece.tokens.end());
              if (toolSyntax != ToolCallSyntax::None) {
                // Held: sent whole at the end.
                result.text += piece.text;
                result.logprobs.insert(result.logprobs.end(),
                                       piece.logprobs.begin(),
                                       piece.logprobs.end());
                continue;
              }
              if (!send(completionChunk(request, result, piece.text,
                                        piece.tokens, "", first[i],
                                        piece.logprobs, textOffset[i],
                                        static_cast<int64_t>(i))))
                return cancel();
              for (const TokenLogprobEntry &entry : piece.logprobs)
                textOffset[i] += textCharacters(entry.chosen.text);
              first[i] = false;
            }
            if (!sink.is_writable() || GatedHttpServer::clientGone())
              return cancel();
            if (!taken.done)
              continue;
            finished[i] = true;
            --open;
            if (taken.reason == FinishReason::Error) {
              failure = taken.error;
              cancelAll();
              break;
            }
            std::string reason = finishName(taken.reason);
            if (toolSyntax != ToolCallSyntax::None) {
              const bool calls = readToolCalls(result);
              if (!result.text.empty() || !result.tokens.empty())
                send(completionChunk(request, result, result.text,
                                     result.tokens, "", false,
                                     result.logprobs, 0,
                                     static_cast<int64_t>(i)));
              if (calls) {
                send(toolCallsChunk(request, result, static_cast<int64_t>(i)));
                reason = "tool_calls";
              }
            }
            send(completionChunk(request, result, "", {}, reason, first[i],
                                 {}, 0, static_cast<int64_t>(i)));
          }
          if (failure)
            break;
        }
        usage(generated(results));
        if (failure) {
          ApiError error;
          error.status = 500;
          error.type = "server_error";
          error.message = *failure;
          send(error.body());
        } else if (request.includeUsage) {
          send(usageChunk(request, results));
        }
        send("[DONE]");
        sink.done();
        return true;
      });
}

} // namespace tfmc::runtime::serve
