// The KServe v2 routes of an app server over HTTP (http_routes.hpp; docs/serve.md#protocol),
// and the mapping from answers to status codes.

#include "serve/server/http_routes.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "serve/kserve/protocol.hpp"

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
  // The protocol's $parameter is a bool, a number or a string: lists are comma-separated.
  auto joined = [](const auto& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + std::string(n);
    return out;
  };
  std::vector<std::string> tasks;
  for (const Task& t : ep.app().tasks) tasks.push_back(t.name);
  json parameters = {{"slo_ms", ep.app().slo * 1e3}, {"tasks", joined(tasks)}};
  if (!ep.emulated().empty()) parameters["emulated"] = joined(ep.emulated());
  return {{"name", ep.name()},     {"versions", {kModelVersion}},
          {"platform", "tessera"}, {"inputs", {tensor_meta("input", ep.input_shape())}},
          {"outputs", outputs},    {"parameters", parameters}};
}

// The HTTP form of an inference result: JSON, or JSON + binary outputs.
HttpResponse http_result(KServeInference& inference, InferResult&& r) {
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
  inference.record_output_time(
      r.head.model_name,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

void infer(KServeInference& inference, const std::string& name, const std::string& version,
           HttpRequest&& http, const Responder& respond) {
  const auto start = std::chrono::steady_clock::now();
  // start_infer() calls `parse` before it returns: the request is borrowed, not shared.
  const ParseFn parse = [&http](const ProtocolLimits& limits) {
    InferRequest r = parse_infer_request(http.body, http.inference_header_length, limits);
    http.body = std::string();  // the body's memory goes before the request waits in a queue
    return r;
  };
  inference.start(name, version, parse, start, [&inference, respond](InferResult&& r) {
    if (r.status != 200 || respond.on_connection_thread()) {
      return respond(http_result(inference, std::move(r)));
    }
    // Encoded on the connection's I/O thread, not the event loop.
    auto shared = std::make_shared<InferResult>(std::move(r));
    respond.later([&inference, shared] { return http_result(inference, std::move(*shared)); });
  });
}

json model_stats_json(const KServeRoutes& k, Endpoint& ep) {
  const ModelStats st = k.repository.stats().get(ep.name());
  const auto d = [](const StatDuration& x) { return json{{"count", x.count}, {"ns", x.ns}}; };
  return {{"name", ep.name()},
          {"version", kModelVersion},
          {"last_inference", st.last_inference_ms},
          {"inference_count", st.inference_count},
          {"execution_count", k.metrics.executions(ep.metrics())},
          {"inference_stats",
           {{"success", d(st.success)},
            {"fail", d(st.fail)},
            {"queue", d(st.queue)},
            {"compute_input", d(st.compute_input)},
            {"compute_infer", d(st.compute_infer)},
            {"compute_output", d(st.compute_output)}}},
          {"batch_stats", json::array()}};
}

HttpResponse repository_index(const KServeRoutes& k, const std::string& body) {
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
  for (const auto& ep : k.repository.endpoints()) {
    const bool draining = k.admission.draining();
    const bool ready = k.repository.loaded(ep->name()) && !draining;
    if (only_ready && !ready) continue;
    models.push_back({{"name", ep->name()},
                      {"version", kModelVersion},
                      {"state", ready ? "READY" : "UNAVAILABLE"},
                      {"reason", ready ? "" : (draining ? "shutting down" : "unloaded")}});
  }
  return reply(200, dump_json(models));
}

// Health: 200 is true, a 4xx false (the protocol's "Health" section).
HttpResponse ready_body(const KServeRoutes& k, const std::string* name) {
  const bool ready = !k.admission.draining() && (name == nullptr || k.repository.loaded(*name));
  json doc{{"ready", ready}};
  if (name != nullptr) doc["name"] = *name;
  return reply(ready ? 200 : 400, dump_json(doc));
}

// GET /v2/models/{m}[/versions/{v}][/ready | /stats]: metadata, readiness, statistics.
void model_get(const KServeRoutes& k, const std::string& name, const std::string* version,
               const std::string& action, const Responder& respond) {
  Endpoint* ep = k.repository.find(name);
  const auto not_found = [&k](const std::string& what) {
    k.metrics.http_error(404);
    return reply(404, error_body(what));
  };
  if (ep == nullptr) return respond(not_found("unknown model '" + name + "'"));
  if (version != nullptr && *version != kModelVersion) {
    return respond(
        not_found("model '" + name + "' has no version '" + *version + "' (versions: 1)"));
  }
  if (action == "ready") return respond(ready_body(k, &name));
  if (action == "stats") {
    return respond(
        reply(200, dump_json(json{{"model_stats", json::array({model_stats_json(k, *ep)})}})));
  }
  respond(reply(200, dump_json(model_metadata(*ep))));
}

}  // namespace

void add_kserve_routes(HttpRouter& router, KServeRoutes routes) {
  auto k = std::make_shared<const KServeRoutes>(std::move(routes));
  // Health: 200 is true, a 4xx false (the protocol's "Health" section).
  router.add("GET", "/v2/health/live", RouteAccess::kOpen,
             [](HttpRequest&&, const Responder& respond, auto&) {
               respond(reply(200, R"({"live":true})"));
             });
  router.add(
      "GET", "/v2/health/ready", RouteAccess::kOpen,
      [k](HttpRequest&&, const Responder& respond, auto&) { respond(ready_body(*k, nullptr)); });
  router.add("GET", "/v2", [](HttpRequest&&, const Responder& respond, auto&) {
    respond(reply(
        200,
        json{{"name", "tessera"},
             {"version", "0.1.0"},
             {"extensions", {"binary_tensor_data", "parameters", "model_repository", "statistics"}}}
            .dump()));
  });
  router.add("GET", "/v2/models", [k](HttpRequest&&, const Responder& respond, auto&) {
    json names = json::array();
    for (const auto& ep : k->repository.endpoints()) names.push_back(ep->name());
    respond(reply(200, dump_json(json{{"models", names}})));
  });
  router.add("GET", "/v2/models/stats", [k](HttpRequest&&, const Responder& respond, auto&) {
    json all = json::array();
    for (const auto& ep : k->repository.endpoints()) all.push_back(model_stats_json(*k, *ep));
    respond(reply(200, dump_json(json{{"model_stats", all}})));
  });
  router.add("GET", "/metrics",
             [k](HttpRequest&&, const Responder& respond, auto&) { respond(k->metrics_text()); });
  // Live reconfiguration: GET the deployment (inference access), POST one (control).
  for (const RouteAccess access : {RouteAccess::kInference, RouteAccess::kControl}) {
    router.add(
        access == RouteAccess::kControl ? "POST" : "GET", "/v2/tessera/deployment", access,
        [k](HttpRequest&& req, const Responder& respond, auto&) { respond(k->deployment(req)); });
  }
  // The model repository extension.
  router.add("POST", "/v2/repository/index",
             [k](HttpRequest&& req, const Responder& respond, auto&) {
               respond(repository_index(*k, req.body));
             });
  for (const bool load : {true, false}) {
    const std::string action = load ? "load" : "unload";
    router.add("POST", "/v2/repository/models/{}/" + action, RouteAccess::kControl,
               [k, load, action](HttpRequest&&, const Responder& respond, const RouteParams& p) {
                 const std::string& name = p[0];
                 if (k->repository.find(name) == nullptr) {
                   k->metrics.http_error(400);
                   return respond(reply(400, error_body("failed to " + action + " '" + name +
                                                        "': no such model in the repository")));
                 }
                 k->repository.set_loaded(name, load);
                 respond(reply(200, ""));
               });
  }
  // /v2/models/{name}[/versions/{v}][/ready | /infer | /stats]
  router.add("POST", "/v2/models/{}/infer",
             [k](HttpRequest&& req, const Responder& respond, const RouteParams& p) {
               infer(k->inference, p[0], "", std::move(req), respond);
             });
  router.add("POST", "/v2/models/{}/versions/{}/infer",
             [k](HttpRequest&& req, const Responder& respond, const RouteParams& p) {
               infer(k->inference, p[0], p[1], std::move(req), respond);
             });
  for (const char* action : {"", "/ready", "/stats"}) {
    const std::string what = *action == 0 ? "" : std::string(action + 1);
    router.add("GET", std::string("/v2/models/{}") + action,
               [k, what](HttpRequest&&, const Responder& respond, const RouteParams& p) {
                 model_get(*k, p[0], nullptr, what, respond);
               });
    router.add("GET", std::string("/v2/models/{}/versions/{}") + action,
               [k, what](HttpRequest&&, const Responder& respond, const RouteParams& p) {
                 model_get(*k, p[0], &p[1], what, respond);
               });
  }
  router.set_fallback([k](HttpRequest&& req, const Responder& respond) {
    k->metrics.http_error(404);
    respond(reply(404, error_body("no route for " + req.method + " " + req.path)));
  });
}

}  // namespace tessera
