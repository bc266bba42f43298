#include "llm_arch/iserve_estimator.hpp"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tessera {
namespace {

constexpr double kMaxBytes = 1e15;   // a petabyte: no footprint is larger
constexpr double kMaxSeconds = 1e6;  // no request takes longer

std::string compression_name(const CompressionProfile& c) {
  return to_string(c.weights) + "-" + to_string(c.kv_cache);
}

// A record's fingerprint_layers: one of the profile's two depths.
int64_t depth_of(const SpecNode& node, std::pair<int64_t, int64_t> depths) {
  const int64_t d = node.as_integer_in(1, 1024);
  if (d != depths.first && d != depths.second) {
    node.fail("is " + std::to_string(d) + ", not one of the fingerprint depths " +
              std::to_string(depths.first) + " and " + std::to_string(depths.second));
  }
  return d;
}

}  // namespace

FingerprintProfile parse_fingerprint_profile(const SpecNode& node) {
  node.expect_map();
  node.allow_only({"format", "model", "layers", "device", "prompt_tokens", "repeats",
                   "fingerprint_depths", "compressions"});
  const std::string format = node.at("format").as_string();
  if (format != kFingerprintProfileFormat) {
    node.at("format").fail("is '" + format.substr(0, 80) + "', expected '" +
                           kFingerprintProfileFormat + "'");
  }
  FingerprintProfile p;
  p.model = node.at("model").as_string();
  p.layers = node.at("layers").as_integer_in(1, 1024);
  p.device = node.string_or("device", "");
  p.prompt_tokens = node.integer_in_or("prompt_tokens", 1, 1 << 24, 1);
  p.repeats = node.integer_in_or("repeats", 1, 1 << 20, 1);
  if (const auto depths = node.get("fingerprint_depths")) {
    const std::vector<SpecNode> d = depths->items();
    if (d.size() != 2) depths->fail("must list two fingerprint depths");
    p.depths = {d[0].as_integer_in(1, 1024), d[1].as_integer_in(1, 1024)};
    if (p.depths.first >= p.depths.second) depths->fail("must be increasing (a < b)");
  }
  const std::vector<SpecNode> comps = node.at("compressions").items();
  if (comps.empty()) node.at("compressions").fail("is empty");
  if (comps.size() > 64) node.at("compressions").fail("lists more than 64 compressions");
  for (const SpecNode& cn : comps) {
    cn.expect_map();
    cn.allow_only({"weights", "kv_cache", "memory", "latency"});
    CompressionProfile c;
    try {
      c.weights = weight_quant_from_string(cn.at("weights").as_string());
    } catch (const std::invalid_argument& e) {
      cn.at("weights").fail(e.what());
    }
    try {
      c.kv_cache = kv_quant_from_string(cn.at("kv_cache").as_string());
    } catch (const std::invalid_argument& e) {
      cn.at("kv_cache").fail(e.what());
    }
    for (const CompressionProfile& seen : p.compressions) {
      if (seen.weights == c.weights && seen.kv_cache == c.kv_cache) {
        cn.fail("repeats the compression " + compression_name(c));
      }
    }
    const auto memory = cn.at("memory").items();
    const auto latency = cn.at("latency").items();
    if (memory.size() > 4096 || latency.size() > 4096) cn.fail("holds more than 4096 records");
    for (const SpecNode& m : memory) {
      m.expect_map();
      m.allow_only({"fingerprint_layers", "tp", "pp", "bytes"});
      FingerprintMemory r;
      r.fingerprint_layers = depth_of(m.at("fingerprint_layers"), p.depths);
      r.tp = static_cast<int>(m.at("tp").as_integer_in(1, 1024));
      r.pp = static_cast<int>(m.at("pp").as_integer_in(1, 1024));
      r.bytes = m.at("bytes").as_positive(kMaxBytes);
      c.memory.push_back(r);
    }
    for (const SpecNode& l : latency) {
      l.expect_map();
      l.allow_only({"fingerprint_layers", "tp", "output_length", "seconds", "cpu_seconds"});
      FingerprintLatency r;
      r.fingerprint_layers = depth_of(l.at("fingerprint_layers"), p.depths);
      r.tp = static_cast<int>(l.at("tp").as_integer_in(1, 1024));
      r.output_length = l.at("output_length").as_integer_in(0, 1 << 24);
      r.seconds = l.at("seconds").as_positive(kMaxSeconds);
      if (const auto cpu = l.get("cpu_seconds")) r.cpu_seconds = cpu->as_positive(kMaxSeconds);
      c.latency.push_back(r);
    }
    p.compressions.push_back(std::move(c));
  }
  return p;
}

