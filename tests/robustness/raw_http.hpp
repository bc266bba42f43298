#pragma once

// A raw HTTP/1.1 client over loopback for the robustness campaign (docs/reliability.md):
// it sends any bytes (a real client library would refuse hostile framing) and reads
// whole responses by Content-Length. Every read and write has a deadline, so no test can
// hang on a server that stops answering. One object per thread; not thread-safe.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

namespace tessera::robustness {

// Campaign sizes scale with TESSERA_ROBUSTNESS_SCALE (default 1; the sanitizer build
// sets a smaller one at compile time).
inline double scale() {
#ifdef TESSERA_ROBUSTNESS_SCALE
  double s = TESSERA_ROBUSTNESS_SCALE;
#else
  double s = 1.0;
#endif
  if (const char* env = std::getenv("TESSERA_ROBUSTNESS_SCALE")) s = std::atof(env);
  return s > 0 ? s : 1.0;
}
inline int scaled(int n) { return std::max(1, static_cast<int>(n * scale())); }

// A loopback TCP port free a moment ago (for a child process to listen on).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// This process's resident and peak resident memory, in MiB.
inline double rss_mib(const char* field = "VmRSS:") {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0)
      return std::atof(line.c_str() + std::string(field).size()) / 1024;
  }
  return 0.0;
}

struct Reply {
  int status = 0;  // 0: no whole response (closed or timed out)
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

class RawConn {
 public:
  // `source`: the local address to connect from (another loopback address such as
  // "127.0.0.2" is another client to the server); nullptr: any.
  explicit RawConn(int port, double timeout_s = 10.0, const char* source = nullptr)
      : timeout_s_(timeout_s) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) close();
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) close();
    int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawConn() { close(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void shutdown_write() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  }

  bool send(std::string_view data) {
    while (!data.empty() && fd_ >= 0) {
      if (!wait(POLLOUT)) return false;
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return fd_ >= 0;
  }

  // Reads one final response (skipping 1xx ones). status 0 if the connection closed or
  // the deadline passed first.
  Reply read() {
    while (true) {
      Reply r = read_one();
      if (r.status < 100 || r.status >= 200) return r;
    }
  }

  // True if the server closed the connection (EOF or reset) within the deadline and
  // sent nothing more.
  bool closed_by_peer() {
    while (true) {
      if (!buf_.empty()) return false;
      if (!fill()) return eof_;
    }
  }

  // True if the server closed the connection (EOF or reset) within the deadline, after
  // whatever it sent first (a TLS alert, say), which `sent` gets.
  bool closes(std::string* sent = nullptr) {
    while (fill()) {
    }
    if (sent != nullptr) *sent = buf_;
    return eof_;
  }

  // What the next read would see: true if bytes are buffered.
  bool pending() const { return !buf_.empty(); }

 private:
  bool wait(short events) {
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(timeout_s_ * 1000)) == 1;
  }
  bool fill() {
    if (fd_ < 0 || eof_) return false;
    if (!wait(POLLIN)) return false;
    char tmp[16384];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }
  Reply read_one() {
    Reply r;
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return r;
    }
    const std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    const std::size_t sp = head.find(' ');
    if (head.rfind("HTTP/1.", 0) != 0 || sp == std::string::npos) return r;
    const int status = std::atoi(head.c_str() + sp + 1);
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
      const std::size_t next = head.find("\r\n", pos + 2);
      const std::string line =
          head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::size_t v = colon + 1;
        while (v < line.size() && line[v] == ' ') ++v;
        r.headers[name] = line.substr(v);
      }
      pos = next;
    }
    const std::size_t length =
        r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    while (buf_.size() < length) {
      if (!fill()) return Reply{};
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    r.status = status;
    return r;
  }

  int fd_ = -1;
  double timeout_s_;
  std::string buf_;
  bool eof_ = false;
};

// A well-formed request.
inline std::string request(const std::string& method, const std::string& target,
                           const std::string& body = "", const std::string& extra_headers = "") {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers;
  if (!body.empty() || method == "POST") {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

}  // namespace tessera::robustness
