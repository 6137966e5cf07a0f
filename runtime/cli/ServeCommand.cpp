//===- ServeCommand.cpp - NAME serve ---------------------------------------===//
//
//   NAME serve --weights W [--tokenizer DIR] [--host 127.0.0.1] [--port 8080]
//              [--threads N] [--api-key KEY] [--model-id ID] [--max-queue N]
//              [--max-body-bytes N] [--read-timeout S] [--shutdown-timeout S]
//              [--pooling mean|cls]  (encoder-only models: /v1/embeddings)
//              [--prefill-chunk N]  (a newcomer's prompt, N tokens a step)
//
// An OpenAI-compatible HTTP server (Debian's cpp-httplib): connections wait
// for their requests in one gate thread (HttpConnections.h); a worker thread
// takes each request that has arrived whole, checks it (OpenAiApi),
// tokenizes it, and hands a Job to the ContinuousBatcher, which runs every
// request of the process in one continuously batched generation; tokens
// come back through a Channel to the worker, which writes the response, or
// the stream of
// server-sent events as they come. The socket is bound first and /health
// answers 503 until the model is loaded.
//
// SIGTERM or SIGINT: the listening socket closes, requests in flight finish
// (or are cut with finish_reason "cancelled" after --shutdown-timeout), and
// the process exits 0.
//
//===----------------------------------------------------------------------===//

#include "runtime/cli/Cli.h"
#include "runtime/cli/HttpConnections.h"
#include "runtime/cli/TextStream.h"
#include "runtime/serve/ChatTemplate.h"
#include "runtime/serve/Metrics.h"
#include "runtime/serve/OpenAiApi.h"
#include "runtime/generate/ContinuousBatcher.h"
#include "runtime/tokenizers/GgufTokenizer.h"
#include "runtime/tokenizers/Tokenizer.h"
#include "support/FileIO.h"
#include "support/Json.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <deque>
#include <random>

#include <sys/resource.h>

namespace tfmc::runtime::cli {
namespace {

using namespace tfmc::runtime::serve;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// What the scheduler's thread hands to a connection's thread.
struct Channel {
  struct Piece {
    std::string text;
    std::vector<int64_t> tokens;
  };
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Piece> pieces;
  bool done = false;
  FinishReason reason = FinishReason::Stop;
  std::string error;

  void push(Piece piece) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!pieces.empty() && !pieces.back().text.empty() && piece.text.empty()) {
      pieces.back().tokens.insert(pieces.back().tokens.end(),
                                  piece.tokens.begin(), piece.tokens.end());
    } else {
      pieces.push_back(std::move(piece));
    }
    ready.notify_all();
  }
  void finish(FinishReason why, const std::string &message) {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    reason = why;
    error = message;
    ready.notify_all();
  }
};

/// The text of one sequence as its tokens come, with OpenAI's stop
/// strings: a sequence stops where `generate --stop` stops it (TextStream:
/// a stop string ends within the newest token's text), but its text ends
/// before the stop string, and text that may be the start of one is held
/// back until it is known not to be.
class StopText {
public:
  StopText(const Tokenizer *tokenizer, const std::vector<int64_t> &prompt,
           std::vector<std::string> stops)
      : stops(stops) {
    if (tokenizer)
      stream.emplace(*tokenizer, prompt, std::move(stops));
  }
  /// The text that can go out now; `stopped` when a stop string appeared.
  std::string push(int64_t token, bool &stopped) {
    stopped = false;
    if (!stream)
      return "";
    text += stream->push(token, stopped);
    if (stopped) {
      // No stop string was whole before this token: the first one now is
      // the one it completed.
      std::size_t end = text.size();
      for (const std::string &stop : stops)
        end = std::min(end, text.find(stop));
      text.resize(end);
      ended = true;
      return release(end);
    }
    // Hold back a suffix that a stop string begins with.
    std::size_t end = text.size();
    for (const std::string &stop : stops)
      for (std::size_t k = std::min(stop.size() - 1, text.size()); k > 0; --k)
        if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
          end = std::min(end, text.size() - k);
          break;
        }
    return release(end);
  }
  std::string finish() {
    if (!stream || ended)
      return "";
    text += stream->finish();
    return release(text.size());
  }