FingerprintProfile load_fingerprint_profile(const std::filesystem::path& file) {
  return parse_fingerprint_profile(SpecNode::load_file(file));
}

std::string fingerprint_profile_to_json(const FingerprintProfile& p) {
  nlohmann::ordered_json j;
  j["format"] = kFingerprintProfileFormat;
  j["model"] = p.model;
  j["layers"] = p.layers;
  j["device"] = p.device;
  j["prompt_tokens"] = p.prompt_tokens;
  j["repeats"] = p.repeats;
  if (p.depths != std::pair<int64_t, int64_t>{1, 2}) {
    j["fingerprint_depths"] = {p.depths.first, p.depths.second};
  }
  j["compressions"] = nlohmann::ordered_json::array();
  for (const CompressionProfile& c : p.compressions) {
    nlohmann::ordered_json cj;
    cj["weights"] = to_string(c.weights);
    cj["kv_cache"] = to_string(c.kv_cache);
    cj["memory"] = nlohmann::ordered_json::array();
    for (const FingerprintMemory& m : c.memory) {
      cj["memory"].push_back({{"fingerprint_layers", m.fingerprint_layers},
                              {"tp", m.tp},
                              {"pp", m.pp},
                              {"bytes", m.bytes}});
    }
    cj["latency"] = nlohmann::ordered_json::array();
    for (const FingerprintLatency& l : c.latency) {
      nlohmann::ordered_json lj{{"fingerprint_layers", l.fingerprint_layers},
                                {"tp", l.tp},
                                {"output_length", l.output_length},
                                {"seconds", l.seconds}};
      if (l.cpu_seconds > 0) lj["cpu_seconds"] = l.cpu_seconds;
      cj["latency"].push_back(lj);
    }
    j["compressions"].push_back(cj);
  }
  return j.dump(2) + "\n";
}

double MemoryTerms::at(const Parallelism& p) const {
  return w + p.tp * a + (p.pp >= 2 ? p.pp * a_p : 0.0);
}

namespace {

const FingerprintMemory* find_memory(const CompressionProfile& c, int64_t fp, int tp, int pp) {
  for (const FingerprintMemory& m : c.memory) {
    if (m.fingerprint_layers == fp && m.tp == tp && m.pp == pp) return &m;
  }
  return nullptr;
}

// The full model's footprint at (tp, pp), extrapolated from the two fingerprints.
double extrapolated_memory(const CompressionProfile& c, int64_t layers, int tp, int pp,
                           std::pair<int64_t, int64_t> depths) {
  const auto [a, b] = depths;
  const FingerprintMemory* fa = find_memory(c, a, tp, pp);
  const FingerprintMemory* fb = find_memory(c, b, tp, pp);
  if (fa == nullptr || fb == nullptr) {
    throw std::invalid_argument("the profile of " + compression_name(c) + " lacks the " +
                                std::to_string(a) + "- and " + std::to_string(b) +
                                "-layer memory at TP " + std::to_string(tp) + ", PP " +
                                std::to_string(pp));
  }
  const double per_layer = (fb->bytes - fa->bytes) / static_cast<double>(b - a);
  return fa->bytes + static_cast<double>(layers - a) * per_layer;
}

// TTFT and TPOT of one fingerprint at one TP from its two request latencies (Eq. 1).
std::pair<double, double> solve_eq1(const CompressionProfile& c, int64_t fp, int tp,
                                    LatencyClock clock) {
  std::vector<const FingerprintLatency*> runs;
  for (const FingerprintLatency& l : c.latency) {
    if (l.fingerprint_layers == fp && l.tp == tp) runs.push_back(&l);
  }
  const FingerprintLatency* a = nullptr;
  const FingerprintLatency* b = nullptr;
  for (const FingerprintLatency* r : runs) {
    if (a == nullptr || r->output_length < a->output_length) a = r;
    if (b == nullptr || r->output_length > b->output_length) b = r;
  }
  if (a == nullptr || a->output_length == b->output_length) {
    throw std::invalid_argument(
        "the profile of " + compression_name(c) + " lacks " + std::to_string(fp) +
        "-layer latencies at two output lengths at TP " + std::to_string(tp));
  }
  const auto value = [&](const FingerprintLatency* r) {
    if (clock == LatencyClock::kWall) return r->seconds;
    if (r->cpu_seconds <= 0) {
      throw std::invalid_argument("the profile of " + compression_name(c) +
                                  " has no cpu_seconds (needed for the CPU-time clock)");
    }
    return r->cpu_seconds;
  };
  const double tpot =
      (value(b) - value(a)) / static_cast<double>(b->output_length - a->output_length);
  const double ttft = value(a) - static_cast<double>(a->output_length) * tpot;
  return {ttft, tpot};
}

}  // namespace

