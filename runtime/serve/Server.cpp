//===- Server.cpp - NAME serve's HTTP server: routes and life -------------===//

#include "runtime/serve/Server.h"

#include "runtime/serve/Auth.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <pthread.h>
#include <sys/resource.h>

namespace tfmc::runtime::serve {

namespace {

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

} // namespace

void sendError(httplib::Response &response, const ApiError &error) {
  response.status = error.status;
  response.set_content(error.body(), "application/json");
}

Server::Server(ServerSettings settings, const Plan &plan, ServedText text)
    : settings(std::move(settings)), plan(plan), text(std::move(text)),
      created(unixTime()) {}

Server::~Server() = default;

bool Server::authorized(const httplib::Request &request,
                        httplib::Response &response) {
  if (bearerAuthorized(request.get_header_value("Authorization"),
                       settings.apiKey))
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
        metrics.text(state),
        "text/plain; version=0.0.4");
  });
  http.Get("/v1/models",
           guarded("models", [this](const httplib::Request &,
                                    httplib::Response &response) {
             response.set_content(modelsBody(settings.modelId, created),
                                  "application/json");
           }));
  http.Get(R"(/v1/models/(.+))",
           guarded("models", [this](const httplib::Request &request,
                                    httplib::Response &response) {
             const std::string &modelId = settings.modelId;
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
                                               settings.maxBodyBytes)
        : response.status == 400 ? "the request could not be read: malformed, "
                                   "or not sent within --read-timeout"
                                 : fmt::format("HTTP {}", response.status);
    sendError(response, error);
    if (response.status == 413)
      metrics.request("too_large", 413);
  });
}

bool Server::startModel(std::string &error) {
  encoderDecoder = entryTakes(*model, "prefill", "decoder_input_ids");
  // A model that generates answers completions; an encoder-only one
  // (last_hidden_state) embeddings, pooled as --pooling says.
  if (model->hasEntry("decode_step")) {
    if (!settings.pooling.empty()) {
      error = fmt::format("--pooling is for encoder-only models; model '{}' "
                          "generates",
                          plan.model);
      return false;
    }
    scheduler = ContinuousBatcher::create(*model, settings.maxQueue, error);
    if (!scheduler)
      return false;
    scheduler->setPrefillChunk(settings.prefillChunk);
    if (!scheduler->setPrefixCache(settings.prefixCacheMiB << 20) &&
        settings.prefixCacheGiven) {
      error = fmt::format("--prefix-cache: model '{}' cannot reuse prompts' "
                          "prefixes (an encoder-decoder, or a program "
                          "whose requests run one at a time); give "
                          "--prefix-cache 0",
                          plan.model);
      return false;
    }
    return true;
  }
  if (plan.output().name != "last_hidden_state") {
    error = fmt::format("model '{}' cannot generate (no decoder) and outputs "
                        "{}, not last_hidden_state: it has nothing to serve",
                        plan.model, plan.output().name);
    return false;
  }
  if (settings.pooling.empty()) {
    error = fmt::format("model '{}' is encoder-only: give --pooling mean|cls "
                        "for /v1/embeddings",
                        plan.model);
    return false;
  }
  return true;
}

bool Server::run(const std::function<std::unique_ptr<Model>()> &load,
                 std::string &error) {
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
  http.set_payload_max_length(static_cast<size_t>(settings.maxBodyBytes));
  http.set_read_timeout(static_cast<time_t>(settings.readTimeout), 0);
  http.set_write_timeout(static_cast<time_t>(settings.readTimeout), 0);
  http.set_keep_alive_timeout(kIdleSeconds);
  http.set_keep_alive_max_count(100);
  // Each streamed token is a small write, sent at once: with Nagle's
  // algorithm it could wait for the client's delayed ACK of the one
  // before, up to 40 ms on Linux (docs/serving.md, "Token latency").
  http.set_tcp_nodelay(true);
  http.setLimits(connectionLimits(plan.maxBatch, settings.maxQueue,
                                  settings.readTimeout,
                                  settings.maxBodyBytes));
  int bound = static_cast<int>(settings.port);
  if (settings.port == 0)
    bound = http.bind_to_any_port(settings.host);
  else if (!http.bind_to_port(settings.host, static_cast<int>(settings.port)))
    bound = -1;
  if (bound < 0) {
    error = fmt::format("cannot listen on {}:{} (in use, or not an address "
                        "of this machine)",
                        settings.host, settings.port);
    return false;
  }
  std::atomic<bool> listening{true};
  std::thread listener([this, &listening] {
    http.serve();
    listening = false;
  });
  // stop() before the listener runs would be lost: wait for it to start.
  while (!http.is_running() && listening)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto stopListening = [&] {
    http.stop();
    listener.join();
  };
  // /health says "loading" meanwhile; a failure stops the listener first.
  try {
    model = load();
  } catch (...) {
    stopListening();
    throw;
  }
  if (!startModel(error)) {
    stopListening();
    return false;
  }
  ready = true;
  const char *name = settings.programName.c_str();
  std::fprintf(stderr, "%s: serving %s on http://%s:%d\n", name,
               settings.modelId.c_str(), settings.host.c_str(), bound);
  std::fflush(stderr);

  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "%s: %s: finishing the requests in flight (at most "
                       "%lld s)\n",
               name, signal == SIGTERM ? "SIGTERM" : "SIGINT",
               static_cast<long long>(settings.shutdownTimeout));
  http.stop();
  if (scheduler)
    scheduler->shutdown(static_cast<double>(settings.shutdownTimeout));
  listener.join();
  scheduler.reset();
  std::fprintf(stderr, "%s: stopped\n", name);
  return true;
}

} // namespace tfmc::runtime::serve