private:
  std::string release(std::size_t end) {
    end = std::max(end, sent);
    std::string out = text.substr(sent, end - sent);
    sent = end;
    return out;
  }

  std::optional<TextStream> stream;
  std::vector<std::string> stops;
  std::string text;
  std::size_t sent = 0;
  bool ended = false;
};

std::string finishName(FinishReason reason) {
  switch (reason) {
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Cancelled:
    return "cancelled";
  case FinishReason::Error:
    return "error";
  }
  return "error";
}

/// The chat template of a tokenizer directory's tokenizer_config.json, and
/// the special tokens it is rendered with.
struct ChatSetup {
  std::optional<ChatTemplate> chatTemplate;
  std::optional<std::string> bos, eos;
  /// Where the template would be, for the refusal of a chat request.
  std::string missing;
};

ChatSetup readChatSetup(const std::string &dir, const Tokenizer &tokenizer) {
  ChatSetup setup;
  if (GgufChatInfo gguf; ggufChatInfo(tokenizer, gguf)) {
    // A GGUF file: its tokenizer.chat_template and bos/eos tokens' texts.
    setup.missing = fmt::format("{} has no tokenizer.chat_template",
                                support::oneLine(dir));
    setup.bos = gguf.bos;
    setup.eos = gguf.eos;
    if (!gguf.chatTemplate)
      return setup;
    ChatTemplateError templateError;
    setup.chatTemplate = ChatTemplate::parse(*gguf.chatTemplate, templateError);
    if (!setup.chatTemplate)
      fail(fmt::format("{}: key 'tokenizer.chat_template': {}",
                       support::oneLine(dir), templateError.message()));
    return setup;
  }
  const std::string path = dir + "/tokenizer_config.json";
  setup.missing =
      fmt::format("{} has no chat_template", support::oneLine(path));
  std::string text;
  support::ReadFailure failure;
  if (!support::readRegularFile(path, text, failure)) {
    if (failure.systemError == ENOENT)
      return setup;
    fail(fmt::format("{}: {}", support::oneLine(path), failure.reason));
  }
  support::JsonError jsonError;
  std::optional<nlohmann::ordered_json> config =
      support::parseJson<nlohmann::ordered_json>(text, jsonError);
  if (!config)
    fail(jsonError.message(path));
  if (!config->is_object())
    fail(fmt::format("{}: expected a JSON object", support::oneLine(path)));
  std::optional<std::string> source;
  std::string error;
  if (!readSpecialToken(*config, "bos_token", setup.bos, error) ||
      !readSpecialToken(*config, "eos_token", setup.eos, error) ||
      !readChatTemplateSource(*config, source, error))
    fail(fmt::format("{}: {}", support::oneLine(path), error));
  if (!source)
    return setup;
  ChatTemplateError templateError;
  setup.chatTemplate = ChatTemplate::parse(*source, templateError);
  if (!setup.chatTemplate)
    fail(fmt::format("{}: {}", support::oneLine(path),
                     templateError.message()));
  return setup;
}

/// Compares in time that does not depend on where the strings differ.
bool sameSecret(const std::string &given, const std::string &expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i)
    difference |= static_cast<unsigned char>(
        expected[i] ^ (i < given.size() ? given[i] : 0));
  return difference == 0;
}

std::string randomId(const char *prefix) {
  static std::mutex mutex;
  static std::mt19937_64 engine{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mutex);
  return fmt::format("{}{:016x}", prefix, engine());
}

int64_t unixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Seconds a kept-alive connection waits for its next request.
constexpr int kIdleSeconds = 5;

/// A whole HTTP response the connection gate writes itself, in OpenAI's
/// error shape.
std::string rawErrorResponse(const ApiError &error, const char *reason,
                             const char *extraHeaders) {
  const std::string body = error.body();
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json\r\n"
                     "Content-Length: {}\r\n{}Connection: close\r\n\r\n{}",
                     error.status, reason, body.size(), extraHeaders, body);
}

