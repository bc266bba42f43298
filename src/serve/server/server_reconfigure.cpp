// The live reconfiguration of an app server and its admin route (live_deployment.hpp).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/spec_node.hpp"
#include "models/model_factory.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/live_deployment.hpp"
#include "spec/deployment_spec.hpp"

namespace tessera {
namespace {

using nlohmann::json;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Runs a freshly loaded model once at each batch size, off the request path, so that the
// first batch on a new instance does not pay for libtorch's per-shape preparation.
void warm(Model& m, int max_batch) {
  const std::string& k = m.info().kind;
  if (k == "noop" || k == "sleep" || k == "faulty" || k == kProfileTimedKind) return;
  FloatTensor zero{m.info().input_shape,
                   std::vector<float>(static_cast<std::size_t>(shape_numel(m.info().input_shape)))};
  for (int b = 1; b <= max_batch; ++b) {
    std::vector<const FloatTensor*> batch(static_cast<std::size_t>(b), &zero);
    m.run(batch);
  }
}

}  // namespace

std::string deployment_summary(const App& app, const Deployment& deployment) {
  std::string out;
  for (const WorkerGroup& g : deployment.groups) {
    if (!out.empty()) out += "; ";
    out += g.task < app.tasks.size() ? app.tasks[g.task].name : "task" + std::to_string(g.task);
    out += ": ";
    for (std::size_t i = 0; i < g.variants.size(); ++i) {
      const int v = g.variants[i];
      if (i) out += "|";
      out += g.task < app.tasks.size() && v >= 0 &&
                     static_cast<std::size_t>(v) < app.tasks[g.task].variants.size()
                 ? app.tasks[g.task].variants[static_cast<std::size_t>(v)].name
                 : "#" + std::to_string(v);
    }
    out += fmt::format("@{} x{} b{}", g.segment, g.count, g.max_batch);
  }
  return out;
}

LiveReconfiguration::LiveReconfiguration(App app, ProfileTable profiles, ModelsConfig models,
                                         Endpoint* application, ModelRegistry& registry,
                                         EventLoop& loop, ServerMetrics& metrics)
    : app_(std::move(app)),
      profiles_(std::move(profiles)),
      models_(std::move(models)),
      application_(application),
      registry_(registry),
      loop_(loop),
      metrics_(metrics) {}

void LiveReconfiguration::set_serving(bool serving) {
  if (serving) started_.store(true);
  serving_.store(serving);
}

void LiveReconfiguration::record(ReconfigurationEvent event) {
  std::lock_guard lock(mutex_);
  ++applied_;
  last_applied_unix_s_ = event.unix_s;
  history_.push_back(std::move(event));
  while (history_.size() > kHistory) history_.pop_front();
}

ReconfigureResult LiveReconfiguration::reconfigure(const Deployment& target,
                                                   const ProfileTable* profiles,
                                                   const std::string& note) {
  const auto t0 = std::chrono::steady_clock::now();
  ReconfigureResult r;
  const auto done = [&] {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.error.empty()) spdlog::error("reconfiguration refused: {}", r.error);
    return r;
  };
  std::lock_guard apply(apply_mutex_);
  if (!serving_.load() || application_ == nullptr) {
    r.error = application_ == nullptr ? "the server serves no application (worker mode)"
                                      : "the server is not serving (not started, or shutting down)";
    return done();
  }
  Endpoint& ep = *application_;
  const App& app = app_;

  // Models the target needs that are not loaded yet: loaded and warmed up here, off the
  // event loop, while the running deployment keeps serving. The registry only changes on
  // the loop, under apply_mutex, so reading it here is safe.
  std::vector<std::pair<ModelSpec, std::shared_ptr<Model>>> fresh;
  std::set<std::string> seen;
  try {
    for (const WorkerGroup& g : target.groups) {
      if (g.task >= app.tasks.size()) continue;  // Endpoint::reconfigure names the problem
      for (int v : g.variants) {
        if (v < 0 || static_cast<std::size_t>(v) >= app.tasks[g.task].variants.size()) continue;
        const std::string& name = app.tasks[g.task].variants[static_cast<std::size_t>(v)].name;
        if (registry_.has(name) || !seen.insert(name).second) continue;
        ModelSpec spec = models_.spec_for(name);
        std::shared_ptr<Model> model = load_model(spec);
        warm(*model, g.max_batch);
        spdlog::info("reconfiguration: loaded model '{}' ({})", name, model->info().kind);
        fresh.emplace_back(std::move(spec), std::move(model));
      }
    }
  } catch (const std::exception& e) {
    r.error = e.what();
    return done();
  }
  r.models_loaded = static_cast<int>(fresh.size());

