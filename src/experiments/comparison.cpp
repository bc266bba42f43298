#include "experiments/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>

#include "metrics/report.hpp"
#include "metrics/svg_chart.hpp"
#include "sim/simulator.hpp"
#include "workload/rate_scale.hpp"

namespace tessera {
namespace {

std::string scale_suffix(double scale) { return scale == 1.0 ? "" : fmt::format(" ×{:g}", scale); }

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << text;
}

// Percent of a run's drops that happened at each stage, in pipeline order.
std::vector<double> drop_shares(const nlohmann::json& s, const App& app) {
  std::vector<double> out;
  const double dropped = s["dropped"].get<double>();
  for (TaskId t : app.topological_order()) {
    const double n = s["dropped_by_stage"][app.tasks[t].name].get<double>();
    out.push_back(dropped > 0 ? 100.0 * n / dropped : 0.0);
  }
  return out;
}

const ComparisonRow* find_row(const std::vector<ComparisonRow>& rows, const std::string& label) {
  for (const ComparisonRow& r : rows) {
    if (r.run.label == label) return &r;
  }
  return nullptr;
}

// A summary field, or NaN where the run did not measure it (null: an LLM run's invalid
// rate and accuracy, docs/simulate.md#summaryjson).
double field_or_nan(const nlohmann::json& s, const char* key) {
  return s.contains(key) && s[key].is_number() ? s[key].get<double>()
                                               : std::numeric_limits<double>::quiet_NaN();
}

// A number with `decimals` decimals, or "–" for one not measured.
std::string shown(double v, int decimals) {
  return std::isnan(v) ? "–" : fmt::format("{:.{}f}", v, decimals);
}

// comparison.csv's invalid_rate: empty where the run did not measure it.
std::string invalid_cell(const nlohmann::json& s) {
  const double v = field_or_nan(s, "invalid_rate");
  return std::isnan(v) ? "" : fmt::format("{}", v);
}

double ratio_or_inf(double num, double den) {
  return den > 0 ? num / den : (num > 0 ? std::numeric_limits<double>::infinity() : 1.0);
}

// PARD's headline ratios against the reactive baselines (PARD §5.2), one table row per
// baseline present at each load scale (the rows labelled "NAME" or "NAME ×SCALE").
std::string pard_versus_baselines(const std::vector<ComparisonRow>& rows, const App& app) {
  std::vector<double> scales;
  for (const ComparisonRow& r : rows) {
    if (std::find(scales.begin(), scales.end(), r.run.load_scale) == scales.end())
      scales.push_back(r.run.load_scale);
  }
  std::string out =
      "\n| PARD vs | goodput × | overload goodput × | drop rate ÷ | SLO-miss rate ÷ | "
      "invalid rate ÷ | their drops in the last two stages | PARD's drops in the first two "
      "stages |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  auto miss = [](const nlohmann::json& s) { return 1.0 - s["slo_attainment"].get<double>(); };
  auto shares = [&](const nlohmann::json& s, bool first) {
    const auto v = drop_shares(s, app);
    double sum = 0.0;
    for (std::size_t i = 0; i < v.size() && i < 2; ++i) sum += first ? v[i] : v[v.size() - 1 - i];
    return sum;
  };
  bool any = false;
  for (double scale : scales) {
    const std::string suffix = scale_suffix(scale);
    const ComparisonRow* pard = find_row(rows, "pard" + suffix);
    if (pard == nullptr) continue;
    for (const char* name : {"naive", "nexus", "clipper++", "nexus-e2e", "clipper++-predictive"}) {
      const ComparisonRow* base = find_row(rows, name + suffix);
      if (base == nullptr) continue;
      any = true;
      const auto& p = pard->summary;
      const auto& b = base->summary;
      const double invalid_b = field_or_nan(b, "invalid_rate"),
                   invalid_p = field_or_nan(p, "invalid_rate");
      out += fmt::format(
          "| {}{} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {:.0f} % | {:.0f} % |\n", name, suffix,
          ratio_or_inf(p["goodput_rps"].get<double>(), b["goodput_rps"].get<double>()),
          ratio_or_inf(pard->overload.fraction(), base->overload.fraction()),
          ratio_or_inf(b["drop_rate"].get<double>(), p["drop_rate"].get<double>()),
          ratio_or_inf(miss(b), miss(p)),
          shown(std::isnan(invalid_b) || std::isnan(invalid_p)
                    ? std::numeric_limits<double>::quiet_NaN()
                    : ratio_or_inf(invalid_b, invalid_p),
                2),
          shares(b, false), shares(p, true));
    }
  }
  return any ? out : "";
}

// Which windows were overloaded: arrivals above the capacity of the workers alive then.
std::vector<bool> overloaded_windows(const Simulator& sim, const RunSpec& run) {
  const auto& workers = sim.engine().workers();
  const std::size_t tasks = run.app.tasks.size();
  std::vector<Time> lost_at(workers.size(), std::numeric_limits<Time>::infinity());
  for (const auto& [at, id] : run.sim.worker_losses) {
    if (id < lost_at.size()) lost_at[id] = std::min(lost_at[id], at);
  }
  const MetricsCollector& m = sim.metrics();
  const Time w = m.window();
  std::vector<bool> out(m.windows().size(), false);
  for (std::size_t i = 0; i < m.windows().size(); ++i) {
    const Time start = static_cast<double>(i) * w;
    std::vector<double> capacity(tasks, 0.0);
    for (std::size_t k = 0; k < workers.size(); ++k) {
      const Worker& wk = *workers[k];
      if (lost_at[k] <= start || wk.max_batch < 1) continue;
      capacity[wk.task] += wk.max_batch / wk.profiled_latency(0, wk.max_batch);
    }
    const double cap = tasks ? *std::min_element(capacity.begin(), capacity.end()) : 0.0;
    out[i] = static_cast<double>(m.windows()[i].arrivals) > cap * w;
  }
  return out;
}

OverloadGoodput overload_goodput(const MetricsCollector& m, const std::vector<bool>& overloaded) {
  OverloadGoodput out;
  for (std::size_t i = 0; i < overloaded.size() && i < m.windows().size(); ++i) {
    if (!overloaded[i]) continue;
    const WindowStats& ws = m.windows()[i];
    ++out.windows;
    out.seconds += m.window();
    out.arrivals += ws.arrivals;
    out.ok += ws.ok;
  }
  return out;
}

// Per case and burst phase: windows, requests, device time, and per task (pipeline order)
// the wasted work done there and the drops made there.
std::string phases_csv(const std::vector<ComparisonRow>& rows, const App& app) {
  const auto order = app.topological_order();
  std::string csv = "label,phase,windows,seconds,arrivals,ok,late,dropped,gpu_seconds";
  for (TaskId t : order) csv += ",wasted_gpu_" + app.tasks[t].name;
  for (TaskId t : order) csv += ",dropped_at_" + app.tasks[t].name;
  csv += "\n";
  for (const ComparisonRow& r : rows) {
    for (std::size_t ph = 0; ph < kBurstPhases; ++ph) {
      const PhaseStats& p = r.phases[ph];
      csv += fmt::format("\"{}\",{},{},{:g},{},{},{},{},{:.6g}", r.run.label,
                         burst_phase_name(static_cast<BurstPhase>(ph)), p.windows, p.seconds,
                         p.arrivals, p.ok, p.late, p.dropped, p.gpu_busy);
      for (TaskId t : order)
        csv += fmt::format(",{:.6g}", t < p.wasted_gpu.size() ? p.wasted_gpu[t] : 0.0);
      for (TaskId t : order)
        csv += fmt::format(",{}", t < p.dropped_at.size() ? p.dropped_at[t] : 0);
      csv += "\n";
    }
  }
  return csv;
}

}  // namespace

