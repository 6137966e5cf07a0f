//===- HttpConnections.cpp - Connections that hold no thread while idle ---===//

#include "runtime/serve/HttpConnections.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

namespace tfmc::runtime::serve {

using Clock = std::chrono::steady_clock;

struct HttpConnection {
  int fd = -1;
  std::string remoteIp;
  int remotePort = 0;
  /// Bytes read from the socket; those before `consumed` were parsed.
  std::string buffer;
  std::size_t consumed = 0;
  /// Waiting for the first byte of a kept-alive connection's next request.
  bool idle = false;
  Clock::time_point deadline;
  std::size_t requestsLeft = 1;

  std::size_t unread() const { return buffer.size() - consumed; }
};

namespace {

/// The connection this worker thread answers a request of, if any.
thread_local const HttpConnection *answering = nullptr;

/// A head longer than this without its blank line is not a request httplib
/// takes (its lines are at most 8 KiB): a worker reads it and refuses it.
constexpr std::size_t kMaxHeadBytes = 64 << 10;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

/// Whether `fd` becomes ready for `events` within the time given.
bool waitFor(int fd, short events, time_t seconds, time_t microseconds) {
  pollfd entry{fd, events, 0};
  const int milliseconds =
      static_cast<int>(seconds * 1000 + microseconds / 1000);
  int ready;
  do
    ready = ::poll(&entry, 1, milliseconds);
  while (ready < 0 && errno == EINTR);
  return ready > 0 && (entry.revents & events) &&
         !(entry.revents & (POLLERR | POLLNVAL));
}

/// Sends what fits now, without blocking: the gate's own short answers.
void sendNow(int fd, const std::string &bytes) {
  if (!bytes.empty())
    (void)::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool startsWithNoCase(std::string_view line, std::string_view prefix) {
  return line.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), line.begin(),
                    [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) ==
                             std::tolower(static_cast<unsigned char>(b));
                    });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' ||
                           text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

/// httplib's Stream over a connection: its buffered bytes first, then the
/// socket, with the server's read and write timeouts.
class ConnectionStream : public httplib::Stream {
public:
  ConnectionStream(HttpConnection &connection, time_t readSeconds,
                   time_t readMicroseconds, time_t writeSeconds,
                   time_t writeMicroseconds)
      : connection(connection), readSeconds(readSeconds),
        readMicroseconds(readMicroseconds), writeSeconds(writeSeconds),
        writeMicroseconds(writeMicroseconds) {}

  bool is_readable() const override {
    return connection.unread() > 0 ||
           waitFor(connection.fd, POLLIN, readSeconds, readMicroseconds);
  }

  bool is_writable() const override {
    return waitFor(connection.fd, POLLOUT, writeSeconds, writeMicroseconds);
  }

  ssize_t read(char *ptr, size_t size) override {
    if (connection.unread() == 0) {
      connection.buffer.clear();
      connection.consumed = 0;
      if (!waitFor(connection.fd, POLLIN, readSeconds, readMicroseconds))
        return -1;
      char chunk[4096];
      ssize_t got;
      do
        got = ::recv(connection.fd, chunk, sizeof chunk, 0);
      while (got < 0 && errno == EINTR);
      if (got <= 0)
        return got;
      connection.buffer.assign(chunk, static_cast<std::size_t>(got));
    }
    const std::size_t count = std::min(size, connection.unread());
    std::memcpy(ptr, connection.buffer.data() + connection.consumed, count);
    connection.consumed += count;
    return static_cast<ssize_t>(count);
  }

