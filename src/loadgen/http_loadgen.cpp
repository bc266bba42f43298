#include "loadgen/http_loadgen.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "loadgen/no_answer.hpp"
#include "loadgen/open_loop.hpp"

namespace tessera {
namespace {

using nlohmann::json;

struct Outcome1 {
  double sent = 0.0;      // scheduled send, seconds from the first arrival
  double finished = 0.0;  // answer received
  int status = 0;
  Outcome outcome = Outcome::kFailed;
  TaskId task = 0;
  DropReason reason = DropReason::kNone;
  double accuracy = 0.0;
  bool has_accuracy = false;  // the answer carried parameters.accuracy
};

struct ModelMeta {
  std::vector<int64_t> input_shape;
  std::vector<std::string> emulated;  // parameters.emulated: profile-timed variants
};

ModelMeta metadata_of(const LoadgenOptions& options, const std::string& model) {
  httplib::Client cli(options.host, options.port);
  cli.set_connection_timeout(5);
  auto res = cli.Get("/v2/models/" + model);
  if (!res) {
    throw std::runtime_error("no answer from the server: " +
                             no_answer_reason(res.error(), options.host, options.port));
  }
  if (res->status != 200) {
    throw std::runtime_error("model '" + model + "': HTTP " + std::to_string(res->status) + " " +
                             res->body);
  }
  const json meta = json::parse(res->body);
  ModelMeta m;
  std::vector<int64_t>& shape = m.input_shape;
  shape = meta.at("inputs").at(0).at("shape").get<std::vector<int64_t>>();
  if (!shape.empty() && shape[0] == -1) shape.erase(shape.begin());
  const auto params = meta.find("parameters");
  if (params != meta.end() && params->contains("emulated")) {
    const json& e = params->at("emulated");
    if (e.is_array()) {  // servers before the list became a $parameter string
      m.emulated = e.get<std::vector<std::string>>();
    } else if (e.is_string()) {  // "a,b,c"
      std::istringstream names(e.get<std::string>());
      for (std::string n; std::getline(names, n, ',');) m.emulated.push_back(n);
    }
  }
  return m;
}

// A body with parameters.slo_ms added (the body is a JSON object without parameters).
std::string with_slo(const std::string& body, double slo_ms) {
  return body.substr(0, body.size() - 1) + ",\"parameters\":{\"slo_ms\":" + json(slo_ms).dump() +
         "}}";
}

std::string body_for(const std::vector<int64_t>& shape, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  json data = json::array();
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = normal(rng);
  std::vector<int64_t> batched{1};
  batched.insert(batched.end(), shape.begin(), shape.end());
  json in = {{"name", "input"}, {"datatype", "FP32"}, {"shape", batched}, {"data", values}};
  return json{{"inputs", json::array({in})}}.dump();
}

DropReason reason_named(const std::string& name) {
  for (std::size_t r = 1; r < static_cast<std::size_t>(DropReason::kCount); ++r) {
    if (drop_reason_name(static_cast<DropReason>(r)) == name) return static_cast<DropReason>(r);
  }
  return DropReason::kNone;
}

void classify(const App& app, const httplib::Result& res, double slo_s, Outcome1& o) {
  const TaskId root = app.roots.empty() ? 0 : app.roots.front();
  o.task = root;
  if (!res) {
    o.status = 0;
    o.outcome = Outcome::kFailed;
    return;
  }
  o.status = res->status;
  if (res->status == 200) {
    o.outcome = o.finished - o.sent <= slo_s + 1e-12 ? Outcome::kOk : Outcome::kLate;
    const json body = json::parse(res->body, nullptr, false);
    if (body.is_object() && body.contains("parameters") && body["parameters"].is_object()) {
      const auto& params = body["parameters"];
      o.has_accuracy = params.contains("accuracy") && params["accuracy"].is_number();
      if (o.has_accuracy) o.accuracy = params["accuracy"].get<double>();
    }
    return;
  }
  if (res->status == 429) {
    o.outcome = Outcome::kDropped;
    o.reason = DropReason::kOverload;
    return;
  }
  o.outcome = Outcome::kFailed;
  if (res->status != 503) return;
  const json body = json::parse(res->body, nullptr, false);
  if (!body.is_object() || body.value("outcome", "") != "dropped") return;
  const int task = app.task_index(body.value("stage", ""));
  o.outcome = Outcome::kDropped;
  o.task = task >= 0 ? static_cast<TaskId>(task) : root;
  o.reason = reason_named(body.value("reason", ""));
  if (o.reason == DropReason::kNone) o.reason = DropReason::kOverload;
}

}  // namespace

Unmeasured client_unmeasured() {
  Unmeasured u;
  u.gpu = "a load generator is a client: the server's batches and GPU time are on its /metrics";
  u.subrequests = "a client sees whole requests, not the sub-requests inside the server";
  return u;
}

LoadgenResult run_loadgen(const App& app, const std::vector<Arrival>& arrivals,
                          const LoadgenOptions& options) {
  const std::string model = options.model.empty() ? app.name : options.model;
  const std::string path = "/v2/models/" + model + "/infer";
  const ModelMeta meta = metadata_of(options, model);
  const std::vector<int64_t>& shape = meta.input_shape;

  // A few distinct bodies, reused in turn; a request with its own SLO carries it.
  std::mt19937_64 rng(options.seed);
  std::vector<std::string> bodies;
  for (int i = 0; i < std::max(1, options.distinct_inputs); ++i) {
    bodies.push_back(body_for(shape, rng));
  }

  LoadgenResult result(app, options.window_s);
  std::vector<Outcome1> outcomes(arrivals.size());
  const std::vector<double> offsets = offsets_from_first(arrivals);
  const OpenLoopClient client{options.host,      options.port,      options.connections,
                              options.timeout_s, "/v2/health/live", options.progress};
  const OpenLoopStats sent = run_open_loop(
      offsets, client, [&](std::size_t i, httplib::Client& cli, const SinceStart& since_start) {
        const Arrival& a = arrivals[i];
        Outcome1& o = outcomes[i];
        o.sent = offsets[i];
        const std::string& base = bodies[i % bodies.size()];
        const std::string body = a.slo_s > 0 ? with_slo(base, a.slo_s * 1e3) : base;
        httplib::Result res = cli.Post(path, body, "application/json");
        o.finished = since_start();
        classify(app, res, a.slo_s > 0 ? a.slo_s : app.slo, o);
      });
  record_sends(sent, result.stats);

  std::map<int, uint64_t> statuses;
  for (const Outcome1& o : outcomes) {
    result.metrics.on_arrival(o.sent);
    statuses[o.status]++;
    if (o.status == 200 && !o.has_accuracy) {
      result.unmeasured.accuracy = "the server's answers carried no parameters.accuracy";
    }
  }
  for (const Outcome1& o : outcomes) {
    RequestRecord r;
    r.arrival = o.sent;
    r.finish = o.finished;
    r.outcome = o.outcome;
    r.drop_task = o.task;
    r.reason = o.reason;
    r.accuracy = o.accuracy;
    result.metrics.on_request_done(r);
  }
  result.stats.status_counts.assign(statuses.begin(), statuses.end());
  result.stats.emulated = meta.emulated;
  return result;
}

}  // namespace tessera
