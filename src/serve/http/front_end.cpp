#include "serve/http/front_end.hpp"

namespace tessera {

FrontEnd::FrontEnd(HttpLimits limits, int max_in_flight, HttpFrontEnd::Refused refused,
                   HttpFrontEnd::ErrorBody error_body)
    : limits_(limits),
      refused_(std::move(refused)),
      error_body_(std::move(error_body)),
      admission_(max_in_flight) {}

FrontEnd::~FrontEnd() { stop(1.0); }

int FrontEnd::start(const std::string& host, int port) {
  if (http_) return port_;
  auto http = std::make_unique<HttpFrontEnd>(
      limits_,
      [this](HttpRequest&& request, Responder respond) {
        routes_.handle(std::move(request), respond);
      },
      refused_, error_body_);
  port_ = http->start(host, port, tls_);
  http_ = std::move(http);
  return port_;
}

void FrontEnd::stop(double grace_s) {
  if (http_) http_->stop(grace_s);
}

HttpStats FrontEnd::stats() const { return http_ ? http_->stats() : HttpStats{}; }

}  // namespace tessera
