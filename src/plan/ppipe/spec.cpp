#include "plan/ppipe/spec.hpp"

#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "plan/planner.hpp"
#include "profile/ppipe_import.hpp"

namespace tessera::plan {

namespace {

ppipe::GpuClass gpu(const std::string& name, int count, int per_server, double nic, int mps) {
  ppipe::GpuClass g;
  g.name = name;
  g.count = count;
  g.gpus_per_server = per_server;
  g.nic_gbps = nic;
  g.max_mps = mps;
  return g;
}

std::filesystem::path timing_dir(const std::filesystem::path& profiles) {
  return profiles / "models" / "block-timing-tf32";
}

PpipeDnn load_one(const std::filesystem::path& profiles_dir, const std::string& model,
                  double weight) {
  PpipeDnn d;
  d.name = model;
  d.weight = weight;
  d.profiles = load_ppipe_model(timing_dir(profiles_dir), model);
  d.whole_model_bs1_ms = load_whole_model_latency(profiles_dir, model);
  return d;
}

double reference_ms(const PpipeDnn& d, const std::string& ref_gpu) {
  return ref_gpu.empty() ? d.fastest_bs1_ms() : d.bs1_ms(ref_gpu);
}

ppipe::PpipeCluster parse_cluster(const SpecNode& node) {
  if (node.is_scalar()) {
    const auto name = node.as_choice({"HC1", "HC2", "HC3", "HC4"});
    return paper_cluster(name);
  }
  node.allow_only({"preset", "high", "low", "bandwidth_fraction", "classes"});
  ppipe::PpipeCluster c;
  if (auto p = node.get("preset")) {
    if (node.has("classes")) node.at("classes").fail("give preset or classes, not both");
    const auto name = p->as_choice({"HC1", "HC2", "HC3", "HC4"});
    c = paper_cluster(name, static_cast<int>(node.integer_in_or("high", 0, 100'000'000, 25)),
                      static_cast<int>(node.integer_in_or("low", 0, 100'000'000, 75)));
  } else {
    if (node.has("high") || node.has("low")) {
      node.at(node.has("high") ? "high" : "low").fail("only with a preset");
    }
    const auto list = node.at("classes");
    std::set<std::string> names;
    for (const auto& item : list.items()) {
      item.allow_only({"name", "count", "gpus_per_server", "nic_gbps", "max_mps"});
      ppipe::GpuClass g;
      g.name = item.at("name").as_string();
      if (!names.insert(g.name).second) item.at("name").fail("GPU class given twice");
      g.count = static_cast<int>(item.at("count").as_integer_in(0, 100'000'000));
      g.gpus_per_server = static_cast<int>(item.integer_in_or("gpus_per_server", 1, 1024, 1));
      g.nic_gbps = item.at("nic_gbps").as_positive(1e6);
      g.max_mps = static_cast<int>(item.integer_in_or("max_mps", 1, 4, 1));
      c.classes.push_back(g);
    }
    if (c.classes.empty()) list.fail("needs at least one GPU class");
    if (c.classes.size() > 8) list.fail("at most 8 GPU classes");
  }
  if (auto f = node.get("bandwidth_fraction")) c.bandwidth_fraction = f->as_number_in(1e-6, 1.0);
  return c;
}

}  // namespace

std::map<std::string, double> load_whole_model_latency(const std::filesystem::path& profiles_dir,
                                                       const std::string& model) {
  const auto file = profiles_dir / "models" / "whole-model-latency.csv";
  std::map<std::string, double> out;
  if (!std::filesystem::exists(file)) return out;
  const std::string text = read_input_file(file, 1 << 20);
  std::istringstream in(text);
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (n == 1 || line.empty()) continue;  // the header
    auto fail = [&](const std::string& what) {
      throw SpecError(file.string(), "line " + std::to_string(n), what);
    };
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (cells.size() != 4) fail("needs 4 cells (model,gpu,samples,mean_compute_ms)");
    if (cells[0] != model) continue;
    char* end = nullptr;
    const double ms = std::strtod(cells[3].c_str(), &end);
    if (end == cells[3].c_str() || *end != '\0' || !(ms > 0.0) || ms > 1e6) {
      fail("mean_compute_ms must be a positive number of milliseconds");
    }
    out[cells[1]] = ms;
  }
  return out;
}

