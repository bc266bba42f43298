#include "dataplane/ppipe/plan_json.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace tessera::ppipe {

using nlohmann::json;

namespace {

json class_json(const GpuClass& c) {
  return {{"name", c.name},
          {"count", c.count},
          {"gpus_per_server", c.gpus_per_server},
          {"nic_gbps", c.nic_gbps},
          {"max_mps", c.max_mps}};
}

json partition_json(const Partition& p) {
  return {{"first_block", p.first_block},
          {"end_block", p.end_block},
          {"gpu_class", p.gpu_class},
          {"mps", p.mps},
          {"vgpus", p.vgpus},
          {"infer_ms", p.infer_ms},
          {"transfer_in_ms", p.transfer_in_ms},
          {"in_bytes_per_sample", p.in_bytes_per_sample},
          {"throughput", p.throughput}};
}

// Reads fields of one JSON object, naming `path` in every error.
class Reader {
 public:
  Reader(const json& j, std::string source, std::string path)
      : j_(j), source_(std::move(source)), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_, "must be an object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw SpecError(source_, field.empty() ? "(top level)" : field, problem);
  }
  std::string field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  const json& at(const std::string& key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(field(key), "missing");
    return *it;
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  std::string str(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(field(key), "must be a string");
    auto s = v.get<std::string>();
    if (s.empty()) fail(field(key), "must not be empty");
    return s;
  }
  double num(const std::string& key, double lo, double hi) const {
    const json& v = at(key);
    if (!v.is_number()) fail(field(key), "must be a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
      std::ostringstream m;
      m << "must be in [" << lo << ", " << hi << "], got " << x;
      fail(field(key), m.str());
    }
    return x;
  }
  int integer(const std::string& key, int lo, int hi) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(field(key), "must be an integer");
    const auto x = v.get<int64_t>();
    if (x < lo || x > hi) {
      fail(field(key), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                           std::to_string(x));
    }
    return static_cast<int>(x);
  }
  const json& array(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(field(key), "must be an array");
    return v;
  }
  Reader child(const json& j, const std::string& key, size_t index) const {
    return Reader(j, source_, field(key) + "[" + std::to_string(index) + "]");
  }
  Reader child(const std::string& key) const { return Reader(at(key), source_, field(key)); }

 private:
  const json& j_;
  std::string source_;
  std::string path_;
};

constexpr double kBig = 1e12;
constexpr int kMaxCount = 100'000'000;

