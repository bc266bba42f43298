// The HTTP front end: the Open Inference Protocol v2 routes, /metrics, and the mapping
// from answers to status codes (docs/serve.md#protocol).

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
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

// Counts admitted inference items until their answer is given (or they are refused).
class InFlight {
 public:
  InFlight(Server::Impl& s, int n) : s_(s), n_(n), count_(s.in_flight.fetch_add(n) + n) {
    if (s_.watchers.load() > 0) notify();
  }
  ~InFlight() {
    if (s_.in_flight.fetch_sub(n_) == n_ && s_.draining.load()) {
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
  int n_;
  int count_;
};

constexpr const char* kVersion = "1";  // every endpoint has one version

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
  return {{"name", ep.name()},     {"versions", {kVersion}},
          {"platform", "tessera"}, {"inputs", {tensor_meta("input", ep.input_shape())}},
          {"outputs", outputs},    {"parameters", parameters}};
}

HttpResponse error_response(const Answer& a) {
  switch (a.kind) {
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
    default:
      break;
  }
  return reply(500, error_body("internal error: unexpected answer"));
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One HTTP inference request: its items (a batch of N is N engine requests), answered
// together once the last item's answer arrives (all on the event loop thread).
struct Call {
  Endpoint* ep = nullptr;
  InferRequest request;              // without its input values (they went to the engine)
  bool batched = false;              // the input had a leading batch dimension
  std::vector<std::string> outputs;  // the outputs to return, in order
  std::vector<bool> binary;          // per output
  std::vector<Answer> answers;       // per item
  std::size_t left = 0;
  Clock::time_point start;
  double parse_s = 0.0;
};

HttpResponse call_response(Server::Impl& s, Call& c) {
  for (const Answer& a : c.answers) {
    if (a.kind != AnswerKind::kOk && a.kind != AnswerKind::kLate) {
      s.stats.failed(c.ep->name(), since(c.start));
      return error_response(a);
    }
  }
  const auto encode_start = Clock::now();
  RequestTiming t;
  bool late = false;
  double accuracy = 0.0, latency = 0.0;
  for (const Answer& a : c.answers) {
    late = late || a.kind == AnswerKind::kLate;
    accuracy += a.accuracy / static_cast<double>(c.answers.size());
    latency = std::max(latency, a.latency);
    t.queue = std::max(t.queue, a.queue);
    t.infer = std::max(t.infer, a.latency - a.queue);
  }
  InferResponseHead head;
  head.model_name = c.ep->name();
  head.model_version = kVersion;
  head.id = c.request.id;
  head.parameters = c.request.parameters;  // passed through; the server's own keys win
  head.parameters.erase("binary_data_output");
  head.parameters["outcome"] = late ? "late" : "ok";
  head.parameters["latency_ms"] = latency * 1e3;
  head.parameters["accuracy"] = accuracy;
  std::vector<ResponseOutput> outs;
  for (std::size_t o = 0; o < c.outputs.size(); ++o) {
    ResponseOutput out;
    out.name = c.outputs[o];
    out.binary = c.binary[o];
    int64_t rows = 0;
    for (const Answer& a : c.answers) {
      for (const NamedOutput& n : a.outputs) {
        if (n.name != out.name) continue;
        if (out.shape.empty()) out.shape = n.tensor.shape;
        rows += n.tensor.shape.empty() ? 1 : n.tensor.shape[0];
        out.data.insert(out.data.end(), n.tensor.data.begin(), n.tensor.data.end());
      }
    }
    if (out.shape.empty()) {  // no item produced it (e.g. every path ended earlier)
      for (const auto& [task, shape] : c.ep->outputs()) {
        if (task == out.name) out.shape = shape, out.shape.insert(out.shape.begin(), 0);
      }
    } else {
      out.shape[0] = rows;
    }
    outs.push_back(std::move(out));
  }
  EncodedResponse enc = encode_infer_response(head, outs);
  HttpResponse r(200, std::move(enc.body));
  if (enc.header_length) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(*enc.header_length));
  }
  t.input = c.parse_s;
  t.output = since(encode_start);
  t.total = since(c.start);
  s.stats.succeeded(c.ep->name(), c.answers.size(), t);
  return r;
}

