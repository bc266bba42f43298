#include "serve/http/http_frontend.hpp"

#include <malloc.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <thread>

#include "serve/http/tls_context.hpp"

namespace tessera {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using beast::error_code;

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;
constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

int64_t ticks(SteadyTime t) { return t.time_since_epoch().count(); }

// The steady-clock tick `seconds` from now (at most ~30 years ahead).
int64_t deadline_after(double seconds) {
  const auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::clamp(seconds, 0.0, 1e9)));
  return ticks(std::chrono::steady_clock::now() + d);
}

class Session;

// A connection's strand and socket, by their concrete executor type: Asio's type-erased
// any_io_executor costs an indirect call on every operation.
using Strand = asio::strand<asio::io_context::executor_type>;
using Socket = asio::basic_stream_socket<tcp, Strand>;

// A connection's byte stream: the socket itself, or TLS over it (HttpFrontEnd::start()
// with TlsFiles). An Asio AsyncReadStream and AsyncWriteStream either way, so Beast and
// Asio's composed reads and writes run on it unchanged; on the connection's strand only.
// Not movable: the TLS stream refers to the socket.
class Transport {
 public:
  using executor_type = Strand;
  Transport(Socket&& socket, asio::ssl::context* tls) : socket_(std::move(socket)) {
    if (tls != nullptr) tls_.emplace(socket_, *tls);
  }
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  Socket& socket() { return socket_; }
  bool tls() const { return tls_.has_value(); }
  // The TLS handshake (a server's), with a TLS transport only.
  template <class Handler>
  void async_handshake(Handler&& handler) {
    tls_->async_handshake(asio::ssl::stream_base::server, std::forward<Handler>(handler));
  }
  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Handler>(handler));
    socket_.async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <class Buffers, class Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) return tls_->async_write_some(buffers, std::forward<Handler>(handler));
    socket_.async_write_some(buffers, std::forward<Handler>(handler));
  }

 private:
  Socket socket_;
  std::optional<asio::ssl::stream<Socket&>> tls_;
};

}  // namespace

struct HttpFrontEnd::Impl {
  HttpLimits limits;
  Handler handler;
  Refused refused;
  ErrorBody error_body;

  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> body_bytes{0};
  std::atomic<uint64_t> accepted{0}, shed_idle{0}, refused_full{0}, timed_out{0}, requests{0};
  std::atomic<uint64_t> shed_reading{0}, refused_client{0}, tls_failed{0};

  mutable std::mutex mutex;  // guards sessions, next_id, clients
  // Guards every Session's socket against stop()'s detach(): the entry points other
  // threads call (a Responder's answer, the sweeper) hold it shared while they post.
  std::shared_mutex detach_mutex;
  std::condition_variable all_closed;
  // The open connections, oldest first. `raw` is valid while the entry is (a Session
  // erases its own under the mutex before its members go); admit() reads its idle flag.
  struct Entry {
    std::weak_ptr<Session> weak;
    Session* raw = nullptr;
    std::string client;
  };
  std::map<uint64_t, Entry> sessions;
  uint64_t next_id = 0;
  // Per remote address: its open connections and the body bytes it holds. An entry goes
  // when both are zero.
  struct Client {
    std::size_t connections = 0;
    std::size_t body_bytes = 0;
  };
  std::map<std::string, Client> clients;

  std::unique_ptr<asio::io_context> ioc;
  // TLS on every connection (start() with TlsFiles), else null: plain HTTP.
  std::unique_ptr<asio::ssl::context> tls;
  std::unique_ptr<tcp::acceptor> acceptor;
  // The deadlines' sweeper (sweep()): one timer for every connection, not one per read
  // and write.
  std::unique_ptr<asio::steady_timer> sweeper;
  double sweep_s = 0.1;
  std::vector<std::thread> threads;
  bool started = false;
  bool stopped = false;

  enum class Reserve : uint8_t { kOk, kBudget, kClient };
  std::size_t client_body_budget() const {
    return std::max(limits.client_body_budget, limits.body_limit);
  }
  // Reserves n bytes of body for a request of `client`: against its share, then the
  // budget of all.
  Reserve reserve(std::size_t n, const std::string& client) {
    std::lock_guard lock(mutex);
    Client& c = clients[client];
    if (c.body_bytes + n > client_body_budget()) return Reserve::kClient;
    if (body_bytes.load() + n > limits.body_budget) return Reserve::kBudget;
    body_bytes += n;
    c.body_bytes += n;
    return Reserve::kOk;
  }
  // Returns n bytes of `client`'s body budget (and the connection, if `closing`); what is
  // left of the whole budget.
  std::size_t release(std::size_t n, const std::string& client, bool closing) {
    auto it = clients.find(client);
    if (it != clients.end()) {
      it->second.body_bytes -= std::min(n, it->second.body_bytes);
      if (closing && it->second.connections > 0) it->second.connections--;
      if (it->second.connections == 0 && it->second.body_bytes == 0) clients.erase(it);
    }
    return body_bytes.fetch_sub(n) - n;
  }
  void refuse(int status) {
    if (refused) refused(status);
  }
};

