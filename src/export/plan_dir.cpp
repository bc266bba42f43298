#include "export/plan_dir.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <tuple>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "core/time.hpp"

namespace tessera::exporter {
namespace {

using nlohmann::json;

json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw SpecError(file.string(), "", "cannot read it: is this a `tessera plan` directory?");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw SpecError(file.string(), "", std::string("not valid JSON: ") + e.what());
  }
}

// plan.json field access with errors naming the field.
struct JsonReader {
  std::string file;
  const json& at(const json& j, const std::string& key, const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) throw SpecError(file, where + key, "missing");
    return j.at(key);
  }
  std::string str(const json& j, const std::string& key, const std::string& where) const {
    const json& v = at(j, key, where);
    if (!v.is_string()) throw SpecError(file, where + key, "must be a string");
    return v.get<std::string>();
  }
  int integer(const json& j, const std::string& key, const std::string& where, int lo) const {
    const json& v = at(j, key, where);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > 1'000'000) {
      throw SpecError(file, where + key, "must be an integer >= " + std::to_string(lo));
    }
    return v.get<int>();
  }
};

std::vector<int64_t> shape_of(const SpecNode& node) {
  std::vector<int64_t> shape;
  for (const SpecNode& d : node.items()) shape.push_back(d.as_integer_in(1, 4096));
  if (shape.empty()) node.fail("shape must have at least one dimension");
  return shape;
}

std::vector<ModelEntry> load_models(const std::filesystem::path& file) {
  const SpecNode root = SpecNode::load_file(file);
  root.expect_map();
  std::vector<int64_t> default_input{3, 64, 64};
  if (auto in = root.get("input")) default_input = shape_of(*in);
  std::vector<ModelEntry> models;
  for (const SpecNode& item : root.at("models").items()) {
    item.expect_map();
    ModelEntry m;
    m.variant = item.at("variant").as_string();
    if (auto z = item.get("zoo")) {
      m.source = ModelEntry::Source::kZoo;
      m.zoo = z->as_string();
    } else if (auto t = item.get("torchscript")) {
      m.source = ModelEntry::Source::kTorchScript;
      m.torchscript = std::filesystem::absolute(t->as_path()).lexically_normal();
    } else if (item.has("emulate")) {
      item.at("emulate").as_choice({"profile"});
    } else {
      item.fail("give one of 'zoo', 'torchscript' and 'emulate'");
    }
    m.input = item.has("input") ? shape_of(item.at("input")) : default_input;
    if (auto c = item.get("classes")) m.classes = c->as_integer_in(1, 100000);
    models.push_back(std::move(m));
  }
  return models;
}

}  // namespace

const ModelEntry& PlanDir::model(const std::string& variant) const {
  for (const ModelEntry& m : models) {
    if (m.variant == variant) return m;
  }
  throw SpecError(run.models_file.string(), "models", "no entry for variant '" + variant + "'");
}

bool PlanDir::whole_gpu(int gpu) const {
  int slices = 0;
  bool whole = false;
  for (const SlicePlacement& p : placements) {
    if (p.gpu != gpu) continue;
    ++slices;
    whole = kinds[static_cast<std::size_t>(p.kind)].whole_gpu;
  }
  return slices == 1 && whole;
}

