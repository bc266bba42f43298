#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "llm_torch/decoder.hpp"
#include "models/model_spec.hpp"
#include "serve/replan/live_controller.hpp"
#include "serve/server/llm_gateway.hpp"
#include "serve/server/llm_server.hpp"
#include "serve/server/server.hpp"
#include "serve/server/shutdown_signal.hpp"
#include "serve/server/worker_mode.hpp"
#include "spec/llm_backend_spec.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {
namespace {

// Seconds beyond --drain-timeout that shutdown may take before the watchdog exits.
constexpr double kShutdownSlackS = 5.0;

struct ServeArgs {
  std::string run_file;
  std::string models_file;
  std::string device;  // --device: the default device of the models (docs/serve.md)
  ServeOptions options;
  int64_t seed = -1;
  std::string llm_checkpoint;          // an llm: run's checkpoint folder (docs/llm-serve.md)
  std::string llm_step_log;            // a CSV line per LLM step
  uint32_t llm_max_tokens = 0;         // max_tokens cap; 0: the model's context
  uint32_t llm_max_prompt_tokens = 0;  // 0: the model's positions less one
  bool llm_prefix_caching = true;      // --no-prefix-caching turns it off
  bool worker = false;  // --worker: `run` is a models file (docs/serve.md#worker-mode)
  int worker_batch = 32;
  std::string replan_file;       // --replan: live re-planning (serve/replan/live_controller.hpp)
  std::string replan_space;      // --replan-space
  std::string api_key_file;      // --api-key-file: inference keys (docs/security.md)
  std::string control_key_file;  // --control-key-file: control keys
  bool allow_control = false;    // --allow-control: serve the state-changing endpoints
};

// The HTTP options both LLM servers take from `tessera serve`'s flags.
template <class Options>
void set_llm_http_options(Options& o, const ServeArgs& args) {
  o.host = args.options.host;
  o.port = args.options.port;
  o.max_inflight = args.options.max_inflight;
  o.http_threads = args.options.http_threads > 0 ? args.options.http_threads : 2;
  o.max_body_bytes = args.options.max_body_bytes;
  o.max_connections = args.options.max_connections;
  o.read_timeout_s = args.options.read_timeout_s;
  o.drain_timeout_s = args.options.drain_timeout_s;
  o.access = args.options.access;
}

// A run spec whose `llm:` section lists backends: the LLM gateway (docs/llm-gateway.md).
void run_llm_gateway(const RunSpec& run, const ServeArgs& args, sigset_t signals) {
  if (!args.llm_checkpoint.empty()) {
    throw SpecError(args.run_file, "llm.backends",
                    "a gateway run serves its backends: give no --llm-checkpoint");
  }
  LlmGatewayOptions o;
  set_llm_http_options(o, args);
  LlmGateway gateway(run, o);
  gateway.start();
  wait_then_shut_down(signals, o.drain_timeout_s + kShutdownSlackS, [&](const char* signal) {
    spdlog::info("{}: shutting down (in-flight requests get up to {} s)", signal,
                 o.drain_timeout_s);
    gateway.shutdown();
  });
}

// A run spec with an `llm:` section: the live LLM server (docs/llm-serve.md).
void run_llm_serve(const RunSpec& run, const ServeArgs& args, sigset_t signals) {
  if (load_llm_gateway(run)) return run_llm_gateway(run, args, signals);
  if (args.llm_checkpoint.empty()) {
    throw SpecError(args.run_file, "llm",
                    "serving an llm: run needs --llm-checkpoint DIR (config.json and safetensors; "
                    "`tessera llm random-checkpoint` writes one)");
  }
  LlmServeOptions o;
  set_llm_http_options(o, args);
  o.max_client_connections = args.options.max_client_connections;
  o.header_timeout_s = args.options.header_timeout_s;
  if (!args.device.empty()) {
    try {
      o.device = parse_device(args.device);
      Decoder::check_device(o.device);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("--device: ") + e.what());
    }
  }
  o.step_log = args.llm_step_log;
  o.http_tls = args.options.http_tls;
  o.limits.max_new_tokens = args.llm_max_tokens;
  o.max_prompt_tokens = args.llm_max_prompt_tokens;
  RunSpec served = run;
  if (!args.llm_prefix_caching) served.llm->scheduler.prefix_caching = false;
  auto server = LlmServer::from_run(served, args.llm_checkpoint, o);
  server->start();
  wait_then_shut_down(signals, o.drain_timeout_s + kShutdownSlackS, [&](const char* signal) {
    spdlog::info("{}: shutting down (in-flight requests get up to {} s)", signal,
                 o.drain_timeout_s);
    server->shutdown();
  });
}

