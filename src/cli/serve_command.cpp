#include <signal.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.hpp"
#include "exec/model_spec.hpp"
#include "server/server.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {
namespace {

struct ServeArgs {
  std::string run_file;
  std::string models_file;
  ServeOptions options;
  int64_t seed = -1;
};

void run_serve(const ServeArgs& args) {
  RunSpec run = load_run_spec(args.run_file);
  if (args.seed >= 0) run.sim.seed = static_cast<uint64_t>(args.seed);
  const ModelsConfig models =
      args.models_file.empty() ? ModelsConfig{} : load_models_config(args.models_file);

  // SIGINT / SIGTERM are taken by sigwait below, so every thread started from here on
  // blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  spdlog::info("app '{}' with {} tasks, SLO {} ms; policies: {}", run.app.name,
               run.app.tasks.size(), to_ms(run.app.slo), run.policies.describe());
  Server server(run, models, args.options);
  server.start();
  for (const std::string& name : server.endpoint_names()) {
    spdlog::info("  POST /v2/models/{}/infer", name);
  }
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{}: shutting down (in-flight requests get up to {} s)",
               sig == SIGINT ? "SIGINT" : "SIGTERM", args.options.drain_timeout_s);
  server.shutdown();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a run spec's application over HTTP (KServe v2) on real models");
  cmd->add_option("run", args->run_file, "Run spec (YAML): app, profiles, deployment, policies")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--models,-m", args->models_file,
                  "Models file: which zoo or TorchScript model serves each variant")
      ->check(CLI::ExistingFile);
  ServeOptions& o = args->options;
  cmd->add_option("--host", o.host, "Address to bind")->capture_default_str();
  cmd->add_option("--port,-p", o.port, "Port (0: any free port)")->capture_default_str();
  cmd->add_option("--max-inflight", o.max_inflight,
                  "Requests admitted at once; more get 429 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--threads", o.http_threads, "HTTP threads (0: max-inflight + 8)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--max-body", o.max_body_bytes, "Largest request body in bytes (413 above)")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o.drain_timeout_s,
                  "Seconds in-flight requests may take to finish at shutdown")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--keep-alive", o.keep_alive_timeout_s,
                  "Seconds an idle keep-alive connection stays open (also bounds shutdown)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_flag("!--no-warmup", o.warmup, "Skip running each model once per batch size at start");
  cmd->add_flag("!--no-model-endpoints", o.model_endpoints,
                "Serve only the application, not each deployed model on its own");
  cmd->add_option("--seed", args->seed, "Override the run's seed (fan-out draws)");
  cmd->callback([args] { run_serve(*args); });
}

}  // namespace tessera::cli
