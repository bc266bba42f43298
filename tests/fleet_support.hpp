#pragma once

// Helpers shared by the fleet tests (fleet_test.cpp, fleet_profile_test.cpp): an in-process
// `tessera serve --worker` server on loopback (port 0 unless given, the bound port read
// back) and the model specs they build. Each test owns its workers; a Worker is used from
// the test's thread only (its Server has its own threads and contract).

#include <memory>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "serve/server/server.hpp"
#include "serve/server/worker_mode.hpp"

namespace tessera::fleet {

// A zoo model of `arch` serving `variant` on per-item inputs of `input`.
inline ModelSpec zoo(const std::string& variant, const std::string& arch,
                     std::vector<int64_t> input) {
  ModelSpec m;
  m.variant = variant;
  m.arch = arch;
  m.input_shape = std::move(input);
  m.classes = 10;
  m.seed = 7;
  return m;
}

// One `tessera serve --worker` server (in process).
struct Worker {
  ModelsConfig models;
  std::unique_ptr<Server> server;
  int port = 0;
  int grpc_port = -1;
  AccessConfig access;  // the worker's keys (none: open)

  explicit Worker(ModelsConfig m) : models(std::move(m)) {}
  void start(int at_port = 0, bool grpc = false) {
    ServeOptions o;
    o.port = at_port;
    o.http_threads = 2;
    o.warmup = false;
    o.drain_timeout_s = 0.0;  // stop() refuses what is in flight at once, as a crash would
    o.grpc_port = grpc ? 0 : -1;
    o.access = access;
    server = make_worker_server(models, WorkerOptions{8}, o);
    port = server->start();
    grpc_port = server->grpc_port();
  }
  void stop() {
    server->shutdown();
    server.reset();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

// A `remote:` model `variant` over `endpoints` (the backend's model has the same name);
// no periodic health checks: the tests call check_now() themselves.
inline ModelSpec remote_spec(const std::string& variant, std::vector<int64_t> input,
                             std::vector<std::string> endpoints, int retries = 1) {
  ModelSpec m;
  m.variant = variant;
  m.source = ModelSpec::Source::kRemote;
  m.input_shape = std::move(input);
  m.remote.endpoints = std::move(endpoints);
  m.remote.model = variant;
  m.remote.timeout_ms = 5000;
  m.remote.retries = retries;
  m.remote.health_interval_ms = 0;  // the tests trigger checks themselves
  m.remote.health_timeout_ms = 1000;
  return m;
}

}  // namespace tessera::fleet
