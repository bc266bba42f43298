// The report section of `tessera plan`: the plan's numbers, its instances and a picture of
// its GPUs; or, for --max-demand, the serviceable demand per search space.
#include <fmt/format.h>

#include "metrics/svg_chart.hpp"
#include "report/plan_picture.hpp"
#include "report/sections.hpp"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string opt(const json& j, const char* key, int decimals) {
  return j.contains(key) && j[key].is_number() ? num(j[key].get<double>(), decimals) : "-";
}

void one_plan(HtmlPage& page, const json& p) {
  const json pred = p.value("predicted", json::object());
  std::vector<std::vector<std::string>> rows = {
      {"search space", p.value("search_space", std::string("-"))},
      {"status", p.value("status", std::string("-"))},
      {"demand", opt(p, "demand_rps", 2) + " req/s (planned " + opt(p, "planned_demand_rps", 2) +
                     " with slack)"},
      {"latency SLO", opt(p, "latency_slo_ms", 0) + " ms"},
      {"accuracy",
       opt(pred, "accuracy", 4) + " of the best (SLO " + opt(p, "accuracy_slo", 3) + ")"},
      {"GPU slices", opt(pred, "slices", 0) + " of " + opt(p, "slices_available", 0)},
      {"GPUs", opt(pred, "gpus", 0) + " of " + opt(pred, "gpus_available", 0) + " (" +
                   p.value("gpu", std::string("?")) + ")"},
      {"check", p.contains("check") && p["check"].value("ok", false) ? "ok" : "FAILED"}};
  if (p.contains("message")) rows.push_back({"message", p["message"].get<std::string>()});
  page.table({"plan", ""}, rows);
  if (!p.contains("layout")) return;
  page.subsection("GPU layout");
  page.figure(render_plan_svg(p, page.palette()),
              "Every GPU with its MIG instances (boxes, by task colour), their variants, batch "
              "sizes and MPS shares.");
  std::vector<std::vector<std::string>> inst;
  for (const auto& t : p.value("tasks", json::array())) {
    for (const auto& i : t.value("instances", json::array())) {
      inst.push_back({t.value("task", std::string()), i.value("variant", std::string()),
                      i.value("segment", std::string()), fmt::format("{}", i.value("max_batch", 0)),
                      fmt::format("{}", i.value("count", 0)),
                      fmt::format("{}", i.value("workers", 0)), opt(i, "latency_ms", 2),
                      opt(i, "throughput_rps", 1), i.value("profile", std::string())});
    }
  }
  page.subsection("Instances");
  page.table({"task", "variant", "segment", "batch", "instances", "workers", "latency (ms)",
              "capacity (req/s)", "profile"},
             inst);
  std::vector<std::vector<std::string>> tasks;
  for (const auto& t : p.value("tasks", json::array())) {
    tasks.push_back({t.value("task", std::string()), opt(t, "demand_rps", 1),
                     opt(t, "throughput_rps", 1), opt(t, "accuracy", 4), opt(t, "slices", 0)});
  }
  page.table({"task", "demand (req/s)", "capacity (req/s)", "accuracy", "slices"}, tasks);
}

}  // namespace

bool add_plan_section(HtmlPage& page, const fs::path& dir) {
  bool any = false;
  if (fs::exists(dir / "plan.json")) {
    const json p = read_json(dir / "plan.json");
    page.section("Plan: " + p.value("app", std::string("app")) + " [" +
                     p.value("search_space", std::string("?")) + "]",
                 "from " + shown_path(dir) + ": plan.json");
    one_plan(page, p);
    any = true;
  }
  if (fs::exists(dir / "max_demand.json")) {
    const json rows = read_json(dir / "max_demand.json");
    page.section("Max serviceable demand per search space",
                 "from " + shown_path(dir) + ": max_demand.json");
    BarChart c{"Max serviceable demand", {}, {}, "requests/s"};
    std::vector<std::vector<std::string>> table;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const json& r = rows[i];
      const std::string space = r.value("search_space", std::string("?"));
      if (space == "Unopt") c.baseline = static_cast<int>(i);
      c.labels.push_back(space);
      c.values.push_back(r.value("max_demand_rps", 0.0));
      const json plan = r.value("plan", json::object());
      const json pred = plan.value("predicted", json::object());
      table.push_back({space, opt(r, "max_demand_rps", 2), opt(pred, "slices", 0),
                       opt(pred, "accuracy", 4), r.value("status", std::string()),
                       opt(r, "seconds", 2)});
    }
    page.table({"space", "max demand (req/s)", "slices", "accuracy", "status", "search (s)"},
               table);
    page.figure(render_bar_svg({c}, 640, &page.palette()), "The baseline (outlined) is Unopt.");
    for (const json& r : rows) {
      if (r.contains("plan") && r["plan"].contains("layout")) {
        page.subsection("GPU layout at the max demand: " + r.value("search_space", std::string()));
        Palette tasks;  // tasks coloured as in a plan section, whatever the bars used
        page.figure(render_plan_svg(r["plan"], tasks), "");
      }
    }
    any = true;
  }
  return any;
}

}  // namespace tessera::report