double OverloadGoodput::fraction() const {
  return arrivals > 0 ? static_cast<double>(ok) / static_cast<double>(arrivals) : 1.0;
}

std::size_t comparison_baseline(const std::vector<ComparisonRow>& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].run.label == "naive") return i;
  }
  return 0;
}

std::vector<ComparisonCase> comparison_cases(const RunSpec& run,
                                             const std::vector<std::string>& presets,
                                             const std::vector<double>& load_scales,
                                             const std::vector<double>& lambdas) {
  std::vector<ComparisonCase> cases;
  const std::vector<double> scales = load_scales.empty() ? std::vector<double>{1.0} : load_scales;
  for (double scale : scales) {
    if (!lambdas.empty()) {
      for (double lambda : lambdas) {
        PolicyConfig c = policies_with_preset(run, "pard");
        c.pard.lambda = lambda;
        cases.push_back({fmt::format("pard λ={:g}{}", lambda, scale_suffix(scale)), c, scale});
      }
      continue;
    }
    for (const std::string& p : presets) {
      cases.push_back({p + scale_suffix(scale), policies_with_preset(run, p), scale});
    }
  }
  return cases;
}

std::vector<ComparisonRow> run_comparison(
    const RunSpec& run, const std::vector<ComparisonCase>& cases,
    const std::function<void(const ComparisonRow&, std::size_t)>& progress) {
  std::vector<ComparisonRow> rows;
  for (const ComparisonCase& c : cases) {
    const PolicyConfig& config = c.policies;
    std::unique_ptr<ArrivalSource> arrivals = make_run_arrivals(run, config);
    if (c.load_scale != 1.0) {
      arrivals =
          std::make_unique<RateScaled>(std::move(arrivals), c.load_scale, run.sim.seed ^ 0xA11CE);
    }
    Simulator sim(run.app, run.deployment, run.profiles, PolicySet(config), run.sim);
    sim.run(*arrivals);
    const std::vector<bool> overloaded = overloaded_windows(sim, run);
    rows.push_back({c, summarize(sim.metrics(), run.app), sim.metrics().latency(),
                    overload_goodput(sim.metrics(), overloaded),
                    burst_phase_stats(sim.metrics(), classify_burst_phases(overloaded),
                                      run.app.tasks.size())});
    if (progress) progress(rows.back(), rows.size());
  }
  return rows;
}

