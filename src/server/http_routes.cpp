// The HTTP front end: the Open Inference Protocol v2 routes, /metrics, and the mapping
// from answers to status codes (docs/serve.md#protocol).

#include <spdlog/spdlog.h>

#include <future>
#include <nlohmann/json.hpp>

#include "server/protocol.hpp"
#include "server/server_impl.hpp"

namespace tessera {
namespace {

using nlohmann::json;
constexpr const char* kJson = "application/json";

void reply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, kJson);
}

// Counts an admitted inference request for the whole time its HTTP thread handles it.
class InFlight {
 public:
  explicit InFlight(Server::Impl& s) : s_(s), count_(s.in_flight.fetch_add(1) + 1) {
    if (s_.watchers.load() > 0) notify();
  }
  ~InFlight() {
    if (s_.in_flight.fetch_sub(1) == 1 && s_.draining.load()) {
      notify();
    } else if (s_.watchers.load() > 0) {
      notify();
    }
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  int count() const { return count_; }

 private:
  void notify() {
    std::lock_guard lock(s_.drain_mutex);
    s_.drained.notify_all();
  }

  Server::Impl& s_;
  int count_;
};

json tensor_meta(const std::string& name, const std::vector<int64_t>& shape) {
  std::vector<int64_t> batched{-1};
  batched.insert(batched.end(), shape.begin(), shape.end());
  return {{"name", name}, {"datatype", "FP32"}, {"shape", batched}};
}

json model_metadata(const Endpoint& ep) {
  json outputs = json::array();
  for (const auto& [task, shape] : ep.outputs()) outputs.push_back(tensor_meta(task, shape));
  json tasks = json::array();
  for (const Task& t : ep.app().tasks) tasks.push_back(t.name);
  return {
      {"name", ep.name()},     {"versions", {"1"}},
      {"platform", "tessera"}, {"inputs", {tensor_meta("input", ep.input_shape())}},
      {"outputs", outputs},    {"parameters", {{"slo_ms", ep.app().slo * 1e3}, {"tasks", tasks}}}};
}

void answer_to_response(httplib::Response& res, const Endpoint& ep, const InferRequest& req,
                        const Answer& a) {
  switch (a.kind) {
    case AnswerKind::kOk:
    case AnswerKind::kLate:
      reply(res, 200, infer_response(ep.name(), req, a));
      return;
    case AnswerKind::kDropped: {
      const std::string reason(drop_reason_name(a.reason));
      res.set_header("Retry-After", "1");
      reply(res, 503,
            error_body("request dropped at stage '" + a.stage + "': " + reason,
                       {{"outcome", "dropped"}, {"stage", a.stage}, {"reason", reason}}));
      return;
    }
    case AnswerKind::kFailed:
      reply(res, 503,
            error_body("request failed at stage '" + a.stage + "': no live worker",
                       {{"outcome", "failed"}, {"stage", a.stage}}));
      return;
    case AnswerKind::kShutdown:
      res.set_header("Retry-After", "1");
      reply(res, 503, error_body(a.message, {{"outcome", "shutdown"}}));
      return;
    case AnswerKind::kError:
      reply(res, 500, error_body(a.message, {{"outcome", "error"}, {"stage", a.stage}}));
      return;
    case AnswerKind::kRejected:
    case AnswerKind::kInvalid:
    case AnswerKind::kCount:
      break;
  }
  reply(res, 500, error_body("internal error: unexpected answer"));
}

void infer(Server::Impl& s, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  Endpoint* ep = s.find(name);
  if (ep == nullptr) {
    s.metrics.http_error(400);
    reply(res, 400, error_body("unknown model '" + name + "'"));
    return;
  }
  InFlight guard(s);
  if (s.draining.load()) {
    s.metrics.answered(ep->metrics(), AnswerKind::kShutdown, 0.0);
    res.set_header("Retry-After", "1");
    reply(res, 503, error_body("the server is shutting down", {{"outcome", "shutdown"}}));
    return;
  }
  if (guard.count() > s.options.max_inflight) {
    s.metrics.answered(ep->metrics(), AnswerKind::kRejected, 0.0);
    res.set_header("Retry-After", "1");
    reply(res, 429,
          error_body("overloaded: " + std::to_string(s.options.max_inflight) +
                         " requests already in flight",
                     {{"outcome", "rejected"}}));
    return;
  }
  InferRequest request;
  try {
    request = parse_infer_request(req.body, ep->input_shape());
  } catch (const ProtocolError& e) {
    s.metrics.answered(ep->metrics(), AnswerKind::kInvalid, 0.0);
    reply(res, 400, error_body(e.what()));
    return;
  }
  auto promise = std::make_shared<std::promise<Answer>>();
  std::future<Answer> answered = promise->get_future();
  ep->submit(std::make_shared<const FloatTensor>(std::move(request.input)), request.slo_s,
             [promise](Answer&& a) { promise->set_value(std::move(a)); });
  promise.reset();  // the endpoint holds the only other reference
  if (answered.wait_for(std::chrono::duration<double>(s.options.request_timeout_s)) !=
      std::future_status::ready) {
    spdlog::error("request to '{}' got no answer in {} s", name, s.options.request_timeout_s);
    reply(res, 504,
          error_body("no answer within " + std::to_string(s.options.request_timeout_s) +
                     " s (a server bug)"));
    return;
  }
  try {
    answer_to_response(res, *ep, request, answered.get());
  } catch (const std::future_error&) {
    // The event loop stopped before the request reached the engine.
    res.set_header("Retry-After", "1");
    reply(res, 503, error_body("the server is shutting down", {{"outcome", "shutdown"}}));
  }
}

}  // namespace

