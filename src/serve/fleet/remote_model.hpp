#pragma once

// A model whose batches run on a fleet of remote inference servers (the models file's
// `remote:` source, docs/serve.md#remote-backends): `tessera serve --worker` processes or
// a Triton server, over the Open Inference Protocol v2 (HTTP or gRPC).
//
// run() sends the batch as one request to a healthy backend (the one with the fewest
// calls in flight; ties go round-robin). A backend that fails the call (connect refused,
// reset, timeout, 5xx / 429, or a reply that breaks the protocol) is counted; one that
// is unreachable or erring is taken out of service until a health check passes, and the
// batch is re-sent to another healthy backend, at most `retries` times. Otherwise run()
// throws a std::runtime_error naming every backend it tried and why; it returns or
// throws exactly once per call, so the server answers every request exactly once.
//
// Health checks: check_now() checks every backend at once (tests call it); with
// health_interval_ms > 0 a thread of the model calls it periodically.
//
// Threads: run() from any number of threads at once; check_now() and backends() from
// any thread. The model owns its transports and its health thread (stopped and joined
// by the destructor).

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "models/model.hpp"
#include "models/model_spec.hpp"
#include "serve/fleet/remote_transport.hpp"

namespace tessera {

// One backend's state, as /metrics shows it.
struct RemoteBackendStats {
  std::string endpoint;
  bool up = false;
  uint64_t requests = 0;      // batches sent to it
  uint64_t failures = 0;      // of those, failed (any reason)
  uint64_t redispatches = 0;  // batches re-sent to it after another backend failed them
  std::string last_error;     // why it last failed or was found down ("" if never)
};

class RemoteModel final : public Model {
 public:
  // Builds the transports and checks every backend once. The output shape is
  // spec.remote.output, else asked of the first backend that answers (throws
  // std::runtime_error naming the variant if none does). `transports` (tests) replaces
  // the HTTP / gRPC ones, one per endpoint.
  explicit RemoteModel(const ModelSpec& spec,
                       std::vector<std::unique_ptr<RemoteTransport>> transports = {});
  ~RemoteModel() override;

  const ModelInfo& info() const override { return info_; }
  std::vector<FloatTensor> run(std::span<const FloatTensor* const> inputs) override;

  // Checks every backend now (in parallel: at most one health timeout).
  void check_now();
  std::vector<RemoteBackendStats> backends() const;
  const std::string& backend_model() const { return spec_.remote.model; }

 private:
  struct Backend {
    std::string endpoint;
    std::unique_ptr<RemoteTransport> transport;
    bool up = true;
    int in_flight = 0;
    RemoteBackendStats stats;
  };
  // The healthy backend not in `tried` with the fewest calls in flight; -1 if none.
  int pick(const std::vector<int>& tried);
  void mark(int index, bool up, const std::string& why);
  void health_loop();

  ModelSpec spec_;
  ModelInfo info_;
  mutable std::mutex mutex_;  // guards backends_' state (not their transports)
  std::vector<Backend> backends_;
  std::size_t next_ = 0;  // round-robin tie-break
  std::atomic<uint64_t> calls_{0};
  std::mutex health_mutex_;
  std::condition_variable health_cv_;
  bool stopping_ = false;
  std::thread health_;
};

// The Prometheus text for every remote model in `models` (name, RemoteModel*):
// tessera_backend_up, tessera_backend_requests_total, tessera_backend_failures_total,
// tessera_backend_redispatches_total, labelled by variant and backend. "" when none.
std::string render_remote_metrics(
    const std::vector<std::pair<std::string, const RemoteModel*>>& models);

}  // namespace tessera
