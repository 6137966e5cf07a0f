//===- ServeTest.cpp - serve's pieces: stop strings, the channel, auth ----===//
//
// runtime/serve/'s parts below the HTTP routes, each against hand-derived
// values: StopText over a tokenizer whose tokens split characters and stop
// strings, the Channel between the batcher and a worker, the API key's
// comparison, the chat setup read from a tokenizer directory, and
// GatedHttpServer::clientGone on a loopback connection whose client leaves.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/Auth.h"
#include "runtime/serve/ChatSetup.h"
#include "runtime/serve/HttpConnections.h"
#include "runtime/serve/StopText.h"
#include "runtime/serve/TokenChannel.h"

#include "BytesTokenizer.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <thread>

using namespace tfmc::runtime;
using namespace tfmc::runtime::serve;
using tfmc::test::BytesTokenizer;

namespace {

const BytesTokenizer &tokenizer() { return tfmc::test::splitCharacters(); }

/// Each push's text, then finish's (when no stop string ended it), and the
/// index of the token that stopped it (-1: none).
struct Pushed {
  std::vector<std::string> texts;
  int stoppedAt = -1;
};

Pushed pushAll(const std::vector<std::string> &stops,
               const std::vector<int64_t> &tokens,
               const Tokenizer *with = &tokenizer()) {
  StopText text(with, {0}, stops);
  Pushed pushed;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    bool stopped = false;
    pushed.texts.push_back(text.push(tokens[i], stopped));
    if (stopped && pushed.stoppedAt < 0)
      pushed.stoppedAt = static_cast<int>(i);
  }
  pushed.texts.push_back(text.finish());
  return pushed;
}

using Texts = std::vector<std::string>;

} // namespace

TEST(StopText, WithoutStopsTheTextIsTheStreams) {
  Pushed pushed = pushAll({}, {1, 2, 3, 10});
  EXPECT_EQ(pushed.texts, (Texts{" caf", "", "\xC3\xA9", "x", ""}));
  EXPECT_EQ(pushed.stoppedAt, -1);
}

TEST(StopText, AStopOverThreeTokensEndsTheTextBeforeIt) {
  // "fé" begins in " caf" and ends in the second half of "é": " ca" goes
  // out at once, "f" is held back, and nothing of the stop string is sent.
  Pushed pushed = pushAll({"f\xC3\xA9"}, {1, 2, 3, 10});
  EXPECT_EQ(pushed.stoppedAt, 2);
  EXPECT_EQ(pushed.texts, (Texts{" ca", "", "", "", ""}));
}

TEST(StopText, HeldBackTextGoesOutWhenNoStopFollows) {
  // "fx!" is begun by "f", then "fx", then broken by "END".
  Pushed pushed = pushAll({"fx!"}, {1, 10, 9});
  EXPECT_EQ(pushed.stoppedAt, -1);
  EXPECT_EQ(pushed.texts, (Texts{" ca", "", "fxEND", ""}));
  // At the end of the sequence, finish sends what was held back.
  EXPECT_EQ(pushAll({"xyz"}, {10}).texts, (Texts{"", "x"}));
}

TEST(StopText, TheStopThatBeginsFirstInTheTextWins) {
  // "x" and "cafx" both end in the token "x"; "cafx" begins earlier, so
  // the text ends before it (and " " was all that went out before).
  Pushed pushed = pushAll({"x", "cafx"}, {1, 10});
  EXPECT_EQ(pushed.stoppedAt, 1);
  EXPECT_EQ(pushed.texts, (Texts{" ", "", ""}));
}

TEST(StopText, NothingAfterTheStop) {
  StopText text(&tokenizer(), {0}, {"x"});
  bool stopped = false;
  EXPECT_EQ(text.push(1, stopped), " caf");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(text.push(10, stopped), "");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text.push(9, stopped), "");
  EXPECT_EQ(text.finish(), "");
}

TEST(StopText, WithoutATokenizerThereIsNoText) {
  Pushed pushed = pushAll({}, {1, 10}, nullptr);
  EXPECT_EQ(pushed.texts, (Texts{"", "", ""}));
  EXPECT_EQ(pushed.stoppedAt, -1);
}