void Server::Impl::install_routes() {
  Impl& s = *this;
  http.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, R"({"live":true})");
  });
  http.Get("/v2/health/ready", [&s](const httplib::Request&, httplib::Response& res) {
    const bool ready = !s.draining.load();
    reply(res, ready ? 200 : 503, json{{"ready", ready}}.dump());
  });
  http.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    reply(res, 200,
          json{{"name", "tessera"}, {"version", "0.1.0"}, {"extensions", json::array()}}.dump());
  });
  http.Get("/v2/models", [&s](const httplib::Request&, httplib::Response& res) {
    json names = json::array();
    for (const auto& ep : s.endpoints) names.push_back(ep->name());
    reply(res, 200, json{{"models", names}}.dump());
  });
  http.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)",
           [&s](const httplib::Request& req, httplib::Response& res) {
             const Endpoint* ep = s.find(req.matches[1]);
             if (ep == nullptr) {
               reply(res, 404, error_body("unknown model '" + std::string(req.matches[1]) + "'"));
               return;
             }
             reply(res, 200, model_metadata(*ep).dump());
           });
  http.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/ready)",
           [&s](const httplib::Request& req, httplib::Response& res) {
             if (s.find(req.matches[1]) == nullptr) {
               reply(res, 404, error_body("unknown model '" + std::string(req.matches[1]) + "'"));
               return;
             }
             const bool ready = !s.draining.load();
             reply(res, ready ? 200 : 503,
                   json{{"name", std::string(req.matches[1])}, {"ready", ready}}.dump());
           });
  http.Post(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/infer)",
            [&s](const httplib::Request& req, httplib::Response& res) { infer(s, req, res); });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    s.loop.run_sync([&s] {
      for (auto& ep : s.endpoints) s.metrics.set_queue_lengths(ep->metrics(), ep->queue_lengths());
    });
    s.metrics.set_in_flight(s.in_flight.load());
    res.status = 200;
    res.set_content(s.metrics.render(), "text/plain; version=0.0.4");
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse([&s](const httplib::Request& req,
                                                                   httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    s.metrics.http_error(res.status);
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 404) message = "no route for " + req.method + " " + req.path;
    if (res.status == 413) {
      message =
          req.get_header_value("Content-Type") == "application/x-www-form-urlencoded"
              ? "form-encoded request body larger than 8192 bytes: send the request "
                "as Content-Type: application/json"
              : "request body larger than " + std::to_string(s.options.max_body_bytes) + " bytes";
    }
    res.set_content(error_body(message), kJson);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        reply(res, 500, error_body("internal error: " + what));
      });
}

}  // namespace tessera