/// Connections wait for their requests in one gate thread
/// (HttpConnections.h), so threads are needed only for requests that have
/// arrived: the batch, the queue, and a few for health checks, metrics and
/// refusals. The connections themselves are bounded by the process's file
/// descriptors.
GatedHttpServer::Limits connectionLimits(int64_t maxBatch, int64_t maxQueue,
                                         int64_t readTimeout,
                                         int64_t maxBodyBytes) {
  GatedHttpServer::Limits limits;
  limits.workers = static_cast<std::size_t>(
      std::min<int64_t>(maxBatch + maxQueue + 8, 1024));
  rlimit files{};
  const std::size_t descriptors =
      ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
          ? static_cast<std::size_t>(files.rlim_cur)
          : 1024;
  // Room for the weights, the tokenizer and the listener.
  limits.maxConnections =
      std::clamp<std::size_t>(descriptors > 64 ? descriptors - 64 : 16, 16,
                              8192);
  limits.requestSeconds = static_cast<double>(readTimeout);
  limits.idleSeconds = kIdleSeconds;
  // The gate buffers a body of up to 64 KiB (a completion's is far less),
  // so that the bytes it holds stay bounded by the connections; a larger
  // body is read by its worker, as httplib reads it.
  limits.wholeBodyBytes =
      static_cast<std::size_t>(std::min<int64_t>(maxBodyBytes, 64 << 10));
  ApiError timedOut;
  timedOut.status = 408;
  timedOut.message = fmt::format("the request was not sent whole within "
                                 "--read-timeout {} s",
                                 readTimeout);
  limits.timedOutResponse =
      rawErrorResponse(timedOut, "Request Timeout", "");
  ApiError busy;
  busy.status = 503;
  busy.type = "server_error";
  busy.message = fmt::format("the server holds {} connections, its limit: "
                             "try again",
                             limits.maxConnections);
  limits.busyResponse =
      rawErrorResponse(busy, "Service Unavailable", "Retry-After: 1\r\n");
  return limits;
}

class Server {
public:
  Server(const Options &options) : options(options) {}
  int run();

private:
  void routes();
  bool authorized(const httplib::Request &request, httplib::Response &response);
  void sendError(httplib::Response &response, const ApiError &error);
  void completion(const httplib::Request &request, httplib::Response &response,
                  bool chat);
  void embeddings(const httplib::Request &request,
                  httplib::Response &response);
  /// The prompt's ids, or false with `error`.
  bool promptIds(const CompletionRequest &request, std::vector<int64_t> &ids,
                 ApiError &error) const;

  const Options &options;
  GatedHttpServer http;
  Metrics metrics;
  std::string modelId;
  std::string apiKey;
  std::atomic<bool> ready{false};
  std::unique_ptr<Tokenizer> tokenizer;
  PromptTokens promptTokens;
  ChatSetup chat;
  std::unique_ptr<Model> model;
  std::unique_ptr<ContinuousBatcher> scheduler;
  int64_t created = unixTime();
  int64_t maxBodyBytes = 0;
  bool encoderDecoder = false;
  std::string pooling;      // an encoder-only model's, for /v1/embeddings
  std::mutex forwardMutex; // its forward runs one request at a time
  /// Tokenizer::encode is not thread-safe (its caches); decode is.
  mutable std::mutex encodeMutex;
};

void Server::sendError(httplib::Response &response, const ApiError &error) {
  response.status = error.status;
  response.set_content(error.body(), "application/json");
}

bool Server::authorized(const httplib::Request &request,
                        httplib::Response &response) {
  if (apiKey.empty())
    return true;
  std::string header = request.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  std::string given =
      header.compare(0, bearer.size(), bearer) == 0 ? header.substr(bearer.size())
                                                    : "";
  if (sameSecret(given, apiKey))
    return true;
  ApiError error;
  error.status = 401;
  error.type = "invalid_request_error";
  error.code = "invalid_api_key";
  error.message = "the API key is missing or wrong (Authorization: Bearer "
                  "KEY, as --api-key gave it)";
  sendError(response, error);
  return false;
}

