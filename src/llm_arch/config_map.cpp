#include "llm_arch/config_map.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/spec_node.hpp"

namespace tessera {

std::string config_map_to_json(const ConfigMap& map) {
  nlohmann::ordered_json j;
  j["format"] = "tessera-config-map/1";
  j["gpu"] = map.gpu;
  j["entries"] = nlohmann::ordered_json::array();
  for (const ConfigMapEntry& e : map.entries) {
    j["entries"].push_back({{"model", e.model},
                            {"layers", e.layers},
                            {"config", e.config.name()},
                            {"tp", e.config.parallelism.tp},
                            {"pp", e.config.parallelism.pp},
                            {"weights", to_string(e.config.weights)},
                            {"kv_cache", to_string(e.config.kv_cache)},
                            {"pruning", to_string(e.config.pruning)},
                            {"memory_bytes", e.memory_bytes},
                            {"mem_base_bytes", e.mem_base_bytes},
                            {"ttft_s", e.ttft_s},
                            {"tpot_s", e.tpot_s},
                            {"source", e.source}});
  }
  if (!map.latency_clock.empty()) j["latency_clock"] = map.latency_clock;
  if (!map.not_estimated.empty()) {
    j["not_estimated"] = nlohmann::ordered_json::array();
    for (const auto& [name, why] : map.not_estimated) {
      j["not_estimated"].push_back({{"name", name}, {"reason", why}});
    }
  }
  return j.dump(1) + "\n";
}

ConfigMap load_config_map(const std::filesystem::path& file) {
  const SpecNode root = SpecNode::load_file(file);
  root.expect_map();
  root.allow_only({"format", "gpu", "entries", "latency_clock", "not_estimated"});
  const std::string format = root.at("format").as_string();
  if (format != "tessera-config-map/1") {
    throw SpecError(root.file(), "format", "expected tessera-config-map/1, got " + format);
  }
  ConfigMap map;
  map.gpu = root.string_or("gpu", "");
  if (const auto clock = root.get("latency_clock")) {
    map.latency_clock = clock->as_string();
    if (map.latency_clock != "wall" && map.latency_clock != "cpu") {
      throw SpecError(clock->file(), clock->path(),
                      "expected wall or cpu, got " + map.latency_clock);
    }
  }
  if (const auto missing = root.get("not_estimated")) {
    for (const SpecNode& n : missing->items()) {
      n.expect_map();
      n.allow_only({"name", "reason"});
      map.not_estimated.emplace_back(n.at("name").as_string(), n.string_or("reason", ""));
    }
  }
  for (const SpecNode& n : root.at("entries").items()) {
    n.expect_map();
    n.allow_only({"model", "layers", "config", "tp", "pp", "weights", "kv_cache", "pruning",
                  "memory_bytes", "mem_base_bytes", "ttft_s", "tpot_s", "source"});
    ConfigMapEntry e;
    e.model = n.at("model").as_string();
    e.layers = n.at("layers").as_integer_in(1, 1024);
    e.config.parallelism.tp = static_cast<int>(n.at("tp").as_integer_in(1, 1024));
    e.config.parallelism.pp = static_cast<int>(n.at("pp").as_integer_in(1, 1024));
    try {
      e.config.weights = weight_quant_from_string(n.at("weights").as_string());
      e.config.kv_cache = kv_quant_from_string(n.at("kv_cache").as_string());
      e.config.pruning = pruning_from_string(n.at("pruning").as_string());
    } catch (const std::invalid_argument& err) {
      throw SpecError(n.file(), n.path(), err.what());
    }
    if (const auto name = n.get("config"); name && name->as_string() != e.config.name()) {
      throw SpecError(name->file(), name->path(),
                      "names " + name->as_string() + " but the fields say " + e.config.name());
    }
    constexpr double kMaxBytes = 1e15;  // a petabyte: past any GPU cluster
    constexpr double kMaxSeconds = 86400.0;
    e.memory_bytes = n.at("memory_bytes").as_positive(kMaxBytes);
    e.mem_base_bytes = n.at("mem_base_bytes").as_positive(kMaxBytes);
    e.ttft_s = n.at("ttft_s").as_non_negative(kMaxSeconds);
    e.tpot_s = n.at("tpot_s").as_non_negative(kMaxSeconds);
    e.source = n.string_or("source", "modelled");
    map.entries.push_back(std::move(e));
  }
  return map;
}

}  // namespace tessera
