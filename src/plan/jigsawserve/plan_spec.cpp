#include "plan/jigsawserve/plan_spec.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/input_file.hpp"
#include "plan/planner.hpp"
#include "profile/profile_sources.hpp"
#include "spec/app_spec.hpp"

namespace tessera::plan {

namespace {

SegmentCatalogue parse_catalogue(const SpecNode& node) {
  node.allow_only({"name", "compute_slices", "memory_slices", "mps_max", "mig"});
  SegmentCatalogue c = h100_catalogue();
  c.gpu = node.string_or("name", c.gpu);
  c.gpu_compute = static_cast<int>(node.integer_in_or("compute_slices", 1, 64, c.gpu_compute));
  c.gpu_memory = static_cast<int>(node.integer_in_or("memory_slices", 1, 64, c.gpu_memory));
  if (auto m = node.get("mps_max")) {
    const auto v = m->as_integer();
    if (v < 1 || v > 16) m->fail("must be an integer in [1, 16]");
    c.mps_max = static_cast<int>(v);
  }
  if (auto list = node.get("mig")) {
    c.mig.clear();
    std::set<std::string> names;
    const auto items = list->items();
    if (items.size() > 256) list->fail("at most 256 MIG profiles");
    for (const auto& item : items) {
      item.allow_only({"name", "compute", "memory", "starts", "cost"});
      MigProfile p;
      p.name = item.at("name").as_string();
      if (!names.insert(p.name).second) item.at("name").fail("MIG profile given twice");
      std::set<int64_t> starts;
      auto int_in = [&](const char* key, int64_t lo, int64_t hi) {
        const auto f = item.at(key);
        const auto v = f.as_integer();
        if (v < lo || v > hi) {
          f.fail("must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        }
        return static_cast<int>(v);
      };
      p.compute = int_in("compute", 1, c.gpu_compute);
      p.memory = int_in("memory", 1, c.gpu_memory);
      p.cost = int_in("cost", 1, 1000);
      for (const auto& s : item.at("starts").items()) {
        const auto v = s.as_integer();
        if (v < 0 || v + p.memory > c.gpu_memory) s.fail("start outside the GPU's memory slices");
        if (!starts.insert(v).second) s.fail("start given twice");
        p.starts.push_back(static_cast<int>(v));
      }
      if (p.starts.empty()) item.at("starts").fail("needs at least one start");
      c.mig.push_back(std::move(p));
    }
    if (c.mig.empty()) list->fail("needs at least one MIG profile");
  }
  c.build_segments();
  if (c.whole_gpu_mig() < 0) {
    node.fail("no MIG profile has all " + std::to_string(c.gpu_compute) +
              " compute slices (the whole GPU)");
  }
  return c;
}

void parse_scaling(const SpecNode& node, PlanSpec& spec) {
  node.allow_only({"mig_latency_exponent", "roofline", "mps_exponent", "mps_calibration"});
  auto& s = spec.scaling;
  if (auto g = node.get("mig_latency_exponent")) s.mig_latency_exponent = g->as_number_in(0, 1);
  s.roofline = node.bool_or("roofline", s.roofline);
  if (node.has("mps_exponent") && node.has("mps_calibration")) {
    node.at("mps_calibration").fail("give mps_exponent or mps_calibration, not both");
  }
  if (auto d = node.get("mps_exponent")) {
    s.mps_exponent = d->as_number_in(0, 1);
    s.mps_source = "given in " + spec.file.filename().string();
  }
  if (auto cal = node.get("mps_calibration")) {
    cal->allow_only({"ppipe", "max_batch"});
    const auto dir = cal->at("ppipe").as_dir_path();
    const int max_batch =
        static_cast<int>(cal->integer_in_or("max_batch", 0, limits::kMaxBatch, 0));
    const auto fit = fit_mps_exponent(dir, max_batch);
    s.mps_exponent = std::clamp(fit.exponent, 0.0, 1.0);
    std::ostringstream text;
    text << fit.source << " (delta " << fit.exponent << ", rms log error " << fit.rms_log_error
         << ")";
    s.mps_source = text.str();
  }
  spec.mps_fit_text = s.mps_source;
}

}  // namespace

PlanSpec parse_plan_spec(const SpecNode& node) {
  node.expect_map();
  node.allow_only({"planner",
                   "app",
                   "profiles",
                   "whole_gpu_segment",
                   "gpu",
                   "scaling",
                   "batch_sizes",
                   "slo_ms",
                   "accuracy_slo",
                   "demand_rps",
                   "slices",
                   "slack",
                   "search_space",
                   "objective",
                   "accuracy_tolerance",
                   "packing",
                   "time_limit_s",
                   "budget_slices",
                   "node_limit",
                   "max_demand_nodes",
                   "max_demand_solves",
                   "tie_break",
                   "attainment_target",
                   "workload",
                   "headroom",
                   "verify_rounds"});
  // Without the field JigsawServe is meant (plan/planner.hpp: declared_planner); the
  // other planners' specs are read by their own modules.
  if (declared_planner(node) != PlannerKind::kJigsawServe) {
    node.at("planner").fail("must be jigsawserve for this spec");
  }
  PlanSpec spec;
  spec.file = node.file();
  auto& in = spec.input;
  auto& opt = spec.options;
  const SpecNode app_field = node.at("app");
  if (app_field.is_scalar()) {
    spec.app_file = app_field.as_file_path();
    in.app = parse_app(SpecNode::load_file(spec.app_file));
  } else {
    in.app = parse_app(app_field);
  }
  in.catalogue = node.has("gpu") ? parse_catalogue(node.at("gpu")) : h100_catalogue();
  if (auto s = node.get("scaling")) {
    parse_scaling(*s, spec);
  } else {
    spec.mps_fit_text = spec.scaling.mps_source;
  }
  if (auto b = node.get("batch_sizes")) {
    in.batch_sizes.clear();
    std::set<int> seen;
    for (const auto& item : b->items()) {
      const auto v = item.as_integer();
      if (v < 1 || v > 4096) item.fail("must be an integer in [1, 4096]");
      if (!seen.insert(static_cast<int>(v)).second) item.fail("batch size given twice");
      in.batch_sizes.push_back(static_cast<int>(v));
    }
    if (in.batch_sizes.empty()) b->fail("needs at least one batch size");
  }
  in.latency_slo_ms =
      node.has("slo_ms") ? node.at("slo_ms").as_positive(limits::kMaxMs) : to_ms(in.app.slo);
  if (auto a = node.get("accuracy_slo")) in.accuracy_slo = a->as_number_in(0, 1);
  if (auto d = node.get("demand_rps")) in.demand_rps = d->as_positive(limits::kMaxRateRps);
  if (auto s = node.get("slices")) {
    const auto v = s->as_integer();
    if (v < 1 || v > 1000000) s->fail("must be an integer in [1, 1000000]");
    in.slices = static_cast<int>(v);
  }
  if (auto s = node.get("slack")) opt.slack = s->as_number_in(0, 10);
  if (auto s = node.get("search_space")) {
    try {
      opt.space = parse_search_space(s->as_string());
    } catch (const std::invalid_argument& e) {
      s->fail(e.what());
    }
  }
  if (auto o = node.get("objective")) {
    o->allow_only({"alpha", "beta"});
    if (auto a = o->get("alpha")) opt.alpha = a->as_non_negative(1e9);
    if (auto b = o->get("beta")) opt.beta = b->as_non_negative(1e9);
  }
  if (auto t = node.get("accuracy_tolerance")) {
    opt.accuracy_tolerance = t->as_number_in(1e-6, 0.5);
  }
  if (auto p = node.get("packing")) {
    opt.packing_constraints = p->as_choice({"placement", "aggregate"}) == "placement";
  }
  if (auto t = node.get("time_limit_s")) opt.milp.time_limit_s = t->as_positive(86'400.0);
  opt.milp.node_limit =
      static_cast<long>(node.integer_in_or("node_limit", 0, 1'000'000'000, opt.milp.node_limit));
  opt.max_demand_nodes = static_cast<long>(
      node.integer_in_or("max_demand_nodes", 1, 1'000'000'000, opt.max_demand_nodes));
  opt.max_demand_solves =
      static_cast<int>(node.integer_in_or("max_demand_solves", 1, 10'000, opt.max_demand_solves));
  if (auto t = node.get("tie_break")) {
    opt.tie_break = t->as_choice({"canonical", "off"}) == "canonical";
  }
  if (auto t = node.get("attainment_target")) spec.attainment_target = t->as_number_in(0.01, 1);
  if (auto w = node.get("workload")) spec.workload_file = w->as_file_path();
  if (auto h = node.get("headroom")) {
    h->allow_only({"model", "utilisation_cap", "queue_delay_ms", "burst_excess"});
    if (auto m = h->get("model")) spec.mdc = m->as_choice({"utilisation_cap", "mdc"}) == "mdc";
    if (auto u = h->get("utilisation_cap")) in.utilisation_cap = {u->as_number_in(0.05, 1)};
    if (auto w = h->get("queue_delay_ms")) spec.queue_delay_ms = w->as_non_negative(3.6e6);
    if (auto e = h->get("burst_excess")) spec.burst_excess = e->as_number_in(0, 0.5);
    if (spec.mdc && spec.queue_delay_ms <= 0.0) {
      h->fail("model mdc needs its wait budget: a queue_delay_ms above 0");
    }
  }
  spec.apply_headroom_model();
  spec.verify_rounds = static_cast<int>(node.integer_in_or("verify_rounds", 1, 100, 8));
  if (auto b = node.get("budget_slices")) {
    opt.budget_any_instance = b->as_choice({"any_instance", "within_latency"}) == "any_instance";
  }

  // Profiles: measured curves, then the segment curves the catalogue needs.
  const SpecNode profiles_field = node.at("profiles");
  const ProfileTable raw = load_profiles(profiles_field);
  spec.whole_gpu_segment = node.at("whole_gpu_segment").as_string();
  std::vector<std::string> variants;
  for (size_t t = 0; t < in.app.tasks.size(); ++t) {
    for (size_t v = 0; v < in.app.tasks[t].variants.size(); ++v) {
      const auto& name = in.app.tasks[t].variants[v].name;
      bool any = raw.has(name, spec.whole_gpu_segment);
      for (const auto& seg : in.catalogue.segments) any = any || raw.has(name, seg.name);
      if (!any) {
        const std::string field =
            "tasks[" + std::to_string(t) + "].variants[" + std::to_string(v) + "]";
        const std::string problem = "variant '" + name +
                                    "' has no profile on the whole-GPU segment '" +
                                    spec.whole_gpu_segment + "' nor on any catalogue segment";
        if (app_field.is_scalar()) throw SpecError(spec.app_file.string(), field, problem);
        throw SpecError(app_field.file(), app_field.path() + "." + field, problem);
      }
      variants.push_back(name);
    }
  }
  in.profiles = derive_segment_profiles(raw, spec.whole_gpu_segment, in.catalogue, spec.scaling,
                                        in.batch_sizes, variants);
  return spec;
}

void PlanSpec::apply_headroom_model() {
  input.mdc_wait_s = mdc ? queue_delay_ms / 1000.0 : 0.0;
  input.mdc_epsilon = 1.0 - attainment_target;
}

PlanSpec load_plan_spec(const std::filesystem::path& file) {
  LoadBudget budget;
  return parse_plan_spec(SpecNode::load_file(file));
}

}  // namespace tessera::plan
