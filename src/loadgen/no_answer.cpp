#include "loadgen/no_answer.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tessera {
namespace {

// Connects to host:port once (5 s at most) and returns why that failed; empty when it
// succeeded this time.
std::string connect_failure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return std::string("cannot resolve host '") + host + "': " + gai_strerror(rc);
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  std::string why = "no address to connect to";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 5000) <= 0) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    close(fd);
    if (err == 0) return {};
    why = std::strerror(err);
  }
  return why;
}

}  // namespace

std::string no_answer_reason(httplib::Error error, const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  switch (error) {
    case httplib::Error::Connection:
    case httplib::Error::ConnectionTimeout: {
      const std::string why = connect_failure(host, port);
      if (why.empty()) return "could not connect to " + where + " (it accepts connections now)";
      const bool refused = why == std::strerror(ECONNREFUSED);
      return "could not connect to " + where + ": " + why +
             (refused ? " (is a tessera server listening there?)" : "");
    }
    case httplib::Error::Read:
      return "the connection to " + where +
             " closed or timed out before an answer came (read failed)";
    case httplib::Error::Write:
      return "the connection to " + where + " closed while the request was sent (write failed)";
    case httplib::Error::Canceled:
      return "the request to " + where + " was cancelled";
    case httplib::Error::BindIPAddress:
      return "could not bind the local address to connect to " + where;
    default:
      return "the request to " + where + " failed (" + httplib::to_string(error) + ")";
  }
}

}  // namespace tessera
