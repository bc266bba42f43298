#pragma once

// The HTTP/1.1 front end of `tessera serve` (docs/reliability.md): Boost.Beast on a small
// Boost.Asio thread pool. No thread is held by a connection: every read and write is
// asynchronous, so slow or idle clients cost a socket and a few KB, never a thread.
//
// Bounds it enforces (HttpLimits):
//  - a whole request (header + body) must arrive within read_timeout_s of its first byte,
//    else the connection is closed; an idle keep-alive connection closes after
//    idle_timeout_s; a response must be taken by the client within write_timeout_s
//    (one deadline per connection, checked by one sweeping timer every tenth of the
//    shortest timeout, at most every 0.1 s: a connection closes at most that late);
//  - header_limit bytes of header (431 above) and body_limit bytes of body (413, sent as
//    soon as the header announces more, before the body is read);
//  - body_budget: bytes of request bodies being read or handled at once, over all
//    connections (503 when a new body would exceed it);
//  - max_connections open at once: a new connection beyond it closes the oldest idle one
//    (waiting for its next request), else the oldest one still reading its request of the
//    client (address) holding the most connections, else it is answered 503 and closed;
//  - per client (remote address): max_client_connections open at once (a new one beyond
//    closes that client's oldest idle or reading connection, else gets 503), and
//    client_body_budget bytes of bodies at once (503 above), so one client's slow
//    connections or slow bodies cannot take what other clients need;
//  - a request's header must arrive within header_timeout_s of its first byte (408 is not
//    sent: the connection closes), its whole within read_timeout_s.
// A connection being answered is never closed to make room.
// TLS (start() with TlsFiles): every connection is TLS (OpenSSL through Asio's ssl
// stream); its handshake counts as reading a request (header_timeout_s from the
// connection's start; sheddable as above) and a failed one closes the connection.
// Framing refused beyond Beast's own checks: folded header lines (obs-fold, 400), and a
// chunked body's size line or trailer larger than header_limit (431).
// Requests on one connection are handled one at a time, in order, so pipelined requests
// (several in one write) each get their answer, in order.
//
// Ownership and threads: the handler runs on an I/O thread and must not block for long;
// it answers through the Responder it gets, exactly once, from any thread. A Responder
// dropped without answering answers 503 "the server is shutting down" itself. stop() is
// called once from a thread outside the pool; after it returns no handler runs.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/http/tls_files.hpp"

namespace tessera {

struct HttpLimits {
  std::size_t max_connections = 512;
  std::size_t header_limit = 16u << 10;
  std::size_t body_limit = 16u << 20;
  std::size_t body_budget = 256u << 20;
  std::size_t max_client_connections = 256;    // per remote address
  std::size_t client_body_budget = 64u << 20;  // per remote address (at least body_limit)
  double header_timeout_s = 5.0;               // at most read_timeout_s
  double read_timeout_s = 10.0;
  double idle_timeout_s = 5.0;
  double write_timeout_s = 10.0;
  int threads = 2;
};

struct HttpRequest {
  std::string method;         // as sent ("GET", "POST", ...)
  std::string path;           // the target's path, percent-decoded, without the query
  std::string content_type;   // the Content-Type header, or ""
  std::string authorization;  // the Authorization header, or "" (serve/http/access.hpp)
  // The binary tensor data extension's Inference-Header-Content-Length header, if sent.
  std::optional<std::string> inference_header_length;
  // Headers named x-tessera-* (names lower-cased, values as sent): per-request options such
  // as the LLM gateway's priority and SLOs. The header limit bounds them.
  std::vector<std::pair<std::string, std::string>> tessera_headers;
  std::string body;
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int code, std::string text, std::string type = "application/json")
      : status(code), body(std::move(text)), content_type(std::move(type)) {}
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// A streamed answer (Responder::stream, e.g. server-sent events): the header is sent at
// once with chunked transfer encoding, then every write() as one chunk, in order; close()
// ends the answer. Any thread. Destroyed without close(), it closes. A chunk not taken by
// the client within the write timeout, or a write error, breaks the stream: the connection
// closes and write() returns false from then on (how a handler learns the client left).
class ResponseStream {
 public:
  struct State;
  explicit ResponseStream(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~ResponseStream();
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;
  bool write(std::string chunk);
  void close();
  bool broken() const;

 private:
  std::shared_ptr<State> state_;
};

// Answers one request exactly once (later calls are ignored). Copyable; the last copy
// destroyed without an answer sends 503. A Responder holds its connection; one may outlive
// the front end's stop() (a model that never answered): stop() closes the connection and
// frees its socket while the io_context is alive, and a later answer goes nowhere.
class Responder {
 public:
  struct State;
  explicit Responder(std::shared_ptr<State> state) : state_(std::move(state)) {}
  void operator()(HttpResponse&& response) const;
  // Builds the response on the connection's I/O thread (keeps JSON work off the caller).
  void later(std::function<HttpResponse()> make) const;
  // Whether the caller runs on the connection's own strand (an answer given now is
  // written at once, without a hand-off: later() is not needed).
  bool on_connection_thread() const;
  // Answers with a stream: `head`'s status, content type and headers (its body is
  // ignored). nullptr when the request was answered already.
  std::unique_ptr<ResponseStream> stream(HttpResponse head) const;

 private:
  std::shared_ptr<State> state_;
};

struct HttpStats {
  uint64_t accepted = 0;        // connections accepted
  uint64_t shed_idle = 0;       // idle connections closed to admit a new one
  uint64_t refused_full = 0;    // connections answered 503 at the limit
  uint64_t shed_reading = 0;    // connections still reading a request closed to admit one
  uint64_t refused_client = 0;  // connections or bodies refused at a client's limit
  uint64_t timed_out = 0;       // connections closed by the read, idle or write deadline
  uint64_t tls_failed = 0;      // TLS handshakes that failed or ran past the header timeout
  uint64_t requests = 0;        // requests read whole and handed to the handler
  std::size_t open = 0;         // connections open now
  std::size_t body_bytes = 0;   // body budget in use now
};

class HttpFrontEnd {
 public:
  using Handler = std::function<void(HttpRequest&&, Responder)>;
  // The front end's own refusals (400, 408, 413, 431, 503): for metrics.
  using Refused = std::function<void(int status)>;
  // The JSON body of a refusal.
  using ErrorBody = std::function<std::string(const std::string& message)>;

  HttpFrontEnd(HttpLimits limits, Handler handler, Refused refused, ErrorBody error_body);
  ~HttpFrontEnd();
  HttpFrontEnd(const HttpFrontEnd&) = delete;
  HttpFrontEnd& operator=(const HttpFrontEnd&) = delete;

  // Binds (port 0: any free port) and starts the threads; returns the port. With `tls`
  // (a certificate), every connection is TLS: its handshake must end within
  // header_timeout_s of the connection's start, and a client that fails it (plain HTTP,
  // no or an untrusted client certificate where `tls` names a client CA) is closed.
  // Throws std::runtime_error if it cannot bind, or naming the TLS file it cannot use.
  int start(const std::string& host, int port, const TlsFiles& tls = {});
  // Stops accepting, sends the answers still owed, closes idle connections at once and
  // the rest after at most grace_s, then joins the threads. Idempotent.
  void stop(double grace_s);
  // Connections not yet done answering: every request read was answered, or stop() began.
  HttpStats stats() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Percent-decodes a URL path ("%2F" -> "/"); malformed escapes are kept as they are.
std::string percent_decode(const std::string& s);

}  // namespace tessera