std::string comparison_markdown(const std::vector<ComparisonRow>& rows, const App& app,
                                const std::vector<std::string>& fixed) {
  std::string out =
      "| policy | goodput (req/s) | overload goodput | SLO attainment | mean accuracy | drop rate "
      "| late rate | invalid rate | p99 (ms) | drops by stage (%) |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const ComparisonRow& r : rows) {
    const auto& s = r.summary;
    std::string stages;
    for (double share : drop_shares(s, app))
      stages += fmt::format("{}{:.0f}", stages.empty() ? "" : " / ", share);
    const double late = s["submitted"].get<double>() > 0
                            ? s["late"].get<double>() / s["submitted"].get<double>()
                            : 0.0;
    const std::string overload =
        r.overload.windows == 0
            ? "–"
            : fmt::format("{:.3f} ({:g} s)", r.overload.fraction(), r.overload.seconds);
    out += fmt::format(
        "| {} | {:.1f} | {} | {:.4f} | {} | {:.4f} | {:.4f} | {} | {:.0f} | {} |\n", r.run.label,
        s["goodput_rps"].get<double>(), overload, s["slo_attainment"].get<double>(),
        shown(field_or_nan(s, "mean_accuracy"), 4), s["drop_rate"].get<double>(), late,
        shown(field_or_nan(s, "invalid_rate"), 4), s["latency_ms"]["p99"].get<double>(), stages);
  }
  std::string order;
  for (TaskId t : app.topological_order())
    order += (order.empty() ? "" : " / ") + app.tasks[t].name;
  out += "\nDrops by stage, in order: " + order +
         ". Overload goodput: requests finished on time in the windows whose arrivals "
         "exceeded the live workers' capacity, over the requests that arrived in them (and "
         "those windows' total length).\n";
  if (!fixed.empty()) {
    std::string fields;
    for (const std::string& f : fixed) fields += (fields.empty() ? "`" : ", `") + f + "`";
    out += "Every case keeps the run spec's policies " + fields +
           ", as beside `preset:` in the spec.\n";
  }
  out += pard_versus_baselines(rows, app);
  return out;
}

