//===- Server.h - NAME serve's HTTP server ----------------------*- C++ -*-===//
//
// An OpenAI-compatible HTTP server (Debian's cpp-httplib): connections wait
// for their requests in one gate thread (HttpConnections.h); a worker thread
// takes each request that has arrived whole, checks it (OpenAiApi.h),
// tokenizes it, and hands a Job to the ContinuousBatcher, which runs every
// request of the process in one continuously batched generation; tokens
// come back through a Channel (TokenChannel.h) to the worker, which writes
// the response, or the stream of server-sent events as they come
// (Completions.cpp). An encoder-only model answers /v1/embeddings instead
// (Embeddings.cpp). The socket is bound first and /health answers 503
// until the model is loaded.
//
// SIGTERM or SIGINT: the listening socket closes, requests in flight finish
// (or are cut with finish_reason "cancelled" after the shutdown timeout),
// and run() returns.
//
// runtime/cli/ServeCommand.cpp reads the command line into ServerSettings
// and loads the tokenizer and the model.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_SERVER_H
#define TFMC_RUNTIME_SERVE_SERVER_H

#include "runtime/generate/ContinuousBatcher.h"
#include "runtime/serve/ChatSetup.h"
#include "runtime/serve/HttpConnections.h"
#include "runtime/serve/JsonConstraint.h"
#include "runtime/serve/Metrics.h"
#include "runtime/serve/OpenAiApi.h"
#include "runtime/tokenizers/Tokenizer.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace tfmc::runtime::serve {

/// serve's options, checked (runtime/cli/ServeCommand.cpp).
struct ServerSettings {
  std::string host = "127.0.0.1";
  int64_t port = 8080; // 0: any free port
  std::string modelId;
  std::string apiKey; // empty: no key
  int64_t maxQueue = 64;
  int64_t maxBodyBytes = 1 << 20;
  int64_t readTimeout = 30;     // seconds
  int64_t shutdownTimeout = 30; // seconds
  int64_t prefillChunk = ContinuousBatcher::kDefaultPrefillChunk;
  /// The prefix cache's budget (ContinuousBatcher::setPrefixCache), MiB;
  /// given: a model that cannot reuse prefixes is refused.
  static constexpr int64_t kDefaultPrefixCacheMiB = 512;
  int64_t prefixCacheMiB = kDefaultPrefixCacheMiB;
  bool prefixCacheGiven = false;
  /// An encoder-only model's pooling for /v1/embeddings ("mean", "cls"),
  /// or empty.
  std::string pooling;
  /// The log lines' prefix (the program's name).
  std::string programName;
};

/// What requests are tokenized and chat rendered with: nothing without a
/// tokenizer (requests then give token ids).
struct ServedText {
  std::unique_ptr<Tokenizer> tokenizer;
  PromptTokens promptTokens;
  ChatSetup chat;
};

class Server {
public:
  /// `plan`: the program's plan (max_batch sizes the worker threads).
  Server(ServerSettings settings, const Plan &plan, ServedText text);
  ~Server();

  /// Listens, loads the model with `load` (it may throw; the listener is
  /// stopped first) while /health answers 503, then serves until SIGTERM or
  /// SIGINT. False with a one-line `error` when it cannot listen or the
  /// model has nothing to serve as the settings ask.
  bool run(const std::function<std::unique_ptr<Model>()> &load,
           std::string &error);

private:
  /// After loading: the batcher, or the pooling of an encoder-only model.
  bool startModel(std::string &error);
  void routes();
  bool authorized(const httplib::Request &request, httplib::Response &response);
  void completion(const httplib::Request &request, httplib::Response &response,
                  bool chat);
  void embeddings(const httplib::Request &request,
                  httplib::Response &response);
  /// The prompt's ids, or false with `error`.
  bool promptIds(const CompletionRequest &request, std::vector<int64_t> &ids,
                 ApiError &error) const;

  const ServerSettings settings;
  const Plan &plan;
  ServedText text;
  GatedHttpServer http;
  Metrics metrics;
  std::atomic<bool> ready{false};
  std::unique_ptr<Model> model;
  std::unique_ptr<ContinuousBatcher> scheduler;
  int64_t created;
  bool encoderDecoder = false;
  std::mutex forwardMutex; // an encoder's forward runs one request at a time
  /// Tokenizer::encode is not thread-safe (its caches); decode is.
  mutable std::mutex encodeMutex;
  /// response_format: compiled schemas, and the vocabulary's bytes
  /// (built at the first request that asks).
  JsonGrammarCache grammars;
  std::once_flag tokenIndexOnce;
  std::shared_ptr<const TokenIndex> tokenIndex;
  /// The request's constraint maker (null without response_format), or
  /// false with `error`.
  /// tool_choice required or named: the grammar of one call (a list of
  /// them for Mistral) in the template's syntax, or null with `error`.
  std::shared_ptr<const JsonGrammar>
  toolCallGrammar(const CompletionRequest &request, ApiError &error);
  bool responseConstraint(const CompletionRequest &request,
                          std::function<std::shared_ptr<TokenConstraint>()> &make,
                          ApiError &error);
};

/// `error` as the response: its status and OpenAI's error body.
void sendError(httplib::Response &response, const ApiError &error);

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_SERVER_H
