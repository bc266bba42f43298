// `tessera llm step-profile`: measures a checkpoint's step costs on this machine and writes
// the profile and token-linear cost model that simulate the live LLM server
// (docs/llm-serve.md#calibration).

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "llm_serve/step_profile.hpp"
#include "llm_torch/decoder.hpp"

namespace tessera::cli {
namespace {

struct StepProfileOptions {
  std::string checkpoint;
  std::string out;
  std::string variant = "llm";
  std::string segment = "cpu";
  int64_t context = 2048;
  int max_batch = 16;
  int repeats = 5;
};

void run_step_profile(const StepProfileOptions& o) {
  auto decoder = Decoder::load(o.checkpoint);
  const int64_t positions = decoder->architecture().max_positions;
  std::vector<int64_t> lengths;
  for (int64_t n : {16, 64, 256, 512, 1024, 2048, 4096}) {
    if (positions <= 0 || n < positions) lengths.push_back(n);
  }
  const StepProfile p = measure_step_profile(*decoder, lengths, o.context, o.repeats);
  std::cout << "prefill (tokens -> ms):";
  for (const auto& [n, t] : p.prefill_points) std::cout << fmt::format(" {}:{:.3f}", n, t * 1e3);
  std::cout << fmt::format(
      "\nfit: prefill = {:.4f} ms + {:.6f} ms/token; decode at context {} = {:.4f} ms per "
      "request\n",
      p.prefill_base_s * 1e3, p.per_prefill_token_s * 1e3, p.context, p.per_decode_s * 1e3);
  // The simulator's token_linear model: profile(batch) + per_input_token x prefill tokens +
  // per_output_token x decoded tokens. profile(batch) = batch x the decode cost (the
  // runtime steps each request on its own); a prefill's own intercept is left out (see
  // docs/llm-serve.md#calibration).
  std::ofstream out(o.out);
  if (!out) throw std::runtime_error("cannot write " + o.out);
  out << fmt::format(
      "# tessera llm step-profile {} (context {}): measured on this machine.\n"
      "# prefill = {:.4f} ms + {:.6f} ms/token; decode = {:.4f} ms per request.\n"
      "# simulation: cost_model: {{kind: token_linear, per_input_token_ms: {:.6f}, "
      "per_output_token_ms: 0}}\n"
      "profiles:\n  - variant: {}\n    segment: {}\n    origin: measured\n"
      "    source: \"tessera llm step-profile\"\n    latency_ms: {{",
      o.checkpoint, p.context, p.prefill_base_s * 1e3, p.per_prefill_token_s * 1e3,
      p.per_decode_s * 1e3, p.per_prefill_token_s * 1e3, o.variant, o.segment);
  for (int b = 1; b <= o.max_batch; ++b) {
    out << fmt::format("{}{}: {:.4f}", b == 1 ? "" : ", ", b, b * p.per_decode_s * 1e3);
  }
  out << "}\n";
  std::cout << fmt::format("wrote {} (per_input_token_ms: {:.6f})\n", o.out,
                           p.per_prefill_token_s * 1e3);
}

}  // namespace

void add_llm_step_profile_command(CLI::App& llm) {
  auto o = std::make_shared<StepProfileOptions>();
  CLI::App* cmd = llm.add_subcommand(
      "step-profile",
      "Measure a checkpoint's prefill and decode step costs here; write a profile for the "
      "simulator's token_linear model");
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
  cmd->add_option("--repeats", o->repeats, "Runs per timing (the median is used)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->callback([o] { run_step_profile(*o); });
}

}  // namespace tessera::cli
