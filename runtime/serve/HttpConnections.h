//===- HttpConnections.h - Connections that hold no thread while idle -*- C++ -*-===//
//
// cpp-httplib's Server gives each accepted connection a pool thread for its
// whole life: a client that opens sockets and sends nothing, or half a
// request, holds a thread until --read-timeout, and enough of them hold the
// whole pool. GatedHttpServer keeps httplib's request parsing, routing and
// responses (process_request), but changes who waits for the bytes:
//
//   - one gate thread polls every connection that is between requests
//     (new, half sent, or kept alive) and reads what arrives into the
//     connection's own buffer, with no thread per connection;
//   - a connection goes to a worker only when its request has arrived
//     whole: the head, and a body of Content-Length bytes up to
//     Limits::wholeBodyBytes (a larger or chunked body, or one behind
//     "Expect: 100-continue", is read by the worker, as httplib reads it);
//   - after its answer a kept-alive connection goes back to the gate;
//   - a request that has not arrived whole within the request timeout is
//     answered with the server's timeout response and closed; an idle
//     kept-alive connection is closed after the idle timeout;
//   - at most maxConnections are held at once; past that a new connection
//     is answered 503 and closed.
//
// A handler that waits long for its answer (a completion that is not
// streamed) asks clientGone() now and then: a client that has closed its
// connection is not waited for.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_HTTPCONNECTIONS_H
#define TFMC_RUNTIME_SERVE_HTTPCONNECTIONS_H

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tfmc::runtime::serve {

struct HttpConnection;

class GatedHttpServer : public httplib::Server {
public:
  struct Limits {
    /// Threads that answer requests (each holds one request at a time).
    std::size_t workers = 8;
    /// Connections held at once, waiting or being answered.
    std::size_t maxConnections = 1024;
    /// Seconds a request may take to arrive whole, from its connection's
    /// accept or its previous answer.
    double requestSeconds = 30;
    /// Seconds a kept-alive connection may wait for its next request's
    /// first byte.
    double idleSeconds = 5;
    /// Bodies up to this size are read by the gate before the request goes
    /// to a worker; larger ones by the worker.
    std::size_t wholeBodyBytes = 1 << 20;
    /// Whole HTTP responses the gate writes on its own: to a request that
    /// did not arrive in time, and to a connection past maxConnections.
    std::string timedOutResponse;
    std::string busyResponse;
  };

  GatedHttpServer();
  ~GatedHttpServer() override;

  void setLimits(Limits limits);

  /// httplib's listen_after_bind (bind first); when stop() ends it, the
  /// waiting connections are closed and the requests being answered
  /// finish before this returns.
  bool serve();

  /// Connections held now (waiting in the gate or being answered).
  std::size_t connections() const;

  /// On a worker thread, in a handler: whether the client of the request
  /// being answered has closed its connection (or its sending half) or
  /// reset it. False elsewhere.
  static bool clientGone();

private:
  // httplib's listener calls this for each accepted socket (through an
  // inline task queue, on the listener's thread): the socket joins the gate.
  bool process_and_close_socket(socket_t sock) override;

  void gateLoop();
  void workerLoop();
  void wakeGate();
  void toGate(std::unique_ptr<HttpConnection> connection);
  void toWorkers(std::unique_ptr<HttpConnection> connection);
  void close(std::unique_ptr<HttpConnection> connection);
  /// Whether the connection's buffer holds a request a worker can answer
  /// without waiting for the client.
  bool requestArrived(const HttpConnection &connection) const;

  Limits limits;
  int wakeFd = -1;

  mutable std::mutex mutex;
  std::condition_variable workReady;
  /// Handed to the gate (by the listener and the workers), not yet polled.
  std::vector<std::unique_ptr<HttpConnection>> gateInbox;
  std::deque<std::unique_ptr<HttpConnection>> work;
  std::size_t held = 0;
  bool stopping = false;

  std::thread gate;
  std::vector<std::thread> workerThreads;
};

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_HTTPCONNECTIONS_H