  // The switch: one step on the loop.
  std::string error;
  double switch_ms = 0.0;
  const ProfileTable& table = profiles != nullptr ? *profiles : profiles_;
  const bool ran = loop_.run_sync([&] {
    const auto a = std::chrono::steady_clock::now();
    try {
      for (auto& [spec, model] : fresh) registry_.add(std::move(spec), std::move(model));
      std::tie(r.started, r.stopped) = ep.reconfigure(target, table);
    } catch (const std::exception& e) {
      error = e.what();
    }
    switch_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
  });
  r.switch_ms = switch_ms;
  if (!ran) error = "the server stopped before the reconfiguration ran";
  if (!error.empty()) {
    r.error = error;
    return done();
  }
  r.applied = true;
  if (!fresh.empty()) {
    std::vector<std::pair<std::string, std::string>> kinds;
    loop_.run_sync([&] {
      for (const auto& [name, lm] : registry_.all())
        kinds.emplace_back(name, lm.model->info().kind);
    });
    metrics_.set_models(std::move(kinds));
  }
  if (r.started + r.stopped > 0) {
    ReconfigurationEvent event;
    event.unix_s = unix_now();
    event.started = r.started;
    event.stopped = r.stopped;
    event.summary = deployment_summary(app, target);
    event.note = note;
    spdlog::info("reconfigured '{}': +{} / -{} instances ({} models loaded, switch {:.2f} ms): {}",
                 app.name, r.started, r.stopped, r.models_loaded, r.switch_ms, event.summary);
    record(std::move(event));
  }
  return done();
}

DeploymentStatus LiveReconfiguration::status() {
  DeploymentStatus st;
  st.app = app_.name;
  if (application_ != nullptr) {
    Endpoint& ep = *application_;
    const auto read = [&] {
      st.deployment = ep.live_deployment(&st.group_batches);
      st.arrivals = ep.arrivals();
    };
    // Before the server starts no loop thread runs: read here.
    if (!loop_.run_sync(read) && !started_.load()) read();
  }
  std::lock_guard lock(mutex_);
  st.reconfigurations = applied_;
  st.last_applied_unix_s = last_applied_unix_s_;
  st.history.assign(history_.begin(), history_.end());
  return st;
}

std::string LiveReconfiguration::render_metrics() const {
  std::lock_guard lock(mutex_);
  std::string out;
  out +=
      "# HELP tessera_reconfigurations_total Live reconfigurations applied (new deployments).\n"
      "# TYPE tessera_reconfigurations_total counter\n";
  out += "tessera_reconfigurations_total " + std::to_string(applied_) + "\n";
  out +=
      "# HELP tessera_last_reconfiguration_timestamp_seconds Unix time of the last one (0: "
      "none).\n"
      "# TYPE tessera_last_reconfiguration_timestamp_seconds gauge\n";
  out += fmt::format("tessera_last_reconfiguration_timestamp_seconds {:.3f}\n",
                     std::max(0.0, last_applied_unix_s_));
  return out;
}

HttpResponse LiveReconfiguration::route(const HttpRequest& req) {
  if (req.method == "POST") {
    Deployment target;
    std::string note = "POST /v2/tessera/deployment";
    try {
      const SpecNode doc = SpecNode::load_string(req.body, "the request body");
      target = parse_deployment(doc, app_, profiles_, nullptr);
    } catch (const std::exception& e) {
      return HttpResponse(400, error_body(e.what()));
    }
    const ReconfigureResult r = reconfigure(target, nullptr, note);
    if (!r.applied) return HttpResponse(400, error_body("reconfiguration refused: " + r.error));
    return HttpResponse(200, dump_json(json{{"applied", true},
                                            {"started", r.started},
                                            {"stopped", r.stopped},
                                            {"models_loaded", r.models_loaded},
                                            {"switch_ms", r.switch_ms},
                                            {"seconds", r.seconds}}));
  }
  if (req.method != "GET") return HttpResponse(405, error_body("use GET or POST"));
  const DeploymentStatus st = status();
  json groups = json::array();
  for (std::size_t i = 0; i < st.deployment.groups.size(); ++i) {
    const WorkerGroup& g = st.deployment.groups[i];
    json variants = json::array();
    for (int v : g.variants)
      variants.push_back(app_.tasks[g.task].variants[static_cast<std::size_t>(v)].name);
    groups.push_back({{"task", app_.tasks[g.task].name},
                      {"variants", variants},
                      {"segment", g.segment},
                      {"max_batch", g.max_batch},
                      {"count", g.count},
                      {"batch_timeout_ms", g.batch_timeout >= 0 ? g.batch_timeout * 1e3 : -1.0},
                      {"batches", i < st.group_batches.size() ? st.group_batches[i] : 0}});
  }
  json history = json::array();
  for (const ReconfigurationEvent& e : st.history) {
    history.push_back({{"unix_s", e.unix_s},
                       {"started", e.started},
                       {"stopped", e.stopped},
                       {"deployment", e.summary},
                       {"note", e.note}});
  }
  return HttpResponse(200, dump_json(json{{"app", st.app},
                                          {"summary", deployment_summary(app_, st.deployment)},
                                          {"groups", groups},
                                          {"arrivals", st.arrivals},
                                          {"reconfigurations", st.reconfigurations},
                                          {"last_reconfiguration_unix_s", st.last_applied_unix_s},
                                          {"history", history}}));
}

}  // namespace tessera