// Checks a parsed request against the endpoint's one FP32 input [-1, shape...] and its
// outputs; returns the items (one per batch row) or throws ProtocolError.
std::vector<std::shared_ptr<const FloatTensor>> items_of(const Endpoint& ep, Call& c,
                                                         int max_items) {
  InferRequest& req = c.request;
  if (req.inputs.size() != 1) {
    throw ProtocolError("expected exactly 1 input ('input'), got " +
                        std::to_string(req.inputs.size()));
  }
  RequestInput& in = req.inputs[0];
  if (in.datatype == DataType::kBytes || in.datatype == DataType::kBool) {
    throw ProtocolError("inputs[0].datatype " + std::string(datatype_name(in.datatype)) +
                        " is not supported: the model's input is FP32 (send FP32 or another "
                        "numeric type)");
  }
  const std::vector<int64_t>& shape = ep.input_shape();
  std::vector<int64_t> tail(in.shape.begin() + (in.shape.empty() ? 0 : 1), in.shape.end());
  int64_t n = 1;
  if (in.shape == shape) {
    c.batched = false;
  } else if (in.shape.size() == shape.size() + 1 && tail == shape) {
    c.batched = true;
    n = in.shape[0];
  } else {
    throw ProtocolError("inputs[0].shape " + shape_string(in.shape) +
                        " does not match the model's input " + shape_string(shape) +
                        " (or [batch, " + shape_string(shape).substr(1) + ")");
  }
  if (!in.name.empty() && in.name != "input") {
    throw ProtocolError("unknown input '" + in.name + "': model '" + ep.name() +
                        "' takes one input, 'input'");
  }
  if (n < 1) throw ProtocolError("inputs[0].shape has a batch of 0");
  if (n > max_items) {
    throw ProtocolError("a batch of " + std::to_string(n) + " is more than --max-inflight (" +
                        std::to_string(max_items) + ")");
  }
  for (std::size_t k = 0; k < in.values.size(); ++k) {
    if (!in_range(DataType::kFp32, in.values[k])) {
      throw ProtocolError("inputs[0]: element " + std::to_string(k) +
                          " does not fit the model's FP32 input");
    }
  }
  // Outputs: those requested, in request order, else all, in the model's order.
  const auto& model_outputs = ep.outputs();
  if (req.outputs.empty()) {
    for (const auto& [task, shape_] : model_outputs) {
      c.outputs.push_back(task);
      c.binary.push_back(req.binary_data_output);
    }
  }
  for (const RequestedOutput& o : req.outputs) {
    bool known = false;
    std::string names;
    for (const auto& [task, shape_] : model_outputs) {
      known = known || task == o.name;
      names += (names.empty() ? "'" : ", '") + task + "'";
    }
    if (!known) {
      throw ProtocolError("unknown output '" + o.name + "': model '" + ep.name() +
                          "' has outputs " + names);
    }
    c.outputs.push_back(o.name);
    c.binary.push_back(o.binary);
  }
  const auto per = static_cast<std::size_t>(shape_numel(shape));
  std::vector<std::shared_ptr<const FloatTensor>> items;
  for (int64_t i = 0; i < n; ++i) {
    auto t = std::make_shared<FloatTensor>();
    t->shape = shape;
    t->data.reserve(per);
    const auto from = static_cast<std::size_t>(i) * per;
    for (std::size_t k = 0; k < per; ++k)
      t->data.push_back(static_cast<float>(in.values[from + k]));
    items.push_back(std::move(t));
  }
  in.values = {};
  return items;
}

