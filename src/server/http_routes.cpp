// The HTTP front end: the Open Inference Protocol v2 routes, /metrics, and the mapping
// from answers to status codes (docs/serve.md#protocol).

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "server/protocol.hpp"
#include "server/server_impl.hpp"

namespace tessera {
namespace {

using nlohmann::json;
constexpr const char* kJson = "application/json";

HttpResponse reply(int status, std::string body) {
  return HttpResponse(status, std::move(body), kJson);
}
HttpResponse retry_later(int status, std::string body) {
  HttpResponse r = reply(status, std::move(body));
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

// Counts an admitted inference request until its answer is given (or it is refused).
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
  json parameters = {{"slo_ms", ep.app().slo * 1e3}, {"tasks", tasks}};
  if (!ep.emulated().empty()) parameters["emulated"] = ep.emulated();
  return {{"name", ep.name()},     {"versions", {"1"}},
          {"platform", "tessera"}, {"inputs", {tensor_meta("input", ep.input_shape())}},
          {"outputs", outputs},    {"parameters", parameters}};
}

HttpResponse answer_to_response(const Endpoint& ep, const InferRequest& req, const Answer& a) {
  switch (a.kind) {
    case AnswerKind::kOk:
    case AnswerKind::kLate:
      return reply(200, infer_response(ep.name(), req, a));
    case AnswerKind::kDropped: {
      const std::string reason(drop_reason_name(a.reason));
      if (a.stage.empty()) {  // the endpoint's own deadline (Endpoint::admit)
        return retry_later(
            503, error_body("request dropped: " + reason + " (no answer within twice its SLO)",
                            {{"outcome", "dropped"}, {"reason", reason}}));
      }
      return retry_later(
          503, error_body("request dropped at stage '" + a.stage + "': " + reason,
                          {{"outcome", "dropped"}, {"stage", a.stage}, {"reason", reason}}));
    }
    case AnswerKind::kFailed:
      return reply(503, error_body("request failed at stage '" + a.stage + "': no live worker",
                                   {{"outcome", "failed"}, {"stage", a.stage}}));
    case AnswerKind::kShutdown:
      return retry_later(503, error_body(a.message, {{"outcome", "shutdown"}}));
    case AnswerKind::kError:
      return reply(500, error_body(a.message, {{"outcome", "error"}, {"stage", a.stage}}));
    case AnswerKind::kRejected:
    case AnswerKind::kInvalid:
    case AnswerKind::kCount:
      break;
  }
  return reply(500, error_body("internal error: unexpected answer"));
}

void infer(Server::Impl& s, const std::string& name, std::string&& body, const Responder& respond) {
  Endpoint* ep = s.find(name);
  if (ep == nullptr) {
    s.metrics.http_error(400);
    respond(reply(400, error_body("unknown model '" + name + "'")));
    return;
  }
  auto guard = std::make_shared<InFlight>(s);
  if (s.draining.load()) {
    s.metrics.answered(ep->metrics(), AnswerKind::kShutdown, 0.0);
    respond(retry_later(503, error_body("the server is shutting down", {{"outcome", "shutdown"}})));
    return;
  }
  if (guard->count() > s.options.max_inflight) {
    s.metrics.answered(ep->metrics(), AnswerKind::kRejected, 0.0);
    respond(retry_later(429, error_body("overloaded: " + std::to_string(s.options.max_inflight) +
                                            " requests already in flight",
                                        {{"outcome", "rejected"}})));
    return;
  }
  auto request = std::make_shared<InferRequest>();
  try {
    *request = parse_infer_request(body, ep->input_shape());
  } catch (const ProtocolError& e) {
    s.metrics.answered(ep->metrics(), AnswerKind::kInvalid, 0.0);
    respond(reply(400, error_body(e.what())));
    return;
  }
  body = std::string();  // the body's memory goes before the request waits in a queue
  auto input = std::make_shared<const FloatTensor>(std::move(request->input));
  request->input = FloatTensor{};
  // Called once on the loop thread; the response is built on the connection's thread.
  ep->submit(std::move(input), request->slo_s,
             [respond, ep, request, guard = std::move(guard)](Answer&& a) mutable {
               guard.reset();  // answered: no longer in flight
               respond.later([ep, request, a = std::move(a)] {
                 return answer_to_response(*ep, *request, a);
               });
             });
}

std::string http_metrics(const HttpStats& h) {
  std::string out;
  const auto counter = [&out](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(v) + "\n";
  };
  out += "# HELP tessera_http_connections Connections open now.\n";
  out += "# TYPE tessera_http_connections gauge\n";
  out += "tessera_http_connections " + std::to_string(h.open) + "\n";
  counter("tessera_http_connections_total", "Connections accepted.", h.accepted);
  counter("tessera_http_connections_shed_total",
          "Idle connections closed to admit a new one at --max-connections.", h.shed_idle);
  counter("tessera_http_connections_refused_total",
          "Connections answered 503 at --max-connections with none idle.", h.refused_full);
  counter("tessera_http_timeouts_total",
          "Connections closed by the read, keep-alive or write deadline.", h.timed_out);
  counter("tessera_http_requests_total", "HTTP requests read whole.", h.requests);
  return out;
}

HttpResponse metrics_text(Server::Impl& s) {
  s.loop.run_sync([&s] {
    for (auto& ep : s.endpoints) s.metrics.set_queue_lengths(ep->metrics(), ep->queue_lengths());
  });
  s.metrics.set_in_flight(s.in_flight.load());
  std::string text = s.metrics.render();
  if (s.http) text += http_metrics(s.http->stats());
  int replaced = 0;
  for (const auto& ep : s.endpoints) replaced += ep->workers_replaced();
  text +=
      "# HELP tessera_workers_replaced_total Worker threads abandoned after a model call "
      "overran --model-timeout, and replaced.\n";
  text += "# TYPE tessera_workers_replaced_total counter\n";
  text += "tessera_workers_replaced_total " + std::to_string(replaced) + "\n";
  return HttpResponse(200, std::move(text), "text/plain; version=0.0.4");
}

// Splits "/a/b/c" into {"a", "b", "c"}.
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  std::size_t p = 0;
  if (path.empty() || path[0] != '/') return out;
  while (p < path.size()) {
    const std::size_t q = path.find('/', p + 1);
    out.push_back(path.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1));
    p = q == std::string::npos ? path.size() : q;
  }
  return out;
}

}  // namespace

