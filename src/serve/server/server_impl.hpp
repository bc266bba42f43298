#pragma once

// Internal to the server: the state behind Server, shared by server.cpp (lifecycle) and
// http_routes.cpp (request handling).

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "serve/http/http_frontend.hpp"
#include "serve/metrics/server_metrics.hpp"
#include "serve/runtime/endpoint.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/model_registry.hpp"
#include "serve/runtime/steady_clock.hpp"
#include "serve/server/grpc_frontend.hpp"
#include "serve/server/live_deployment.hpp"
#include "serve/server/model_stats.hpp"
#include "serve/server/server.hpp"

namespace tessera {

struct Server::Impl {
  ServeOptions options;
  SteadyClock clock;
  ServerMetrics metrics;
  ModelRegistry models;
  std::unique_ptr<PolicySet> policies;
  EventLoop loop{clock};
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  std::map<std::string, Endpoint*> by_name;

  std::unique_ptr<HttpFrontEnd> http;
  int port = 0;
  bool started = false;
  bool stopped = false;

  // Admission and drain.
  std::atomic<int> in_flight{0};
  std::atomic<bool> draining{false};
  std::mutex drain_mutex;
  std::condition_variable drained;  // signalled when in_flight changes and someone waits
  std::atomic<int> watchers{0};

  // The model repository extension: endpoints unloaded by POST .../unload (they answer
  // 400 and are not ready until loaded again), and the statistics extension's counts.
  mutable std::mutex repository_mutex;
  std::set<std::string> unloaded;
  std::atomic<bool> any_unloaded{false};  // !unloaded.empty(): loaded() skips the lock
  ModelStatsTable stats;
  std::unique_ptr<GrpcFrontEnd> grpc;  // --grpc-port (declared last: destroyed first)
  int grpc_port = -1;
  bool loaded(const std::string& name) const {
    if (!any_unloaded.load(std::memory_order_acquire)) return true;
    std::lock_guard lock(repository_mutex);
    return unloaded.count(name) == 0;
  }
  // The model repository extension's load / unload (any thread).
  void set_loaded(const std::string& name, bool loaded) {
    std::lock_guard lock(repository_mutex);
    if (loaded) {
      unloaded.erase(name);
    } else {
      unloaded.insert(name);
    }
    any_unloaded.store(!unloaded.empty(), std::memory_order_release);
  }

  Endpoint* find(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  }
  // http_routes.cpp: answers one request (on an HTTP I/O thread).
  void handle(HttpRequest&& request, Responder respond);

  // Live reconfiguration (server_reconfigure.cpp): Server::reconfigure and
  // Server::deployment_status, and GET / POST /v2/tessera/deployment.
  LiveDeployment live;
  ReconfigureResult reconfigure(const Deployment& target, const ProfileTable* profiles,
                                const std::string& note);
  DeploymentStatus deployment_status();
  HttpResponse deployment_route(const HttpRequest& request);
};

}  // namespace tessera