void infer(Server::Impl& s, const std::string& name, HttpRequest&& http, const Responder& respond) {
  const auto start = Clock::now();
  Endpoint* ep = s.find(name);
  if (ep == nullptr) {
    s.metrics.http_error(400);
    respond(reply(400, error_body("unknown model '" + name + "'")));
    return;
  }
  if (!s.loaded(name)) {
    s.metrics.answered(ep->metrics(), AnswerKind::kInvalid, 0.0);
    respond(reply(400, error_body("model '" + name + "' is unloaded (POST /v2/repository/models/" +
                                  name + "/load loads it)")));
    return;
  }
  if (s.draining.load()) {
    InFlight guard(s, 1);
    s.metrics.answered(ep->metrics(), AnswerKind::kShutdown, 0.0);
    respond(retry_later(503, error_body("the server is shutting down", {{"outcome", "shutdown"}})));
    return;
  }
  auto call = std::make_shared<Call>();
  call->ep = ep;
  call->start = start;
  std::vector<std::shared_ptr<const FloatTensor>> items;
  {
    // Admission first (1 for the request being parsed), before the body is parsed.
    InFlight probe(s, 1);
    if (probe.count() > s.options.max_inflight) {
      s.metrics.answered(ep->metrics(), AnswerKind::kRejected, 0.0);
      respond(retry_later(429, error_body("overloaded: " + std::to_string(s.options.max_inflight) +
                                              " requests already in flight",
                                          {{"outcome", "rejected"}})));
      return;
    }
    try {
      ProtocolLimits limits;
      limits.max_values =
          static_cast<std::size_t>(std::max<int64_t>(1, shape_numel(ep->input_shape()))) *
          static_cast<std::size_t>(std::max(1, s.options.max_inflight));
      call->request = parse_infer_request(http.body, http.inference_header_length, limits);
      items = items_of(*ep, *call, s.options.max_inflight);
    } catch (const ProtocolError& e) {
      s.metrics.answered(ep->metrics(), AnswerKind::kInvalid, 0.0);
      s.stats.failed(name, since(start));
      respond(reply(400, error_body(e.what())));
      return;
    }
  }
  http.body = std::string();  // the body's memory goes before the request waits in a queue
  const int n = static_cast<int>(items.size());
  auto guard = std::make_shared<InFlight>(s, n);
  if (guard->count() > s.options.max_inflight) {
    for (int i = 0; i < n; ++i) s.metrics.answered(ep->metrics(), AnswerKind::kRejected, 0.0);
    respond(retry_later(429, error_body("overloaded: " + std::to_string(s.options.max_inflight) +
                                            " requests already in flight",
                                        {{"outcome", "rejected"}})));
    return;
  }
  call->parse_s = since(start);
  call->answers.resize(items.size());
  call->left = items.size();
  for (std::size_t i = 0; i < items.size(); ++i) {
    // Each `done` is called once, on the loop thread; the response is built on the
    // connection's thread once the last item is answered.
    ep->submit(std::move(items[i]), call->request.slo_s,
               [&s, respond, call, i, guard](Answer&& a) mutable {
                 call->answers[i] = std::move(a);
                 if (--call->left > 0) return;
                 guard.reset();
                 respond.later([&s, call] { return call_response(s, *call); });
               });
  }
  guard.reset();
}

json model_stats_json(Server::Impl& s, Endpoint& ep) {
  const ModelStats st = s.stats.get(ep.name());
  const auto d = [](const StatDuration& x) { return json{{"count", x.count}, {"ns", x.ns}}; };
  return {{"name", ep.name()},
          {"version", kVersion},
          {"last_inference", st.last_inference_ms},
          {"inference_count", st.inference_count},
          {"execution_count", s.metrics.executions(ep.metrics())},
          {"inference_stats",
           {{"success", d(st.success)},
            {"fail", d(st.fail)},
            {"queue", d(st.queue)},
            {"compute_input", d(st.compute_input)},
            {"compute_infer", d(st.compute_infer)},
            {"compute_output", d(st.compute_output)}}},
          {"batch_stats", json::array()}};
}