namespace {

// One connection: reads a request, hands it to the handler, writes its answer, and only
// then reads the next one (pipelined requests wait in the buffer). Runs on its strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, std::shared_ptr<HttpFrontEnd::Impl> fe, uint64_t id, std::string client)
      : fe_(std::move(fe)), id_(id), client_(std::move(client)) {
    socket_.emplace(std::move(socket), fe_->tls.get());
  }
  // The socket goes before the entry leaves the map: stop() waits for the entries of
  // sessions already being destroyed (their weak_ptr expired, so it cannot detach them) to
  // leave before it frees the io_context the socket belongs to.
  ~Session() {
    {
      std::unique_lock detach_lock(fe_->detach_mutex);
      socket_.reset();
    }
    std::lock_guard lock(fe_->mutex);
    fe_->release(reserved_, client_, true);
    fe_->sessions.erase(id_);
    fe_->all_closed.notify_all();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    asio::dispatch(socket_->get_executor(), [self = shared_from_this()] {
      if (self->socket_->tls()) return self->handshake();
      self->next_request();
    });
  }
  // Any thread: whether the connection waits for a request's first byte (kIdle) or is
  // reading one (kReading); take_shed() also marks it taken (admit(): one shed each).
  enum Shed : uint8_t { kNoShed, kIdle, kReading };
  bool take_shed(Shed kind) {
    uint8_t expected = kind;
    return shed_flag_.compare_exchange_strong(expected, kNoShed, std::memory_order_relaxed);
  }
  // Any thread: closes the connection if it is still waiting for a request.
  void close_if_idle() {
    post_to_strand([self = shared_from_this()] {
      if (self->idle_) self->close_now();
    });
  }
  // Any thread: closes the connection unless a request of it is being answered.
  void close_if_unanswered() {
    post_to_strand([self = shared_from_this()] {
      if (self->idle_ || self->reading_) self->close_now();
    });
  }
  void close_any() {
    post_to_strand([self = shared_from_this()] { self->close_now(); });
  }
  // Any thread (the sweeper): whether the connection's deadline has passed.
  bool overdue(int64_t now) const { return deadline_.load(std::memory_order_relaxed) <= now; }
  // Any thread (the sweeper): closes the connection if its deadline has passed, on its
  // strand. A read, write or linger in progress then ends with an error.
  void expire() {
    post_to_strand([self = shared_from_this()] {
      if (self->closed_ || !self->overdue(ticks(std::chrono::steady_clock::now()))) return;
      if (self->deadline_counts_) self->fe_->timed_out++;
      self->close_now();
    });
  }
  bool on_strand() {
    std::shared_lock lock(fe_->detach_mutex);
    return socket_ && socket_->get_executor().running_in_this_thread();
  }
  // Any thread: writes the answer of the request being handled; at once when called on
  // the connection's strand (a handler that answered before returning: no post).
  void send(HttpResponse&& r) {
    if (on_strand()) return write(std::move(r), false);
    post_to_strand([self = shared_from_this(), r = std::move(r)]() mutable {
      self->write(std::move(r), false);
    });
  }
  void send_later(std::function<HttpResponse()> make) {
    if (on_strand()) return write(build(make), false);
    post_to_strand(
        [self = shared_from_this(), m = std::move(make)] { self->write(self->build(m), false); });
  }
  // Streamed answers (ResponseStream): any thread; run on the strand.
  void stream_begin(HttpResponse head, std::shared_ptr<std::atomic<bool>> broken) {
    post_to_strand(
        [self = shared_from_this(), h = std::move(head), b = std::move(broken)]() mutable {
          self->begin_stream(std::move(h), std::move(b));
        });
  }
  void stream_write(std::string chunk) {
    post_to_strand([self = shared_from_this(), c = std::move(chunk)]() mutable {
      if (!self->streaming_) return;
      self->chunks_.push_back(std::move(c));
      self->pump();
    });
  }
  void stream_end() {
    post_to_strand([self = shared_from_this()] {
      if (!self->streaming_) return;
      self->stream_done_ = true;
      self->pump();
    });
  }
  // stop() only, once the front end's threads have joined and before the io_context goes:
  // closes and destroys the socket and its strand while the io_context they belong to is
  // alive. A Session a Responder still holds (a model that has not answered) outlives the
  // io_context; its late answer then goes nowhere (post_to_strand), as the connection is
  // closed.
  void detach() {
    std::unique_lock lock(fe_->detach_mutex);
    if (!socket_) return;
    error_code ec;
    socket_->socket().close(ec);
    socket_.reset();
  }
  HttpResponse fallback() const {
    HttpResponse r{503, fe_->error_body("the server is shutting down")};
    r.headers.emplace_back("Retry-After", "1");
    return r;
  }

 private:
  const HttpLimits& limits() const { return fe_->limits; }