// Starts `server` (and its live re-planner, if any), serves until SIGINT / SIGTERM (blocked
// by the caller), then shuts down.
void serve_until_signal(Server& server, const ServeArgs& args, sigset_t signals,
                        std::unique_ptr<control::LiveReplanner> replanner = nullptr) {
  server.start();
  std::unique_ptr<LiveController> controller;
  if (replanner) {
    controller = std::make_unique<LiveController>(server, std::move(replanner));
    controller->start();
  }
  const double bound = args.options.drain_timeout_s + kShutdownSlackS;
  wait_then_shut_down(signals, bound, [&](const char* signal) {
    spdlog::info("{}: shutting down (in-flight requests get up to {} s; exit within {} s)", signal,
                 args.options.drain_timeout_s, bound);
    server.shutdown();
  });
  // The controller last: a MILP solve it is in cannot be cut short (the watchdog bounds
  // it); a reconfiguration it tries after shutdown is refused.
  if (controller) controller->stop();
}

// --worker: the models file's models as plain KServe v2 models (docs/serve.md#worker-mode).
void run_worker(const ServeArgs& args) {
  const ModelsConfig models = load_models_config(args.run_file);
  const sigset_t signals = block_shutdown_signals();
  std::unique_ptr<Server> server;
  try {
    server = make_worker_server(models, WorkerOptions{args.worker_batch}, args.options);
  } catch (const std::invalid_argument& e) {
    throw SpecError(args.run_file, "models", e.what());
  }
  spdlog::info("worker mode: the models of {} as plain KServe v2 models (batches up to {})",
               args.run_file, args.worker_batch);
  serve_until_signal(*server, args, signals);
}

// --PORT-tls-cert, --PORT-tls-key, --PORT-tls-client-ca into `tls` (docs/security.md#tls).
void add_tls_options(CLI::App& cmd, const std::string& port, const std::string& protocol,
                     TlsFiles& tls) {
  const std::string flag = "--" + port + "-tls-";
  cmd.add_option(
         flag + "cert", tls.cert_file,
         "Serve " + protocol + " over TLS with this PEM certificate chain (with " + flag + "key)")
      ->check(CLI::ExistingFile);
  cmd.add_option(flag + "key", tls.key_file, "The PEM private key of " + flag + "cert")
      ->check(CLI::ExistingFile);
  cmd.add_option(flag + "client-ca", tls.client_ca_file,
                 "Require " + protocol +
                     " clients to present a certificate signed by this PEM CA (mutual TLS)")
      ->check(CLI::ExistingFile);
}

