#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "models/model_factory.hpp"
#include "models/profiler.hpp"
#include "profile/profile_yaml.hpp"
#include "serve/fleet/remote_model.hpp"

namespace tessera::cli {
namespace {

struct ProfileArgs {
  std::string models_file;
  std::vector<std::string> variants;
  std::string segment = "cpu";
  std::string out_file;
  std::vector<int> batches{1, 2, 4, 8};
  int threads = 1;
  std::string device;  // --device: the default device of the models (docs/serve.md)
  ProfileOptions options;
};

void run_profile(ProfileArgs args) {
  ModelsConfig models =
      args.models_file.empty() ? ModelsConfig{} : load_models_config(args.models_file);
  if (!args.device.empty()) models.set_default_device(args.device);
  std::vector<std::string> variants = args.variants;
  if (variants.empty()) {
    for (const ModelSpec& m : models.models) variants.push_back(m.variant);
  }
  if (variants.empty()) {
    throw CLI::ValidationError("profile", "name models with --variant or give a --models file");
  }
  configure_torch_threads(args.threads);
  args.options.batches = args.batches;
  args.options.torch_threads = args.threads;
  ProfileTable table;
  for (const std::string& v : variants) {
    const ModelSpec spec = models.spec_for(v);
    // A remote model is timed through its fleet (the network hop included): each run is
    // one batch sent to a backend as a front end sends it.
    const bool remote = spec.source == ModelSpec::Source::kRemote;
    std::unique_ptr<Model> model = remote ? std::make_unique<RemoteModel>(spec) : load_model(spec);
    const std::string where =
        remote ? fmt::format("through {}, the network hop included",
                             fmt::join(spec.remote.endpoints, ", "))
               : fmt::format("on {}, {} torch thread(s)", model->info().device, args.threads);
    spdlog::info(
        "profiling '{}' ({} {}, input {}) on segment '{}', batches {}, {} instance(s) at once", v,
        model->info().kind, where, shape_string(spec.input_shape), args.segment,
        fmt::join(args.batches, ","), args.options.concurrent);
    const ModelProfile p = profile_model(*model, spec, args.options);
    for (const BatchTiming& t : p.timings) {
      std::cout << fmt::format("  {:<20} batch {:>3}  median {:>9.3f} ms  p90 {:>9.3f} ms\n", v,
                               t.batch, t.median_ms, t.p90_ms);
    }
    if (p.fanout_mean)
      std::cout << fmt::format("  {:<20} fan-out mean {:.4f}\n", v, *p.fanout_mean);
    add_profile(table, spec, args.segment, p,
                fmt::format("tessera profile ({} {}, median of {}{})", model->info().kind, where,
                            args.options.reps,
                            args.options.concurrent > 1
                                ? fmt::format(" x {} instances running at once (max {} seen)",
                                              args.options.concurrent, p.max_overlap)
                                : std::string()));
  }
  std::ostringstream yaml;
  write_profile_yaml(table, yaml);
  if (args.out_file.empty()) {
    std::cout << yaml.str();
  } else {
    std::ofstream out(args.out_file);
    if (!out) throw std::runtime_error("cannot write " + args.out_file);
    out << yaml.str();
    std::cout << "  wrote " << args.out_file << "\n";
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Measure latency x batch of zoo or TorchScript models and write a profile file");
  cmd->add_option("--models,-m", args->models_file, "Models file (all its models are profiled)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--variant,-v", args->variants,
                  "Variants to profile (from the models file, or zoo architecture names)");
  cmd->add_option("--segment,-s", args->segment, "Segment name in the profile")
      ->capture_default_str();
  cmd->add_option("--batches,-b", args->batches, "Batch sizes")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--warmup", args->options.warmup, "Unmeasured runs per batch size")
      ->capture_default_str();
  cmd->add_option("--reps", args->options.reps, "Measured runs per batch size (median kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--threads", args->threads, "libtorch intra-op threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--concurrent,-n", args->options.concurrent,
                  "Instances running at once (threads sharing the model, as a server's "
                  "workers): latency under that load")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--device", args->device,
                  "Device of the models without their own `device`: cpu, cuda, cuda:N, or a "
                  "GPU/MIG UUID listed in CUDA_VISIBLE_DEVICES (docs/serve.md#serving-on-gpus)");
  cmd->add_option("--out,-o", args->out_file, "Profile file to write (default: stdout)");
  cmd->callback([args] { run_profile(*args); });
}

}  // namespace tessera::cli