  // The connection's one deadline, enforced by the front end's sweeper: while a request
  // is read (read_timeout_s, from its first byte), while the connection waits for one
  // (idle_timeout_s), while an answer is written (write_timeout_s), while it lingers.
  // `counts`: a timeout for HttpStats::timed_out.
  void arm(double seconds, bool counts = true) {
    deadline_counts_ = counts;
    deadline_.store(deadline_after(seconds), std::memory_order_relaxed);
  }
  void disarm() { deadline_.store(kNoDeadline, std::memory_order_relaxed); }

  HttpResponse build(const std::function<HttpResponse()>& make) const {
    try {
      return make();
    } catch (const std::exception& e) {
      return HttpResponse{500, fe_->error_body(std::string("internal error: ") + e.what())};
    }
  }

  // No lock: admit() reads the flag only when it must shed a connection.
  void set_idle(bool idle) {
    if (idle == idle_) return;
    idle_ = idle;
    shed_flag_.store(idle ? kIdle : kNoShed, std::memory_order_relaxed);
  }
  // A request's first byte is here: its header has header_timeout_s, its whole
  // read_timeout_s.
  void begin_reading() {
    reading_ = true;
    shed_flag_.store(kReading, std::memory_order_relaxed);
    request_start_ = std::chrono::steady_clock::now();
    arm(std::min(limits().header_timeout_s, limits().read_timeout_s));
  }
  void end_reading() {
    reading_ = false;
    shed_flag_.store(kNoShed, std::memory_order_relaxed);
  }

  // TLS: the handshake comes first, and counts as reading a request: it must end within
  // header_timeout_s of the connection's start (a client trickling its handshake is
  // closed then), and a client's limits may shed the connection meanwhile. A failed
  // handshake (a plain-HTTP client, an untrusted or missing client certificate) closes
  // the connection.
  void handshake() {
    reading_ = true;
    shed_flag_.store(kReading, std::memory_order_relaxed);
    arm(std::min(limits().header_timeout_s, limits().read_timeout_s));
    socket_->async_handshake([self = shared_from_this()](error_code ec) {
      self->end_reading();
      if (ec) {
        self->fe_->tls_failed++;
        return self->close_now();
      }
      self->next_request();
    });
  }