TEST(Channel, TextlessPiecesJoinTheLastPieceWithText) {
  Channel channel;
  channel.push({"a", {1}});
  channel.push({"", {2}}); // joins "a"
  channel.push({"b", {3}});
  Channel::Taken taken = channel.take(std::chrono::milliseconds(0));
  ASSERT_EQ(taken.pieces.size(), 2u);
  EXPECT_EQ(taken.pieces[0].text, "a");
  EXPECT_EQ(taken.pieces[0].tokens, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(taken.pieces[1].tokens, (std::vector<int64_t>{3}));
  EXPECT_FALSE(taken.done);
  // After a take, a textless piece has nothing to join: it stands alone,
  // and so does the next one.
  channel.push({"", {4}});
  channel.push({"", {5}});
  taken = channel.take(std::chrono::milliseconds(0));
  ASSERT_EQ(taken.pieces.size(), 2u);
  EXPECT_EQ(taken.pieces[0].tokens, (std::vector<int64_t>{4}));
  // Nothing to take: an empty take after the timeout.
  taken = channel.take(std::chrono::milliseconds(1));
  EXPECT_TRUE(taken.pieces.empty());
  EXPECT_FALSE(taken.done);
}

TEST(Channel, TakeAllWaitsForTheFinish) {
  Channel channel;
  std::thread producer([&] {
    for (int64_t t = 0; t < 50; ++t)
      channel.push({std::to_string(t), {t}});
    channel.finish(FinishReason::Error, "the model failed");
  });
  int polls = 0;
  Channel::Taken all = channel.takeAll(
      [&] {
        ++polls;
        return false;
      },
      std::chrono::milliseconds(1));
  producer.join();
  EXPECT_TRUE(all.done);
  EXPECT_EQ(all.reason, FinishReason::Error);
  EXPECT_EQ(all.error, "the model failed");
  std::vector<int64_t> tokens;
  for (const Channel::Piece &piece : all.pieces)
    tokens.insert(tokens.end(), piece.tokens.begin(), piece.tokens.end());
  ASSERT_EQ(tokens.size(), 50u);
  for (int64_t t = 0; t < 50; ++t)
    EXPECT_EQ(tokens[t], t);
}

TEST(Channel, TakeAllReturnsWhenTheClientIsGone) {
  Channel channel;
  channel.push({"a", {1}});
  int polls = 0;
  Channel::Taken taken = channel.takeAll([&] { return ++polls == 3; },
                                         std::chrono::milliseconds(1));
  EXPECT_EQ(polls, 3);
  EXPECT_FALSE(taken.done);
  ASSERT_EQ(taken.pieces.size(), 1u);
  EXPECT_EQ(taken.pieces[0].text, "a");
}

TEST(Channel, FinishNames) {
  EXPECT_EQ(finishName(FinishReason::Stop), "stop");
  EXPECT_EQ(finishName(FinishReason::Length), "length");
  EXPECT_EQ(finishName(FinishReason::Cancelled), "cancelled");
  EXPECT_EQ(finishName(FinishReason::Error), "error");
}

TEST(Auth, SameSecret) {
  EXPECT_TRUE(sameSecret("key-1", "key-1"));
  EXPECT_TRUE(sameSecret("", ""));
  EXPECT_FALSE(sameSecret("key-2", "key-1"));
  EXPECT_FALSE(sameSecret("key", "key-1"));   // a prefix
  EXPECT_FALSE(sameSecret("key-10", "key-1")); // longer
  EXPECT_FALSE(sameSecret("", "key-1"));
  EXPECT_FALSE(sameSecret(std::string("key-1\0", 6), "key-1"));
}

TEST(Auth, BearerHeader) {
  EXPECT_TRUE(bearerAuthorized("", ""));          // no key: open
  EXPECT_TRUE(bearerAuthorized("Basic x", ""));
  EXPECT_TRUE(bearerAuthorized("Bearer sk-1", "sk-1"));
  EXPECT_FALSE(bearerAuthorized("bearer sk-1", "sk-1"));
  EXPECT_FALSE(bearerAuthorized("Bearer  sk-1", "sk-1"));
  EXPECT_FALSE(bearerAuthorized("sk-1", "sk-1"));
  EXPECT_FALSE(bearerAuthorized("Bearer ", "sk-1"));
  EXPECT_FALSE(bearerAuthorized("", "sk-1"));
}

TEST(Auth, ResponseIds) {
  const std::string a = randomId("cmpl-"), b = randomId("cmpl-");
  ASSERT_EQ(a.size(), 5u + 16u);
  EXPECT_EQ(a.substr(0, 5), "cmpl-");
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef", 5), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_GT(unixTime(), 1700000000); // after November 2023
}

namespace {

std::string scratchDir(const char *name) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (std::string("tfmc-serve-test-") + name + "-" +
       std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

} // namespace

TEST(ChatSetup, ReadsTheTemplateAndItsTokens) {
  const std::string dir = scratchDir("chat");
  std::ofstream(dir + "/tokenizer_config.json")
      << R"({"bos_token": "<s>", "eos_token": {"content": "</s>"},)"
      << R"( "chat_template": "{{ bos_token }}{% for m in messages %})"
      << R"({{ m.content }}{% endfor %}"})";
  ChatSetup setup;
  std::string error;
  ASSERT_TRUE(readChatSetup(dir, tokenizer(), setup, error)) << error;
  ASSERT_TRUE(setup.chatTemplate.has_value());
  EXPECT_EQ(setup.bos, "<s>");
  EXPECT_EQ(setup.eos, "</s>");
  ChatTemplateInputs inputs;
  ChatMessage message;
  message.role = "user";
  message.content = "hello";
  inputs.messages = {message};
  inputs.bosToken = setup.bos;
  ChatTemplateError templateError;
  EXPECT_EQ(setup.chatTemplate->render(inputs, templateError), "<s>hello");
  std::filesystem::remove_all(dir);
}

