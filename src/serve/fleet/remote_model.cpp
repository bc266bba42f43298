#include "serve/fleet/remote_model.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>

#include "serve/http/access.hpp"
#include "serve/metrics/prometheus.hpp"

namespace tessera {

RemoteModel::RemoteModel(const ModelSpec& spec,
                         std::vector<std::unique_ptr<RemoteTransport>> transports)
    : spec_(spec) {
  const RemoteSpec& r = spec_.remote;
  if (!transports.empty() && transports.size() != r.endpoints.size()) {
    throw std::invalid_argument("remote model '" + spec.variant +
                                "': " + std::to_string(transports.size()) + " transports for " +
                                std::to_string(r.endpoints.size()) + " endpoints");
  }
  // The workers' key (read once, here; a worker started with keys refuses calls without).
  std::string key;
  try {
    if (transports.empty()) key = read_credential(r.api_key_file, r.api_key_env);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("remote model '" + spec.variant + "': its workers' key: " + e.what());
  }
  backends_.resize(r.endpoints.size());
  for (std::size_t i = 0; i < r.endpoints.size(); ++i) {
    Backend& b = backends_[i];
    b.endpoint = r.endpoints[i];
    b.stats.endpoint = b.endpoint;
    b.transport = !transports.empty() ? std::move(transports[i])
                  : r.protocol == RemoteSpec::Protocol::kGrpc
                      ? make_grpc_transport(b.endpoint, r, key)
                      : make_http_transport(b.endpoint, r, key);
  }
  info_.name = spec.variant;
  info_.kind = std::string("remote:") +
               (r.protocol == RemoteSpec::Protocol::kGrpc ? "grpc" : "http") + ":" + r.model;
  info_.input_shape = spec.input_shape;
  check_now();
  if (!r.output.empty()) {
    info_.output_shape = r.output;
  } else {
    std::string errors;
    for (Backend& b : backends_) {
      try {
        info_.output_shape = b.transport->output_shape(r.output_name);
        break;
      } catch (const std::exception& e) {
        errors += std::string(errors.empty() ? "" : "; ") + e.what();
      }
    }
    if (info_.output_shape.empty()) {
      throw std::runtime_error("remote model '" + spec.variant +
                               "': could not learn its output shape from any backend (" + errors +
                               "); start a backend or give remote.output");
    }
  }
  if (r.health_interval_ms > 0) health_ = std::thread([this] { health_loop(); });
}

RemoteModel::~RemoteModel() {
  {
    std::lock_guard lock(health_mutex_);
    stopping_ = true;
  }
  health_cv_.notify_all();
  if (health_.joinable()) health_.join();
}

void RemoteModel::health_loop() {
  const auto period =
      std::chrono::microseconds(static_cast<int64_t>(spec_.remote.health_interval_ms * 1000.0));
  std::unique_lock lock(health_mutex_);
  while (!stopping_) {
    if (health_cv_.wait_for(lock, period, [this] { return stopping_; })) break;
    lock.unlock();
    check_now();
    lock.lock();
  }
}

void RemoteModel::check_now() {
  std::vector<std::future<std::pair<bool, std::string>>> checks;
  for (Backend& b : backends_) {
    RemoteTransport* t = b.transport.get();
    checks.push_back(std::async(std::launch::async, [t] {
      std::string why;
      const bool ok = t->ready(why);
      return std::make_pair(ok, why);
    }));
  }
  for (std::size_t i = 0; i < checks.size(); ++i) {
    auto [ok, why] = checks[i].get();
    mark(static_cast<int>(i), ok, why);
  }
}

void RemoteModel::mark(int index, bool up, const std::string& why) {
  std::lock_guard lock(mutex_);
  Backend& b = backends_[static_cast<std::size_t>(index)];
  if (b.up != up) {
    if (up) {
      spdlog::info("remote model '{}': backend {} is back in service", spec_.variant, b.endpoint);
    } else {
      spdlog::warn("remote model '{}': backend {} is out of service: {}", spec_.variant, b.endpoint,
                   why);
    }
  }
  b.up = up;
  b.stats.up = up;
  if (!up) b.stats.last_error = why;
}

std::vector<RemoteBackendStats> RemoteModel::backends() const {
  std::lock_guard lock(mutex_);
  std::vector<RemoteBackendStats> out;
  for (const Backend& b : backends_) out.push_back(b.stats);
  return out;
}

int RemoteModel::pick(const std::vector<int>& tried) {
  std::lock_guard lock(mutex_);
  int best = -1;
  const std::size_t n = backends_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    const Backend& b = backends_[i];
    if (!b.up || std::find(tried.begin(), tried.end(), static_cast<int>(i)) != tried.end()) {
      continue;
    }
    if (best < 0 || b.in_flight < backends_[static_cast<std::size_t>(best)].in_flight) {
      best = static_cast<int>(i);
    }
  }
  if (best >= 0) {
    next_ = (static_cast<std::size_t>(best) + 1) % n;
    Backend& b = backends_[static_cast<std::size_t>(best)];
    ++b.in_flight;
    ++b.stats.requests;
    if (!tried.empty()) ++b.stats.redispatches;
  }
  return best;
}

