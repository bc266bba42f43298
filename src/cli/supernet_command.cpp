#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "supernet/accuracy_model.hpp"
#include "supernet/flops.hpp"
#include "supernet/memory.hpp"
#include "supernet/profiler.hpp"
#include "supernet/subnet_selection.hpp"

namespace tessera::cli {
namespace {

using supernet::SupernetProfileOptions;

struct SupernetProfileArgs {
  SupernetProfileOptions options;
  std::string out_dir;
  std::string accuracy_csv;
  double slo_ms = 0.0;
  int threads = 1;
};

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void run_supernet_profile(SupernetProfileArgs args) {
  at::set_num_threads(args.threads);
  args.options.accuracy_csv = args.accuracy_csv.empty() ? supernet::AccuracyModel::default_file()
                                                        : std::filesystem::path(args.accuracy_csv);
  const SupernetProfileOptions& o = args.options;
  std::cout << fmt::format(
      "tessera supernet profile: {} subnets, {}x{} input, batches {}, {} thread(s), median of {}\n",
      o.subnets, o.resolution, o.resolution, fmt::join(o.batches, ","), args.threads, o.reps);
  const supernet::SupernetProfile profile =
      supernet::profile_supernet(o, [](const supernet::ProfiledSubnet& s) {
        std::cout << fmt::format("  {}  {:5.2f} GMACs@224  {:6.2f}%  ", s.config.name(), s.macs_g,
                                 s.top1);
        for (const auto& [batch, ms] : s.latency_ms)
          std::cout << fmt::format(" b{}:{:.2f}", batch, ms);
        std::cout << " ms\n" << std::flush;
      });
  std::optional<double> slo;
  if (args.slo_ms > 0) slo = args.slo_ms;
  supernet::write_supernet_profile(profile, args.out_dir, slo);
  for (const std::string& p : supernet::monotonicity_problems(profile)) {
    std::cout << "  warning: " << p << "\n";
  }
  std::cout << fmt::format("  actuation (median) {:.1f} us; profiling took {:.1f} s\n",
                           profile.actuation_us, profile.seconds);
  std::cout << "  wrote " << args.out_dir << "/{profiles.yaml,app.yaml,subnets.csv}\n";
}

void run_supernet_memory(int subnets) {
  at::set_num_threads(1);
  const auto configs = supernet::select_subnets(subnets);
  const supernet::MemoryReport r = supernet::measure_memory(configs);
  std::cout << fmt::format("tessera supernet memory: {} hosted subnets vs {} extracted networks\n",
                           r.subnets, r.subnets);
  std::cout << fmt::format("  {:<44} {:>12} {:>12}\n", "", "param+buf MiB", "RSS MiB");
  std::cout << fmt::format(
      "  {:<44} {:>12.1f} {:>12.1f}\n", "supernet (shared weights + SubnetNorm)",
      mib(r.supernet_weight_bytes + r.subnet_norm_bytes), mib(r.supernet_rss_bytes));
  std::cout << fmt::format("  {:<44} {:>12.1f}\n", "  of which SubnetNorm statistics",
                           mib(r.subnet_norm_bytes));
  std::cout << fmt::format("  {:<44} {:>12.1f} {:>12.1f}\n",
                           fmt::format("{} extracted networks", r.subnets), mib(r.extracted_bytes),
                           mib(r.extracted_rss_bytes));
  const double by_bytes = static_cast<double>(r.extracted_bytes) /
                          static_cast<double>(r.supernet_weight_bytes + r.subnet_norm_bytes);
  const double by_rss =
      static_cast<double>(r.extracted_rss_bytes) / static_cast<double>(r.supernet_rss_bytes);
  std::cout << fmt::format("  extracted / supernet: {:.2f}x (bytes), {:.2f}x (RSS)\n", by_bytes,
                           by_rss);
  std::cout << fmt::format(
      "  shared weights / statistics of the largest hosted subnet: {:.0f}x ({:.1f} MiB / {:.3f} "
      "MiB)\n",
      static_cast<double>(r.supernet_weight_bytes) /
          static_cast<double>(r.largest_subnet_stats_bytes),
      mib(r.supernet_weight_bytes), mib(r.largest_subnet_stats_bytes));
}

}  // namespace

void add_supernet_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "supernet", "SubNetAct on an OFA-ResNet50 supernet: profile its subnets, measure memory");
  cmd->require_subcommand(1);

  auto args = std::make_shared<SupernetProfileArgs>();
  CLI::App* profile = cmd->add_subcommand(
      "profile", "Measure latency x batch of the pareto subnets; write profiles.yaml and app.yaml");
  profile->add_option("--out,-o", args->out_dir, "Output directory")->required();
  profile->add_option("--resolution", args->options.resolution, "Input side in pixels")
      ->capture_default_str()
      ->check(CLI::Range(32, 512));
  profile->add_option("--batches", args->options.batches, "Batch sizes")
      ->delimiter(',')
      ->capture_default_str();
  profile->add_option("--subnets", args->options.subnets, "Number of pareto subnets")
      ->capture_default_str()
      ->check(CLI::Range(2, 57));
  profile->add_option("--reps", args->options.reps, "Timed runs per (subnet, batch)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  profile->add_option("--threads", args->threads, "libtorch intra-op threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  profile->add_option("--segment", args->options.segment, "Segment name in the profile")
      ->capture_default_str();
  profile->add_option("--slo-ms", args->slo_ms,
                      "SLO of the written app (default: largest subnet at the largest batch)");
  profile
      ->add_option("--accuracy", args->accuracy_csv,
                   "Accuracy data (default data/supernet/ofa_resnet50_accuracy.csv)")
      ->check(CLI::ExistingFile);
  profile->callback([args] { run_supernet_profile(*args); });

  auto subnets = std::make_shared<int>(6);
  CLI::App* memory = cmd->add_subcommand(
      "memory", "Resident memory of the supernet hosting N subnets vs N extracted networks");
  memory->add_option("--subnets", *subnets, "Number of subnets")
      ->capture_default_str()
      ->check(CLI::Range(2, 5000));
  memory->callback([subnets] { run_supernet_memory(*subnets); });
}

}  // namespace tessera::cli