  ssize_t write(const char *ptr, size_t size) override {
    if (!is_writable())
      return -1;
    ssize_t sent;
    do
      sent = ::send(connection.fd, ptr, size, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent;
  }

  void get_remote_ip_and_port(std::string &ip, int &port) const override {
    ip = connection.remoteIp;
    port = connection.remotePort;
  }

  void get_local_ip_and_port(std::string &ip, int &port) const override {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ip.clear();
    port = 0;
    if (::getsockname(connection.fd, reinterpret_cast<sockaddr *>(&address),
                      &length) == 0)
      describe(address, ip, port);
  }

  socket_t socket() const override { return connection.fd; }

  static void describe(const sockaddr_storage &address, std::string &ip,
                       int &port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
      const auto &v4 = reinterpret_cast<const sockaddr_in &>(address);
      ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
      port = ntohs(v4.sin_port);
    } else if (address.ss_family == AF_INET6) {
      const auto &v6 = reinterpret_cast<const sockaddr_in6 &>(address);
      ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
      port = ntohs(v6.sin6_port);
    }
    ip = text;
  }

private:
  HttpConnection &connection;
  time_t readSeconds, readMicroseconds, writeSeconds, writeMicroseconds;
};

/// Runs each task on the thread that enqueues it: httplib's listener hands
/// each accepted socket straight to process_and_close_socket, which only
/// gives it to the gate.
class InlineTaskQueue : public httplib::TaskQueue {
public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

} // namespace

GatedHttpServer::GatedHttpServer() {
  wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  new_task_queue = [] { return new InlineTaskQueue(); };
}

GatedHttpServer::~GatedHttpServer() {
  if (wakeFd >= 0)
    ::close(wakeFd);
}

void GatedHttpServer::setLimits(Limits newLimits) {
  limits = std::move(newLimits);
}

bool GatedHttpServer::clientGone() {
  if (!answering)
    return false;
  pollfd entry{answering->fd, POLLRDHUP, 0};
  int ready;
  do
    ready = ::poll(&entry, 1, 0);
  while (ready < 0 && errno == EINTR);
  return ready > 0 && (entry.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

std::size_t GatedHttpServer::connections() const {
  std::lock_guard<std::mutex> lock(mutex);
  return held;
}

bool GatedHttpServer::serve() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = false;
  }
  // httplib 0.11 listens with a backlog of 5: 32 clients connecting at
  // once under load had some of their connections reset by the kernel
  // before the listener accepted them (Serve/batching.test, 3 of 15 runs
  // with 3 busy processes beside it; the server saw 29 of 32). Listening
  // again on the bound socket raises the backlog (Linux updates it).
  if (svr_sock_ != INVALID_SOCKET)
    ::listen(svr_sock_, SOMAXCONN);
  gate = std::thread([this] { gateLoop(); });
  for (std::size_t i = 0; i < std::max<std::size_t>(limits.workers, 1); ++i)
    workerThreads.emplace_back([this] { workerLoop(); });
  const bool listened = listen_after_bind();
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wakeGate();
  workReady.notify_all();
  gate.join();
  for (std::thread &worker : workerThreads)
    worker.join();
  workerThreads.clear();
  return listened;
}

bool GatedHttpServer::process_and_close_socket(socket_t sock) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping || held >= limits.maxConnections) {
      if (!stopping)
        sendNow(sock, limits.busyResponse);
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
      return false;
    }
    ++held;
  }
  auto connection = std::make_unique<HttpConnection>();
  connection->fd = sock;
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(sock, reinterpret_cast<sockaddr *>(&address), &length) ==
      0)
    ConnectionStream::describe(address, connection->remoteIp,
                               connection->remotePort);
  connection->deadline = after(limits.requestSeconds);
  connection->requestsLeft = std::max<std::size_t>(keep_alive_max_count_, 1);
  toGate(std::move(connection));
  return true;
}

void GatedHttpServer::wakeGate() {
  const uint64_t one = 1;
  (void)!::write(wakeFd, &one, sizeof one);
}

void GatedHttpServer::toGate(std::unique_ptr<HttpConnection> connection) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!stopping) {
      gateInbox.push_back(std::move(connection));
      connection = nullptr;
    }
  }
  if (connection)
    close(std::move(connection));
  else
    wakeGate();
}

void GatedHttpServer::toWorkers(std::unique_ptr<HttpConnection> connection) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    work.push_back(std::move(connection));
  }
  workReady.notify_one();
}

void GatedHttpServer::close(std::unique_ptr<HttpConnection> connection) {
  ::shutdown(connection->fd, SHUT_RDWR);
  ::close(connection->fd);
  std::lock_guard<std::mutex> lock(mutex);
  --held;
}

bool GatedHttpServer::requestArrived(const HttpConnection &connection) const {
  const std::string_view bytes =
      std::string_view(connection.buffer).substr(connection.consumed);
  const std::size_t headEnd = bytes.find("\r\n\r\n");
  if (headEnd == std::string_view::npos)
    return bytes.size() >= kMaxHeadBytes;
  std::string_view head = bytes.substr(0, headEnd + 2);
  std::size_t bodyBytes = 0;
  // The request line, then one header a line.
  head.remove_prefix(std::min(head.size(), head.find("\r\n") + 2));
  while (!head.empty()) {
    const std::size_t end = head.find("\r\n");
    const std::string_view line = head.substr(0, end);
    head.remove_prefix(std::min(head.size(), end + 2));
    if (startsWithNoCase(line, "transfer-encoding:") ||
        (startsWithNoCase(line, "expect:") &&
         startsWithNoCase(trim(line.substr(7)), "100-continue")))
      return true; // the worker reads the body, as httplib does
    if (startsWithNoCase(line, "content-length:")) {
      const std::string_view value = trim(line.substr(15));
      if (value.empty() || value.size() > 18 ||
          value.find_first_not_of("0123456789") != std::string_view::npos)
        return true; // httplib refuses it
      bodyBytes = std::stoull(std::string(value));
      if (bodyBytes > limits.wholeBodyBytes)
        return true; // the worker reads it (or httplib answers 413)
    }
  }
  return bytes.size() >= headEnd + 4 + bodyBytes;
}

