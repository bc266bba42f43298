#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "loadgen/http_loadgen.hpp"
#include "loadgen/llm_loadgen.hpp"
#include "metrics/report.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {
namespace {

struct LoadgenArgs {
  std::string run_file;
  std::string url = "http://127.0.0.1:8000";
  std::string out_dir = "out";
  LoadgenOptions options;
  int64_t seed = -1;
  bool quiet = false;
  bool report = false;
};

void parse_url(const std::string& url, LoadgenOptions& o) {
  std::string rest = url;
  const std::string scheme = "http://";
  if (rest.rfind(scheme, 0) == 0) rest = rest.substr(scheme.size());
  if (rest.find('/') != std::string::npos) rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) throw CLI::ValidationError("--url", "expected http://HOST:PORT");
  o.host = rest.substr(0, colon);
  try {
    o.port = std::stoi(rest.substr(colon + 1));
  } catch (const std::exception&) {
    throw CLI::ValidationError("--url", "bad port in '" + url + "'");
  }
}

void run_loadgen_command(LoadgenArgs args) {
  RunSpec run = load_run_spec(args.run_file);
  if (args.seed >= 0) run.sim.seed = static_cast<uint64_t>(args.seed);
  parse_url(args.url, args.options);
  args.options.window_s = run.sim.window;
  args.options.progress = !args.quiet;
  auto source = make_run_arrivals(run);
  std::vector<Arrival> arrivals;
  Arrival a;
  while (source->next(a)) arrivals.push_back(a);
  if (!args.quiet) {
    spdlog::info("replaying {} arrivals ({}) against {} with {} connections", arrivals.size(),
                 source->describe(), args.url, args.options.connections);
  }
  // An llm: run drives the LLM server's streaming endpoint (docs/llm-serve.md#loadgen).
  const LoadgenResult result = run.llm ? run_llm_loadgen(run.app, arrivals, args.options)
                                       : run_loadgen(run.app, arrivals, args.options);
  nlohmann::json summary = summarize(result.metrics, run.app, result.unmeasured);
  if (!result.stats.emulated.empty()) summary["emulated_variants"] = result.stats.emulated;
  write_report(args.out_dir, summary, result.metrics, run.app);
  nlohmann::json client;
  for (const auto& [status, n] : result.stats.status_counts) {
    client["http_status"][std::to_string(status)] = n;
  }
  client["sent_late"] = result.stats.sent_late();
  client["sent_late_no_free_connection"] = result.stats.late_no_free_connection.count;
  client["sent_late_client_slow"] = result.stats.late_client_slow.count;
  client["max_send_lag_ms"] = result.stats.max_send_lag_s * 1e3;
  client["wall_s"] = result.stats.wall_s;
  client["connections"] = args.options.connections;
  client["emulated_variants"] = result.stats.emulated;
  std::ofstream(std::filesystem::path(args.out_dir) / "loadgen.json") << client.dump(2) << "\n";
  std::string table = format_summary(summary);
  if (table.rfind("tessera simulate", 0) == 0) table.replace(0, 16, "tessera loadgen");
  std::cout << table;
  if (!result.stats.emulated.empty()) {
    std::string names;
    for (const auto& v : result.stats.emulated) names += (names.empty() ? "" : ", ") + v;
    std::cout << "  EMULATED (profile-timed, no real model): " << names << "\n";
  }
  std::cout << "  wrote " << args.out_dir << "/summary.json, timeseries.csv, timeseries.svg, "
            << "latency_histogram.csv, loadgen.json\n";
  if (args.report) write_report_and_tell(args.out_dir);
  // Each cause of a late send with its own condition (open_loop.hpp); the latency of a
  // request sent late includes the client's delay.
  const LateSends& busy = result.stats.late_no_free_connection;
  const LateSends& slow = result.stats.late_client_slow;
  if (busy.count > 0 && !args.quiet) {
    spdlog::warn(
        "{} of {} requests were sent more than 1 ms late (worst {:.1f} ms) because all {} "
        "--connections were busy with earlier requests at their time: raise --connections",
        busy.count, arrivals.size(), busy.worst_s * 1e3, args.options.connections);
  }
  if (slow.count > 0 && !args.quiet) {
    spdlog::warn(
        "{} of {} requests were sent more than 1 ms late (worst {:.1f} ms) although a "
        "connection was free: the load generator itself was slow to send (its machine short "
        "of CPU, e.g. shared with the server, or connecting took over the 500 ms lead)",
        slow.count, arrivals.size(), slow.worst_s * 1e3);
  }
}

}  // namespace

void add_loadgen_command(CLI::App& app) {
  auto args = std::make_shared<LoadgenArgs>();
  CLI::App* cmd = app.add_subcommand(
      "loadgen", "Replay a run spec's workload open-loop against a tessera server");
  cmd->add_option("run", args->run_file, "Run spec (YAML): its app and workload are used")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--url,-u", args->url, "Server address")->capture_default_str();
  cmd->add_option("--model", args->options.model, "Endpoint to drive (default: the app)");
  cmd->add_option("--out,-o", args->out_dir, "Output directory")->capture_default_str();
  cmd->add_option("--connections,-c", args->options.connections,
                  "Client connections (the most requests outstanding at once)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--timeout", args->options.timeout_s, "Per-request timeout, seconds")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Override the run's seed (workload and inputs)");
  cmd->add_flag("--quiet,-q", args->quiet, "No log or progress lines");
  add_report_flag(*cmd, args->report);
  cmd->callback([args] {
    args->options.seed = args->seed >= 0 ? static_cast<uint64_t>(args->seed) : 1;
    run_loadgen_command(*args);
  });
}

}  // namespace tessera::cli