bool Server::promptIds(const CompletionRequest &request,
                       std::vector<int64_t> &ids, ApiError &error) const {
  error = ApiError();
  std::string text;
  if (request.chat) {
    if (!chat.chatTemplate) {
      error.param = "messages";
      error.message = tokenizer ? chat.missing + ": use /v1/completions"
                                : "chat needs the server to have --tokenizer "
                                  "DIR with a chat_template";
      return false;
    }
    ChatTemplateInputs inputs;
    inputs.messages = request.messages;
    inputs.addGenerationPrompt = true;
    inputs.bosToken = chat.bos;
    inputs.eosToken = chat.eos;
    if (!request.templateVariables.empty())
      inputs.variables =
          nlohmann::ordered_json::parse(request.templateVariables);
    ChatTemplateError templateError;
    std::optional<std::string> rendered =
        chat.chatTemplate->render(inputs, templateError);
    if (!rendered) {
      error.param = "messages";
      error.message = templateError.message();
      return false;
    }
    text = std::move(*rendered);
  } else if (request.promptText) {
    if (!tokenizer) {
      error.param = "prompt";
      error.message = "a text prompt needs the server to have --tokenizer "
                      "DIR (give token ids instead)";
      return false;
    }
    text = *request.promptText;
  } else {
    ids = request.promptIds;
    return true;
  }
  const Plan &plan = model->plan();
  if (static_cast<int64_t>(text.size()) > kMaxTextBytesPerPosition * plan.maxLen) {
    error.param = request.chat ? "messages" : "prompt";
    error.message = fmt::format("the prompt's text is {} bytes, more than "
                                "max_len {} tokens can hold",
                                text.size(), plan.maxLen);
    return false;
  }
  std::string message;
  std::unique_lock<std::mutex> encoding(encodeMutex);
  if (!tokenizer->encode(text, ids, message)) {
    error.param = request.chat ? "messages" : "prompt";
    error.message = message;
    return false;
  }
  // A chat template writes the special tokens itself (transformers'
  // apply_chat_template encodes without adding them).
  if (!request.chat)
    promptTokens.surround(ids);
  if (ids.empty()) {
    error.param = request.chat ? "messages" : "prompt";
    error.message = "the prompt gives no tokens";
    return false;
  }
  return true;
}

