#include "server/server.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <set>
#include <stdexcept>

#include "exec/model_factory.hpp"
#include "server/listen_backlog.hpp"
#include "server/server_impl.hpp"
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
      if (m.info().kind == "noop" || m.info().kind == "sleep") continue;
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
      std::shared_ptr<Model> model = load_model(spec);
      spdlog::info(
          "model '{}': {} input {} output {} ({:.0f} ms to load)", name, model->info().kind,
          shape_string(model->info().input_shape), shape_string(model->info().output_shape),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      s.models.add(std::move(spec), std::move(model));
    }
  }

  if (s.options.warmup) warm_up(s.models, deployment, app);

  auto add = [&](std::unique_ptr<Endpoint> ep) {
    s.by_name[ep->name()] = ep.get();
    s.endpoints.push_back(std::move(ep));
  };
  add(std::make_unique<Endpoint>(app.name, app, deployment, profiles, *s.policies, s.models,
                                 s.clock, s.loop, s.metrics, seed, models.torch_threads,
                                 s.options.inline_noop));
  if (s.options.model_endpoints) {
    for (const Hosted& h : hosted) {
      const Variant& v = app.tasks[h.task].variants[static_cast<std::size_t>(h.variant)];
      if (s.by_name.count(v.name)) continue;
      Deployment one;
      one.groups.push_back(WorkerGroup{0, {0}, h.group->segment, h.group->max_batch, 1});
      add(std::make_unique<Endpoint>(v.name, single_model_app(v.name, v, app.slo), one, profiles,
                                     *s.policies, s.models, s.clock, s.loop, s.metrics, seed,
                                     models.torch_threads, s.options.inline_noop));
    }
  }
  s.install_routes();
}

Server::~Server() { shutdown(); }

const ServeOptions& Server::options() const { return impl_->options; }

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
  const int threads =
      s.options.http_threads > 0 ? s.options.http_threads : s.options.max_inflight + 8;
  s.http.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<std::size_t>(threads));
  };
  s.http.set_tcp_nodelay(true);
  s.http.set_payload_max_length(s.options.max_body_bytes);
  s.http.set_keep_alive_max_count(100000);
  s.http.set_keep_alive_timeout(
      std::max<time_t>(1, static_cast<time_t>(s.options.keep_alive_timeout_s)));
  if (s.options.port == 0) {
    s.port = s.http.bind_to_any_port(s.options.host);
  } else {
    s.port = s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1;
  }
  if (s.port <= 0) {
    throw std::runtime_error("cannot listen on " + s.options.host + ":" +
                             std::to_string(s.options.port));
  }
  if (!raise_listen_backlog(s.port, 1024)) {
    spdlog::warn("could not raise the listen backlog of port {}", s.port);
  }
  s.loop.start();
  s.http_thread = std::thread([&s] { s.http.listen_after_bind(); });
  s.started = true;
  spdlog::info("serving {} endpoint(s) on http://{}:{} ({} HTTP threads, max {} in flight)",
               s.endpoints.size(), s.options.host, s.port, threads, s.options.max_inflight);
  return s.port;
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.draining = true;
  if (s.started) {
    const auto waited = [&](double seconds) {
      std::unique_lock lock(s.drain_mutex);
      return s.drained.wait_for(lock, std::chrono::duration<double>(seconds),
                                [&] { return s.in_flight.load() == 0; });
    };
    if (!waited(s.options.drain_timeout_s)) {
      spdlog::warn("shutdown: {} request(s) still in flight after {} s; refusing them",
                   s.in_flight.load(), s.options.drain_timeout_s);
    }
    s.loop.run_sync([&s] {
      for (auto& ep : s.endpoints) ep->refuse_all("the server is shutting down");
    });
    waited(s.options.request_timeout_s);
    s.http.stop();
    if (s.http_thread.joinable()) s.http_thread.join();
  }
  s.loop.stop();
  for (auto& ep : s.endpoints) ep->stop_executors();
  if (s.started) spdlog::info("server stopped");
}

}  // namespace tessera