  // Reads and parses the next request with the parser's own put(), straight from the
  // connection's buffer: a request already in the buffer (pipelined, or read with the
  // previous one) is parsed without another read, and nothing is posted back to the
  // strand between the header, the body and the handler. The header is parsed first
  // (on its own: the body is not touched until on_header() has reserved its budget and
  // answered Expect: 100-continue), then the body.
  void next_request() {
    if (fe_->stopping.load()) return close_now();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits().header_limit));
    parser_->body_limit(limits().body_limit);
    if (buffer_.size() > 0) {  // a pipelined request is already here
      begin_reading();
      return parse();
    }
    set_idle(true);
    arm(limits().idle_timeout_s);
    read_more();
  }

  void read_more() {
    socket_->async_read_some(
        buffer_.prepare(beast::read_size(buffer_, 65536)),
        [self = shared_from_this()](error_code ec, std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(error_code ec, std::size_t n) {
    if (idle_) {
      set_idle(false);
      if (!ec) begin_reading();
    }
    if (ec == asio::error::eof && parser_->got_some()) {
      // The client closed inside a request: as Beast's own read, put_eof() says how.
      ec = {};
      parser_->put_eof(ec);
      if (!ec && parser_->is_done()) return on_request();
      return read_failed(ec ? ec : error_code(http::error::partial_message));
    }
    if (ec == asio::error::eof) return close_now();  // closed between requests
    if (ec) return close_now();                      // a reset, or closed by the sweeper (expire())
    buffer_.commit(n);
    parse();
  }

  void parse() {
    error_code ec;
    while (buffer_.size() > 0) {
      const bool header_done = parser_->is_header_done();
      const std::size_t used = parser_->put(buffer_.data(), ec);
      if (!header_done && parser_->is_header_done() && folded(used)) {
        return refuse(400,
                      "malformed HTTP request: a header line folded onto the next (obs-fold, "
                      "a line starting with a space or tab) is not accepted");
      }
      buffer_.consume(used);
      if (ec == http::error::need_more) {
        // Past the header, the parser holds back only a chunk's size line or the trailer
        // after the last chunk (body bytes are taken as they come): the header's limit
        // bounds those too.
        if (header_done && buffer_.size() > limits().header_limit) {
          return refuse(431, "chunked body's size line or trailer larger than " +
                                 std::to_string(limits().header_limit) + " bytes");
        }
        break;
      }
      if (ec) return read_failed(ec);
      if (!header_done && parser_->is_header_done()) {
        const double spent =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - request_start_)
                .count();
        arm(limits().read_timeout_s - spent);  // the rest of the whole request's time
        if (!on_header()) return;  // answered (a refusal, or 100 Continue being written)
      }
      if (parser_->is_done()) return on_request();
    }
    if (parser_->is_header_done() && parser_->is_done()) return on_request();
    read_more();
  }

  // Whether the header, the buffer's first `size` bytes, has a folded line (obs-fold: a
  // line break followed by a space or tab), which RFC 9112 lets a server refuse and Beast
  // would join into the previous field.
  bool folded(std::size_t size) const {
    const auto* text = static_cast<const char*>(buffer_.data().data());
    const char* end = text + std::min(size, buffer_.size());
    for (const char* p = text; p + 1 < end; ++p) {
      p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p - 1)));
      if (p == nullptr) return false;
      if (p[1] == ' ' || p[1] == '\t') return true;
    }
    return false;
  }

  // The header is in: reserves the body's budget, and answers Expect: 100-continue.
  // Returns whether to go on parsing (false: it answered, or resumes the parse itself).
  bool on_header() {
    auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    std::size_t want = 0;
    if (auto n = parser_->content_length()) {
      want = static_cast<std::size_t>(*n);
    } else if (parser_->chunked()) {
      want = limits().body_limit;
    }
    if (want > 0) {
      const auto reserved = fe_->reserve(want, client_);
      if (reserved == HttpFrontEnd::Impl::Reserve::kClient) {
        fe_->refused_client++;
        refuse(503, "server busy: request bodies from your address would pass " +
                        std::to_string(fe_->client_body_budget()) + " bytes; retry later");
        return false;
      }
      if (reserved == HttpFrontEnd::Impl::Reserve::kBudget) {
        refuse(503, "server busy: request bodies already hold " +
                        std::to_string(fe_->body_bytes.load()) + " of " +
                        std::to_string(limits().body_budget) + " bytes; retry later");
        return false;
      }
      reserved_ = want;
    }
    if (!parser_->is_done() && beast::iequals(req[http::field::expect], "100-continue")) {
      auto cont =
          std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      http::async_write(*socket_, *cont,
                        [self = shared_from_this(), cont](error_code e, std::size_t) {
                          if (e) return self->close_now();
                          self->parse();
                        });
      return false;
    }
    return true;
  }

  void read_failed(error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof ||
        ec == asio::error::broken_pipe) {
      return close_now();
    }
    if (ec == http::error::body_limit) {
      return refuse(413,
                    "request body larger than " + std::to_string(limits().body_limit) + " bytes");
    }
    if (ec == http::error::header_limit) {
      return refuse(
          431, "request header larger than " + std::to_string(limits().header_limit) + " bytes");
    }
    if (ec == http::error::partial_message) {
      return refuse(400, "truncated HTTP request: the client closed before sending all of it");
    }
    return refuse(400, "malformed HTTP request: " + ec.message());
  }

  void on_request() {
    end_reading();
    fe_->requests++;
    auto& req = parser_->get();
    HttpRequest r;
    r.method = std::string(req.method_string());
    const beast::string_view target = req.target();
    const beast::string_view path = target.substr(0, target.find('?'));
    r.path = path.find('%') == path.npos ? std::string(path) : percent_decode(std::string(path));
    r.content_type = std::string(req[http::field::content_type]);
    r.authorization = std::string(req[http::field::authorization]);
    if (auto it = req.find("Inference-Header-Content-Length"); it != req.end()) {
      r.inference_header_length = std::string(it->value());
    }
    r.body = std::move(req.body());
    parser_.reset();
    disarm();  // the handler may take its time: the write's deadline starts with the write
    auto state = std::make_shared<Responder::State>(shared_from_this());
    Responder respond(state);
    state.reset();
    try {
      fe_->handler(std::move(r), respond);
    } catch (const std::exception& e) {
      respond(HttpResponse{500, fe_->error_body(std::string("internal error: ") + e.what())});
    }
  }

  // A refusal of the front end's own: answered, then the connection closes (its framing
  // can no longer be trusted).
  void refuse(int status, const std::string& message) {
    fe_->refuse(status);
    write(HttpResponse{status, fe_->error_body(message)}, true);
  }

  // Whether `r` can be written by write()'s direct path: a status with a body, and headers
  // of its own that are neither framing nor hold a line break.
  static bool direct(const HttpResponse& r) {
    const auto plain = [](const std::string& s) { return s.find_first_of("\r\n") == s.npos; };
    if (r.status < 200 || r.status > 999 || r.status == 204 || r.status == 304) return false;
    if (!plain(r.content_type)) return false;
    for (const auto& [k, v] : r.headers) {
      if (!plain(k) || !plain(v) || beast::iequals(k, "Content-Length") ||
          beast::iequals(k, "Transfer-Encoding") || beast::iequals(k, "Connection") ||
          beast::iequals(k, "Server") || beast::iequals(k, "Content-Type")) {
        return false;
      }
    }
    return true;
  }

  void write(HttpResponse&& r, bool force_close) {
    if (writing_ || closed_) return;
    writing_ = true;
    const bool close = force_close || !keep_alive_ || fe_->stopping.load();
    if (direct(r)) {
      // The bytes Beast's serializer writes for these fields (keep-alive as keep_alive()
      // sets it for the request's version), built in one string: no per-field
      // allocations, no serializer state.
      // The connection's own header and body strings (one write at a time): a kept-alive
      // connection reuses their memory.
      std::string& head = head_;
      body_ = std::move(r.body);
      head.clear();
      head += version_ == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
      char digits[8];
      head.append(digits, std::to_chars(digits, digits + sizeof digits, r.status).ptr);
      head += ' ';
      const beast::string_view reason = http::obsolete_reason(static_cast<http::status>(r.status));
      head.append(reason.data(), reason.size());
      head += "\r\nServer: tessera\r\nContent-Type: ";
      head += r.content_type;
      for (const auto& [k, v] : r.headers) {
        head += "\r\n";
        head += k;
        head += ": ";
        head += v;
      }
      if (version_ == 10 && !close) head += "\r\nConnection: keep-alive";
      if (version_ != 10 && close) head += "\r\nConnection: close";
      head += "\r\nContent-Length: ";
      char length[24];
      head.append(length, std::to_chars(length, length + sizeof length, body_.size()).ptr);
      head += "\r\n\r\n";
      // TLS writes one buffer per record: a small answer goes whole, in one record.
      if (socket_->tls() && body_.size() <= 16384) {
        head += body_;
        body_.clear();
      }
      arm(limits().write_timeout_s);
      const std::array<asio::const_buffer, 2> bytes{asio::buffer(head_), asio::buffer(body_)};
      asio::async_write(*socket_, bytes,
                        [self = shared_from_this(), close](error_code ec, std::size_t) {
                          self->written(ec, close);
                        });
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(version_);
    res->result(static_cast<unsigned>(r.status));
    res->set(http::field::server, "tessera");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(!close);
    res->body() = std::move(r.body);
    res->prepare_payload();
    arm(limits().write_timeout_s);
    http::async_write(*socket_, *res,
                      [self = shared_from_this(), res, close](error_code ec, std::size_t) {
                        self->written(ec, close);
                      });
  }

  void written(error_code ec, bool close) {
    writing_ = false;
    release_body();
    body_ = std::string();                               // an answer's memory goes with it
    if (head_.capacity() > 4096) head_ = std::string();  // a usual header's stays
    if (ec) return close_now();
    if (close) return linger_close();
    next_request();
  }

  void begin_stream(HttpResponse&& head, std::shared_ptr<std::atomic<bool>> broken) {
    if (writing_ || closed_) {
      broken->store(true);
      return;
    }
    writing_ = true;
    streaming_ = true;
    stream_broken_ = std::move(broken);
    stream_close_ = !keep_alive_ || fe_->stopping.load();
    auto res = std::make_shared<http::response<http::empty_body>>();
    res->version(version_);
    res->result(static_cast<unsigned>(head.status));
    res->set(http::field::server, "tessera");
    res->set(http::field::content_type, head.content_type);
    for (const auto& [k, v] : head.headers) res->set(k, v);
    res->keep_alive(!stream_close_);
    res->chunked(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    arm(limits().write_timeout_s);
    http::async_write_header(*socket_, *sr,
                             [self = shared_from_this(), res, sr](error_code ec, std::size_t) {
                               self->disarm();
                               if (ec) return self->stream_failed(ec);
                               self->header_sent_ = true;
                               self->pump();
                             });
  }

  void pump() {
    if (!header_sent_ || chunk_busy_ || closed_) return;
    if (!chunks_.empty()) {
      auto text = std::make_shared<std::string>(std::move(chunks_.front()));
      chunks_.pop_front();
      if (text->empty()) return pump();  // an empty chunk would end the body
      chunk_busy_ = true;
      arm(limits().write_timeout_s);
      asio::async_write(*socket_, http::make_chunk(asio::buffer(*text)),
                        [self = shared_from_this(), text](error_code ec, std::size_t) {
                          self->chunk_busy_ = false;
                          self->disarm();
                          if (ec) return self->stream_failed(ec);
                          self->pump();
                        });
      return;
    }
    if (!stream_done_) return;
    chunk_busy_ = true;
    arm(limits().write_timeout_s);
    asio::async_write(*socket_, http::make_chunk_last(),
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        self->chunk_busy_ = false;
                        self->streaming_ = false;
                        self->header_sent_ = false;
                        self->stream_done_ = false;
                        self->writing_ = false;
                        self->release_body();
                        if (ec) return self->stream_failed(ec);
                        if (self->stream_close_) return self->linger_close();
                        self->next_request();
                      });
  }

  void stream_failed(error_code) {
    if (stream_broken_) stream_broken_->store(true);
    streaming_ = false;
    chunks_.clear();
    close_now();
  }

  // Half-closes, then reads and discards what the client still sends (at most 1 MiB for
  // at most 1 s), so that unread request bytes do not turn the close into a reset that
  // would destroy the answer before the client reads it.
  void linger_close() {
    error_code ec;
    socket_->socket().shutdown(tcp::socket::shutdown_send, ec);
    arm(1.0, false);
    scratch_.resize(8192);
    drain();
  }
  void drain() {
    socket_->async_read_some(asio::buffer(scratch_),
                             [self = shared_from_this()](error_code ec, std::size_t n) {
                               self->drained_ += n;
                               if (ec || self->drained_ > (1u << 20)) return self->close_now();
                               self->drain();
                             });
  }

  void close_now() {
    if (closed_) return;
    closed_ = true;
    set_idle(false);
    end_reading();
    error_code ec;
    disarm();
    socket_->socket().shutdown(tcp::socket::shutdown_both, ec);
    socket_->socket().close(ec);
  }

  void release_body() {
    if (reserved_ == 0) return;
    std::size_t left = 0;
    {
      std::lock_guard lock(fe_->mutex);
      left = fe_->release(reserved_, client_, false);
    }
    // After a large body, once none is held, give glibc's freed arena memory back.
    if (reserved_ >= (1u << 20) && left == 0) malloc_trim(0);
    reserved_ = 0;
  }

  // Any thread: posts `f` to the connection's strand, unless stop() has detached the socket.
  template <class F>
  void post_to_strand(F&& f) {
    std::shared_lock lock(fe_->detach_mutex);
    if (socket_) asio::post(socket_->get_executor(), std::forward<F>(f));
  }

  std::optional<Transport> socket_;             // empty once stop() has detached it (detach())
  std::atomic<int64_t> deadline_{kNoDeadline};  // steady-clock ticks (arm())
  bool deadline_counts_ = true;
  std::shared_ptr<HttpFrontEnd::Impl> fe_;
  uint64_t id_;
  std::string client_;  // the remote address
  SteadyTime request_start_{};
  bool reading_ = false;  // between a request's first byte and its handler
  beast::flat_buffer buffer_;
  std::string head_, body_;  // the answer being written (write()'s direct path)
  std::optional<http::request_parser<http::string_body>> parser_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool idle_ = false;
  std::atomic<uint8_t> shed_flag_{kNoShed};  // idle_ / reading_, for admit() (take_shed())
  bool writing_ = false;
  bool closed_ = false;
  // A streamed answer in progress.
  bool streaming_ = false;
  bool header_sent_ = false;
  bool chunk_busy_ = false;
  bool stream_done_ = false;
  bool stream_close_ = false;
  std::deque<std::string> chunks_;
  std::shared_ptr<std::atomic<bool>> stream_broken_;
  std::size_t reserved_ = 0;
  std::vector<char> scratch_;
  std::size_t drained_ = 0;
};