void Server::Impl::handle(HttpRequest&& req, Responder respond) {
  Impl& s = *this;
  const std::vector<std::string> seg = segments(req.path);
  const bool get = req.method == "GET";
  const bool post = req.method == "POST";
  const auto ready_body = [&s](const std::string* name) {
    const bool ready = !s.draining.load();
    json doc{{"ready", ready}};
    if (name != nullptr) doc["name"] = *name;
    return reply(ready ? 200 : 503, dump_json(doc));
  };
  if (get && seg == std::vector<std::string>{"v2", "health", "live"}) {
    return respond(reply(200, R"({"live":true})"));
  }
  if (get && seg == std::vector<std::string>{"v2", "health", "ready"}) {
    return respond(ready_body(nullptr));
  }
  if (get && seg == std::vector<std::string>{"v2"}) {
    return respond(reply(
        200,
        json{{"name", "tessera"}, {"version", "0.1.0"}, {"extensions", json::array()}}.dump()));
  }
  if (get && seg == std::vector<std::string>{"v2", "models"}) {
    json names = json::array();
    for (const auto& ep : s.endpoints) names.push_back(ep->name());
    return respond(reply(200, dump_json(json{{"models", names}})));
  }
  if (get && seg == std::vector<std::string>{"metrics"}) return respond(metrics_text(s));
  // /v2/models/{name}[/versions/{v}][/ready | /infer]
  if (seg.size() >= 3 && seg[0] == "v2" && seg[1] == "models" && !seg[2].empty()) {
    std::size_t rest = 3;
    if (seg.size() >= 5 && seg[3] == "versions" && !seg[4].empty()) rest = 5;
    const std::string& name = seg[2];
    const std::string action = seg.size() == rest + 1 ? seg[rest] : std::string();
    if (seg.size() == rest ||
        (seg.size() == rest + 1 && (action == "ready" || action == "infer"))) {
      if (post && action == "infer") return infer(s, name, std::move(req.body), respond);
      if (get && action != "infer") {
        const Endpoint* ep = s.find(name);
        if (ep == nullptr) {
          s.metrics.http_error(404);
          return respond(reply(404, error_body("unknown model '" + name + "'")));
        }
        return respond(action == "ready" ? ready_body(&name)
                                         : reply(200, dump_json(model_metadata(*ep))));
      }
    }
  }
  s.metrics.http_error(404);
  respond(reply(404, error_body("no route for " + req.method + " " + req.path)));
}

}  // namespace tessera
