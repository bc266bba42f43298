#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "models/model_spec.hpp"
#include "policy/policy_set.hpp"
#include "profile/profile_table.hpp"
#include "serve/http/access.hpp"
#include "serve/server/grpc_tls.hpp"
#include "serve/server/live_deployment.hpp"

namespace tessera {

struct RunSpec;

// The bounds behind each field are documented in docs/reliability.md.
struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                             // 0: any free port (start() returns it)
  int max_inflight = 128;                      // admitted requests at once; more get 429
  int http_threads = 0;                        // HTTP I/O threads; 0: cores, in [2, 8]
  std::size_t max_connections = 512;           // open connections; beyond: shed an idle one or 503
  std::size_t max_body_bytes = 16u << 20;      // larger bodies get 413 (before being read)
  std::size_t body_budget_bytes = 256u << 20;  // bodies in memory at once; beyond: 503
  std::size_t max_header_bytes = 16u << 10;    // larger headers get 431
  std::size_t max_client_connections = 256;    // per remote address (HttpLimits)
  std::size_t client_body_budget_bytes = 64u << 20;  // bodies of one address at once; 503
  double header_timeout_s = 5.0;                     // a request's header must arrive within this
  double read_timeout_s = 10.0;                      // a whole request must arrive within this
  double keep_alive_timeout_s = 5.0;                 // idle keep-alive connections close after this
  double drain_timeout_s = 10.0;  // shutdown: how long in-flight requests may finish
  double model_timeout_s = 30.0;  // a model call longer than this is abandoned
  bool warmup = true;             // run each model at each batch size before serving
  bool model_endpoints = true;    // also serve each deployed model on its own
  bool inline_noop = true;        // run the no-op model on the event loop thread
  int grpc_port = -1;        // the gRPC front end's port: -1 none, 0 any free port (grpc_port())
  bool app_endpoint = true;  // serve the application itself (worker mode: false)
  AccessConfig access;       // keys and the control plane (docs/security.md): closed by default
  GrpcTls grpc_tls;          // TLS on the gRPC port (PEM files; none: plaintext)
  TlsFiles http_tls;         // TLS on the HTTP port (PEM files; none: plain HTTP)
  int max_instances = 64;    // a reconfiguration's instances in all, at most (~2 threads each)
  int max_models = 32;       // models loaded at once after a reconfiguration, at most
};

// The application of one run spec (and each of its deployed models), served over HTTP
// with the Open Inference Protocol v2 on the engine the simulator runs (docs/serve.md).
class Server {
 public:
  // Loads the deployed variants' models (`models` says which model serves each) and
  // builds one engine per endpoint. Throws on a model that cannot be loaded.
  Server(const App& app, const Deployment& deployment, const ProfileTable& profiles,
         const PolicyConfig& policies, uint64_t seed, const ModelsConfig& models,
         ServeOptions options);
  Server(const RunSpec& run, const ModelsConfig& models, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving; returns the port. Throws std::runtime_error if it cannot bind.
  int start();
  // Stops admitting requests (503), lets admitted ones finish for up to drain_timeout_s,
  // refuses the rest with 503, then stops. Every admitted request is answered exactly
  // once. Idempotent.
  void shutdown();

  std::vector<std::string> endpoint_names() const;
  // The gRPC front end's port once started (-1 without one).
  int grpc_port() const;
  // Inference requests admitted and not yet answered.
  int in_flight() const;
  // Waits until at least `n` requests are in flight (tests); false on timeout.
  bool wait_until_in_flight(int n, double timeout_s) const;
  const ServeOptions& options() const;
  // Runs a health check of every remote model's backends now (serve/fleet/remote_model.hpp).
  void check_backends_now();

  // Live reconfiguration (serve/server/live_deployment.hpp; docs/serve.md#live-re-planning):
  // moves the application endpoint to `target` (its instances per task: variant, segment,
  // max batch, count, batch timeout) as one step, loading new models first. `profiles`
  // (default: the run's) time the new instances; `note` goes into the history. Any thread
  // but the event loop; one at a time. A refused target changes nothing (result.error).
  ReconfigureResult reconfigure(const Deployment& target, const ProfileTable* profiles = nullptr,
                                const std::string& note = "");
  // The application endpoint's live deployment, arrivals and reconfigurations.
  DeploymentStatus deployment_status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