TEST(ChatSetup, NoConfigIsNoTemplateAndABadOneIsAnError) {
  const std::string dir = scratchDir("nochat");
  ChatSetup setup;
  std::string error;
  ASSERT_TRUE(readChatSetup(dir, tokenizer(), setup, error));
  EXPECT_FALSE(setup.chatTemplate.has_value());
  EXPECT_EQ(setup.missing, dir + "/tokenizer_config.json has no chat_template");
  std::ofstream(dir + "/tokenizer_config.json") << "{\"chat_template\": 5}";
  EXPECT_FALSE(readChatSetup(dir, tokenizer(), setup, error));
  EXPECT_EQ(error.rfind(dir + "/tokenizer_config.json: ", 0), 0u) << error;
  std::ofstream(dir + "/tokenizer_config.json")
      << "{\"chat_template\": \"{% for %}\"}";
  EXPECT_FALSE(readChatSetup(dir, tokenizer(), setup, error));
  EXPECT_EQ(error.rfind(dir + "/tokenizer_config.json: ", 0), 0u) << error;
  std::filesystem::remove_all(dir);
}

TEST(GatedHttpServer, ClientGoneOnlyOnceTheClientCloses) {
  EXPECT_FALSE(GatedHttpServer::clientGone()); // not a worker thread
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  auto waitUntil = [&](const std::function<bool()> &done) {
    while (!done() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
  };
  GatedHttpServer server;
  GatedHttpServer::Limits limits;
  limits.workers = 2;
  server.setLimits(limits);
  std::atomic<int> before{-1}, after{-1};
  std::atomic<bool> closed{false};
  server.Post("/wait", [&](const httplib::Request &, httplib::Response &) {
    before = GatedHttpServer::clientGone() ? 1 : 0;
    waitUntil([&] { return closed.load(); });
    // The FIN may take a moment to arrive after close().
    waitUntil([] { return GatedHttpServer::clientGone(); });
    after = GatedHttpServer::clientGone() ? 1 : 0;
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listener([&] { server.serve(); });
  waitUntil([&] { return server.is_running(); });

  // The client: a request, then (once the handler runs) a close.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string request = "POST /wait HTTP/1.1\r\nHost: x\r\n"
                              "Content-Length: 0\r\n\r\n";
  const bool sent =
      ::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) ==
          0 &&
      ::send(fd, request.data(), request.size(), 0) ==
          static_cast<ssize_t>(request.size());
  const bool handled = sent && waitUntil([&] { return before >= 0; });
  ::close(fd);
  closed = true;
  const bool finished = waitUntil([&] { return after >= 0; });
  server.stop();
  listener.join();
  ASSERT_TRUE(sent);
  ASSERT_TRUE(handled);
  ASSERT_TRUE(finished);
  EXPECT_EQ(before, 0); // the client was there while it waited
  EXPECT_EQ(after, 1);
}