std::string dns_label(const std::string& text) {
  std::string out;
  for (char c : text) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

PlanDir load_plan_dir(const std::filesystem::path& dir) {
  const std::filesystem::path run_file = dir / "run.yaml";
  if (!std::filesystem::exists(run_file)) {
    throw SpecError(run_file.string(), "", "missing: is this a `tessera plan` output directory?");
  }
  PlanDir p(dir, load_run_spec(run_file));
  if (p.run.models_file.empty()) {
    throw SpecError(run_file.string(), "models",
                    "missing: re-run `tessera plan` to write models.yaml and refer to it");
  }
  p.models = load_models(p.run.models_file);
  const SpecNode run_node = SpecNode::load_file(run_file);
  if (run_node.at("app").is_scalar()) p.app_file = run_node.at("app").as_file_path();

  const std::filesystem::path plan_file = dir / "plan.json";
  const json plan = read_json(plan_file);
  const JsonReader r{plan_file.string()};
  p.gpu_model =
      plan.contains("gpu") && plan["gpu"].is_string() ? plan["gpu"].get<std::string>() : "";
  p.gpu_memory_slices = r.integer(plan, "gpu_memory_slices", "", 1);

  // Instance kinds: plan.json's tasks[].instances.
  using Key = std::tuple<std::string, std::string, std::string, int, int>;
  std::map<Key, int> kind_of;
  const json& tasks = r.at(plan, "tasks", "");
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const std::string where = "tasks[" + std::to_string(t) + "].";
    const std::string task = r.str(tasks[t], "task", where);
    const json& instances = r.at(tasks[t], "instances", where);
    for (std::size_t i = 0; i < instances.size(); ++i) {
      const std::string w = where + "instances[" + std::to_string(i) + "].";
      InstanceKind k;
      k.task = task;
      k.variant = r.str(instances[i], "variant", w);
      k.mig = r.str(instances[i], "mig", w);
      k.segment = r.str(instances[i], "segment", w);
      k.mps = r.integer(instances[i], "mps", w, 1);
      k.max_batch = r.integer(instances[i], "max_batch", w, 1);
      k.count = r.integer(instances[i], "count", w, 1);
      const Key key{k.task, k.variant, k.mig, k.mps, k.max_batch};
      if (kind_of.count(key)) throw SpecError(r.file, w + "variant", "listed twice");
      kind_of[key] = static_cast<int>(p.kinds.size());
      p.kinds.push_back(std::move(k));
    }
  }

  // The layout: per GPU, its MIG slices.
  const json& layout = r.at(plan, "layout", "");
  p.gpus = static_cast<int>(layout.size());
  std::vector<int> placed(p.kinds.size(), 0);
  for (std::size_t g = 0; g < layout.size(); ++g) {
    for (std::size_t s = 0; s < layout[g].size(); ++s) {
      const std::string w = "layout[" + std::to_string(g) + "][" + std::to_string(s) + "].";
      const json& e = layout[g][s];
      const Key key{r.str(e, "task", w), r.str(e, "variant", w), r.str(e, "mig", w),
                    r.integer(e, "mps", w, 1), r.integer(e, "max_batch", w, 1)};
      auto it = kind_of.find(key);
      if (it == kind_of.end()) {
        throw SpecError(r.file, w + "variant", "a slice of no instance listed under tasks");
      }
      SlicePlacement pl{static_cast<int>(g), std::get<2>(key), r.integer(e, "start", w, 0),
                        it->second};
      InstanceKind& k = p.kinds[static_cast<std::size_t>(it->second)];
      k.whole_gpu = r.integer(e, "memory", w, 1) >= p.gpu_memory_slices;
      ++placed[static_cast<std::size_t>(it->second)];
      p.placements.push_back(pl);
    }
  }
  for (std::size_t k = 0; k < p.kinds.size(); ++k) {
    if (placed[k] != p.kinds[k].count) {
      throw SpecError(r.file, "layout",
                      "holds " + std::to_string(placed[k]) + " slice(s) of " + p.kinds[k].variant +
                          " on " + p.kinds[k].mig + " but tasks lists " +
                          std::to_string(p.kinds[k].count));
    }
  }

  // Each kind's queue delay (the deployment group's batch timeout) and latency curve.
  for (InstanceKind& k : p.kinds) {
    bool found = false;
    for (const WorkerGroup& g : p.run.deployment.groups) {
      const Task& task = p.run.app.tasks[g.task];
      if (task.name != k.task || g.segment != k.segment || g.max_batch != k.max_batch) continue;
      if (task.variants[static_cast<std::size_t>(g.variants.front())].name != k.variant) continue;
      found = true;
      k.queue_delay_ms = g.batch_timeout > 0 ? to_ms(g.batch_timeout) : 0.0;
    }
    if (!found) {
      throw SpecError((dir / "deployment.yaml").string(), "workers",
                      "no group of " + k.task + "/" + k.variant + " on " + k.segment +
                          " (max_batch " + std::to_string(k.max_batch) + ") as plan.json has");
    }
    for (int b = 1; b <= k.max_batch; ++b) {
      k.latency_ms.push_back(p.run.profiles.latency_ms(k.variant, k.segment, b));
    }
    p.model(k.variant);  // every deployed variant has a model entry
  }
  return p;
}

}  // namespace tessera::exporter
