#include "serve/server/server.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "models/model_factory.hpp"
#include "serve/fleet/remote_model.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server_impl.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

// A deployed variant served on its own: a one-task app with one worker of the group
// that runs it (the same model object, its own engine and queue).
App single_model_app(const std::string& variant, const Variant& v, Time slo) {
  App app;
  app.name = variant;
  app.slo = slo;
  Task task;
  task.name = variant;
  task.variants.push_back(Variant{variant, v.accuracy, 1.0});
  app.tasks.push_back(std::move(task));
  app.finalize();
  return app;
}

// Runs every model once at each batch size its workers may use: libtorch prepares its
// kernels per input shape, and the first request should not pay for that.
void warm_up(const ModelRegistry& models, const Deployment& deployment, const App& app) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const WorkerGroup& g : deployment.groups) {
    for (int v : g.variants) {
      Model& m = *models.at(app.tasks[g.task].variants[static_cast<std::size_t>(v)].name).model;
      if (m.info().kind == "noop" || m.info().kind == "sleep" || m.info().kind == "faulty" ||
          m.info().kind == kProfileTimedKind || m.info().kind.rfind("remote:", 0) == 0)
        continue;
      FloatTensor zero{
          m.info().input_shape,
          std::vector<float>(static_cast<std::size_t>(shape_numel(m.info().input_shape)))};
      for (int b = 1; b <= g.max_batch; ++b) {
        std::vector<const FloatTensor*> batch(static_cast<std::size_t>(b), &zero);
        m.run(batch);
      }
    }
  }
  spdlog::info(
      "warmed up the models in {:.0f} ms",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

Server::Server(const RunSpec& run, const ModelsConfig& models, ServeOptions options)
    : Server(run.app, run.deployment, run.profiles, run.policies, run.sim.seed, models,
             std::move(options)) {}

Server::Server(const App& app, const Deployment& deployment, const ProfileTable& profiles,
               const PolicyConfig& policies, uint64_t seed, const ModelsConfig& models,
               ServeOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = std::move(options);
  s.policies = std::make_unique<PolicySet>(policies);
  s.live.app = app;
  s.live.profiles = profiles;
  s.live.models = models;
  configure_torch_threads(models.torch_threads);

  // Load each deployed variant's model once.
  struct Hosted {
    TaskId task;
    int variant;
    const WorkerGroup* group;
  };
  std::vector<Hosted> hosted;
  std::set<std::string> seen;
  for (const WorkerGroup& g : deployment.groups) {
    for (int v : g.variants) {
      const std::string& name = app.tasks[g.task].variants[static_cast<std::size_t>(v)].name;
      if (!seen.insert(name).second) continue;
      hosted.push_back(Hosted{g.task, v, &g});
      const auto t0 = std::chrono::steady_clock::now();
      ModelSpec spec = models.spec_for(name);
      std::shared_ptr<Model> model = spec.source == ModelSpec::Source::kRemote
                                         ? std::make_shared<RemoteModel>(spec)
                                         : std::shared_ptr<Model>(load_model(spec));
      spdlog::info(
          "model '{}': {} input {} output {} ({:.0f} ms to load)", name, model->info().kind,
          shape_string(model->info().input_shape), shape_string(model->info().output_shape),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (model->info().kind == kProfileTimedKind) {
        spdlog::warn(
            "model '{}': EMULATED (profile-timed): no real model runs; each batch takes the "
            "profiled latency of its size on its worker's segment and returns its input",
            name);
      }
      s.models.add(std::move(spec), std::move(model));
    }
  }
  std::vector<std::pair<std::string, std::string>> kinds;
  for (const auto& [name, lm] : s.models.all()) kinds.emplace_back(name, lm.model->info().kind);
  s.metrics.set_models(std::move(kinds));

  if (s.options.warmup) warm_up(s.models, deployment, app);

  auto add = [&](std::unique_ptr<Endpoint> ep) {
    s.by_name[ep->name()] = ep.get();
    s.endpoints.push_back(std::move(ep));
  };
  if (s.options.app_endpoint) {
    add(std::make_unique<Endpoint>(app.name, app, deployment, profiles, *s.policies, s.models,
                                   s.clock, s.loop, s.metrics, seed, models.torch_threads,
                                   s.options.inline_noop, s.options.model_timeout_s));
  }
  if (s.options.model_endpoints) {
    for (const Hosted& h : hosted) {
      const Variant& v = app.tasks[h.task].variants[static_cast<std::size_t>(h.variant)];
      if (s.by_name.count(v.name)) continue;
      Deployment one;
      one.groups.push_back(WorkerGroup{0, {0}, h.group->segment, h.group->max_batch, 1});
      add(std::make_unique<Endpoint>(v.name, single_model_app(v.name, v, app.slo), one, profiles,
                                     *s.policies, s.models, s.clock, s.loop, s.metrics, seed,
                                     models.torch_threads, s.options.inline_noop,
                                     s.options.model_timeout_s));
    }
  }
}

Server::~Server() { shutdown(); }

const ServeOptions& Server::options() const { return impl_->options; }
int Server::grpc_port() const { return impl_->grpc_port; }

void Server::check_backends_now() {
  for (const auto& [name, lm] : impl_->models.all()) {
    if (auto* remote = dynamic_cast<RemoteModel*>(lm.model.get())) remote->check_now();
  }
}

std::vector<std::string> Server::endpoint_names() const {
  std::vector<std::string> names;
  for (const auto& ep : impl_->endpoints) names.push_back(ep->name());
  return names;
}

int Server::in_flight() const { return impl_->in_flight.load(); }

bool Server::wait_until_in_flight(int n, double timeout_s) const {
  Impl& s = *impl_;
  s.watchers.fetch_add(1);
  std::unique_lock lock(s.drain_mutex);
  const bool ok = s.drained.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                     [&] { return s.in_flight.load() >= n; });
  lock.unlock();
  s.watchers.fetch_sub(1);
  return ok;
}

int Server::start() {
  Impl& s = *impl_;
  if (s.started) return s.port;
  HttpLimits limits;
  limits.threads = s.options.http_threads > 0
                       ? s.options.http_threads
                       : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 8);
  limits.max_connections = std::max<std::size_t>(1, s.options.max_connections);
  limits.header_limit = s.options.max_header_bytes;
  limits.body_limit = s.options.max_body_bytes;
  limits.body_budget = std::max(s.options.body_budget_bytes, s.options.max_body_bytes);
  limits.read_timeout_s = s.options.read_timeout_s;
  limits.idle_timeout_s = s.options.keep_alive_timeout_s;
  limits.write_timeout_s = s.options.read_timeout_s;
  s.http = std::make_unique<HttpFrontEnd>(
      limits, [&s](HttpRequest&& req, Responder respond) { s.handle(std::move(req), respond); },
      [&s](int status) { s.metrics.http_error(status); },
      [](const std::string& message) { return error_body(message); });
  s.loop.start();
  s.port = s.http->start(s.options.host, s.options.port);
  if (s.options.grpc_port >= 0) {
    s.grpc = std::make_unique<GrpcFrontEnd>(s);
    s.grpc_port = s.grpc->start(s.options.host, s.options.grpc_port);
    spdlog::info("serving gRPC (GRPCInferenceService) on {}:{}", s.options.host, s.grpc_port);
  }
  s.started = true;
  spdlog::info(
      "serving {} endpoint(s) on http://{}:{} ({} HTTP threads, max {} in flight, {} "
      "connections)",
      s.endpoints.size(), s.options.host, s.port, limits.threads, s.options.max_inflight,
      limits.max_connections);
  return s.port;
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.draining = true;
  if (s.started) {
    std::unique_lock lock(s.drain_mutex);
    if (!s.drained.wait_for(lock, std::chrono::duration<double>(s.options.drain_timeout_s),
                            [&] { return s.in_flight.load() == 0; })) {
      spdlog::warn("shutdown: {} request(s) still in flight after {} s; refusing them",
                   s.in_flight.load(), s.options.drain_timeout_s);
    }
    lock.unlock();
    s.loop.run_sync([&s] {
      for (auto& ep : s.endpoints) ep->refuse_all("the server is shutting down");
    });
  }
  // Requests posted to the loop but not yet admitted are dropped with it; their
  // Responders answer 503 as they go, and the front end sends those answers.
  s.loop.stop();
  if (s.http) s.http->stop(std::min(2.0, s.options.keep_alive_timeout_s));
  if (s.grpc) s.grpc->stop(2.0);
  // A model call still running (stuck) is left behind after at most a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (auto& ep : s.endpoints) ep->stop_executors(deadline);
  if (s.started) spdlog::info("server stopped");
}

}  // namespace tessera