void do_accept(const std::shared_ptr<HttpFrontEnd::Impl>& fe);

// The remote address of a new connection ("" if the socket has none any more).
std::string client_of(const Socket& socket) {
  error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return "";
  asio::ip::address a = remote.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  return a.to_string();
}

// Under fe->mutex: the oldest connection (of `client`, or of any if null) in state `kind`,
// marked taken; nullptr if none. `found` is set even when the connection is already
// closing by itself (its weak_ptr gone): its place frees.
std::shared_ptr<Session> take_oldest(HttpFrontEnd::Impl& fe, const std::string* client,
                                     Session::Shed kind, bool& found) {
  for (auto& [sid, entry] : fe.sessions) {
    if (client != nullptr && entry.client != *client) continue;
    if (!entry.raw->take_shed(kind)) continue;
    found = true;
    return entry.weak.lock();
  }
  return nullptr;
}

// Answers 503 on a new socket and closes it. No thread may wait here: one non-blocking
// write into the new socket's empty buffer.
void refuse_connection(HttpFrontEnd::Impl& fe, Socket& socket, const std::string& message) {
  error_code ec;
  fe.refuse(503);
  const std::string body = fe.error_body(message);
  const std::string text =
      "HTTP/1.1 503 Service Unavailable\r\nServer: tessera\r\n"
      "Content-Type: application/json\r\nRetry-After: 1\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  socket.non_blocking(true, ec);
  socket.send(asio::buffer(text), 0, ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

void admit(const std::shared_ptr<HttpFrontEnd::Impl>& fe, Socket socket) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  const std::string client = client_of(socket);
  std::shared_ptr<Session> victim;
  bool found = false, shed_idle = false;
  enum class Refusal : uint8_t { kNone, kFull, kClient } refusal = Refusal::kNone;
  uint64_t id = 0;
  {
    std::lock_guard lock(fe->mutex);
    auto& mine = fe->clients[client];
    if (mine.connections >= fe->limits.max_client_connections) {
      // The client's own oldest idle, else reading, connection makes room.
      victim = take_oldest(*fe, &client, Session::kIdle, found);
      shed_idle = found;
      if (!found) victim = take_oldest(*fe, &client, Session::kReading, found);
      if (!found) refusal = Refusal::kClient;
    } else if (fe->sessions.size() >= fe->limits.max_connections) {
      // The oldest idle connection, else the oldest still reading of the client holding
      // the most connections.
      victim = take_oldest(*fe, nullptr, Session::kIdle, found);
      shed_idle = found;
      if (!found) {
        const std::string* heaviest = nullptr;
        std::size_t most = 0;
        for (const auto& [address, c] : fe->clients) {
          if (c.connections > most) {
            most = c.connections;
            heaviest = &address;
          }
        }
        if (heaviest != nullptr) victim = take_oldest(*fe, heaviest, Session::kReading, found);
      }
      if (!found) refusal = Refusal::kFull;
    }
    if (refusal == Refusal::kNone) {
      id = fe->next_id++;
      mine.connections++;
    } else if (mine.connections == 0 && mine.body_bytes == 0) {
      fe->clients.erase(client);
    }
  }
  if (refusal == Refusal::kClient) {
    fe->refused_client++;
    return refuse_connection(*fe, socket,
                             "too many connections from your address (" +
                                 std::to_string(fe->limits.max_client_connections) +
                                 " open); retry later");
  }
  if (refusal == Refusal::kFull) {
    fe->refused_full++;
    return refuse_connection(*fe, socket,
                             "too many connections (" + std::to_string(fe->limits.max_connections) +
                                 " open); retry later");
  }
  if (found) (shed_idle ? fe->shed_idle : fe->shed_reading)++;
  if (victim) victim->close_if_unanswered();
  auto session = std::make_shared<Session>(std::move(socket), fe, id, client);
  {
    std::lock_guard lock(fe->mutex);
    fe->sessions[id] = HttpFrontEnd::Impl::Entry{session, session.get(), client};
  }
  fe->accepted++;
  session->start();
}

void do_accept(const std::shared_ptr<HttpFrontEnd::Impl>& fe) {
  fe->acceptor->async_accept(asio::make_strand(*fe->ioc), [fe](error_code ec, Socket socket) {
    if (fe->stopping.load() || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors or similar: try again shortly rather than spin.
      spdlog::warn("accept failed: {}", ec.message());
      auto timer = std::make_shared<asio::steady_timer>(*fe->ioc, std::chrono::milliseconds(50));
      timer->async_wait([fe, timer](error_code) {
        if (!fe->stopping.load()) do_accept(fe);
      });
      return;
    }
    admit(fe, std::move(socket));
    do_accept(fe);
  });
}

// Every sweep_s: closes the connections whose deadline has passed (Session::expire()).
void sweep(const std::shared_ptr<HttpFrontEnd::Impl>& fe) {
  fe->sweeper->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(fe->sweep_s)));
  fe->sweeper->async_wait([fe](error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    const int64_t now = ticks(std::chrono::steady_clock::now());
    // Taken under the lock, checked and released outside it (a Session's last owner
    // destroys it, and its destructor takes the lock).
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard lock(fe->mutex);
      live.reserve(fe->sessions.size());
      for (const auto& [id, entry] : fe->sessions) {
        if (auto s = entry.weak.lock()) live.push_back(std::move(s));
      }
    }
    for (const auto& s : live) {
      if (s->overdue(now)) s->expire();
    }
    sweep(fe);
  });
}

}  // namespace