ppipe::PpipeCluster paper_cluster(const std::string& name, int high, int low) {
  ppipe::PpipeCluster c;
  // Nominal NIC Gbit/s, x the cluster's bandwidth_fraction 1/5 (§7.1) = the effective
  // bandwidth: 10 Gbit/s on the T4 clusters (§7.4 states it for HC2), 6 on the P4 clusters
  // (32/5 = 6.4 rounded down to whole Gbit/s, as the authors' plans do; the paper's own
  // FCN transfer on HC3-S, 1.4 ms for 1,048,576 bytes, needs 6: 6.4 gives 1.3 ms).
  const double p4_nic = 30.0, t4_nic = 50.0;
  if (name == "HC1") {
    c.classes = {gpu("L4", high, 1, p4_nic, 4), gpu("P4", low, 1, p4_nic, 1)};
  } else if (name == "HC2") {
    c.classes = {gpu("L4", high, 4, t4_nic, 4), gpu("T4", low, 2, t4_nic, 4)};
  } else if (name == "HC3") {
    c.classes = {gpu("V100", high, 2, p4_nic, 4), gpu("P4", low, 1, p4_nic, 1)};
  } else if (name == "HC4") {
    c.classes = {gpu("V100", high, 4, t4_nic, 4), gpu("T4", low, 2, t4_nic, 4)};
  } else {
    throw std::invalid_argument("unknown paper cluster '" + name + "' (HC1..HC4)");
  }
  return c;
}

std::vector<std::pair<std::string, double>> paper_group(const std::string& name) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
      {"G1",
       {"efficientnet-b8_3rdparty_8xb32-aa-advprop_in1k",
        "encnet_r101-d8_4xb2-40k_cityscapes-512x1024", "rtmdet_x_8xb32-300e_coco"}},
      {"G2", {"colorization-v2", "googlenet-v3-pytorch", "repvgg-b3"}},
      {"G3",
       {"apcnet_r101-d8_4xb2-40k_cityscapes-512x1024", "atss_r101_fpn_1x_coco",
        "gcnet_r101-d8_4xb2-40k_cityscapes-512x1024"}},
      {"G4",
       {"fcn-d6_r101-d16_4xb2-40k_cityscapes-512x1024", "gfl_x101-32x4d_fpn_ms-2x_coco",
        "wide_resnet101_2"}},
      {"G5",
       {"centernet-update_r50-caffe_fpn_ms-1x_coco", "convnext_large",
        "dnl_r101-d8_4xb2-40k_cityscapes-512x1024"}},
      {"G6",
       {"fsaf_r101_fpn_1x_coco", "nonlocal_r101-d8_4xb2-40k_cityscapes-512x1024",
        "tf_efficientdet_d1"}},
  };
  static const double weights[3] = {0.30, 0.33, 0.37};
  for (const auto& [g, models] : groups) {
    if (g != name) continue;
    std::vector<std::pair<std::string, double>> out;
    for (size_t i = 0; i < models.size(); ++i) out.push_back({models[i], weights[i]});
    return out;
  }
  throw std::invalid_argument("unknown paper group '" + name + "' (G1..G6)");
}

std::vector<PpipeDnn> load_ppipe_dnns(const std::filesystem::path& profiles_dir,
                                      const std::vector<std::pair<std::string, double>>& models,
                                      double slo_scale, const std::string& slo_reference_gpu) {
  std::vector<PpipeDnn> out;
  for (const auto& [model, weight] : models) {
    PpipeDnn d = load_one(profiles_dir, model, weight);
    const double ref = reference_ms(d, slo_reference_gpu);
    if (ref <= 0.0) {
      throw std::invalid_argument("no whole-GPU profile of " + model + " on " + slo_reference_gpu);
    }
    d.slo_ms = slo_scale * ref;
    out.push_back(std::move(d));
  }
  return out;
}