HttpResponse repository_index(Server::Impl& s, const std::string& body) {
  bool only_ready = false;
  if (!body.empty()) {
    const json doc = json::parse(body, nullptr, false);
    if (!doc.is_object()) return reply(400, error_body("the index request must be a JSON object"));
    if (auto it = doc.find("ready"); it != doc.end()) {
      if (!it->is_boolean()) return reply(400, error_body("'ready' must be a boolean"));
      only_ready = it->get<bool>();
    }
  }
  json models = json::array();
  for (const auto& ep : s.endpoints) {
    const bool ready = s.loaded(ep->name()) && !s.draining.load();
    if (only_ready && !ready) continue;
    models.push_back({{"name", ep->name()},
                      {"version", kVersion},
                      {"state", ready ? "READY" : "UNAVAILABLE"},
                      {"reason", ready ? "" : (s.draining.load() ? "shutting down" : "unloaded")}});
  }
  return reply(200, dump_json(models));
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
  // Health: 200 is true, a 4xx false (the protocol's "Health" section).
  const auto ready_body = [&s](const std::string* name) {
    const bool ready = !s.draining.load() && (name == nullptr || s.loaded(*name));
    json doc{{"ready", ready}};
    if (name != nullptr) doc["name"] = *name;
    return reply(ready ? 200 : 400, dump_json(doc));
  };
  const auto not_found = [&s](const std::string& what) {
    s.metrics.http_error(404);
    return reply(404, error_body(what));
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
        json{{"name", "tessera"},
             {"version", "0.1.0"},
             {"extensions", {"binary_tensor_data", "parameters", "model_repository", "statistics"}}}
            .dump()));
  }
  if (get && seg == std::vector<std::string>{"v2", "models"}) {
    json names = json::array();
    for (const auto& ep : s.endpoints) names.push_back(ep->name());
    return respond(reply(200, dump_json(json{{"models", names}})));
  }
  if (get && seg == std::vector<std::string>{"v2", "models", "stats"}) {
    json all = json::array();
    for (const auto& ep : s.endpoints) all.push_back(model_stats_json(s, *ep));
    return respond(reply(200, dump_json(json{{"model_stats", all}})));
  }
  if (get && seg == std::vector<std::string>{"metrics"}) return respond(metrics_text(s));
  // The model repository extension.
  if (post && seg == std::vector<std::string>{"v2", "repository", "index"}) {
    return respond(repository_index(s, req.body));
  }
  if (post && seg.size() == 5 && seg[0] == "v2" && seg[1] == "repository" && seg[2] == "models" &&
      (seg[4] == "load" || seg[4] == "unload")) {
    const std::string& name = seg[3];
    if (s.find(name) == nullptr) {
      s.metrics.http_error(400);
      return respond(reply(400, error_body("failed to " + seg[4] + " '" + name +
                                           "': no such model in the repository")));
    }
    {
      std::lock_guard lock(s.repository_mutex);
      if (seg[4] == "load") {
        s.unloaded.erase(name);
      } else {
        s.unloaded.insert(name);
      }
    }
    return respond(reply(200, ""));
  }
  // /v2/models/{name}[/versions/{v}][/ready | /infer | /stats]
  if (seg.size() >= 3 && seg[0] == "v2" && seg[1] == "models" && !seg[2].empty()) {
    std::size_t rest = 3;
    const std::string* version = nullptr;
    if (seg.size() >= 5 && seg[3] == "versions" && !seg[4].empty()) {
      rest = 5;
      version = &seg[4];
    }
    const std::string& name = seg[2];
    const std::string action = seg.size() == rest + 1 ? seg[rest] : std::string();
    if (seg.size() == rest ||
        (seg.size() == rest + 1 && (action == "ready" || action == "infer" || action == "stats"))) {
      Endpoint* ep = s.find(name);
      if (post && action == "infer") {
        if (ep != nullptr && version != nullptr && *version != kVersion) {
          s.metrics.http_error(400);
          return respond(reply(400, error_body("model '" + name + "' has no version '" + *version +
                                               "' (versions: 1)")));
        }
        return infer(s, name, std::move(req), respond);
      }
      if (get && action != "infer") {
        if (ep == nullptr) return respond(not_found("unknown model '" + name + "'"));
        if (version != nullptr && *version != kVersion) {
          return respond(
              not_found("model '" + name + "' has no version '" + *version + "' (versions: 1)"));
        }
        if (action == "ready") return respond(ready_body(&name));
        if (action == "stats") {
          return respond(reply(
              200, dump_json(json{{"model_stats", json::array({model_stats_json(s, *ep)})}})));
        }
        return respond(reply(200, dump_json(model_metadata(*ep))));
      }
    }
  }
  s.metrics.http_error(404);
  respond(reply(404, error_body("no route for " + req.method + " " + req.path)));
}

}  // namespace tessera
