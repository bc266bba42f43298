// The HTTP front end: the Open Inference Protocol v2 routes, /metrics, and the mapping
// from answers to status codes (docs/serve.md#protocol).

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>

#include "serve/fleet/remote_model.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/metrics/gpu_metrics.hpp"
#include "serve/server/infer_call.hpp"
#include "serve/server/server_impl.hpp"
#include "serve/server/triton_metrics.hpp"

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
  return {{"name", ep.name()},     {"versions", {kModelVersion}},
          {"platform", "tessera"}, {"inputs", {tensor_meta("input", ep.input_shape())}},
          {"outputs", outputs},    {"parameters", parameters}};
}

// The HTTP form of an inference result: JSON, or JSON + binary outputs.
HttpResponse http_result(Server::Impl& s, InferResult&& r) {
  if (r.status != 200) {
    return r.retry_after ? retry_later(r.status, std::move(r.error_body))
                         : reply(r.status, std::move(r.error_body));
  }
  const auto t0 = std::chrono::steady_clock::now();
  EncodedResponse enc = encode_infer_response(r.head, r.outputs);
  HttpResponse out(200, std::move(enc.body));
  if (enc.header_length) {
    out.content_type = "application/octet-stream";
    out.headers.emplace_back("Inference-Header-Content-Length", std::to_string(*enc.header_length));
  }
  record_output_time(s, r.head.model_name,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

void infer(Server::Impl& s, const std::string& name, const std::string& version, HttpRequest&& http,
           const Responder& respond) {
  const auto start = std::chrono::steady_clock::now();
  // start_infer() calls `parse` before it returns: the request is borrowed, not shared.
  const ParseFn parse = [&http](const ProtocolLimits& limits) {
    InferRequest r = parse_infer_request(http.body, http.inference_header_length, limits);
    http.body = std::string();  // the body's memory goes before the request waits in a queue
    return r;
  };
  start_infer(s, name, version, parse, start, [&s, respond](InferResult&& r) {
    if (r.status != 200 || respond.on_connection_thread()) {
      return respond(http_result(s, std::move(r)));
    }
    // Encoded on the connection's I/O thread, not the event loop.
    auto shared = std::make_shared<InferResult>(std::move(r));
    respond.later([&s, shared] { return http_result(s, std::move(*shared)); });
  });
}

json model_stats_json(Server::Impl& s, Endpoint& ep) {
  const ModelStats st = s.stats.get(ep.name());
  const auto d = [](const StatDuration& x) { return json{{"count", x.count}, {"ns", x.ns}}; };
  return {{"name", ep.name()},
          {"version", kModelVersion},
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
                      {"version", kModelVersion},
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
  std::vector<TritonModelRow> rows(s.endpoints.size());
  s.loop.run_sync([&s, &rows] {
    for (std::size_t i = 0; i < s.endpoints.size(); ++i) {
      Endpoint& ep = *s.endpoints[i];
      s.metrics.set_queue_lengths(ep.metrics(), ep.queue_lengths());
      rows[i].pending = ep.waiting();
    }
  });
  for (std::size_t i = 0; i < s.endpoints.size(); ++i) {
    Endpoint& ep = *s.endpoints[i];
    rows[i].model = ep.name();
    rows[i].version = kModelVersion;
    rows[i].stats = s.stats.get(ep.name());
    rows[i].executions = s.metrics.executions(ep.metrics());
  }
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
  text += render_triton_metrics(rows);
  std::vector<std::pair<std::string, const RemoteModel*>> remote;
  for (const auto& [name, lm] : s.models.all()) {
    if (auto* m = dynamic_cast<const RemoteModel*>(lm.model.get())) remote.emplace_back(name, m);
  }
  text += render_remote_metrics(remote);
  text += render_process_metrics();
  text += render_gpu_metrics(process_gpu_sampler());
  text += render_reconfiguration_metrics(s.live);
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

// Whether the path's segments are exactly `want` (no temporary vector per comparison).
bool is(const std::vector<std::string>& seg, std::initializer_list<std::string_view> want) {
  return std::equal(seg.begin(), seg.end(), want.begin(), want.end());
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
  if (get && is(seg, {"v2", "health", "live"})) {
    return respond(reply(200, R"({"live":true})"));
  }
  if (get && is(seg, {"v2", "health", "ready"})) {
    return respond(ready_body(nullptr));
  }
  if (get && is(seg, {"v2"})) {
    return respond(reply(
        200,
        json{{"name", "tessera"},
             {"version", "0.1.0"},
             {"extensions", {"binary_tensor_data", "parameters", "model_repository", "statistics"}}}
            .dump()));
  }
  if (get && is(seg, {"v2", "models"})) {
    json names = json::array();
    for (const auto& ep : s.endpoints) names.push_back(ep->name());
    return respond(reply(200, dump_json(json{{"models", names}})));
  }
  if (get && is(seg, {"v2", "models", "stats"})) {
    json all = json::array();
    for (const auto& ep : s.endpoints) all.push_back(model_stats_json(s, *ep));
    return respond(reply(200, dump_json(json{{"model_stats", all}})));
  }
  if (get && is(seg, {"metrics"})) return respond(metrics_text(s));
  if (is(seg, {"v2", "tessera", "deployment"})) {
    return respond(s.deployment_route(req));  // live reconfiguration (server_reconfigure.cpp)
  }
  // The model repository extension.
  if (post && is(seg, {"v2", "repository", "index"})) {
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
    s.set_loaded(name, seg[4] == "load");
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
        return infer(s, name, version == nullptr ? "" : *version, std::move(req), respond);
      }
      if (get && action != "infer") {
        if (ep == nullptr) return respond(not_found("unknown model '" + name + "'"));
        if (version != nullptr && *version != kModelVersion) {
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
