// The HTTP front end's deadlines (src/serve/http/http_frontend.hpp): one deadline per
// connection, enforced by a sweeping timer. A handler that takes longer than the read
// timeout (a slow model) still gets its answer written; a connection idle, or stuck in the
// middle of a request, is closed soon after its timeout and counted. No test sleeps to
// wait: clients block on their socket with a generous receive timeout.

#include "serve/http/http_frontend.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

// A blocking loopback client; every receive gives up after 10 s.
class Client {
 public:
  explicit Client(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval patience{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void send_text(const std::string& text) const {
    ASSERT_EQ(send(fd_, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
  }
  // Reads until `text` holds a whole answer (its header and Content-Length bytes).
  std::string read_answer() const {
    std::string text;
    char buf[4096];
    while (true) {
      const std::size_t end = text.find("\r\n\r\n");
      if (end != std::string::npos) {
        const std::size_t at = text.find("Content-Length: ");
        const std::size_t length = at == std::string::npos ? 0 : std::stoul(text.substr(at + 16));
        if (text.size() >= end + 4 + length) return text;
      }
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return text;
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Blocks until the server closes the connection (true) or 10 s pass (false).
  bool closed_by_server() const {
    char buf[256];
    while (true) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

HttpLimits short_limits() {
  HttpLimits limits;
  limits.read_timeout_s = 0.2;
  limits.idle_timeout_s = 0.2;
  limits.write_timeout_s = 0.2;
  return limits;
}

std::string error_json(const std::string& message) { return "{\"error\":\"" + message + "\"}"; }

const char* kRequest = "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";

// A front end whose handler hands its Responder to the test, and a client connected to it.
struct HandedOver {
  std::promise<Responder> handed;
  HttpFrontEnd fe{short_limits(),
                  [this](HttpRequest&&, Responder r) { handed.set_value(std::move(r)); }, nullptr,
                  error_json};
  Client client{fe.start("127.0.0.1", 0)};
  // Sends kRequest and waits (10 s at most) for the handler's Responder.
  std::optional<Responder> request() {
    if (!client.connected()) return std::nullopt;
    client.send_text(kRequest);
    auto waiting = handed.get_future();
    if (waiting.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
      return std::nullopt;
    return waiting.get();
  }
};

TEST(HttpFrontEnd, AHandlerSlowerThanTheReadTimeoutStillAnswers) {
  // The handler keeps the responder; the test answers after 3x the read timeout.
  HandedOver h;
  auto& fe = h.fe;
  auto& client = h.client;
  std::optional<Responder> respond = h.request();
  ASSERT_TRUE(respond.has_value());
  const auto handed_at = Clock::now();
  while (Clock::now() - handed_at < std::chrono::milliseconds(600)) std::this_thread::yield();
  (*respond)(HttpResponse(200, "{\"done\":true}"));
  const std::string answer = client.read_answer();
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("{\"done\":true}"), std::string::npos) << answer;
  EXPECT_EQ(fe.stats().timed_out, 0u);
  // Then, idle, the connection closes after its idle timeout and counts as timed out.
  const auto idle_from = Clock::now();
  EXPECT_TRUE(client.closed_by_server());
  EXPECT_LT(Clock::now() - idle_from, std::chrono::seconds(5));
  EXPECT_EQ(fe.stats().timed_out, 1u);
  respond.reset();
  fe.stop(1.0);
}

// A model that never answers keeps its Responder past the front end's stop() (the server
// refuses what is still in flight, but the model's callback still holds it): the answer it
// gives after stop(), and the Responder's end after the front end itself is gone, touch no
// freed connection (ASan: the socket's strand used to outlive its io_context), and the
// client sees its connection closed.
TEST(HttpFrontEnd, AResponderThatOutlivesStopAnswersIntoNothing) {
  std::optional<Responder> respond;
  {
    HandedOver h;
    respond = h.request();
    ASSERT_TRUE(respond.has_value());
    h.fe.stop(0.0);
    EXPECT_TRUE(h.client.closed_by_server());
    (*respond)(HttpResponse(200, "{\"late\":true}"));  // after stop(): goes nowhere
  }
  Responder copy = *respond;  // the front end is gone; its copies still end cleanly
  respond.reset();
}

TEST(HttpFrontEnd, AHalfSentRequestIsClosedAfterTheReadTimeout) {
  bool handled = false;
  std::mutex mutex;
  HttpFrontEnd fe(
      short_limits(),
      [&](HttpRequest&&, Responder r) {
        std::lock_guard lock(mutex);
        handled = true;
        r(HttpResponse(200, "{}"));
      },
      nullptr, error_json);
  const int port = fe.start("127.0.0.1", 0);
  Client client(port);
  ASSERT_TRUE(client.connected());
  // A header announcing 10 bytes of body, and 3 of them.
  client.send_text("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  const auto from = Clock::now();
  EXPECT_TRUE(client.closed_by_server());
  const auto took = Clock::now() - from;
  EXPECT_GE(took, std::chrono::milliseconds(150));
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(fe.stats().timed_out, 1u);
  std::lock_guard lock(mutex);
  EXPECT_FALSE(handled);
  fe.stop(1.0);
}

TEST(HttpFrontEnd, KeptAliveConnectionsAnswerEveryRequestBeforeTheirDeadline) {
  // Requests sent back to back on one connection for longer than the timeouts: each is
  // answered (the deadline is re-armed per request, not per connection).
  HttpFrontEnd fe(
      short_limits(), [](HttpRequest&&, Responder r) { r(HttpResponse(200, "{}")); }, nullptr,
      error_json);
  const int port = fe.start("127.0.0.1", 0);
  Client client(port);
  ASSERT_TRUE(client.connected());
  const auto from = Clock::now();
  int answered = 0;
  while (Clock::now() - from < std::chrono::milliseconds(500)) {
    client.send_text(kRequest);
    const std::string answer = client.read_answer();
    ASSERT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u)
        << "request " << answered << ": " << answer;
    ++answered;
  }
  EXPECT_GT(answered, 10);
  EXPECT_EQ(fe.stats().timed_out, 0u);
  fe.stop(1.0);
}

// Framing the front end refuses rather than reads as Beast would: a header line folded
// onto the next (obs-fold), and a chunked body's trailer past the header's limit.
struct Echo {
  HttpFrontEnd fe{HttpLimits{},
                  [](HttpRequest&&, Responder r) { r(HttpResponse(200, "{\"ok\":true}")); },
                  nullptr, error_json};
  int port = fe.start("127.0.0.1", 0);
  std::string answer(const std::string& request) {
    Client c(port);
    c.send_text(request);
    return c.read_answer();
  }
};

TEST(HttpFrontEnd, AFoldedHeaderLineIsRefused) {
  Echo e;
  const std::string folded = e.answer("GET /a HTTP/1.1\r\nHost: x\r\nX-Note: one\r\n two\r\n\r\n");
  EXPECT_EQ(folded.rfind("HTTP/1.1 400 ", 0), 0u) << folded;
  EXPECT_NE(folded.find("obs-fold"), std::string::npos) << folded;
  const std::string tab = e.answer("GET /a HTTP/1.1\r\nHost: x\r\nX-Note: one\r\n\ttwo\r\n\r\n");
  EXPECT_EQ(tab.rfind("HTTP/1.1 400 ", 0), 0u) << tab;
  // Spaces inside a line, and a body that starts with one, are not folding.
  const std::string plain =
      e.answer("POST /a HTTP/1.1\r\nHost: x\r\nX-Note: one two\r\nContent-Length: 3\r\n\r\n a ");
  EXPECT_EQ(plain.rfind("HTTP/1.1 200 ", 0), 0u) << plain;
}

TEST(HttpFrontEnd, AChunkedTrailerPastTheHeaderLimitIsRefused) {
  Echo e;
  const std::string head = "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string trailer;
  for (int i = 0; i < 1000; ++i)
    trailer += "X-T" + std::to_string(i) + ": " + std::string(24, 'v') + "\r\n";
  ASSERT_GT(trailer.size(), 16u << 10);  // ~30 KB
  const std::string big = e.answer(head + "2\r\n{}\r\n0\r\n" + trailer + "\r\n");
  EXPECT_EQ(big.rfind("HTTP/1.1 431 ", 0), 0u) << big.substr(0, 200);
  // A small trailer, and a large chunk, are read as before.
  const std::string small = e.answer(head + "2\r\n{}\r\n0\r\nX-T: v\r\n\r\n");
  EXPECT_EQ(small.rfind("HTTP/1.1 200 ", 0), 0u) << small;
  const std::string chunk(64u << 10, 'c');
  const std::string large = e.answer(head + "10000\r\n" + chunk + "\r\n0\r\n\r\n");
  EXPECT_EQ(large.rfind("HTTP/1.1 200 ", 0), 0u) << large.substr(0, 200);
}

}  // namespace
}  // namespace tessera