void run_serve(const ServeArgs& args) {
  if (args.worker) return run_worker(args);
  RunSpec run = load_run_spec(args.run_file);
  if (args.seed >= 0) run.sim.seed = static_cast<uint64_t>(args.seed);
  // --models, else the run spec's `models:` (what `tessera plan` writes), else none.
  const std::filesystem::path models_file =
      args.models_file.empty() ? run.models_file : std::filesystem::path(args.models_file);
  ModelsConfig models = models_file.empty() ? ModelsConfig{} : load_models_config(models_file);
  if (!args.device.empty()) models.set_default_device(args.device);
  // SIGINT / SIGTERM are taken by one sigwait, so every thread started from here on blocks
  // them.
  const sigset_t signals = block_shutdown_signals();
  if (run.llm) return run_llm_serve(run, args, signals);
  spdlog::info("app '{}' with {} tasks, SLO {} ms; policies: {}", run.app.name,
               run.app.tasks.size(), to_ms(run.app.slo), run.policies.describe());
  // --replan: the controller's spec is read (and its plan checked against the app) first.
  std::unique_ptr<control::LiveReplanner> replanner;
  if (!args.replan_file.empty()) {
    replanner = make_live_replanner(control::load_replan_spec(args.replan_file), run.app,
                                    args.replan_space);
  }
  Server server(run, models, args.options);
  serve_until_signal(server, args, signals, std::move(replanner));
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a run spec's application over HTTP (KServe v2) on real models");
  cmd->add_option("run", args->run_file,
                  "Run spec (YAML): app, profiles, deployment, policies (--worker: a models file)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--models,-m", args->models_file,
                  "Models file: which zoo or TorchScript model (or profile-timed emulation) "
                  "serves each variant; default: the run spec's `models:`")
      ->check(CLI::ExistingFile);
  cmd->add_option("--device", args->device,
                  "Device of the models without their own `device`: cpu (default), cuda, "
                  "cuda:N, or a GPU/MIG UUID listed in CUDA_VISIBLE_DEVICES "
                  "(docs/serve.md#serving-on-gpus)");
  ServeOptions& o = args->options;
  cmd->add_option("--host", o.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port,-p", o.port, "Port (0: any free port)")->capture_default_str();
  cmd->add_option("--grpc-port", o.grpc_port,
                  "Also serve the inference protocol over gRPC on this port (0: any free "
                  "port; -1: no gRPC)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 65535));
  add_tls_options(*cmd, "http", "HTTP", o.http_tls);
  add_tls_options(*cmd, "grpc", "gRPC", o.grpc_tls);
  cmd->add_option("--max-inflight", o.max_inflight,
                  "Requests admitted at once; more get 429 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--threads", o.http_threads, "HTTP I/O threads (0: the cores, 2 to 8)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  cmd->add_option("--max-connections", o.max_connections,
                  "Open connections at most; a new one beyond closes the oldest idle one, or "
                  "gets 503 if none is idle")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-client-connections", o.max_client_connections,
                  "Open connections per client address; a new one beyond closes that client's "
                  "oldest idle or still-reading one, or gets 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--client-body-budget", o.client_body_budget_bytes,
                  "Bytes of request bodies one client address may have in memory at once "
                  "(503 above; at least --max-body)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--header-timeout", o.header_timeout_s,
                  "Seconds a request's header may take to arrive from its first byte "
                  "(at most --read-timeout)")
      ->capture_default_str()
      ->check(finite_range(0.1, 3600.0));
  cmd->add_option("--max-body", o.max_body_bytes,
                  "Largest request body in bytes (413, before the body is read)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--body-budget", o.body_budget_bytes,
                  "Bytes of request bodies in memory at once, over all connections (503 above)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--read-timeout", o.read_timeout_s,
                  "Seconds a whole request (header and body) may take to arrive; also the "
                  "time a client has to take its answer")
      ->capture_default_str()
      ->check(finite_range(0.1, 3600.0));
  cmd->add_option("--drain-timeout", o.drain_timeout_s,
                  "Seconds in-flight requests may take to finish at shutdown")
      ->capture_default_str()
      ->check(finite_range(0.0, 3600.0));
  cmd->add_option("--keep-alive", o.keep_alive_timeout_s,
                  "Seconds an idle keep-alive connection stays open")
      ->capture_default_str()
      ->check(finite_range(0.1, 3600.0));
  cmd->add_option("--model-timeout", o.model_timeout_s,
                  "Seconds a model call may take; a longer one is abandoned, its requests "
                  "answered 500 and its worker thread replaced (0: never)")
      ->capture_default_str()
      ->check(finite_range(0.0, 86400.0));
  cmd->add_flag("!--no-warmup", o.warmup, "Skip running each model once per batch size at start");
  cmd->add_flag("!--no-model-endpoints", o.model_endpoints,
                "Serve only the application, not each deployed model on its own");
  cmd->add_option("--seed", args->seed, "Override the run's seed (fan-out draws)");
  cmd->add_flag("--worker", args->worker,
                "Worker mode: `run` is a models file whose models are served as plain KServe v2 "
                "models (no application) for a front end's `remote:` models");
  cmd->add_option("--worker-batch", args->worker_batch,
                  "Worker mode: rows one model call takes at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--llm-checkpoint", args->llm_checkpoint,
                  "For a run spec with an llm: section: the checkpoint folder the decoder runs "
                  "(config.json, safetensors, optional tokenizer.json)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--llm-max-tokens", args->llm_max_tokens,
                  "LLM: the largest max_tokens a request may ask (0: up to the model's context, "
                  "prompt + max_tokens within its positions)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1u << 24));
  cmd->add_option("--llm-max-prompt-tokens", args->llm_max_prompt_tokens,
                  "LLM: the longest prompt in tokens (0: the model's positions less one); a "
                  "longer one gets 400")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1u << 24));
  cmd->add_flag("!--no-prefix-caching", args->llm_prefix_caching,
                "LLM: turn automatic prefix caching off (on by default: a prompt that starts with "
                "cached whole KV blocks skips their prefill; docs/llm.md#prefix-caching)");
  cmd->add_option("--llm-step-log", args->llm_step_log,
                  "For an llm: run: write a CSV line per step (prefill and decode tokens, the "
                  "cost model's and the measured ms) to this file");
  cmd->add_option("--replan", args->replan_file,
                  "Re-planning spec (as `tessera replan` takes): re-plan the live server from "
                  "measured demand every controller.bin_s and apply each new plan as one "
                  "reconfiguration (docs/serve.md#live-re-planning)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--replan-space", args->replan_space,
                  "With --replan: the search space to plan in (default: the spec's first)");
  cmd->add_option("--max-instances", o.max_instances,
                  "Instances a reconfiguration (POST /v2/tessera/deployment, --replan) may ask "
                  "for in all; more is refused naming the bound")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-models", o.max_models,
                  "Models loaded at once after a reconfiguration; more is refused")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--api-key-file", args->api_key_file,
                  "File of API keys (one a line) that inference, metadata and metrics requests "
                  "must present as `Authorization: Bearer KEY` (also TESSERA_API_KEY); default: "
                  "none, open (docs/security.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--control-key-file", args->control_key_file,
                  "File of control keys (one a line; also TESSERA_CONTROL_KEY) that open the "
                  "state-changing endpoints enabled by --allow-control")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--allow-control", args->allow_control,
                "Serve the state-changing endpoints (POST /v2/tessera/deployment, repository "
                "load / unload; needs a control key); default: they answer 403");
  cmd->callback([args] {
    args->options.access =
        load_access_config(args->api_key_file, args->control_key_file, args->allow_control);
    run_serve(*args);
  });
}

}  // namespace tessera::cli