void GatedHttpServer::gateLoop() {
  std::vector<std::unique_ptr<HttpConnection>> waiting;
  std::vector<pollfd> polled;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping)
        break;
      for (auto &connection : gateInbox)
        waiting.push_back(std::move(connection));
      gateInbox.clear();
    }
    // A kept-alive connection may hold its next request already.
    for (auto &connection : waiting) {
      if (connection->unread() > 0 && requestArrived(*connection))
        toWorkers(std::move(connection));
    }
    waiting.erase(std::remove(waiting.begin(), waiting.end(), nullptr),
                  waiting.end());

    Clock::time_point wake = Clock::now() + std::chrono::seconds(1);
    polled.assign(1, pollfd{wakeFd, POLLIN, 0});
    for (const auto &connection : waiting) {
      polled.push_back(pollfd{connection->fd, POLLIN, 0});
      wake = std::min(wake, connection->deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        wake - Clock::now());
    const int ready = ::poll(polled.data(), polled.size(),
                             static_cast<int>(std::max<int64_t>(
                                 wait.count() + 1, 0)));
    if (ready < 0 && errno != EINTR)
      break;
    if (polled[0].revents & POLLIN) {
      uint64_t count;
      (void)!::read(wakeFd, &count, sizeof count);
    }
    const Clock::time_point now = Clock::now();
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      std::unique_ptr<HttpConnection> &connection = waiting[i];
      if (polled[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        char chunk[16 << 10];
        const ssize_t got = ::recv(connection->fd, chunk, sizeof chunk,
                                   MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
          close(std::move(connection));
          continue;
        }
        if (got > 0) {
          connection->buffer.append(chunk, static_cast<std::size_t>(got));
          if (connection->idle) {
            connection->idle = false;
            connection->deadline = after(limits.requestSeconds);
          }
          if (requestArrived(*connection)) {
            toWorkers(std::move(connection));
            continue;
          }
        }
      }
      if (now >= connection->deadline) {
        // Half a request is answered; a silent connection just closed.
        if (!connection->idle && connection->unread() > 0)
          sendNow(connection->fd, limits.timedOutResponse);
        close(std::move(connection));
      }
    }
    waiting.erase(std::remove(waiting.begin(), waiting.end(), nullptr),
                  waiting.end());
  }
  for (auto &connection : waiting)
    close(std::move(connection));
  std::vector<std::unique_ptr<HttpConnection>> inbox;
  {
    std::lock_guard<std::mutex> lock(mutex);
    inbox.swap(gateInbox);
  }
  for (auto &connection : inbox)
    close(std::move(connection));
}

void GatedHttpServer::workerLoop() {
  for (;;) {
    std::unique_ptr<HttpConnection> connection;
    bool closeConnection;
    {
      std::unique_lock<std::mutex> lock(mutex);
      workReady.wait(lock, [&] { return stopping || !work.empty(); });
      if (work.empty())
        return;
      connection = std::move(work.front());
      work.pop_front();
      closeConnection = stopping || connection->requestsLeft <= 1;
    }
    ConnectionStream stream(*connection, read_timeout_sec_, read_timeout_usec_,
                            write_timeout_sec_, write_timeout_usec_);
    bool connectionClosed = false;
    bool answered;
    {
      // clientGone()'s connection while this thread answers it (reset on
      // every way out).
      struct Answering {
        explicit Answering(const HttpConnection *connection) {
          answering = connection;
        }
        ~Answering() { answering = nullptr; }
      } current(connection.get());
      answered =
          process_request(stream, closeConnection, connectionClosed, nullptr);
    }
    --connection->requestsLeft;
    if (!answered || connectionClosed || closeConnection) {
      close(std::move(connection));
      continue;
    }
    // Back to the gate, with what the client sent after this request.
    connection->buffer.erase(0, connection->consumed);
    connection->consumed = 0;
    connection->idle = connection->buffer.empty();
    connection->deadline = after(connection->idle ? limits.idleSeconds
                                                  : limits.requestSeconds);
    toGate(std::move(connection));
  }
}

} // namespace tfmc::runtime::serve
