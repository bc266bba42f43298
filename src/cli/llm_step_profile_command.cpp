// `tessera llm step-profile`: measures a checkpoint's step costs on this machine and writes
// the profile and token-linear cost model that simulate the live LLM server
// (docs/llm-serve.md#calibration), and the tables of the llm_measured model with the fit
// error of each prefill form on held-out prompt lengths
// (docs/llm-serve.md#measured-step-costs). The measurement is models/llm_calibration.

#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "models/llm_calibration.hpp"

namespace tessera::cli {

void add_llm_step_profile_command(CLI::App& llm) {
  auto o = std::make_shared<StepProfileOptions>();
  CLI::App* cmd = llm.add_subcommand(
      "step-profile",
      "Measure a checkpoint's prefill and decode step costs here; write a profile for the "
      "simulator's token_linear model and, with --cost-model-out, its llm_measured model");
  cmd->add_option("checkpoint", o->checkpoint, "Checkpoint folder (config.json + safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out", o->out, "Profiles YAML to write")->required();
  cmd->add_option("--variant", o->variant, "Variant name in the profile")->capture_default_str();
  cmd->add_option("--segment", o->segment, "Segment name in the profile")->capture_default_str();
  cmd->add_option("--context", o->context, "Context tokens of the timed decode step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-batch", o->max_batch, "Batch sizes in the profile")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-tokens", o->max_tokens,
                  "Longest prefill measured (0: as long as the model's positions allow)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--cost-model-out", o->cost_model_out,
                  "Also write the llm_measured cost model (one YAML flow map for "
                  "simulation.cost_model) to this file");
  cmd->add_option("--repeats", o->repeats, "Runs per timing (the median is used)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  auto device = std::make_shared<std::string>("cpu");
  cmd->add_option("--device", *device,
                  "Device: cpu (default), cuda, cuda:N or a GPU/MIG UUID in "
                  "CUDA_VISIBLE_DEVICES (docs/iserve.md#devices)");
  cmd->callback([o, device] {
    o->device = llm_device(*device);
    write_step_profiles(*o, std::cout);
  });
}

}  // namespace tessera::cli
