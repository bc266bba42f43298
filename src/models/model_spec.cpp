#include "models/model_spec.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.hpp"

namespace tessera {
namespace {

DeviceSetting parse_device_field(const SpecNode& node) {
  DeviceSetting d;
  try {
    d.device = parse_device(node.as_string());
  } catch (const std::invalid_argument& e) {
    node.fail(e.what());
  }
  d.file = node.file();
  d.field = node.path();
  return d;
}

std::vector<int64_t> parse_shape(const SpecNode& node) {
  std::vector<int64_t> shape;
  for (const SpecNode& d : node.items()) {
    const int64_t v = d.as_integer();
    if (v < 1 || v > 4096) d.fail("dimension must be in [1, 4096]");
    shape.push_back(v);
  }
  if (shape.empty()) node.fail("shape must have at least one dimension");
  return shape;
}

FanoutRule parse_fanout(const SpecNode& node) {
  node.allow_only({"threshold", "max"});
  FanoutRule rule;
  if (auto t = node.get("threshold")) rule.threshold = t->as_number_in(0.0, 1.0);
  if (auto m = node.get("max")) {
    const int64_t v = m->as_integer();
    if (v < 0 || v > 1024) m->fail("must be in [0, 1024]");
    rule.max = static_cast<int>(v);
  }
  return rule;
}

ModelSpec parse_model(const SpecNode& node, const std::vector<int64_t>& default_input) {
  node.allow_only({"variant", "zoo", "torchscript", "emulate", "input", "classes", "seed", "fanout",
                   "latency_ms", "per_item_ms", "device", "remote", "stage_input", "output"});
  ModelSpec spec;
  spec.variant = node.at("variant").as_string();
  if (spec.variant.empty()) node.at("variant").fail("must not be empty");
  const bool zoo = node.has("zoo");
  const bool script = node.has("torchscript");
  const bool emulate = node.has("emulate");
  const bool remote = node.has("remote");
  if ((zoo ? 1 : 0) + (script ? 1 : 0) + (emulate ? 1 : 0) + (remote ? 1 : 0) != 1) {
    node.fail("give exactly one of 'zoo', 'torchscript', 'emulate' and 'remote'");
  }
  if (remote) {
    spec.source = ModelSpec::Source::kRemote;
    spec.remote = parse_remote_spec(node.at("remote"));
    if (spec.remote.model.empty()) spec.remote.model = spec.variant;
    for (const char* key : {"classes", "seed"}) {
      if (node.has(key)) node.at(key).fail("a remote model does not take it");
    }
  } else if (emulate) {
    node.at("emulate").as_choice({"profile"});
    spec.source = ModelSpec::Source::kProfileTimed;
    for (const char* key : {"classes", "seed", "fanout"}) {
      if (node.has(key)) node.at(key).fail("an emulated model does not take it");
    }
  } else if (zoo) {
    spec.arch = node.at("zoo").as_string();
    if (!is_zoo_architecture(spec.arch)) {
      std::string known;
      for (const auto& a : zoo_architectures()) known += (known.empty() ? "" : ", ") + a;
      node.at("zoo").fail("unknown architecture '" + spec.arch + "' (known: " + known + ")");
    }
  } else {
    spec.source = ModelSpec::Source::kTorchScript;
    if (!node.has("input")) node.fail("a TorchScript model needs its 'input' shape");
    spec.file = node.at("torchscript").as_path();
  }
  spec.input_shape = node.has("input") ? parse_shape(node.at("input")) : default_input;
  if (auto c = node.get("classes")) {
    const int64_t v = c->as_integer();
    if (v < 1 || v > 100000) c->fail("must be in [1, 100000]");
    spec.classes = v;
  }
  if (auto s = node.get("seed")) {
    const int64_t v = s->as_integer();
    if (v < 0) s->fail("must be >= 0");
    spec.seed = static_cast<uint64_t>(v);
  }
  if (auto f = node.get("fanout")) spec.fanout = parse_fanout(*f);
  if (auto si = node.get("stage_input")) {
    spec.stage_input = si->as_choice({"request", "parent"}) == "parent"
                           ? ModelSpec::StageInput::kParent
                           : ModelSpec::StageInput::kRequest;
  }
  if (auto o = node.get("output")) {
    if (spec.arch != "sleep") o->fail("only the zoo's 'sleep' model takes it");
    spec.output_shape = parse_shape(*o);
  }
  if (auto d = node.get("device")) spec.device = parse_device_field(*d);
  for (const char* key : {"latency_ms", "per_item_ms"}) {
    if (auto n = node.get(key)) {
      if (spec.arch != "sleep" && spec.arch != "faulty") {
        n->fail("only the zoo's 'sleep' and 'faulty' models take it");
      }
      (std::string(key) == "latency_ms" ? spec.latency_ms : spec.per_item_ms) =
          n->as_number_in(0.0, 60000.0);
    }
  }
  return spec;
}

}  // namespace

int apply_fanout_rule(const FanoutRule& rule, std::span<const float> output) {
  int n = 0;
  for (float v : output) {
    if (n >= rule.max) break;
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(v)));
    if (p > rule.threshold) ++n;
  }
  return n;
}

void ModelsConfig::set_default_device(const std::string& text) {
  try {
    device = DeviceSetting{parse_device(text), "", "--device"};
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--device: ") + e.what());
  }
}

ModelSpec ModelsConfig::spec_for(const std::string& variant) const {
  for (const ModelSpec& m : models) {
    if (m.variant != variant) continue;
    ModelSpec spec = m;
    if (!spec.device) spec.device = device;
    return spec;
  }
  if (!is_zoo_architecture(variant)) {
    throw std::invalid_argument("no model for variant '" + variant +
                                "': list it in the models file (a zoo architecture, a "
                                "TorchScript file, or `{variant: " +
                                variant +
                                ", emulate: profile}`, a profile-timed emulation; `tessera "
                                "plan` writes one) or name it after a zoo architecture");
  }
  ModelSpec spec;
  spec.variant = variant;
  spec.arch = variant;
  spec.input_shape = default_input;
  spec.device = device;
  return spec;
}

ModelsConfig parse_models_config(const SpecNode& node) {
  node.expect_map();
  node.allow_only({"input", "torch_threads", "models", "device"});
  ModelsConfig config;
  if (auto d = node.get("device")) config.device = parse_device_field(*d);
  if (auto in = node.get("input")) config.default_input = parse_shape(*in);
  if (auto t = node.get("torch_threads")) {
    const int64_t v = t->as_integer();
    if (v < 1 || v > 256) t->fail("must be in [1, 256]");
    config.torch_threads = static_cast<int>(v);
  }
  if (auto list = node.get("models")) {
    for (const SpecNode& item : list->items()) {
      ModelSpec spec = parse_model(item, config.default_input);
      const bool dup = std::any_of(config.models.begin(), config.models.end(),
                                   [&](const ModelSpec& m) { return m.variant == spec.variant; });
      if (dup) item.at("variant").fail("variant '" + spec.variant + "' is listed twice");
      config.models.push_back(std::move(spec));
    }
  }
  return config;
}

ModelsConfig load_models_config(const std::filesystem::path& file) {
  return parse_models_config(SpecNode::load_file(file));
}

}  // namespace tessera