void Server::completion(const httplib::Request &httpRequest,
                        httplib::Response &response, bool chatEndpoint) {
  const Clock::time_point arrival = Clock::now();
  CompletionRequest request;
  ApiError error;
  if (!parseCompletionRequest(httpRequest.body, chatEndpoint, modelId, request,
                              error))
    return sendError(response, error);
  if (!scheduler) {
    error.param = "model";
    error.message = fmt::format("model {} does not generate: it serves "
                                "/v1/embeddings",
                                support::quote(modelId));
    return sendError(response, error);
  }
  auto job = std::make_shared<Job>();
  if (!promptIds(request, job->prompt, error))
    return sendError(response, error);
  const Plan &plan = model->plan();
  const int64_t promptLength = static_cast<int64_t>(job->prompt.size());
  // OpenAI's defaults: 16 tokens for a completion, the rest of the context
  // for a chat.
  job->maxTokens = request.maxTokens.value_or(
      request.chat ? std::max<int64_t>(1, plan.maxLen - promptLength) : 16);
  job->eos = promptTokens.eosWithin(plan.vocab);
  job->sampling.temperature = request.temperature;
  job->sampling.topP = request.topP;
  job->sampling.topK = request.topK;
  job->sampling.repetitionPenalty = request.repetitionPenalty;
  job->sampling.badWords = promptTokens.badWordsWithin(plan.vocab);
  if (request.seed)
    job->sampling.seed = *request.seed;
  else
    job->sampling.seed = std::random_device{}();
  if (encoderDecoder) {
    job->bos = promptTokens.decoderStart;
    if (job->bos < 0) {
      error.param = "prompt";
      error.message = "an encoder-decoder needs the decoder's start token: "
                      "give the server --tokenizer DIR whose config.json "
                      "names decoder_start_token_id";
      return sendError(response, error);
    }
  }
  if (!request.stop.empty() && !tokenizer) {
    error.param = "stop";
    error.message = "stop needs the server to have --tokenizer DIR: it "
                    "matches the generated text";
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
  auto text = std::make_shared<StopText>(
      tokenizer.get(),
      job->bos >= 0 ? std::vector<int64_t>() : job->prompt, request.stop);
  auto lastToken = std::make_shared<Clock::time_point>(arrival);
  auto count = std::make_shared<int64_t>(0);
  job->onToken = [this, channel, text, lastToken, count,
                  arrival](int64_t token) {
    const Clock::time_point now = Clock::now();
    if ((*count)++ == 0)
      metrics.firstToken(secondsSince(arrival));
    else
      metrics.perToken(
          std::chrono::duration<double>(now - *lastToken).count());
    *lastToken = now;
    bool stopped = false;
    Channel::Piece piece;
    piece.text = text->push(token, stopped);
    piece.tokens = {token};
    channel->push(std::move(piece));
    return stopped ? TokenAction::StopSequence : TokenAction::Continue;
  };
  job->onDone = [channel, text](FinishReason reason, const std::string &why) {
    if (reason == FinishReason::Stop || reason == FinishReason::Length) {
      std::string rest = text->finish();
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
  result.promptTokens = static_cast<int64_t>(job->prompt.size());
  // By value: the stream's provider runs after this function returns.
  auto usage = [this, prompt = result.promptTokens](int64_t generated) {
    metrics.tokens(prompt, generated);
  };

  if (!request.stream) {
    std::unique_lock<std::mutex> lock(channel->mutex);
    channel->ready.wait(lock, [&] { return channel->done; });
    for (Channel::Piece &piece : channel->pieces) {
      result.text += piece.text;
      result.tokens.insert(result.tokens.end(), piece.tokens.begin(),
                           piece.tokens.end());
    }
    usage(static_cast<int64_t>(result.tokens.size()));
    if (channel->reason == FinishReason::Error ||
        channel->reason == FinishReason::Cancelled) {
      ApiError failure;
      failure.status = channel->reason == FinishReason::Error ? 500 : 503;
      failure.type = "server_error";
      failure.message = channel->reason == FinishReason::Error
                            ? channel->error
                            : "the request was cancelled: the server is "
                              "shutting down";
      return sendError(response, failure);
    }
    result.finishReason = finishName(channel->reason);
    response.set_content(completionBody(request, result), "application/json");
    return;
  }

  // Server-sent events, one per piece, as the tokens come.
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider(
      "text/event-stream",
      [this, channel, job, request, result,
       usage](size_t, httplib::DataSink &sink) mutable {
        auto send = [&](const std::string &data) {
          std::string event = "data: " + data + "\n\n";
          return sink.write(event.data(), event.size());
        };
        bool first = true;
        for (;;) {
          std::unique_lock<std::mutex> lock(channel->mutex);
          // Wake now and then to notice a client that went away.
          channel->ready.wait_for(lock, std::chrono::milliseconds(250), [&] {
            return channel->done || !channel->pieces.empty();
          });
          std::deque<Channel::Piece> pieces;
          pieces.swap(channel->pieces);
          const bool done = channel->done;
          lock.unlock();
          for (Channel::Piece &piece : pieces) {
            result.tokens.insert(result.tokens.end(), piece.tokens.begin(),
                                 piece.tokens.end());
            if (!send(completionChunk(request, result, piece.text,
                                      piece.tokens, "", first))) {
              job->cancelled = true;
              usage(static_cast<int64_t>(result.tokens.size()));
              return false;
            }
            first = false;
          }
          if (!sink.is_writable()) {
            job->cancelled = true;
            usage(static_cast<int64_t>(result.tokens.size()));
            return false;
          }
          if (!done)
            continue;
          usage(static_cast<int64_t>(result.tokens.size()));
          if (channel->reason == FinishReason::Error) {
            ApiError failure;
            failure.status = 500;
            failure.type = "server_error";
            failure.message = channel->error;
            send(failure.body());
          } else {
            send(completionChunk(request, result, "", {},
                                 finishName(channel->reason), first));
            if (request.includeUsage)
              send(usageChunk(request, result));
          }
          send("[DONE]");
          sink.done();
          return true;
        }
      });
}

void Server::embeddings(const httplib::Request &httpRequest,
                        httplib::Response &response) {
  EmbeddingRequest request;
  ApiError error;
  if (!parseEmbeddingRequest(httpRequest.body, modelId, request, error))
    return sendError(response, error);
  if (pooling.empty()) {
    error.param = "model";
    error.message = fmt::format("model {} generates: /v1/embeddings needs an "
                                "encoder-only model (serve --pooling)",
                                support::quote(modelId));
    return sendError(response, error);
  }
  const Plan &plan = model->plan();
  const std::size_t count = request.ids.size();
  std::vector<std::vector<int64_t>> types(count);
  int64_t tokens = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::string param = count == 1 ? "input" : fmt::format("input[{}]", i);
    error.param = "input";
    if (request.texts[i]) {
      std::string message;
      if (!tokenizer) {
        error.message = "a text input needs the server to have --tokenizer "
                        "DIR (give token ids instead)";
        return sendError(response, error);
      }
      if (static_cast<int64_t>(request.texts[i]->size()) >
          kMaxTextBytesPerPosition * plan.maxLen) {
        error.message = fmt::format("{} is {} bytes, more than max_len {} "
                                    "tokens can hold",
                                    param, request.texts[i]->size(),
                                    plan.maxLen);
        return sendError(response, error);
      }
      std::unique_lock<std::mutex> encoding(encodeMutex);
      if (!encodeModelText(*tokenizer, promptTokens, *request.texts[i],
                           nullptr, plan.maxLen, request.ids[i], types[i],
                           message)) {
        error.message = param + ": " + message;
        return sendError(response, error);
      }
    }
    const std::vector<int64_t> &ids = request.ids[i];
    if (ids.empty() || static_cast<int64_t>(ids.size()) > plan.maxLen) {
      error.message = fmt::format("{} has {} tokens; the model takes 1 to {}",
                                  param, ids.size(), plan.maxLen);
      return sendError(response, error);
    }
    for (std::size_t t = 0; t < ids.size(); ++t)
      if (ids[t] >= plan.vocab) {
        error.message = fmt::format("{}[{}] = {} is not a token id (vocab "
                                    "{})",
                                    param, t, ids[t], plan.vocab);
        return sendError(response, error);
      }
    tokens += static_cast<int64_t>(ids.size());
  }
  // Batches of up to max_batch inputs, right-padded, one at a time.
  std::vector<std::vector<float>> vectors;
  std::lock_guard<std::mutex> lock(forwardMutex);
  for (std::size_t first = 0; first < count;
       first += static_cast<std::size_t>(plan.maxBatch)) {
    const std::size_t last =
        std::min(count, first + static_cast<std::size_t>(plan.maxBatch));
    const int64_t batch = static_cast<int64_t>(last - first);
    std::size_t length = 0;
    for (std::size_t i = first; i < last; ++i)
      length = std::max(length, request.ids[i].size());
    auto tensor = [&](bool mask, bool typeIds) {
      IntegerTensor values;
      values.shape = {batch, static_cast<int64_t>(length)};
      values.values.assign(static_cast<std::size_t>(batch) * length, 0);
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t t = 0; t < request.ids[i].size(); ++t)
          values.values[(i - first) * length + t] =
              mask      ? 1
              : typeIds ? (t < types[i].size() ? types[i][t] : 0)
                        : request.ids[i][t];
      return values;
    };
    std::map<std::string, IntegerTensor> inputs;
    inputs["input_ids"] = tensor(false, false);
    IntegerTensor mask = tensor(true, false);
    if (entryTakes(*model, "forward", "attention_mask"))
      inputs["attention_mask"] = mask;
    if (entryTakes(*model, "forward", "token_type_ids"))
      inputs["token_type_ids"] = tensor(false, true);
    std::string message;
    std::optional<OutputView> output = model->forward(inputs, message);
    if (!output) {
      ApiError failure;
      failure.status = 500;
      failure.type = "server_error";
      failure.message = message;
      return sendError(response, failure);
    }
    for (int64_t b = 0; b < batch; ++b)
      vectors.push_back(pooledRow(pooling, *output, mask.values, b));
  }
  metrics.tokens(tokens, 0);
  response.set_content(embeddingBody(modelId, vectors, tokens, request.base64),
                       "application/json");
}

void Server::routes() {
  auto guarded = [this](const char *endpoint, auto handler) {
    return [this, endpoint, handler](const httplib::Request &request,
                                     httplib::Response &response) {
      if (!ready) {
        ApiError error;
        error.status = 503;
        error.type = "server_error";
        error.message = "the model is loading";
        sendError(response, error);
      } else if (authorized(request, response)) {
        handler(request, response);
      }
      // httplib sets 200 after the handler when it set none.
      metrics.request(endpoint, response.status < 0 ? 200 : response.status);
    };
  };
  http.Get("/health", [this](const httplib::Request &,
                             httplib::Response &response) {
    response.status = ready ? 200 : 503;
    response.set_content(ready ? R"({"status":"ok"})"
                               : R"({"status":"loading"})",
                         "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request &,
                              httplib::Response &response) {
    BatcherState state;
    if (ready && scheduler)
      state = scheduler->state();
    response.set_content(
        metrics.text(state.queued, state.running, state.maxBatch,
                     state.promptChunks),
        "text/plain; version=0.0.4");
  });
  http.Get("/v1/models",
           guarded("models", [this](const httplib::Request &,
                                    httplib::Response &response) {
             response.set_content(modelsBody(modelId, created),
                                  "application/json");
           }));
  http.Get(R"(/v1/models/(.+))",
           guarded("models", [this](const httplib::Request &request,
                                    httplib::Response &response) {
             if (request.matches[1] == modelId) {
               response.set_content(modelBody(modelId, created),
                                    "application/json");
               return;
             }
             ApiError error;
             error.status = 404;
             error.param = "model";
             error.code = "model_not_found";
             error.message = fmt::format(
                 "model {} is not served here (this server serves {})",
                 support::quote(request.matches[1].str()),
                 support::quote(modelId));
             sendError(response, error);
           }));
  http.Post("/v1/completions",
            guarded("completions", [this](const httplib::Request &request,
                                          httplib::Response &response) {
              completion(request, response, false);
            }));
  http.Post("/v1/embeddings",
            guarded("embeddings", [this](const httplib::Request &request,
                                         httplib::Response &response) {
              embeddings(request, response);
            }));
  http.Post("/v1/chat/completions",
            guarded("chat", [this](const httplib::Request &request,
                                   httplib::Response &response) {
              completion(request, response, true);
            }));
  // httplib's own refusals (404, 413, a malformed request) in OpenAI's
  // shape.
  http.set_error_handler([this](const httplib::Request &request,
                                httplib::Response &response) {
    if (!response.body.empty())
      return;
    ApiError error;
    error.status = response.status;
    error.message =
        response.status == 404   ? fmt::format("no endpoint {} {}",
                                               request.method, request.path)
        : response.status == 413 ? fmt::format("the body is larger than "
                                               "--max-body-bytes {}",
                                               maxBodyBytes)
        : response.status == 400 ? "the request could not be read: malformed, "
                                   "or not sent within --read-timeout"
                                 : fmt::format("HTTP {}", response.status);
    sendError(response, error);
    if (response.status == 413)
      metrics.request("too_large", 413);
  });
}

int Server::run() {
  const Plan &plan = requirePlan();
  modelId = options.has("--model-id") ? options.get("--model-id")
                                      : programName();
  if (options.has("--api-key")) {
    apiKey = options.get("--api-key");
    if (apiKey.empty())
      fail("--api-key is empty");
  }
  const std::string host =
      options.has("--host") ? options.get("--host") : "127.0.0.1";
  const int64_t port = integerOption(options, "--port", 8080, 0, 65535);
  const int64_t maxQueue = integerOption(options, "--max-queue", 64, 1, 4096);
  maxBodyBytes =
      integerOption(options, "--max-body-bytes", 1 << 20, 1024, 1 << 30);
  const int64_t readTimeout = integerOption(options, "--read-timeout", 30, 1,
                                            3600);
  const int64_t shutdownTimeout =
      integerOption(options, "--shutdown-timeout", 30, 0, 3600);
  const int64_t prefillChunk =
      integerOption(options, "--prefill-chunk",
                    ContinuousBatcher::kDefaultPrefillChunk, 0, plan.maxLen);
  if (options.has("--tokenizer")) {
    std::string error;
    tokenizer = loadTokenizer(options.get("--tokenizer"), error);
    if (!tokenizer ||
        !readPromptTokens(options.get("--tokenizer"), *tokenizer, promptTokens,
                          error))
      fail(error);
    chat = readChatSetup(options.get("--tokenizer"), *tokenizer);
  }

  // A client that goes away must not end the server: writes to its socket
  // fail instead (and cancel its request).
  std::signal(SIGPIPE, SIG_IGN);
  // Signals go to the thread that waits for them, not to the workers.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  routes();
  http.set_payload_max_length(static_cast<size_t>(maxBodyBytes));
  http.set_read_timeout(static_cast<time_t>(readTimeout), 0);
  http.set_write_timeout(static_cast<time_t>(readTimeout), 0);
  http.set_keep_alive_timeout(kIdleSeconds);
  http.set_keep_alive_max_count(100);
  http.setLimits(connectionLimits(plan.maxBatch, maxQueue, readTimeout,
                                  maxBodyBytes));
  int bound = static_cast<int>(port);
  if (port == 0)
    bound = http.bind_to_any_port(host);
  else if (!http.bind_to_port(host, static_cast<int>(port)))
    bound = -1;
  if (bound < 0)
    fail(fmt::format("cannot listen on {}:{} (in use, or not an address of "
                     "this machine)",
                     host, port));
  std::atomic<bool> listening{true};
  std::thread listener([this, &listening] {
    http.serve();
    listening = false;
  });
  // stop() before the listener runs would be lost: wait for it to start.
  while (!http.is_running() && listening)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // /health says "loading" meanwhile; a failure stops the listener first.
  try {
    model = loadModel(options.get("--weights"));
    encoderDecoder = entryTakes(*model, "prefill", "decoder_input_ids");
    applyThreads(options);
    // A model that generates answers completions; an encoder-only one
    // (last_hidden_state) embeddings, pooled as --pooling says.
    if (model->hasEntry("decode_step")) {
      if (options.has("--pooling"))
        fail(fmt::format("--pooling is for encoder-only models; model '{}' "
                         "generates",
                         plan.model));
      std::string error;
      scheduler = ContinuousBatcher::create(*model, maxQueue, error);
      if (!scheduler)
        fail(error);
      scheduler->setPrefillChunk(prefillChunk);
    } else if (plan.output().name == "last_hidden_state") {
      if (!options.has("--pooling"))
        fail(fmt::format("model '{}' is encoder-only: give --pooling mean|cls "
                         "for /v1/embeddings",
                         plan.model));
      pooling = options.get("--pooling");
      if (pooling != "mean" && pooling != "cls")
        fail(fmt::format("--pooling expects mean or cls, got {}",
                         support::quote(pooling)));
    } else {
      fail(fmt::format("model '{}' cannot generate (no decoder) and outputs "
                       "{}, not last_hidden_state: it has nothing to serve",
                       plan.model, plan.output().name));
    }
  } catch (...) {
    http.stop();
    listener.join();
    throw;
  }
  ready = true;
  std::fprintf(stderr, "%s: serving %s on http://%s:%d\n",
               programName().c_str(), modelId.c_str(), host.c_str(), bound);
  std::fflush(stderr);

  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "%s: %s: finishing the requests in flight (at most "
                       "%lld s)\n",
               programName().c_str(), signal == SIGTERM ? "SIGTERM" : "SIGINT",
               static_cast<long long>(shutdownTimeout));
  http.stop();
  if (scheduler)
    scheduler->shutdown(static_cast<double>(shutdownTimeout));
  listener.join();
  scheduler.reset();
  std::fprintf(stderr, "%s: stopped\n", programName().c_str());
  return 0;
}

} // namespace

int serveCommand(int argc, char **argv) {
  Options options("serve",
                  {"--weights", "--tokenizer", "--host", "--port", "--threads",
                   "--api-key", "--model-id", "--max-queue",
                   "--max-body-bytes", "--read-timeout", "--shutdown-timeout",
                   "--pooling", "--prefill-chunk"},
                  argc, argv, 2);
  if (options.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  Server server(options);
  return server.run();
}

} // namespace tfmc::runtime::cli
