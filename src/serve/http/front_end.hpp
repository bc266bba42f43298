#pragma once

// FrontEnd: the HTTP side both servers share (the app server's KServe routes, the LLM
// server's OpenAI and generate routes): the transport (HttpFrontEnd, its bounds in
// docs/reliability.md), the server's routes (HttpRouter) and its admission and drain
// (Admission), and who may call which route (AccessControl). A server adds its routes, starts the
// front end, and at shutdown drains it (no new request is admitted; those in flight get
// drain_timeout_s) and stops it.
//
// Threads: routes are added before start(); start(), drain() and stop() from the owner;
// the routes' handlers run on the I/O threads; admission from any thread.

#include <memory>
#include <string>
#include <utility>

#include "serve/http/admission.hpp"
#include "serve/http/http_frontend.hpp"
#include "serve/http/router.hpp"

namespace tessera {

class FrontEnd {
 public:
  // `refused` and `error_body` as HttpFrontEnd's: the transport's own refusals (400, 408,
  // 413, 431, 503) for metrics, and their JSON body.
  FrontEnd(HttpLimits limits, int max_in_flight, HttpFrontEnd::Refused refused,
           HttpFrontEnd::ErrorBody error_body);
  ~FrontEnd();
  FrontEnd(const FrontEnd&) = delete;
  FrontEnd& operator=(const FrontEnd&) = delete;

  HttpRouter& routes() { return routes_; }
  // Who may call which route (serve/http/access.hpp); before start(). Refusals are
  // counted through `refused` and get `error_body`'s JSON.
  void set_access(AccessControl access) {
    routes_.set_access(std::move(access), error_body_, refused_);
  }
  // TLS on the HTTP port (HttpFrontEnd::start); before start().
  void set_tls(TlsFiles tls) { tls_ = std::move(tls); }
  Admission& admission() { return admission_; }
  const Admission& admission() const { return admission_; }

  // Binds (port 0: any free port) and serves the routes; returns the port. Throws
  // std::runtime_error if it cannot bind.
  int start(const std::string& host, int port);
  bool started() const { return http_ != nullptr; }
  int port() const { return port_; }
  // Stops admitting and waits up to timeout_s for the requests in flight; false if some
  // are left.
  bool drain(double timeout_s) { return admission_.drain(timeout_s); }
  // Closes the transport (HttpFrontEnd::stop). Idempotent.
  void stop(double grace_s);
  // The transport's counts (zeros before start()).
  HttpStats stats() const;

 private:
  HttpLimits limits_;
  HttpFrontEnd::Refused refused_;
  HttpFrontEnd::ErrorBody error_body_;
  HttpRouter routes_;
  TlsFiles tls_;
  Admission admission_;
  std::unique_ptr<HttpFrontEnd> http_;
  int port_ = 0;
};

}  // namespace tessera