struct Responder::State {
  explicit State(std::shared_ptr<Session> s) : session(std::move(s)) {}
  ~State() {
    if (!answered.exchange(true)) session->send(session->fallback());
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  std::shared_ptr<Session> session;
  std::atomic<bool> answered{false};
};

void Responder::operator()(HttpResponse&& response) const {
  if (state_->answered.exchange(true)) return;
  state_->session->send(std::move(response));
}

bool Responder::on_connection_thread() const { return state_->session->on_strand(); }

void Responder::later(std::function<HttpResponse()> make) const {
  if (state_->answered.exchange(true)) return;
  state_->session->send_later(std::move(make));
}

struct ResponseStream::State {
  std::shared_ptr<Session> session;
  std::shared_ptr<std::atomic<bool>> broken = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> closed{false};
};

std::unique_ptr<ResponseStream> Responder::stream(HttpResponse head) const {
  if (state_->answered.exchange(true)) return nullptr;
  auto st = std::make_shared<ResponseStream::State>();
  st->session = state_->session;
  st->session->stream_begin(std::move(head), st->broken);
  return std::make_unique<ResponseStream>(st);
}

ResponseStream::~ResponseStream() { close(); }

bool ResponseStream::write(std::string chunk) {
  if (state_->broken->load() || state_->closed.load()) return false;
  state_->session->stream_write(std::move(chunk));
  return true;
}

void ResponseStream::close() {
  if (state_->closed.exchange(true)) return;
  state_->session->stream_end();
}

bool ResponseStream::broken() const { return state_->broken->load(); }

HttpFrontEnd::HttpFrontEnd(HttpLimits limits, Handler handler, Refused refused,
                           ErrorBody error_body)
    : impl_(std::make_shared<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
  impl_->refused = std::move(refused);
  impl_->error_body = std::move(error_body);
}

HttpFrontEnd::~HttpFrontEnd() { stop(0.0); }

int HttpFrontEnd::start(const std::string& host, int port, const TlsFiles& tls) {
  Impl& fe = *impl_;
  if (fe.started) return fe.acceptor->local_endpoint().port();
  if (!tls.enabled() && (!tls.key_file.empty() || !tls.client_ca_file.empty())) {
    throw std::runtime_error("an HTTP TLS key or client CA needs a certificate (--http-tls-cert)");
  }
  if (tls.enabled()) fe.tls = make_tls_context(tls);
  // Each connection is a file descriptor: allow as many as the hard limit permits.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  fe.ioc = std::make_unique<asio::io_context>(std::max(1, fe.limits.threads));
  try {
    const auto address = asio::ip::make_address(host);
    const tcp::endpoint where(address, static_cast<unsigned short>(port));
    fe.acceptor = std::make_unique<tcp::acceptor>(asio::make_strand(*fe.ioc));
    fe.acceptor->open(where.protocol());
    fe.acceptor->set_option(asio::socket_base::reuse_address(true));
    fe.acceptor->bind(where);
    fe.acceptor->listen(1024);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                             e.what());
  }
  do_accept(impl_);
  // Deadlines are checked every tenth of the shortest (at most every 0.1 s, at least every
  // 5 ms), so a connection closes at most ~10 % after its deadline.
  fe.sweep_s = std::clamp(std::min({fe.limits.read_timeout_s, fe.limits.idle_timeout_s,
                                    fe.limits.write_timeout_s, 1.0}) /
                              10.0,
                          0.005, 0.1);
  fe.sweeper = std::make_unique<asio::steady_timer>(*fe.ioc);
  sweep(impl_);
  for (int i = 0; i < std::max(1, fe.limits.threads); ++i) {
    fe.threads.emplace_back([&fe] {
      pthread_setname_np(pthread_self(), "tessera-http");  // for top, perf and gdb
      while (true) {
        try {
          fe.ioc->run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("HTTP I/O thread: {}", e.what());
        }
      }
    });
  }
  fe.started = true;
  return fe.acceptor->local_endpoint().port();
}

