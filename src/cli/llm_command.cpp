#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include <algorithm>
#include <chrono>
#include <fstream>
#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "core/device.hpp"
#include "core/spec_node.hpp"
#include "llm_arch/checkpoint_layout.hpp"
#include "llm_arch/deployment_config.hpp"
#include "llm_arch/iserve_estimator.hpp"
#include "llm_arch/llm_architecture.hpp"
#include "llm_torch/decoder.hpp"
#include "llm_torch/fingerprint_profiler.hpp"
#include "llm_torch/host_memory.hpp"
#include "models/llm_generate.hpp"
#include "sampling/sampler.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::cli {

DeviceSpec llm_device(const std::string& text) {
  try {
    DeviceSpec d = parse_device(text);
    Decoder::check_device(d);
    return d;
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("--device: ") + e.what());
  }
}

namespace {

// A model argument: a config.json, or a directory holding one (a checkpoint folder or a
// bundled model such as data/llm/llama-2-70b).
std::filesystem::path config_path(const std::string& model) {
  std::filesystem::path p(model);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  return p;
}

template <typename Enum, typename Parse>
std::vector<Enum> parse_list(const std::vector<std::string>& names, Parse parse,
                             std::vector<Enum> fallback) {
  if (names.empty()) return fallback;
  std::vector<Enum> out;
  for (const std::string& name : names) out.push_back(parse(name));
  return out;
}

struct ConfigsOptions {
  std::string model;
  int gpus = 8;
  std::vector<std::string> weights, kv_caches, prunings;
  bool json = false;
};

void run_configs(const ConfigsOptions& o) {
  const LlmArchitecture arch = load_llm_architecture(config_path(o.model));
  SupportMask mask;
  mask.weights = parse_list(o.weights, weight_quant_from_string, mask.weights);
  mask.kv_caches = parse_list(o.kv_caches, kv_quant_from_string, mask.kv_caches);
  if (o.prunings.size() == 1 && o.prunings[0] == "none") {
    mask.prunings.clear();
  } else {
    mask.prunings = parse_list(o.prunings, pruning_from_string, mask.prunings);
  }
  const std::vector<Parallelism> options = parallelism_options(arch, o.gpus);
  const std::vector<LlmDeploymentConfig> configs = enumerate_deployment_configs(arch, o.gpus, mask);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = arch.name;
    j["gpus"] = o.gpus;
    j["parallelism_options"] = options.size();
    j["configurations"] = nlohmann::json::array();
    for (const LlmDeploymentConfig& c : configs) {
      j["configurations"].push_back({{"name", c.name()},
                                     {"tp", c.parallelism.tp},
                                     {"pp", c.parallelism.pp},
                                     {"weights", to_string(c.weights)},
                                     {"kv_cache", to_string(c.kv_cache)},
                                     {"pruning", to_string(c.pruning)}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s (%s): %lld layers, hidden %lld, %lld heads / %lld KV heads, %.2fB parameters\n",
              arch.name.c_str(), std::string(family_name(arch.family)).c_str(),
              static_cast<long long>(arch.layers), static_cast<long long>(arch.hidden),
              static_cast<long long>(arch.heads), static_cast<long long>(arch.kv_heads),
              static_cast<double>(arch.total_params()) / 1e9);
  std::ostringstream pairs;
  for (const Parallelism& p : options) pairs << " " << p.tp << "x" << p.pp;
  std::printf("%zu parallelism options (TP x PP) on %d GPUs:%s\n", options.size(), o.gpus,
              pairs.str().c_str());
  for (int tp = 1; tp <= o.gpus; tp *= 2) {
    const std::string problem = parallelism_problem(arch, Parallelism{tp, 1});
    if (!problem.empty()) std::printf("  not TP %d: %s\n", tp, problem.c_str());
  }
  std::printf("%zu configurations\n", configs.size());
  for (const LlmDeploymentConfig& c : configs) std::printf("  %s\n", c.name().c_str());
}

struct RandomCheckpointOptions {
  std::string model;
  std::string out;
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  int64_t max_positions = 0;  // 0: the model's
  std::string dtype = "F16";
  uint64_t seed = 1;
};

void run_random_checkpoint(const RandomCheckpointOptions& o) {
  LlmArchitecture arch = load_llm_architecture(config_path(o.model));
  // Scaled-down shapes keep the family's structure: only the dimensions given change.
  if (o.layers > 0) arch.layers = o.layers;
  if (o.hidden > 0) arch.hidden = o.hidden;
  if (o.heads > 0) arch.heads = o.heads;
  if (o.kv_heads > 0) arch.kv_heads = o.kv_heads;
  if (o.ffn > 0) arch.ffn = o.ffn;
  if (o.vocab > 0) arch.vocab = o.vocab;
  if (o.max_positions > 0) arch.max_positions = o.max_positions;
  if (arch.kv_heads > arch.heads) arch.kv_heads = arch.heads;
  arch.rotary_dim = std::min(arch.rotary_dim, arch.hidden / arch.heads);
  arch.name += "@random-L" + std::to_string(arch.layers) + "-H" + std::to_string(arch.hidden);
  // Re-read what we would write, so an inconsistent shape is refused before writing.
  const std::string json = llm_architecture_to_json(arch);
  arch = parse_llm_architecture(SpecNode::load_string(json, "--shape"));
  const Dtype dtype = o.dtype == "F32"    ? Dtype::kF32
                      : o.dtype == "BF16" ? Dtype::kBF16
                                          : Dtype::kF16;
  write_random_checkpoint(arch, o.out, dtype, o.seed);
  std::printf("wrote %s: %s-shaped, %lld layers, hidden %lld, %.3fB parameters, %s, seed %llu\n",
              o.out.c_str(), std::string(family_name(arch.family)).c_str(),
              static_cast<long long>(arch.layers), static_cast<long long>(arch.hidden),
              static_cast<double>(arch.total_params()) / 1e9, o.dtype.c_str(),
              static_cast<unsigned long long>(o.seed));
}

struct FingerprintOptions {
  std::string checkpoint;
  std::string out;
  int64_t layers = 1;
};

void run_fingerprint(const FingerprintOptions& o) {
  const LlmArchitecture full = load_llm_architecture(config_path(o.checkpoint));
  const LlmArchitecture fp = write_fingerprint(o.checkpoint, o.layers, o.out);
  std::printf(
      "wrote %s: %lld of %lld layers, %.4fB of %.4fB parameters (%.2f%%)\n", o.out.c_str(),
      static_cast<long long>(fp.layers), static_cast<long long>(full.layers),
      static_cast<double>(fp.total_params()) / 1e9, static_cast<double>(full.total_params()) / 1e9,
      100.0 * static_cast<double>(fp.total_params()) / static_cast<double>(full.total_params()));
}

struct GenerateOptions {
  std::string checkpoint;
  std::string prompt = "Hello";
  int64_t new_tokens = 16;
  std::string weights = "fp16";
  std::string kv = "kv16";
  std::string device = "cpu";
  bool chat = false;  // the prompt as a user message through the chat template
  SamplingParams sampling = SamplingParams::greedy();
  int64_t seed = -1;  // < 0: none
};

// Generation with the checkpoint's tokenizer (its tokenizer.json, else one token per byte)
// and the sampler, timed (models/llm_generate.hpp). Stops at the tokenizer's
// end-of-sequence token unless --ignore-eos.
void run_generate(const GenerateOptions& o) {
  const DecoderOptions options{weight_quant_from_string(o.weights),
                               kv_quant_from_string(o.kv),
                               1,
                               1,
                               {},
                               llm_device(o.device)};
  const auto decoder = Decoder::load(o.checkpoint, options);
  const LlmArchitecture& arch = decoder->architecture();
  const std::filesystem::path dir(o.checkpoint);
  const auto tokenizer = load_tokenizer(dir, arch.vocab);
  const auto chat = ChatTemplate::load(dir / "tokenizer_config.json");
  std::vector<int64_t> prompt;
  if (o.chat) {
    if (!chat) {
      throw std::invalid_argument("--chat: " + (dir / "tokenizer_config.json").string() +
                                  " has no chat_template");
    }
    // As transformers' apply_chat_template(tokenize=True): the template writes the special
    // tokens it wants.
    prompt = tokenizer->encode(chat->apply({{"user", o.prompt}}, true), false);
  } else {
    prompt = tokenizer->encode(o.prompt, true);
  }
  if (prompt.empty()) throw std::invalid_argument("--prompt gives no tokens");
  SamplingParams sampling = o.sampling;
  if (o.seed >= 0) sampling.seed = static_cast<uint64_t>(o.seed);
  if (chat) {
    if (auto eos = tokenizer->token_id(chat->special_token("eos_token"))) {
      sampling.stop_token_ids.push_back(*eos);
    }
  }
  Sampler sampler(sampling);
  const TimedGeneration g = generate_timed(*decoder, prompt, o.new_tokens, sampler);
  const std::vector<int64_t>& out = g.tokens;
  const bool stopped = g.stopped;
  const double ttft = g.ttft_s;
  const double decode = g.decode_s;
  std::printf(
      "model %s (%s), weights held as %s (%.2f bytes per parameter, %.1f MB), KV cache %s: %.2f "
      "MB\n",
      arch.name.c_str(), std::string(family_name(arch.family)).c_str(),
      decoder->weight_dtype().c_str(), decoder->bytes_per_parameter(),
      static_cast<double>(decoder->weight_bytes()) / 1e6, o.kv.c_str(),
      static_cast<double>(g.kv_bytes) / 1e6);
  std::printf("tokenizer %s%s; prompt %zu tokens, generated %lld%s: TTFT %.1f ms, TPOT %.2f ms\n",
              tokenizer->name().c_str(), o.chat ? " with the chat template" : "", prompt.size(),
              static_cast<long long>(out.size()), stopped ? " (stopped at end-of-sequence)" : "",
              1e3 * ttft,
              out.size() > 1 ? 1e3 * decode / static_cast<double>(out.size() - 1) : 0.0);
  std::printf("tokens:");
  for (int64_t id : out) std::printf(" %lld", static_cast<long long>(id));
  std::printf("\ntext: %s\n", nlohmann::json(tokenizer->decode(out)).dump().c_str());
}

// Writes `text` to `path` (creating its folder), or fails naming the file.
void write_text(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

struct ProfileOptions {
  std::string checkpoint, out, work;
  std::vector<std::string> weights{"fp16", "int8", "int4"}, kv{"kv16", "kv8"};
  std::vector<int> tps;
  int gpus = 8;
  int64_t prompt_tokens = 16;
  std::vector<int64_t> lengths{4, 24};
  int repeats = 3;
  std::string device = "cpu";
  int warmups = 2;
  std::vector<int64_t> depths{1, 2};  // fingerprint layers (iServe: 1 and 2)
};

void run_profile(const ProfileOptions& o) {
  const LlmArchitecture arch = load_llm_architecture(config_path(o.checkpoint));
  std::vector<CompressionProfile> comps;
  for (const std::string& w : o.weights) {
    for (const std::string& k : o.kv) {
      CompressionProfile c;
      c.weights = weight_quant_from_string(w);
      c.kv_cache = kv_quant_from_string(k);
      comps.push_back(c);
    }
  }
  std::vector<int> tps = o.tps;
  if (tps.empty()) {
    for (const Parallelism& p : parallelism_options(arch, o.gpus)) {
      if (p.pp == 1) tps.push_back(p.tp);
    }
  }
  const std::string work = o.work.empty() ? o.out + ".fingerprints" : o.work;
  MeasureOptions how;
  how.prompt_tokens = o.prompt_tokens;
  how.output_lengths = o.lengths;
  how.repeats = o.repeats;
  how.device = llm_device(o.device);
  how.warmups = o.warmups;
  const FingerprintProfile profile =
      profile_fingerprints(o.checkpoint, work, comps, tps, how, {o.depths[0], o.depths[1]});
  write_text(o.out, fingerprint_profile_to_json(profile));
  std::printf(
      "profiled the %lld- and %lld-layer fingerprints of %s (%lld layers): %zu "
      "compressions, TP",
      static_cast<long long>(o.depths[0]), static_cast<long long>(o.depths[1]), arch.name.c_str(),
      static_cast<long long>(arch.layers), comps.size());
  for (int tp : tps) std::printf(" %d", tp);
  std::printf("; wrote %s\n", o.out.c_str());
}

struct EstimateOptions {
  std::string profile, model, out, clock = "wall";
  int gpus = 8;
};

void run_estimate(const EstimateOptions& o) {
  const FingerprintProfile profile = load_fingerprint_profile(o.profile);
  const LlmArchitecture arch = load_llm_architecture(config_path(o.model));
  if (profile.model != arch.name) {
    std::fprintf(stderr, "warning: %s profiles '%s' but the model is '%s'\n", o.profile.c_str(),
                 profile.model.c_str(), arch.name.c_str());
  }
  const ConfigMap map = estimate_config_map(
      arch, profile, o.gpus, o.clock == "cpu" ? LatencyClock::kCpu : LatencyClock::kWall);
  write_text(o.out, config_map_to_json(map));
  std::printf("%s: %zu configurations estimated, %zu not (see not_estimated); wrote %s\n",
              arch.name.c_str(), map.entries.size(), map.not_estimated.size(), o.out.c_str());
  for (const ConfigMapEntry& e : map.entries) {
    std::printf("  %-22s memory %9.1f MB  TTFT %8.2f ms  TPOT %7.2f ms\n", e.config.name().c_str(),
                e.memory_bytes / 1e6, 1e3 * e.ttft_s, 1e3 * e.tpot_s);
  }
}

struct MeasureCliOptions {
  std::string checkpoint, out;
  int tp = 1, pp = 1;
  std::string weights = "fp16", kv = "kv16";
  int64_t prompt_tokens = 16;
  std::vector<int64_t> lengths{4, 24};
  int repeats = 3;
  std::vector<std::string> alongside;  // checkpoints timed in the same loop (at PP 1)
  std::string device = "cpu";
  int warmups = 2;
};

// Measures a (full) checkpoint the way the profiler measures fingerprints: the reference
// the estimates are validated against.
void run_measure(const MeasureCliOptions& o) {
  MeasureOptions how;
  how.prompt_tokens = o.prompt_tokens;
  how.output_lengths = o.lengths;
  how.repeats = o.repeats;
  how.warmups = o.warmups;
  const DecoderOptions options{weight_quant_from_string(o.weights),
                               kv_quant_from_string(o.kv),
                               o.tp,
                               o.pp,
                               {},
                               llm_device(o.device)};
  std::vector<std::filesystem::path> alongside(o.alongside.begin(), o.alongside.end());
  const std::vector<Measurement> all = measure_alongside(o.checkpoint, options, alongside, how);
  const Measurement& m = all.front();
  const auto latency_json = [&](const Measurement& x) {
    auto rows = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < o.lengths.size(); ++i) {
      rows.push_back({{"output_length", o.lengths[i]},
                      {"seconds", x.seconds[i]},
                      {"cpu_seconds", x.cpu_seconds[i]}});
    }
    return rows;
  };
  nlohmann::ordered_json j;
  j["checkpoint"] = o.checkpoint;
  j["tp"] = o.tp;
  j["pp"] = o.pp;
  j["weights"] = o.weights;
  j["kv_cache"] = o.kv;
  j["device"] = o.device;
  j["prompt_tokens"] = o.prompt_tokens;
  j["repeats"] = o.repeats;
  // what the host allocator did with freed memory while it measured (host_memory.hpp)
  j["host_memory"] = host_memory::holding_freed_host_memory() ? "held" : "returned";
  j["memory_bytes"] = m.peak_bytes;
  j["latency"] = latency_json(m);
  if (!alongside.empty()) {
    j["alongside"] = nlohmann::ordered_json::array();
    for (std::size_t a = 0; a < alongside.size(); ++a) {
      j["alongside"].push_back({{"checkpoint", o.alongside[a]},
                                {"tp", o.tp},
                                {"pp", 1},
                                {"latency", latency_json(all[a + 1])}});
    }
  }
  if (o.out.empty()) {
    std::cout << j.dump(2) << "\n";
  } else {
    write_text(o.out, j.dump(2) + "\n");
  }
}

}  // namespace

void add_llm_command(CLI::App& app) {
  CLI::App* llm =
      app.add_subcommand("llm", "LLM deployment: architectures and iServe configurations");
  llm->require_subcommand(1);

  auto o = std::make_shared<ConfigsOptions>();
  CLI::App* configs = llm->add_subcommand(
      "configs", "List the deployment configurations (TP x PP x compression) of an LLM");
  configs->add_option("model", o->model, "config.json, or a folder holding one (data/llm/NAME)")
      ->required();
  configs->add_option("--gpus", o->gpus, "GPUs available (TP x PP at most this)")
      ->check(CLI::Range(1, 1024));
  configs->add_option("--weights", o->weights, "Weight quantisations (fp16 int8 int4 gptq4)");
  configs->add_option("--kv", o->kv_caches, "KV-cache quantisations (kv16 kv8)");
  configs->add_option("--pruning", o->prunings,
                      "Pruning methods (wanda2:4 wanda50 llm-pruner25 llm-pruner50, or none)");
  configs->add_flag("--json", o->json, "Print JSON instead of a table");
  configs->callback([o] { run_configs(*o); });

  auto r = std::make_shared<RandomCheckpointOptions>();
  CLI::App* random = llm->add_subcommand(
      "random-checkpoint",
      "Write a random-weight checkpoint (config.json + model.safetensors) of a model's shape");
  random->add_option("model", r->model, "config.json, or a folder holding one")->required();
  random->add_option("--out", r->out, "Folder to write")->required();
  random->add_option("--layers", r->layers, "Decoder layers (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  random->add_option("--hidden", r->hidden, "Hidden size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 17));
  random->add_option("--heads", r->heads, "Attention heads")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 17));
  random->add_option("--kv-heads", r->kv_heads, "Key/value heads")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 17));
  random->add_option("--ffn", r->ffn, "MLP inner size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  random->add_option("--vocab", r->vocab, "Vocabulary size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  random
      ->add_option("--max-positions", r->max_positions,
                   "Positions (config.json max_position_embeddings; default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  random->add_option("--dtype", r->dtype, "F16, BF16 or F32")
      ->check(CLI::IsMember({"F16", "BF16", "F32"}));
  random->add_option("--seed", r->seed, "Seed of the weights");
  random->callback([r] { run_random_checkpoint(*r); });

  auto f = std::make_shared<FingerprintOptions>();
  CLI::App* fingerprint = llm->add_subcommand(
      "fingerprint", "Cut a checkpoint to its first 1 or 2 layers (iServe's fingerprint)");
  fingerprint
      ->add_option("checkpoint", f->checkpoint, "Checkpoint folder (config.json + safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  fingerprint->add_option("--out", f->out, "Folder to write")->required();
  fingerprint->add_option("--layers", f->layers, "Layers to keep (iServe uses 1 and 2)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  fingerprint->callback([f] { run_fingerprint(*f); });

  auto g = std::make_shared<GenerateOptions>();
  CLI::App* generate = llm->add_subcommand(
      "generate", "Run a checkpoint on libtorch: generation with TTFT and TPOT");
  generate->add_option("checkpoint", g->checkpoint, "Checkpoint folder (config.json + safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  generate->add_option("--prompt", g->prompt,
                       "Prompt text (the checkpoint's tokenizer.json, else one token per byte)");
  generate->add_flag("--chat", g->chat,
                     "Send the prompt as a user message through tokenizer_config.json's chat "
                     "template");
  generate->add_option("--temperature", g->sampling.temperature, "0: greedy (the default)")
      ->check(finite_range(0.0, 2.0));
  generate->add_option("--top-p", g->sampling.top_p, "Nucleus sampling")
      ->check(CLI::Range(1e-9, 1.0));
  generate->add_option("--top-k", g->sampling.top_k, "0: no limit")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  generate->add_option("--presence-penalty", g->sampling.presence_penalty)
      ->check(CLI::Range(-2.0, 2.0));
  generate->add_option("--frequency-penalty", g->sampling.frequency_penalty)
      ->check(CLI::Range(-2.0, 2.0));
  generate->add_option("--seed", g->seed, "Seed of the sampler (reproducible draws)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  generate->add_flag("--ignore-eos", g->sampling.ignore_eos,
                     "Generate past the end-of-sequence token");
  generate->add_option("--new-tokens", g->new_tokens, "Tokens to generate")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  generate
      ->add_option("--weights", g->weights,
                   "Weights: fp16 (as the checkpoint holds them: BF16, FP16 or FP32), int8, int4")
      ->check(CLI::IsMember({"fp16", "int8", "int4"}));
  generate->add_option("--kv", g->kv, "KV cache: kv16 (FP32 here) or kv8")
      ->check(CLI::IsMember({"kv16", "kv8"}));
  generate->add_option("--device", g->device,
                       "Device: cpu (default), cuda, cuda:N or a GPU/MIG UUID in "
                       "CUDA_VISIBLE_DEVICES (docs/iserve.md#devices)");
  generate->callback([g] { run_generate(*g); });

  add_iserve_llm_commands(llm);
  auto pr = std::make_shared<ProfileOptions>();
  CLI::App* profile = llm->add_subcommand(
      "profile", "Profile a checkpoint's 1- and 2-layer fingerprints (iServe §5.2-5.3)");
  profile->add_option("checkpoint", pr->checkpoint, "Checkpoint folder (config.json + safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  profile->add_option("--out", pr->out, "Profile JSON to write")->required();
  profile->add_option("--work", pr->work, "Folder for the fingerprints (default OUT.fingerprints)");
  profile->add_option("--weights", pr->weights, "Weight quantisations (fp16 int8 int4)")
      ->check(CLI::IsMember({"fp16", "int8", "int4"}));
  profile->add_option("--kv", pr->kv, "KV-cache quantisations (kv16 kv8)")
      ->check(CLI::IsMember({"kv16", "kv8"}));
  profile->add_option("--tp", pr->tps, "TP degrees to time (default: all the model runs on --gpus)")
      ->check(CLI::IsMember({1, 2, 4, 8, 16}));
  profile->add_option("--gpus", pr->gpus, "GPUs (for the default TP degrees)")
      ->check(CLI::Range(1, 1024));
  profile->add_option("--prompt-tokens", pr->prompt_tokens, "Prompt tokens of each request")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  profile->add_option("--lengths", pr->lengths, "The two output lengths (tokens after the first)")
      ->expected(2)
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  profile->add_option("--repeats", pr->repeats, "Timed requests per point (median)")
      ->check(CLI::Range(1, 100));
  profile->add_option("--device", pr->device,
                      "Device: cpu (default), cuda, cuda:N or a GPU/MIG UUID in "
                      "CUDA_VISIBLE_DEVICES (docs/iserve.md#devices)");
  profile->add_option("--warmups", pr->warmups, "Untimed requests before the timed ones")
      ->check(CLI::Range(0, 100));
  profile
      ->add_option("--fingerprint-layers", pr->depths,
                   "The two fingerprints' layers, a < b (iServe: 1 2; e.g. 4 8 for the "
                   "iserve-deep variant)")
      ->expected(2)
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  profile->callback([pr] {
    if (pr->lengths[0] == pr->lengths[1]) throw CLI::ValidationError("--lengths", "must differ");
    if (pr->depths[0] >= pr->depths[1]) {
      throw CLI::ValidationError("--fingerprint-layers", "must be increasing (a < b)");
    }
    run_profile(*pr);
  });

  auto es = std::make_shared<EstimateOptions>();
  CLI::App* estimate = llm->add_subcommand(
      "estimate", "Estimate every configuration's memory, TTFT and TPOT from a profile");
  estimate->add_option("profile", es->profile, "Profile JSON (tessera llm profile)")->required();
  estimate->add_option("--model", es->model, "The full model's config.json (or its folder)")
      ->required();
  estimate->add_option("--out", es->out, "Configuration map JSON to write")->required();
  estimate->add_option("--gpus", es->gpus, "GPUs (TP x PP at most this)")
      ->check(CLI::Range(1, 1024));
  estimate
      ->add_option("--clock", es->clock, "Latency clock: wall (default) or cpu (process CPU time)")
      ->check(CLI::IsMember({"wall", "cpu"}));
  estimate->callback([es] { run_estimate(*es); });

  auto me = std::make_shared<MeasureCliOptions>();
  CLI::App* measure = llm->add_subcommand(
      "measure", "Measure a checkpoint's memory and request latency under one configuration");
  measure->add_option("checkpoint", me->checkpoint, "Checkpoint folder (config.json + safetensors)")
      ->required()
      ->check(CLI::ExistingDirectory);
  measure->add_option("--out", me->out, "JSON to write (default: stdout)");
  measure->add_option("--tp", me->tp, "Tensor-parallel shards")->check(CLI::Range(1, 64));
  measure->add_option("--pp", me->pp, "Pipeline stages")->check(CLI::Range(1, 1024));
  measure->add_option("--weights", me->weights, "fp16 (as loaded), int8, int4")
      ->check(CLI::IsMember({"fp16", "int8", "int4"}));
  measure->add_option("--kv", me->kv, "kv16 or kv8")->check(CLI::IsMember({"kv16", "kv8"}));
  measure->add_option("--prompt-tokens", me->prompt_tokens, "Prompt tokens")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  measure->add_option("--lengths", me->lengths, "Output lengths (tokens after the first)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  measure->add_option("--repeats", me->repeats, "Timed requests per length (median)")
      ->check(CLI::Range(1, 100));
  measure->add_option("--device", me->device,
                      "Device: cpu (default), cuda, cuda:N or a GPU/MIG UUID in "
                      "CUDA_VISIBLE_DEVICES (docs/iserve.md#devices)");
  measure->add_option("--warmups", me->warmups, "Untimed requests before the timed ones")
      ->check(CLI::Range(0, 100));
  measure
      ->add_option("--alongside", me->alongside,
                   "Checkpoints timed in the same loop (each at PP 1, this TP and quantisation; "
                   "e.g. the fingerprints, for validation)")
      ->check(CLI::ExistingDirectory);
  measure->callback([me] { run_measure(*me); });
  add_llm_step_profile_command(*llm);
}

}  // namespace tessera::cli