std::vector<FloatTensor> RemoteModel::run(std::span<const FloatTensor* const> inputs) {
  if (inputs.empty()) return {};
  for (const FloatTensor* t : inputs) {
    if (t->shape != info_.input_shape) {
      throw std::runtime_error("remote model '" + info_.name + "': an input of shape " +
                               shape_string(t->shape) + ", expected " +
                               shape_string(info_.input_shape));
    }
  }
  const std::string id = info_.name + "-" + std::to_string(calls_.fetch_add(1));
  RemoteExpect expect;
  expect.output_name = spec_.remote.output_name;
  expect.output_shape = info_.output_shape;
  expect.batch = inputs.size();
  std::vector<int> tried;
  std::string reasons;
  const int attempts = 1 + spec_.remote.retries;
  for (int a = 0; a < attempts; ++a) {
    const int i = pick(tried);
    if (i < 0) break;
    tried.push_back(i);
    Backend& b = backends_[static_cast<std::size_t>(i)];
    expect.backend = b.endpoint;
    RemoteCall call = b.transport->infer(inputs, id, expect);
    {
      std::lock_guard lock(mutex_);
      --b.in_flight;
      if (call.kind != RemoteCall::Kind::kOk) {
        ++b.stats.failures;
        b.stats.last_error = call.detail;
      }
    }
    if (call.kind == RemoteCall::Kind::kOk) return std::move(call.outputs);
    std::string detail = call.detail;
    const std::string named = "backend " + b.endpoint + ": ";
    if (detail.rfind(named, 0) == 0) detail = detail.substr(named.size());
    reasons += std::string(reasons.empty() ? "" : "; ") + b.endpoint + ": " + detail;
    if (call.kind == RemoteCall::Kind::kRefused) break;  // another backend would refuse too
    // Unreachable or erring: out of service until a health check passes.
    mark(i, false, call.detail);
  }
  if (tried.empty()) {
    throw std::runtime_error("remote model '" + info_.name + "': no backend in service (all " +
                             std::to_string(backends_.size()) + " down)");
  }
  throw std::runtime_error("remote model '" + info_.name + "': the batch of " +
                           std::to_string(inputs.size()) + " failed on " +
                           std::to_string(tried.size()) + " backend(s): " + reasons);
}

std::string render_remote_metrics(
    const std::vector<std::pair<std::string, const RemoteModel*>>& models) {
  if (models.empty()) return "";
  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  const Family families[] = {
      {"tessera_backend_up", "gauge", "1 if the remote backend is in service, else 0."},
      {"tessera_backend_requests_total", "counter", "Batches sent to the remote backend."},
      {"tessera_backend_failures_total", "counter",
       "Batches the remote backend failed (unreachable, reset, timeout, 5xx, bad reply)."},
      {"tessera_backend_redispatches_total", "counter",
       "Batches re-sent to the remote backend after another backend failed them."},
  };
  std::vector<std::pair<std::string, std::vector<RemoteBackendStats>>> all;
  for (const auto& [name, m] : models) all.emplace_back(name, m->backends());
  std::string text;
  for (std::size_t f = 0; f < 4; ++f) {
    text += std::string("# HELP ") + families[f].name + " " + families[f].help + "\n";
    text += std::string("# TYPE ") + families[f].name + " " + families[f].type + "\n";
    for (const auto& [name, backends] : all) {
      for (const RemoteBackendStats& b : backends) {
        const uint64_t v = f == 0   ? (b.up ? 1 : 0)
                           : f == 1 ? b.requests
                           : f == 2 ? b.failures
                                    : b.redispatches;
        text += std::string(families[f].name) + "{model=\"" + prom_label_escape(name) +
                "\",backend=\"" + prom_label_escape(b.endpoint) + "\"} " + std::to_string(v) + "\n";
      }
    }
  }
  return text;
}

}  // namespace tessera