void write_comparison(const std::filesystem::path& dir, const std::vector<ComparisonRow>& rows,
                      const App& app, const std::vector<std::string>& fixed) {
  std::filesystem::create_directories(dir);
  std::string csv =
      "label,policy,load_scale,lambda,submitted,ok,late,dropped,failed,goodput_rps,slo_attainment,"
      "drop_rate,invalid_rate,p50_ms,p99_ms";
  const auto order = app.topological_order();
  for (TaskId t : order) csv += ",dropped_at_" + app.tasks[t].name;
  csv += "\n";
  for (const ComparisonRow& r : rows) {
    const auto& s = r.summary;
    csv += fmt::format(
        "\"{}\",{},{:g},{:g},{},{},{},{},{},{},{},{},{},{},{}", r.run.label, r.run.policies.preset,
        r.run.load_scale, r.run.policies.pard.lambda, s["submitted"].get<uint64_t>(),
        s["ok"].get<uint64_t>(), s["late"].get<uint64_t>(), s["dropped"].get<uint64_t>(),
        s["failed"].get<uint64_t>(), s["goodput_rps"].get<double>(),
        s["slo_attainment"].get<double>(), s["drop_rate"].get<double>(), invalid_cell(s),
        s["latency_ms"]["p50"].get<double>(), s["latency_ms"]["p99"].get<double>());
    for (TaskId t : order)
      csv += fmt::format(",{}", s["dropped_by_stage"][app.tasks[t].name].get<uint64_t>());
    csv += "\n";
  }
  write_text(dir / "comparison.csv", csv);
  write_text(dir / "comparison.md", comparison_markdown(rows, app, fixed));

  std::string latency = "label,lower_ms,upper_ms,count\n";
  for (const ComparisonRow& r : rows) {
    const std::string csv_rows = latency_histogram_csv(r.latency);
    std::size_t pos = csv_rows.find('\n') + 1;  // after the header
    while (pos < csv_rows.size()) {
      const std::size_t end = csv_rows.find('\n', pos);
      latency += "\"" + r.run.label + "\"," + csv_rows.substr(pos, end - pos) + "\n";
      pos = end + 1;
    }
  }
  write_text(dir / "comparison_latency.csv", latency);
  write_text(dir / "comparison_phases.csv", phases_csv(rows, app));

  // One chart per metric, one bar per case; the baseline case is marked.
  const int baseline = rows.empty() ? -1 : static_cast<int>(comparison_baseline(rows));
  std::vector<BarChart> charts;
  auto chart = [&](const std::string& title, const std::string& unit,
                   const std::function<double(const nlohmann::json&)>& f) {
    BarChart c{title, {}, {}, unit, baseline};
    for (const ComparisonRow& r : rows) {
      c.labels.push_back(r.run.label);
      c.values.push_back(f(r.summary));
    }
    charts.push_back(std::move(c));
  };
  chart("Goodput", "requests/s",
        [](const auto& s) { return s["goodput_rps"].template get<double>(); });
  chart("Drop rate", "fraction of requests",
        [](const auto& s) { return s["drop_rate"].template get<double>(); });
  const bool invalid_measured = std::all_of(rows.begin(), rows.end(), [](const ComparisonRow& r) {
    return !std::isnan(field_or_nan(r.summary, "invalid_rate"));
  });
  if (invalid_measured) {
    chart("Invalid rate (wasted GPU time)", "fraction of GPU time",
          [](const auto& s) { return s["invalid_rate"].template get<double>(); });
  }
  write_text(dir / "comparison.svg", render_bar_svg(charts, 400));
}

}  // namespace tessera