PpipeSpec parse_ppipe_plan_spec(const SpecNode& node) {
  node.expect_map();
  node.allow_only({"planner", "profiles", "cluster", "group", "dnns", "slo_scale",
                   "slo_reference_gpu", "slo_margin", "max_partitions", "max_batch_by_share",
                   "batch_build_estimate", "one_config_per_template", "integer_gpus_per_position",
                   "templates", "methods", "time_limit_s", "relative_gap", "decomposition_bound"});
  if (plan::declared_planner(node) != plan::PlannerKind::kPpipe) {
    node.at("planner").fail("must be ppipe for this spec");
  }
  PpipeSpec spec;
  spec.file = node.file();
  auto& in = spec.input;
  auto& opt = in.options;
  spec.profiles_dir = node.at("profiles").as_dir_path();
  if (!std::filesystem::is_directory(timing_dir(spec.profiles_dir))) {
    node.at("profiles").fail("has no models/block-timing-tf32 folder (PPipe's data/ layout)");
  }
  const SpecNode cl = node.at("cluster");
  in.cluster = parse_cluster(cl);
  spec.cluster_name = cl.is_scalar()     ? cl.as_string()
                      : cl.has("preset") ? cl.at("preset").as_string()
                                         : "custom";

  const double slo_scale =
      node.has("slo_scale") ? node.at("slo_scale").as_number_in(0.1, 1000) : 5.0;
  const std::string ref_gpu = node.string_or("slo_reference_gpu", "");
  if (node.has("group") == node.has("dnns")) {
    node.fail("give either group (G1..G6) or dnns (a list), not both nor neither");
  }
  auto resolve = [&](PpipeDnn& d, const SpecNode& field, const std::optional<SpecNode>& slo) {
    if (slo) {
      d.slo_ms = slo->as_positive(limits::kMaxMs);
      return;
    }
    const double ref = reference_ms(d, ref_gpu);
    if (ref <= 0.0) {
      node.at("slo_reference_gpu").fail("no whole-GPU profile of " + d.name + " on this GPU");
    }
    d.slo_ms = slo_scale * ref;
    (void)field;
  };
  auto load = [&](const std::string& model, double weight, const SpecNode& field) {
    try {
      return load_one(spec.profiles_dir, model, weight);
    } catch (const SpecError& e) {
      field.fail(std::string("cannot load its block profiles: ") + e.what());
    }
  };
  if (auto g = node.get("group")) {
    spec.group_name = g->as_choice({"G1", "G2", "G3", "G4", "G5", "G6"});
    for (const auto& [model, w] : paper_group(spec.group_name)) {
      PpipeDnn d = load(model, w, *g);
      resolve(d, *g, std::nullopt);
      in.dnns.push_back(std::move(d));
    }
  } else {
    spec.group_name = "custom";
    std::set<std::string> names;
    const auto list = node.at("dnns");
    for (const auto& item : list.items()) {
      item.allow_only({"model", "weight", "slo_ms"});
      const auto model = item.at("model").as_string();
      if (!names.insert(model).second) item.at("model").fail("DNN given twice");
      const double w = item.has("weight") ? item.at("weight").as_positive(1e9) : 1.0;
      PpipeDnn d = load(model, w, item.at("model"));
      resolve(d, item, item.get("slo_ms"));
      in.dnns.push_back(std::move(d));
    }
    if (in.dnns.empty()) list.fail("needs at least one DNN");
  }
  // Every class of the cluster needs a whole-GPU profile, and one per MPS level allowed.
  for (size_t k = 0; k < in.cluster.classes.size(); ++k) {
    const auto& c = in.cluster.classes[k];
    for (const auto& d : in.dnns) {
      for (int v = 1; v <= c.max_mps; ++v) {
        if (d.profile(c.name, v) == nullptr) {
          const std::string where = cl.is_map() && cl.has("classes")
                                        ? "cluster.classes[" + std::to_string(k) + "]"
                                        : "cluster";
          throw SpecError(spec.file.string(), where,
                          "GPU class " + c.name + " with max_mps " + std::to_string(c.max_mps) +
                              ": " + d.name + " has no block profile at MPS share " +
                              std::to_string(v) + " in " + timing_dir(spec.profiles_dir).string());
        }
      }
    }
  }

  if (auto m = node.get("slo_margin")) opt.slo_margin = m->as_number_in(0.0, 0.95);
  opt.max_partitions = static_cast<int>(node.integer_in_or("max_partitions", 1, 3, 2));
  if (auto b = node.get("max_batch_by_share")) {
    const auto items = b->items();
    if (items.size() != 4) b->fail("needs four batch sizes, for vGPU sizes 1, 1/2, 1/3, 1/4");
    for (size_t i = 0; i < 4; ++i) {
      opt.max_batch_by_share[i] = static_cast<int>(items[i].as_integer_in(1, 64));
    }
  }
  opt.batch_build_estimate = node.bool_or("batch_build_estimate", opt.batch_build_estimate);
  opt.one_config_per_template =
      node.bool_or("one_config_per_template", opt.one_config_per_template);
  opt.integer_gpus_per_position =
      node.bool_or("integer_gpus_per_position", opt.integer_gpus_per_position);
  if (auto t = node.get("templates"))
    opt.repo_templates = t->as_choice({"paper", "repo"}) == "repo";
  if (auto t = node.get("time_limit_s")) opt.milp.time_limit_s = t->as_positive(86'400.0);
  if (auto g = node.get("relative_gap")) opt.milp.relative_gap = g->as_number_in(0.0, 0.5);
  opt.decomposition_bound = node.bool_or("decomposition_bound", opt.decomposition_bound);
  if (auto ms = node.get("methods")) {
    spec.methods.clear();
    std::set<ppipe::PpipeMethod> seen;
    for (const auto& item : ms->items()) {
      const auto m = *ppipe::method_from_name(item.as_choice({"ppipe", "np", "dart-r"}));
      if (!seen.insert(m).second) item.fail("method given twice");
      spec.methods.push_back(m);
    }
    if (spec.methods.empty()) ms->fail("needs at least one method");
  }
  if (in.cluster.classes.size() != 2 && !node.has("methods")) {
    spec.methods = {ppipe::PpipeMethod::kPpipe, ppipe::PpipeMethod::kNp};
  } else if (in.cluster.classes.size() != 2) {
    for (const auto& m : spec.methods) {
      if (m == ppipe::PpipeMethod::kDartR)
        node.at("methods").fail("dart-r needs a cluster of exactly two GPU classes");
    }
  }
  return spec;
}

PpipeSpec load_ppipe_plan_spec(const std::filesystem::path& file) {
  LoadBudget budget;
  return parse_ppipe_plan_spec(SpecNode::load_file(file));
}

}  // namespace tessera::plan
