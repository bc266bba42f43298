#pragma once

// In-process `tessera serve` instances for the robustness campaign: one task on one
// worker of a zoo test model (noop, sleep or faulty), on 127.0.0.1 and a free port.

#include <memory>
#include <string>
#include <vector>

#include "serve/server/server.hpp"
#include "test_support.hpp"

namespace tessera::robustness {

struct OneTask {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  PolicyConfig policies;
  ModelsConfig models;
  ServeOptions options;

  // `arch`: noop, sleep or faulty; `latency_ms`: sleep's time per batch, faulty's stall.
  explicit OneTask(const std::string& arch = "noop", double latency_ms = 0.0, int max_batch = 4,
                   double slo_s = 5.0) {
    app.name = "app";
    app.slo = slo_s;
    app.tasks = {testing::make_task("work")};
    app.finalize();
    ModelSpec m;
    m.variant = "work";
    m.arch = arch;
    m.input_shape = {4};
    m.latency_ms = latency_ms;
    models.models = {m};
    deployment.groups.push_back(WorkerGroup{0, {0}, "cpu", max_batch, 1});
    testing::add_affine(profiles, "work", std::max(latency_ms, 0.1), 0.01, max_batch, "cpu");
    options.port = 0;
    options.warmup = false;
    options.model_endpoints = false;
    options.drain_timeout_s = 2.0;
    options.keep_alive_timeout_s = 2.0;
  }
  std::unique_ptr<Server> start(int& port) {
    auto server = std::make_unique<Server>(app, deployment, profiles, policies, 1, models, options);
    port = server->start();
    return server;
  }
};

// A valid inference body for the [4] input; `first` is the first value.
inline std::string infer_body(float first = 0.5f, const std::string& id = "") {
  std::string b = "{";
  if (!id.empty()) b += "\"id\":\"" + id + "\",";
  return b + R"("inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[)" +
         std::to_string(first) + ",2,3,4]}]}";
}

// The value of one Prometheus series line (`name{labels}` exactly), or -1.
inline double metric(const std::string& text, const std::string& series) {
  const std::size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// The sum of every line whose series starts with `prefix`.
inline double metric_sum(const std::string& text, const std::string& prefix) {
  double total = 0;
  std::size_t at = 0;
  while ((at = text.find("\n" + prefix, at)) != std::string::npos) {
    const std::size_t sp = text.find(' ', at + 1);
    const std::size_t nl = text.find('\n', at + 1);
    if (sp != std::string::npos && sp < nl) total += std::stod(text.substr(sp + 1, nl - sp - 1));
    at = nl == std::string::npos ? text.size() : nl;
  }
  return total;
}

}  // namespace tessera::robustness
