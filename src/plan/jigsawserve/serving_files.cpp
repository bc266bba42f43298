#include "plan/jigsawserve/serving_files.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

namespace tessera::plan {
namespace {

std::string quoted(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

std::string flow(const YAML::Node& node) {
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Copies every `path:` a workload names into `dir` and names it by its file name there.
void copy_named_files(YAML::Node node, const SpecNode& origin, const std::filesystem::path& dir) {
  if (node.IsMap()) {
    for (auto kv : node) {
      if (kv.first.as<std::string>() == "path" && kv.second.IsScalar()) {
        const std::filesystem::path from = origin.resolve(kv.second.as<std::string>());
        const std::filesystem::path name = from.filename();
        std::error_code ec;
        std::filesystem::copy_file(from, dir / name,
                                   std::filesystem::copy_options::overwrite_existing, ec);
        if (ec) origin.fail("cannot copy " + from.string() + " into the plan: " + ec.message());
        kv.second = name.string();
      } else {
        copy_named_files(kv.second, origin, dir);
      }
    }
  } else if (node.IsSequence()) {
    for (auto item : node) copy_named_files(item, origin, dir);
  }
}

}  // namespace

std::string scaled_workload_yaml(const std::filesystem::path& workload_file, double demand_rps,
                                 const std::filesystem::path& dir, double duration_s) {
  const SpecNode w = SpecNode::load_file(workload_file);
  w.expect_map();
  YAML::Node node = YAML::Clone(w.yaml());
  node.remove("time_scale");
  node.remove("rate_scale");
  node["target_rate_rps"] = demand_rps;
  if (duration_s > 0.0) node["duration_s"] = duration_s;
  copy_named_files(node, w, dir);
  YAML::Emitter e;
  e << node;
  std::istringstream lines(e.c_str());
  std::string out, line;
  while (std::getline(lines, line)) out += "  " + line + "\n";
  return out;
}

std::string models_file_yaml(const std::vector<std::string>& variants,
                             const std::optional<SpecNode>& user_models) {
  std::ostringstream out;
  out << "# Written by `tessera plan`: the executor of each deployed variant "
         "(docs/serve.md#models).\n"
      << "# `emulate: profile` is a profile-timed EMULATION: no real model runs; each batch takes\n"
      << "# exactly its profiled latency on its worker's segment. Replace an entry with\n"
      << "# `zoo: ARCH` or `torchscript: FILE` (and `input: [...]`) to serve the real model.\n";
  std::vector<std::pair<std::string, YAML::Node>> listed;  // variant -> the user's entry
  if (user_models) {
    user_models->expect_map();
    if (auto in = user_models->get("input")) out << "input: " << flow(in->yaml()) << "\n";
    if (auto t = user_models->get("torch_threads"))
      out << "torch_threads: " << flow(t->yaml()) << "\n";
    if (auto list = user_models->get("models")) {
      for (const SpecNode& item : list->items()) {
        item.expect_map();
        YAML::Node copy = YAML::Clone(item.yaml());
        if (auto ts = item.get("torchscript")) {
          copy["torchscript"] =
              std::filesystem::absolute(ts->resolve(ts->as_string())).lexically_normal().string();
        }
        listed.emplace_back(item.at("variant").as_string(), copy);
      }
    }
    if (!user_models->has("input")) out << "input: " << shape_text(kEmulatedInput) << "\n";
  } else {
    out << "input: " << shape_text(kEmulatedInput) << "\n";
  }
  out << "models:\n";
  for (const std::string& v : variants) {
    auto it =
        std::find_if(listed.begin(), listed.end(), [&](const auto& e) { return e.first == v; });
    if (it != listed.end()) {
      out << "  - " << flow(it->second) << "\n";
    } else {
      out << "  - {variant: " << quoted(v) << ", emulate: profile}\n";
    }
  }
  return out.str();
}

std::string run_file_yaml(const RunFileInputs& in) {
  std::ostringstream s;
  s << "# Written by `tessera plan`. `tessera simulate`, `tessera serve` and `tessera loadgen`\n"
    << "# take it as is (docs/plan.md#serving-the-plan).\n"
    << "app: " << quoted(in.app_file.string()) << "\n"
    << "deployment: deployment.yaml\n"
    << "profiles:\n  - file: profiles.yaml\n"
    << "models: models.yaml  # tessera serve: the executor of each variant\n";
  if (!in.workload_file.empty()) {
    s << "workload: " << quoted(in.workload_file.string()) << "\n";
  } else if (!in.workload_yaml.empty()) {
    s << "workload:  # the plan spec's workload at the plan's demand\n" << in.workload_yaml;
  } else {
    s << "workload:  # the plan's demand with Poisson arrivals; `tessera plan --workload` swaps "
         "it\n"
      << "  source: {kind: poisson, rate_rps: " << in.demand_rps << "}\n"
      << "  duration_s: " << in.duration_s << "\n";
  }
  if (in.policies_yaml.empty()) {
    s << "policies:\n  preset: jigsawserve  # the planner's Lhat(t) batching, early and stale "
         "drops\n";
  } else {
    s << "policies:  # the data plane that met the plan's attainment target in verification\n"
      << in.policies_yaml;
  }
  s << "simulation:\n  seed: 1\n";
  return s.str();
}

}  // namespace tessera::plan
