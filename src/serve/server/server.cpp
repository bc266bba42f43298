#include "serve/server/server.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "models/model_factory.hpp"
#include "serve/fleet/remote_model.hpp"
#include "serve/http/front_end.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/metrics/gpu_metrics.hpp"
#include "serve/runtime/steady_clock.hpp"
#include "serve/server/grpc_frontend.hpp"
#include "serve/server/http_routes.hpp"
#include "serve/server/infer_call.hpp"
#include "serve/server/model_repository.hpp"
#include "serve/server/triton_metrics.hpp"
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
  counter("tessera_http_connections_shed_reading_total",
          "Connections still reading a request closed to admit a new one (a client at "
          "--max-client-connections, or the busiest client at --max-connections).",
          h.shed_reading);
  counter("tessera_http_client_refused_total",
          "Connections or request bodies answered 503 at a client's own limit "
          "(--max-client-connections, --client-body-budget).",
          h.refused_client);
  counter("tessera_http_timeouts_total",
          "Connections closed by the read, keep-alive or write deadline.", h.timed_out);
  counter("tessera_http_requests_total", "HTTP requests read whole.", h.requests);
  counter("tessera_http_tls_handshake_failures_total",
          "TLS handshakes that failed, were shed or passed --header-timeout (--http-tls-cert).",
          h.tls_failed);
  return out;
}

}  // namespace

// The server's parts. Only this file sees them: the KServe routes, gRPC, inference and
// reconfiguration each get the parts they use.
struct Server::Impl {
  ServeOptions options;
  SteadyClock clock;
  ServerMetrics metrics;
  ModelRegistry models;
  std::unique_ptr<PolicySet> policies;
  EventLoop loop{clock};
  // Before the endpoints: a request's admission ticket may be released as they go.
  std::unique_ptr<FrontEnd> front;
  ModelRepository repository;
  std::unique_ptr<KServeInference> inference;
  std::unique_ptr<LiveReconfiguration> live;
  std::unique_ptr<GrpcFrontEnd> grpc;  // --grpc-port (declared last: destroyed first)
  int grpc_port = -1;
  bool started = false;
  bool stopped = false;

  explicit Impl(ServeOptions o);
  HttpResponse metrics_text();
};

Server::Impl::Impl(ServeOptions o) : options(std::move(o)) {
  HttpLimits limits;
  limits.threads = options.http_threads > 0
                       ? options.http_threads
                       : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 8);
  limits.max_connections = std::max<std::size_t>(1, options.max_connections);
  limits.header_limit = options.max_header_bytes;
  limits.body_limit = options.max_body_bytes;
  limits.body_budget = std::max(options.body_budget_bytes, options.max_body_bytes);
  limits.max_client_connections = std::max<std::size_t>(1, options.max_client_connections);
  limits.client_body_budget = options.client_body_budget_bytes;
  limits.header_timeout_s = options.header_timeout_s;
  limits.read_timeout_s = options.read_timeout_s;
  limits.idle_timeout_s = options.keep_alive_timeout_s;
  limits.write_timeout_s = options.read_timeout_s;
  front = std::make_unique<FrontEnd>(
      limits, options.max_inflight, [this](int status) { metrics.http_error(status); },
      [](const std::string& message) { return error_body(message); });
  front->set_access(AccessControl(options.access));
  front->set_tls(options.http_tls);
  inference = std::make_unique<KServeInference>(repository, front->admission(), metrics);
}

HttpResponse Server::Impl::metrics_text() {
  const auto& endpoints = repository.endpoints();
  std::vector<TritonModelRow> rows(endpoints.size());
  std::vector<std::pair<std::string, const RemoteModel*>> remote;
  // On the loop: the engines' queues, and the registry (a reconfiguration changes it there).
  loop.run_sync([&] {
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
      Endpoint& ep = *endpoints[i];
      metrics.set_queue_lengths(ep.metrics(), ep.queue_lengths());
      rows[i].pending = ep.waiting();
    }
    for (const auto& [name, lm] : models.all()) {
      if (auto* m = dynamic_cast<const RemoteModel*>(lm.model.get())) remote.emplace_back(name, m);
    }
  });
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    Endpoint& ep = *endpoints[i];
    rows[i].model = ep.name();
    rows[i].version = kModelVersion;
    rows[i].stats = repository.stats().get(ep.name());
    rows[i].executions = metrics.executions(ep.metrics());
  }
  metrics.set_in_flight(front->admission().in_flight());
  std::string text = metrics.render();
  if (front->started()) text += http_metrics(front->stats());
  int replaced = 0;
  for (const auto& ep : endpoints) replaced += ep->workers_replaced();
  text +=
      "# HELP tessera_workers_replaced_total Worker threads abandoned after a model call "
      "overran --model-timeout, and replaced.\n";
  text += "# TYPE tessera_workers_replaced_total counter\n";
  text += "tessera_workers_replaced_total " + std::to_string(replaced) + "\n";
  text += render_triton_metrics(rows);
  text += render_remote_metrics(remote);
  text += render_process_metrics();
  text += render_gpu_metrics(process_gpu_sampler());
  text += live->render_metrics();
  return HttpResponse(200, std::move(text), "text/plain; version=0.0.4");
}

Server::Server(const RunSpec& run, const ModelsConfig& models, ServeOptions options)
    : Server(run.app, run.deployment, run.profiles, run.policies, run.sim.seed, models,
             std::move(options)) {}

