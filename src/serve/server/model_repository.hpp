#pragma once

// ModelRepository: what an app server serves, by name: the application endpoint and each
// deployed model's own endpoint (docs/serve.md#endpoints), with the model repository
// extension's state (an endpoint unloaded by POST .../unload answers 400 and is not ready
// until loaded again) and the statistics extension's counts per endpoint. Read by the
// KServe routes over HTTP and gRPC and by inference.
//
// Ownership and threads: owns the endpoints, added while the server is built and fixed from
// then on, so find() and endpoints() are safe from any thread; loaded() / set_loaded() and
// the statistics from any thread (their own locks).

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "serve/runtime/endpoint.hpp"
#include "serve/server/model_stats.hpp"

namespace tessera {

// Every endpoint has one version.
inline constexpr const char* kModelVersion = "1";

class ModelRepository {
 public:
  // While the server is built. The first endpoint added with `application` is the app's.
  void add(std::unique_ptr<Endpoint> endpoint, bool application = false) {
    if (application && application_ == nullptr) application_ = endpoint.get();
    by_name_[endpoint->name()] = endpoint.get();
    endpoints_.push_back(std::move(endpoint));
  }
  bool has(const std::string& name) const { return by_name_.count(name) != 0; }

  Endpoint* find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  const std::vector<std::unique_ptr<Endpoint>>& endpoints() const { return endpoints_; }
  // The application endpoint; nullptr when the server serves models only (worker mode).
  Endpoint* application() const { return application_; }

  bool loaded(const std::string& name) const {
    if (!any_unloaded_.load(std::memory_order_acquire)) return true;
    std::lock_guard lock(mutex_);
    return unloaded_.count(name) == 0;
  }
  void set_loaded(const std::string& name, bool loaded) {
    std::lock_guard lock(mutex_);
    if (loaded) {
      unloaded_.erase(name);
    } else {
      unloaded_.insert(name);
    }
    any_unloaded_.store(!unloaded_.empty(), std::memory_order_release);
  }

  ModelStatsTable& stats() { return stats_; }

 private:
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::map<std::string, Endpoint*> by_name_;
  Endpoint* application_ = nullptr;
  mutable std::mutex mutex_;
  std::set<std::string> unloaded_;
  std::atomic<bool> any_unloaded_{false};  // !unloaded_.empty(): loaded() skips the lock
  ModelStatsTable stats_;
};

}  // namespace tessera