void HttpFrontEnd::stop(double grace_s) {
  Impl& fe = *impl_;
  if (fe.stopped) return;
  fe.stopped = true;
  fe.stopping = true;
  if (!fe.started) return;
  asio::post(fe.acceptor->get_executor(), [&fe] {
    error_code ec;
    fe.acceptor->close(ec);
  });
  const auto each = [&fe](auto&& f) {
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard lock(fe.mutex);
      for (auto& [id, entry] : fe.sessions) {
        if (auto s = entry.weak.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) f(*s);
  };
  each([](Session& s) { s.close_if_idle(); });
  const auto wait_closed = [&fe](double seconds) {
    std::unique_lock lock(fe.mutex);
    return fe.all_closed.wait_for(lock, std::chrono::duration<double>(seconds),
                                  [&fe] { return fe.sessions.empty(); });
  };
  if (!wait_closed(grace_s)) {
    each([](Session& s) { s.close_any(); });
    wait_closed(0.5);
  }
  fe.ioc->stop();
  for (auto& t : fe.threads) t.join();
  fe.threads.clear();
  // A connection a Responder still holds (a model that has not answered) outlives the
  // io_context: its socket and strand go now, while the io_context is alive.
  each([](Session& s) { s.detach(); });
  {
    // A session whose last owner let go while `each` ran could not be detached; its
    // destructor frees its socket and then leaves the map, which it does promptly.
    std::unique_lock lock(fe.mutex);
    fe.all_closed.wait(lock, [&fe] {
      return std::none_of(fe.sessions.begin(), fe.sessions.end(),
                          [](const auto& kv) { return kv.second.weak.expired(); });
    });
  }
  fe.sweeper.reset();
  fe.acceptor.reset();
  fe.ioc.reset();  // destroys the handlers still queued, and the sessions they hold
}

HttpStats HttpFrontEnd::stats() const {
  const Impl& fe = *impl_;
  HttpStats s;
  s.accepted = fe.accepted.load();
  s.shed_idle = fe.shed_idle.load();
  s.refused_full = fe.refused_full.load();
  s.shed_reading = fe.shed_reading.load();
  s.refused_client = fe.refused_client.load();
  s.timed_out = fe.timed_out.load();
  s.tls_failed = fe.tls_failed.load();
  s.requests = fe.requests.load();
  s.body_bytes = fe.body_bytes.load();
  std::lock_guard lock(fe.mutex);
  s.open = fe.sessions.size();
  return s;
}

std::string percent_decode(const std::string& s) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex(s[i + 1]);
      const int lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace tessera