MemoryTerms solve_memory(const CompressionProfile& c, int64_t layers,
                         std::pair<int64_t, int64_t> depths) {
  const double m11 = extrapolated_memory(c, layers, 1, 1, depths);
  const double m12 = extrapolated_memory(c, layers, 1, 2, depths);
  MemoryTerms t;
  t.a_p = (m12 - m11) / 2.0;
  if (find_memory(c, depths.first, 2, 1) != nullptr) {
    const double m21 = extrapolated_memory(c, layers, 2, 1, depths);
    t.a = m21 - m11;
    t.w = 2.0 * m11 - m21;
  } else {  // the model cannot run TP 2: only W + A is needed
    t.w = m11;
  }
  return t;
}

LatencyTerms solve_latency(const CompressionProfile& c, int tp, LatencyClock clock,
                           std::pair<int64_t, int64_t> depths) {
  const auto [a, b] = depths;
  const auto [ttft_a, tpot_a] = solve_eq1(c, a, tp, clock);
  const auto [ttft_b, tpot_b] = solve_eq1(c, b, tp, clock);
  const double span = static_cast<double>(b - a), da = static_cast<double>(a);
  const double ttft_layer = (ttft_b - ttft_a) / span, tpot_layer = (tpot_b - tpot_a) / span;
  return {ttft_layer, ttft_a - da * ttft_layer, tpot_layer, tpot_a - da * tpot_layer};
}

ConfigMap estimate_config_map(const LlmArchitecture& arch, const FingerprintProfile& profile,
                              int gpus, LatencyClock clock) {
  ConfigMap map;
  map.latency_clock = clock == LatencyClock::kWall ? "wall" : "cpu";
  map.gpu = profile.device;
  const auto L = static_cast<double>(arch.layers);
  std::map<std::string, MemoryTerms> memory;
  std::map<std::string, std::string> memory_problem;
  for (const CompressionProfile& c : profile.compressions) {
    try {
      memory[compression_name(c)] = solve_memory(c, arch.layers, profile.depths);
    } catch (const std::invalid_argument& e) {
      memory_problem[compression_name(c)] = e.what();
    }
  }
  for (const LlmDeploymentConfig& config : enumerate_deployment_configs(arch, gpus)) {
    const std::string name = config.name();
    if (config.pruning != Pruning::kNone) {
      map.not_estimated.emplace_back(name, "pruning is not profiled (no pruned fingerprints)");
      continue;
    }
    const CompressionProfile* c = nullptr;
    for (const CompressionProfile& p : profile.compressions) {
      if (p.weights == config.weights && p.kv_cache == config.kv_cache) c = &p;
    }
    if (c == nullptr) {
      map.not_estimated.emplace_back(name, "the profile has no " + to_string(config.weights) + "-" +
                                               to_string(config.kv_cache) + " fingerprints");
      continue;
    }
    const auto problem = memory_problem.find(compression_name(*c));
    if (problem != memory_problem.end()) {
      map.not_estimated.emplace_back(name, problem->second);
      continue;
    }
    LatencyTerms lat;
    try {
      lat = solve_latency(*c, config.parallelism.tp, clock, profile.depths);
    } catch (const std::invalid_argument& e) {
      map.not_estimated.emplace_back(name, e.what());
      continue;
    }
    const MemoryTerms& m = memory.at(compression_name(*c));
    ConfigMapEntry e;
    e.model = arch.name;
    e.layers = arch.layers;
    e.config = config;
    e.memory_bytes = m.at(config.parallelism);
    e.mem_base_bytes = m.w + m.a;
    e.ttft_s = L * lat.ttft_layer + lat.ttft_other;
    e.tpot_s = L * lat.tpot_layer + lat.tpot_other;
    e.source = "estimated";
    map.entries.push_back(std::move(e));
  }
  return map;
}

}  // namespace tessera
