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
  {
    std::string message, field;
    if (!scheduler->checkJob(*job, "max_tokens", message, field)) {
      error.param = field;
      error.message = message;
      return sendError(response, error);
    }
  }

  auto channel = std::make_shared<Channel>();
  // An encoder-decoder's text starts with no context (its prompt is the
  // source).
  auto stopText = std::make_shared<StopText>(
      text.tokenizer.get(),
      job->bos >= 0 ? std::vector<int64_t>() : job->prompt, request.stop);
  auto lastToken = std::make_shared<Clock::time_point>(arrival);
  auto count = std::make_shared<int64_t>(0);
  std::shared_ptr<TokenTexts> tokenTexts;
  if (request.logprobs >= 0)
    tokenTexts = std::make_shared<TokenTexts>(
        *text.tokenizer,
        job->bos >= 0 ? std::vector<int64_t>{job->bos} : job->prompt);
  job->onToken = [this, channel, stopText, lastToken, count, arrival,
                  tokenTexts](int64_t token, const TokenLogprobs *logprobs) {
    const Clock::time_point now = Clock::now();
    if ((*count)++ == 0)
      metrics.firstToken(secondsSince(arrival));
    else
      metrics.perToken(
          std::chrono::duration<double>(now - *lastToken).count());
    *lastToken = now;
    bool stopped = false;
    Channel::Piece piece;
    piece.text = stopText->push(token, stopped);
    piece.tokens = {token};
    if (tokenTexts && logprobs)
      piece.logprobs = {tokenTexts->entry(token, *logprobs)};
    channel->push(std::move(piece));
    return stopped ? TokenAction::StopSequence : TokenAction::Continue;
  };
  job->onDone = [channel, stopText](FinishReason reason,
                                    const std::string &why) {
    if (reason == FinishReason::Stop || reason == FinishReason::Length) {
      std::string rest = stopText->finish();
      if (!rest.empty())
        channel->push({rest, {}});
    }
    channel->finish(reason, why);
  };

  switch (scheduler->submit(job)) {
  case ContinuousBatcher::Admission::Accepted:
    break;
  case ContinuousBatcher::Admission::QueueFull: {
    error.status = 429;
    error.type = "requests"; // OpenAI's type and code for a 429
    error.code = "rate_limit_exceeded";
    error.message = "the server's queue is full: retry later";
    BatcherState state = scheduler->state();
    response.set_header(
        "Retry-After",
        std::to_string(std::max<int64_t>(
            1, static_cast<int64_t>(state.stepSeconds * 16 + 0.999))));
    return sendError(response, error);
  }
  case ContinuousBatcher::Admission::Closed:
    error.status = 503;
    error.type = "server_error";
    error.message = "the server is shutting down";
    response.set_header("Connection", "close");
    return sendError(response, error);
  }

  CompletionResult result;
  result.id = randomId(request.chat ? "chatcmpl-" : "cmpl-");
  result.created = unixTime();
  result.promptTokens = promptLength;
  // By value: the stream's provider runs after this function returns.
  auto usage = [this, prompt = result.promptTokens](int64_t generated) {
    metrics.tokens(prompt, generated);
  };

  if (!request.stream) {
    // The status depends on how the job ends, so the answer waits for the
    // end; meanwhile a client that has closed its connection cancels it.
    Channel::Taken all =
        channel->takeAll(GatedHttpServer::clientGone, kClientPoll);
    for (Channel::Piece &piece : all.pieces) {
      result.text += piece.text;
      result.tokens.insert(result.tokens.end(), piece.tokens.begin(),
                           piece.tokens.end());
      result.logprobs.insert(result.logprobs.end(), piece.logprobs.begin(),
                             piece.logprobs.end());
    }
    usage(static_cast<int64_t>(result.tokens.size()));
    if (!all.done) {
      job->cancelled = true;
      // nginx's "client closed request"; read only by a client that shut
      // down its sending half and still reads.
      ApiError gone;
      gone.status = 499;
      gone.message = "the client closed its connection";
      response.set_header("Connection", "close");
      return sendError(response, gone);
    }
    if (all.reason == FinishReason::Error ||
        all.reason == FinishReason::Cancelled) {
      ApiError failure;
      failure.status = all.reason == FinishReason::Error ? 500 : 503;
      failure.type = "server_error";
      failure.message = all.reason == FinishReason::Error
                            ? all.error
                            : "the request was cancelled: the server is "
                              "shutting down";
      return sendError(response, failure);
    }
    result.finishReason = finishName(all.reason);
    response.set_content(completionBody(request, result), "application/json");
    return;
  }

  // Server-sent events, one per piece, as the tokens come.
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider(
      "text/event-stream",
      [channel, job, request, result, usage](size_t,
                                             httplib::DataSink &sink) mutable {
        auto send = [&](const std::string &data) {
          std::string event = "data: " + data + "\n\n";
          return sink.write(event.data(), event.size());
        };
        auto cancel = [&] {
          job->cancelled = true;
          usage(static_cast<int64_t>(result.tokens.size()));
          return false;
        };
        bool first = true;
        int64_t textOffset = 0; // characters of the tokens' texts so far
        for (;;) {
          // Wake now and then to notice a client that went away.
          Channel::Taken taken = channel->take(kClientPoll);
          for (Channel::Piece &piece : taken.pieces) {
            result.tokens.insert(result.tokens.end(), piece.tokens.begin(),
                                 piece.tokens.end());
            if (!send(completionChunk(request, result, piece.text,
                                      piece.tokens, "", first, piece.logprobs,
                                      textOffset)))
              return cancel();
            for (const TokenLogprobEntry &entry : piece.logprobs)
              textOffset += textCharacters(entry.chosen.text);
            first = false;
          }
          if (!sink.is_writable() || GatedHttpServer::clientGone())
            return cancel();
          if (!taken.done)
            continue;
          usage(static_cast<int64_t>(result.tokens.size()));
          if (taken.reason == FinishReason::Error) {
            ApiError failure;
            failure.status = 500;
            failure.type = "server_error";
            failure.message = taken.error;
            send(failure.body());
          } else {
            send(completionChunk(request, result, "", {},
                                 finishName(taken.reason), first));
            if (request.includeUsage)
              send(usageChunk(request, result));
          }
          send("[DONE]");
          sink.done();
          return true;
        }
      });
}

} // namespace tfmc::runtime::serve