// Reads status_text's forms back into `solve`; false for another text.
bool parse_status(const std::string& text, PpipeSolveStats& solve) {
  using plan::PlanStatus;
  const std::string feasible = "feasible (";
  if (text == "optimal") {
    solve.status = PlanStatus::kOptimal;
  } else if (text == "infeasible") {
    solve.status = PlanStatus::kInfeasible;
  } else if (text.rfind("no solution", 0) == 0) {
    solve.status = PlanStatus::kNoSolution;
  } else if (text.rfind(feasible, 0) == 0 && text.size() > feasible.size() + 1 &&
             text.back() == ')') {
    solve.status = PlanStatus::kFeasible;
    solve.limit = text.substr(feasible.size(), text.size() - feasible.size() - 1);
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::string status_text(const PpipeSolveStats& solve) {
  switch (solve.status) {
    case plan::PlanStatus::kOptimal:
      return "optimal";
    case plan::PlanStatus::kFeasible:
      return "feasible (" + solve.limit + ")";
    case plan::PlanStatus::kInfeasible:
      return "infeasible";
    case plan::PlanStatus::kNoSolution:
      return "no solution (limit)";
  }
  return "?";
}

const char* method_name(PpipeMethod method) {
  switch (method) {
    case PpipeMethod::kPpipe:
      return "ppipe";
    case PpipeMethod::kNp:
      return "np";
    case PpipeMethod::kDartR:
      return "dart-r";
  }
  return "?";
}

std::optional<PpipeMethod> method_from_name(std::string_view name) {
  for (PpipeMethod m : {PpipeMethod::kPpipe, PpipeMethod::kNp, PpipeMethod::kDartR}) {
    if (name == method_name(m)) return m;
  }
  return std::nullopt;
}

json to_json(const PpipePlan& plan) {
  json classes = json::array();
  for (const auto& c : plan.cluster.classes) classes.push_back(class_json(c));
  json dnns = json::array();
  for (const auto& d : plan.dnns) {
    json pipes = json::array();
    for (const auto& p : d.pipelines) {
      json parts = json::array();
      for (const auto& part : p.partitions) parts.push_back(partition_json(part));
      pipes.push_back({{"batch", p.batch},
                       {"latency_ms", p.latency_ms},
                       {"throughput", p.throughput},
                       {"partitions", parts}});
    }
    dnns.push_back({{"dnn", d.dnn},
                    {"weight", d.weight},
                    {"slo_ms", d.slo_ms},
                    {"throughput", d.throughput},
                    {"pipelines", pipes}});
  }
  return {
      {"method", method_name(plan.method)},
      {"slo_margin", plan.slo_margin},
      {"cluster", {{"bandwidth_fraction", plan.cluster.bandwidth_fraction}, {"classes", classes}}},
      {"dnns", dnns},
      {"solve",
       {{"status", status_text(plan.solve)},
        {"seconds", plan.solve.seconds},
        {"gap", plan.solve.gap},
        {"templates", plan.solve.templates},
        {"objective", plan.solve.objective},
        {"bound", plan.solve.bound},
        {"configurations", plan.solve.configurations},
        {"detail", plan.solve.detail}}}};
}

PpipePlan plan_from_json(const json& j, const std::string& source) {
  Reader top(j, source, "");
  PpipePlan plan;
  const std::string method = top.str("method");
  const auto known = method_from_name(method);
  if (!known) top.fail("method", "must be ppipe, np or dart-r, got '" + printable(method) + "'");
  plan.method = *known;
  plan.slo_margin = top.num("slo_margin", 0.0, 0.99);

  const Reader cl = top.child("cluster");
  plan.cluster.bandwidth_fraction = cl.num("bandwidth_fraction", 1e-6, 1.0);
  const json& classes = cl.array("classes");
  if (classes.empty()) cl.fail(cl.field("classes"), "needs at least one GPU class");
  std::set<std::string> names;
  for (size_t i = 0; i < classes.size(); ++i) {
    const Reader c = cl.child(classes[i], "classes", i);
    GpuClass g;
    g.name = c.str("name");
    if (!names.insert(g.name).second) c.fail(c.field("name"), "GPU class given twice");
    g.count = c.integer("count", 0, kMaxCount);
    g.gpus_per_server = c.integer("gpus_per_server", 1, 1024);
    g.nic_gbps = c.num("nic_gbps", 1e-6, 1e6);
    g.max_mps = c.integer("max_mps", 1, 64);
    plan.cluster.classes.push_back(g);
  }
  auto find_class = [&](const std::string& name) -> const GpuClass* {
    for (const auto& c : plan.cluster.classes) {
      if (c.name == name) return &c;
    }
    return nullptr;
  };

  const json& dnns = top.array("dnns");
  for (size_t m = 0; m < dnns.size(); ++m) {
    const Reader d = top.child(dnns[m], "dnns", m);
    DnnPlan dp;
    dp.dnn = d.str("dnn");
    dp.weight = d.num("weight", 1e-9, kBig);
    dp.slo_ms = d.num("slo_ms", 1e-6, kBig);
    dp.throughput = d.num("throughput", 0.0, kBig);
    const json& pipes = d.array("pipelines");
    for (size_t l = 0; l < pipes.size(); ++l) {
      const Reader p = d.child(pipes[l], "pipelines", l);
      Pipeline pl;
      pl.batch = p.integer("batch", 1, 4096);
      pl.latency_ms = p.num("latency_ms", 0.0, kBig);
      pl.throughput = p.num("throughput", 0.0, kBig);
      const json& parts = p.array("partitions");
      if (parts.empty()) p.fail(p.field("partitions"), "needs at least one partition");
      int expect_first = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        const Reader r = p.child(parts[i], "partitions", i);
        Partition part;
        part.first_block = r.integer("first_block", 0, 100000);
        if (part.first_block != expect_first) {
          r.fail(r.field("first_block"),
                 "must be " + std::to_string(expect_first) +
                     " (partitions cover contiguous block ranges from block 0)");
        }
        part.end_block = r.integer("end_block", part.first_block + 1, 100001);
        expect_first = part.end_block;
        part.gpu_class = r.str("gpu_class");
        const GpuClass* g = find_class(part.gpu_class);
        if (g == nullptr) {
          r.fail(r.field("gpu_class"),
                 "'" + printable(part.gpu_class) + "' is not a class of the cluster");
        }
        part.mps = r.integer("mps", 1, g->max_mps);
        part.vgpus = r.integer("vgpus", 1, kMaxCount);
        part.infer_ms = r.num("infer_ms", 0.0, kBig);
        part.transfer_in_ms = r.num("transfer_in_ms", 0.0, kBig);
        part.in_bytes_per_sample = r.num("in_bytes_per_sample", 0.0, kBig);
        if (i == 0 && (part.transfer_in_ms != 0.0 || part.in_bytes_per_sample != 0.0)) {
          r.fail(r.field("transfer_in_ms"), "the first partition has no incoming transfer");
        }
        part.throughput = r.num("throughput", 0.0, kBig);
        pl.partitions.push_back(part);
      }
      dp.pipelines.push_back(std::move(pl));
    }
    plan.dnns.push_back(std::move(dp));
  }

  const Reader s = top.child("solve");
  if (!parse_status(s.str("status"), plan.solve)) {
    s.fail("status", "must be optimal, feasible (LIMIT), infeasible or no solution (limit), got '" +
                         printable(s.str("status")) + "'");
  }
  plan.solve.seconds = s.num("seconds", 0.0, kBig);
  plan.solve.gap = s.num("gap", 0.0, kBig);
  plan.solve.templates = s.integer("templates", 0, kMaxCount);
  if (s.has("objective")) plan.solve.objective = s.num("objective", 0.0, kBig);
  if (s.has("bound")) plan.solve.bound = s.num("bound", 0.0, kBig);
  if (s.has("configurations")) {
    plan.solve.configurations = s.integer("configurations", 0, kMaxCount);
  }
  if (s.has("detail")) {
    const json& v = s.at("detail");
    if (!v.is_string()) s.fail(s.field("detail"), "must be a string");
    plan.solve.detail = v.get<std::string>();
  }
  return plan;
}

void write_plan_file(const std::filesystem::path& file, const PpipePlan& plan) {
  std::ofstream f(file);
  if (!f) throw std::runtime_error("cannot write " + file.string());
  f << to_json(plan).dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write " + file.string());
}

PpipePlan read_plan_file(const std::filesystem::path& file) {
  std::ifstream f(file);
  if (!f) throw SpecError(file.string(), "(file)", "cannot open");
  json j;
  try {
    j = json::parse(f);
  } catch (const json::parse_error& e) {
    throw SpecError(file.string(), "(file)", std::string("not valid JSON: ") + e.what());
  }
  return plan_from_json(j, file.string());
}

}  // namespace tessera::ppipe