Server::Server(const App& app, const Deployment& deployment, const ProfileTable& profiles,
               const PolicyConfig& policies, uint64_t seed, const ModelsConfig& models,
               ServeOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& s = *impl_;
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

  if (s.options.app_endpoint) {
    s.repository.add(
        std::make_unique<Endpoint>(app.name, app, deployment, profiles, *s.policies, s.models,
                                   s.clock, s.loop, s.metrics, seed, models.torch_threads,
                                   s.options.inline_noop, s.options.model_timeout_s),
        true);
  }
  if (s.options.model_endpoints) {
    for (const Hosted& h : hosted) {
      const Variant& v = app.tasks[h.task].variants[static_cast<std::size_t>(h.variant)];
      if (s.repository.has(v.name)) continue;
      Deployment one;
      one.groups.push_back(WorkerGroup{0, {0}, h.group->segment, h.group->max_batch, 1});
      s.repository.add(std::make_unique<Endpoint>(
          v.name, single_model_app(v.name, v, app.slo), one, profiles, *s.policies, s.models,
          s.clock, s.loop, s.metrics, seed, models.torch_threads, s.options.inline_noop,
          s.options.model_timeout_s));
    }
  }
  s.live = std::make_unique<LiveReconfiguration>(app, profiles, models, s.repository.application(),
                                                 s.models, s.loop, s.metrics);
  // The bounds never refuse what the server started with.
  int instances = 0;
  for (const WorkerGroup& g : deployment.groups) instances += g.count;
  s.live->set_bounds(std::max(s.options.max_instances, instances),
                     std::max(s.options.max_models, static_cast<int>(s.models.all().size())));
  add_kserve_routes(
      s.front->routes(),
      KServeRoutes{*s.inference, s.repository, s.metrics, s.front->admission(),
                   [&s] { return s.metrics_text(); },
                   [&s](const HttpRequest& request) { return s.live->route(request); }});
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
  for (const auto& ep : impl_->repository.endpoints()) names.push_back(ep->name());
  return names;
}

int Server::in_flight() const { return impl_->front->admission().in_flight(); }

bool Server::wait_until_in_flight(int n, double timeout_s) const {
  return impl_->front->admission().wait_until_in_flight(n, timeout_s);
}

ReconfigureResult Server::reconfigure(const Deployment& target, const ProfileTable* profiles,
                                      const std::string& note) {
  return impl_->live->reconfigure(target, profiles, note);
}

DeploymentStatus Server::deployment_status() const { return impl_->live->status(); }

int Server::start() {
  Impl& s = *impl_;
  if (s.started) return s.front->port();
  s.loop.start();
  const int port = s.front->start(s.options.host, s.options.port);
  if (s.options.grpc_port >= 0) {
    s.grpc = std::make_unique<GrpcFrontEnd>(*s.inference, s.repository, s.metrics,
                                            s.front->admission(), s.options.max_body_bytes,
                                            AccessControl(s.options.access), s.options.grpc_tls);
    s.grpc_port = s.grpc->start(s.options.host, s.options.grpc_port);
    spdlog::info("serving gRPC (GRPCInferenceService) on {}:{}{}", s.options.host, s.grpc_port,
                 s.options.grpc_tls.cert_file.empty()
                     ? ""
                     : (s.options.grpc_tls.client_ca_file.empty()
                            ? " over TLS"
                            : " over TLS, client certificates required"));
  }
  s.started = true;
  s.live->set_serving(true);
  spdlog::info("serving {} endpoint(s) on http://{}:{} (max {} in flight, {} connections)",
               s.repository.endpoints().size(), s.options.host, port, s.options.max_inflight,
               s.options.max_connections);
  for (const auto& ep : s.repository.endpoints()) {
    spdlog::info("  POST /v2/models/{}/infer", ep->name());
  }
  if (s.repository.application() != nullptr) {
    spdlog::info(
        "  GET /v2/tessera/deployment (the live deployment; POST one to reconfigure{})",
        s.options.access.control_enabled ? ", with a control key" : ": needs --allow-control");
  }
  spdlog::info("access: inference {}; control endpoints {} (docs/security.md)",
               s.options.access.inference_keys.empty() ? "open (no API key)" : "needs an API key",
               s.options.access.control_enabled ? "enabled, need a control key" : "disabled");
  return port;
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.live->set_serving(false);
  if (s.started) {
    if (!s.front->drain(s.options.drain_timeout_s)) {
      spdlog::warn("shutdown: {} request(s) still in flight after {} s; refusing them",
                   s.front->admission().in_flight(), s.options.drain_timeout_s);
    }
    s.loop.run_sync([&s] {
      for (auto& ep : s.repository.endpoints()) ep->refuse_all("the server is shutting down");
    });
  } else {
    s.front->drain(0.0);  // refuse whatever comes
  }
  // Requests posted to the loop but not yet admitted are dropped with it; their
  // Responders answer 503 as they go, and the front end sends those answers.
  s.loop.stop();
  s.front->stop(std::min(2.0, s.options.keep_alive_timeout_s));
  if (s.grpc) s.grpc->stop(2.0);
  // A model call still running (stuck) is left behind after at most a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (auto& ep : s.repository.endpoints()) ep->stop_executors(deadline);
  if (s.started) {
    // The admission ledger at exit: every request admitted before (or during) the drain
    // has had its answer given, or is counted here as never answered.
    const Admission& a = s.front->admission();
    spdlog::info("shutdown ledger: {} requests admitted, {} answered, {} never answered",
                 a.admitted_total(), a.released_total(), a.admitted_total() - a.released_total());
    spdlog::info("server stopped");
  }
}

}  // namespace tessera
