#include "metrics/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "metrics/svg_chart.hpp"

namespace tessera {
namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// Rounds to 9 significant digits so summary.json reads well and compares exactly.
double tidy(double v) { return std::stod(fmt::format("{:.9g}", v)); }

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << text;
}

}  // namespace

nlohmann::json summarize(const MetricsCollector& m, const App& app, const Unmeasured& given) {
  using nlohmann::json;
  Unmeasured un = given;
  const LlmStats& llm = m.llm();
  const bool llm_run = llm.steps > 0 || llm.requests > 0;
  auto unless_given = [](std::string& field, const std::string& why) {
    if (field.empty()) field = why;
  };
  if (!un.gpu.empty()) {
    unless_given(un.waste, un.gpu);
    unless_given(un.batch_items, un.gpu);
  }
  if (llm_run) {
    // A variant's accuracy describes a model's results (a detector's mAP); an LLM's
    // answers have none, so its default of 1.0 is no measurement.
    unless_given(un.accuracy, "an LLM's answers carry no accuracy");
    unless_given(un.subrequests, "an LLM request has no sub-requests");
    // A step serves many sequences; the engine splits its time only among the requests
    // that finish in it, and counts only those as its items.
    unless_given(un.waste, "an LLM step's time is not split among the requests it serves");
    unless_given(un.batch_items,
                 "an LLM step serves every running sequence; see llm.prefill_tokens and "
                 "llm.decode_tokens per llm.steps");
  }
  if (m.accuracy_count() == 0) unless_given(un.accuracy, "no request completed");
  json not_measured = json::object();
  // `value` where it was measured; else null, with the reason under not_measured[path].
  auto measured = [&](const std::string& why, const std::string& path, json value) -> json {
    if (why.empty()) return value;
    not_measured[path] = why;
    return nullptr;
  };
  const double submitted = static_cast<double>(m.submitted());
  const double ok = static_cast<double>(m.count(Outcome::kOk));
  const double span =
      m.submitted() > 1 ? std::max(m.last_arrival() - m.first_arrival(), 1e-9) : 1.0;
  json s;
  s["app"] = app.name;
  s["slo_ms"] = tidy(to_ms(app.slo));
  s["submitted"] = m.submitted();
  s["ok"] = m.count(Outcome::kOk);
  s["late"] = m.count(Outcome::kLate);
  s["dropped"] = m.count(Outcome::kDropped);
  s["failed"] = m.count(Outcome::kFailed);
  s["duration_s"] = tidy(span);
  s["goodput_rps"] = tidy(ok / span);
  s["offered_rps"] = tidy(submitted / span);
  s["slo_attainment"] = tidy(ratio(ok, submitted));
  s["drop_rate"] = tidy(ratio(static_cast<double>(m.count(Outcome::kDropped)), submitted));
  s["invalid_rate"] =
      measured(un.waste, "invalid_rate", tidy(ratio(m.wasted_gpu_seconds(), m.gpu_seconds())));
  s["mean_accuracy"] =
      measured(un.accuracy, "mean_accuracy",
               tidy(ratio(m.accuracy_sum(), static_cast<double>(m.accuracy_count()))));
  // JigsawServe §4.5: violations per sub-request, a lost item weighted by the results it
  // would have yielded; the per-request figures above count a request once.
  s["subrequests"] =
      measured(un.subrequests, "subrequests",
               {{"total", tidy(m.subrequests())},
                {"violated", tidy(m.subrequests_violated())},
                {"violation_rate", tidy(ratio(m.subrequests_violated(), m.subrequests()))}});
  s["latency_ms"] = {{"p50", tidy(to_ms(m.latency().quantile(0.50)))},
                     {"p90", tidy(to_ms(m.latency().quantile(0.90)))},
                     {"p99", tidy(to_ms(m.latency().quantile(0.99)))},
                     {"mean", tidy(to_ms(m.latency().mean()))}};
  s["gpu_seconds"] = measured(un.gpu, "gpu_seconds", tidy(m.gpu_seconds()));
  s["wasted_gpu_seconds"] = measured(un.waste, "wasted_gpu_seconds", tidy(m.wasted_gpu_seconds()));
  json by_stage = json::object();
  json tasks = json::object();
  for (std::size_t t = 0; t < app.tasks.size(); ++t) {
    const TaskStats& ts = m.tasks()[t];
    by_stage[app.tasks[t].name] = ts.dropped;
    const double mean_batch = ratio(static_cast<double>(ts.items), static_cast<double>(ts.batches));
    tasks[app.tasks[t].name] = {
        {"batches", measured(un.gpu, "tasks.*.batches", ts.batches)},
        {"items", measured(un.batch_items, "tasks.*.items", ts.items)},
        {"mean_batch_size", measured(un.batch_items, "tasks.*.mean_batch_size", tidy(mean_batch))},
        {"gpu_seconds", measured(un.gpu, "tasks.*.gpu_seconds", tidy(ts.gpu_busy))},
        {"wasted_gpu_seconds",
         measured(un.waste, "tasks.*.wasted_gpu_seconds", tidy(ts.wasted_gpu))},
        {"dropped", ts.dropped},
        {"failed", ts.failed}};
  }
  s["dropped_by_stage"] = by_stage;
  json by_reason = json::object();
  for (std::size_t r = 1; r < static_cast<std::size_t>(DropReason::kCount); ++r) {
    const auto reason = static_cast<DropReason>(r);
    if (m.dropped_for(reason) > 0)
      by_reason[std::string(drop_reason_name(reason))] = m.dropped_for(reason);
  }
  s["dropped_by_reason"] = by_reason;
  // Only where a failed request has a reason (an LLM request refused for its length), so
  // that other runs' summaries are as before.
  if (m.context_refused() > 0) s["failed_by_reason"] = {{"context_length", m.context_refused()}};
  s["tasks"] = tasks;
  if (llm_run) {
    // LLM runs only (docs/simulate.md#llm): token timings, SLOs, throughput, KV cache.
    const double n = static_cast<double>(llm.requests);
    auto ms = [](const LogHistogram& h, double q) { return tidy(to_ms(h.quantile(q))); };
    auto engine = [&](const char* field, json value) {
      return measured(un.llm_engine, std::string("llm.") + field, std::move(value));
    };
    s["llm"] = {{"requests", llm.requests},
                {"ttft_slo_ms", tidy(to_ms(app.ttft_slo))},
                {"tpot_slo_ms", tidy(to_ms(app.tpot_slo))},
                {"ttft_ms",
                 {{"p50", ms(llm.ttft, 0.5)},
                  {"p90", ms(llm.ttft, 0.9)},
                  {"p99", ms(llm.ttft, 0.99)},
                  {"mean", tidy(to_ms(llm.ttft.mean()))}}},
                {"tpot_ms",
                 {{"p50", ms(llm.tpot, 0.5)},
                  {"p90", ms(llm.tpot, 0.9)},
                  {"p99", ms(llm.tpot, 0.99)},
                  {"mean", tidy(to_ms(llm.tpot.mean()))}}},
                {"ttft_attainment", tidy(ratio(static_cast<double>(llm.ttft_met), submitted))},
                {"tpot_attainment", tidy(ratio(static_cast<double>(llm.tpot_met), submitted))},
                {"goodput_rps", tidy(static_cast<double>(llm.both_met) / span)},
                {"output_tokens", llm.output_tokens},
                {"tokens_per_s", tidy(static_cast<double>(llm.output_tokens) /
                                      std::max(m.last_finish() - m.first_arrival(), 1e-9))},
                {"mean_output_tokens", tidy(ratio(static_cast<double>(llm.output_tokens), n))},
                {"steps", engine("steps", llm.steps)},
                {"prefill_tokens", engine("prefill_tokens", llm.prefill_tokens)},
                {"decode_tokens", engine("decode_tokens", llm.decode_tokens)},
                {"preemptions", engine("preemptions", llm.preemptions)},
                {"preempted_requests", engine("preempted_requests", llm.preempted_requests)},
                {"kv_utilization",
                 engine("kv_utilization", tidy(ratio(llm.kv_block_seconds, llm.kv_total_seconds)))},
                {"kv_peak_utilization", engine("kv_peak_utilization", tidy(llm.kv_peak))},
                {"kv_blocks_per_instance", engine("kv_blocks_per_instance", llm.kv_blocks)}};
    if (llm.prefix_cache_queries > 0) {  // requests with prompts to share (shared_prefix)
      s["llm"]["prefix_cache_queries"] = engine("prefix_cache_queries", llm.prefix_cache_queries);
      s["llm"]["prefix_cache_hits"] = engine("prefix_cache_hits", llm.prefix_cache_hits);
      s["llm"]["prefix_cache_hit_rate"] = engine(
          "prefix_cache_hit_rate", tidy(ratio(static_cast<double>(llm.prefix_cache_hits),
                                              static_cast<double>(llm.prefix_cache_queries))));
    }
  }
  if (!not_measured.empty()) s["not_measured"] = not_measured;
  return s;
}

namespace {

// The name a not_measured path goes by in the terminal table.
std::string unmeasured_name(const std::string& path) {
  if (path == "mean_accuracy") return "accuracy";
  if (path == "subrequests") return "sub-request violations";
  if (path == "wasted_gpu_seconds" || path == "invalid_rate") return "wasted GPU time";
  if (path == "tasks.*.items" || path == "tasks.*.mean_batch_size") return "items per batch";
  if (path == "gpu_seconds" || path.rfind("tasks.*.", 0) == 0) return "batches and GPU time";
  if (path.rfind("llm.", 0) == 0) return "LLM steps, tokens per step, preemptions, KV cache";
  return path;
}

}  // namespace

std::string format_summary(const nlohmann::json& s) {
  using nlohmann::json;
  std::string out;
  auto row = [&](const std::string& k, const std::string& v) {
    out += fmt::format("  {:<22} {}\n", k, v);
  };
  auto has = [](const json& parent, const char* key) {
    return parent.contains(key) && !parent[key].is_null();
  };
  const double submitted = s["submitted"].get<double>();
  auto pct = [&](const char* key) {
    return fmt::format("{:>10}  ({:.2f} %)", s[key].get<uint64_t>(),
                       submitted > 0 ? 100.0 * s[key].get<double>() / submitted : 0.0);
  };
  out += fmt::format("tessera simulate: {} (SLO {} ms)\n", s["app"].get<std::string>(),
                     s["slo_ms"].get<double>());
  row("submitted", fmt::format("{:>10}", s["submitted"].get<uint64_t>()));
  row("ok (on time)", pct("ok"));
  row("late", pct("late"));
  row("dropped", pct("dropped"));
  row("failed", pct("failed"));
  row("offered load", fmt::format("{:>10.2f} req/s over {:.1f} s", s["offered_rps"].get<double>(),
                                  s["duration_s"].get<double>()));
  row("goodput", fmt::format("{:>10.2f} req/s", s["goodput_rps"].get<double>()));
  row("SLO attainment", fmt::format("{:>10.4f}", s["slo_attainment"].get<double>()));
  const bool gpu_measured = has(s, "gpu_seconds");
  if (gpu_measured && has(s, "invalid_rate")) {
    row("invalid (wasted) GPU",
        fmt::format("{:>10.4f}  of {:.1f} GPU-s", s["invalid_rate"].get<double>(),
                    s["gpu_seconds"].get<double>()));
  } else if (gpu_measured) {
    row("GPU time", fmt::format("{:>10.1f} GPU-s", s["gpu_seconds"].get<double>()));
  }
  if (has(s, "mean_accuracy")) {
    row("mean accuracy", fmt::format("{:>10.4f}", s["mean_accuracy"].get<double>()));
  }
  if (has(s, "subrequests")) {
    row("sub-request violations",
        fmt::format("{:>10.2f} %", 100.0 * s["subrequests"]["violation_rate"].get<double>()));
  }
  const auto& l = s["latency_ms"];
  row("latency p50/p90/p99", fmt::format("{:>10.1f} / {:.1f} / {:.1f} ms", l["p50"].get<double>(),
                                         l["p90"].get<double>(), l["p99"].get<double>()));
  if (has(s, "llm")) {
    const json& llm = s["llm"];
    auto p50_p99 = [](const json& h) {
      return fmt::format("{:>10.1f} / {:.1f} ms", h["p50"].get<double>(), h["p99"].get<double>());
    };
    row("TTFT p50/p99", p50_p99(llm["ttft_ms"]));
    row("TPOT p50/p99", p50_p99(llm["tpot_ms"]));
    row("output tokens",
        fmt::format("{:>10}  ({:.1f} tokens/s)", llm["output_tokens"].get<uint64_t>(),
                    llm["tokens_per_s"].get<double>()));
    if (has(llm, "steps")) {
      const double steps = std::max(1.0, llm["steps"].get<double>());
      row("LLM steps",
          fmt::format("{:>10}  ({:.1f} prefill + {:.1f} decode tokens per step)",
                      llm["steps"].get<uint64_t>(), llm["prefill_tokens"].get<double>() / steps,
                      llm["decode_tokens"].get<double>() / steps));
      row("KV cache used",
          fmt::format("{:>10.4f}  mean, {:.4f} peak", llm["kv_utilization"].get<double>(),
                      llm["kv_peak_utilization"].get<double>()));
      row("preemptions", fmt::format("{:>10}", llm["preemptions"].get<uint64_t>()));
      if (has(llm, "prefix_cache_hits")) {
        row("prefix cache hits", fmt::format("{:>10}  of {} prompt tokens ({:.1f}%)",
                                             llm["prefix_cache_hits"].get<uint64_t>(),
                                             llm["prefix_cache_queries"].get<uint64_t>(),
                                             100.0 * llm["prefix_cache_hit_rate"].get<double>()));
      }
    }
  }
  if (gpu_measured) {
    out += fmt::format("  {:<22} {:>8} {:>10} {:>10} {:>8}\n", "stage", "batches", "mean batch",
                       "GPU-s", "dropped");
    for (const auto& [name, t] : s["tasks"].items()) {
      const std::string mean_batch = has(t, "mean_batch_size")
                                         ? fmt::format("{:.2f}", t["mean_batch_size"].get<double>())
                                         : "-";
      out +=
          fmt::format("  {:<22} {:>8} {:>10} {:>10.1f} {:>8}\n", name, t["batches"].get<uint64_t>(),
                      mean_batch, t["gpu_seconds"].get<double>(), t["dropped"].get<uint64_t>());
    }
  }
  // What was left out, and why: one line per reason.
  if (s.contains("not_measured")) {
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    for (const auto& [path, why] : s["not_measured"].items()) {
      const std::string reason = why.get<std::string>(), name = unmeasured_name(path);
      auto it = std::find_if(by_reason.begin(), by_reason.end(),
                             [&](const auto& r) { return r.first == reason; });
      if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {reason, {}});
      if (std::find(it->second.begin(), it->second.end(), name) == it->second.end())
        it->second.push_back(name);
    }
    for (const auto& [why, names] : by_reason) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      out += fmt::format("  not measured: {} ({})\n", list, why);
    }
  }
  return out;
}

std::string latency_histogram_csv(const LogHistogram& latency) {
  std::string csv = "lower_ms,upper_ms,count\n";
  for (std::size_t i = 0; i < latency.bucket_count(); ++i) {
    if (latency.bucket(i) == 0) continue;
    csv += fmt::format("{:.6g},{:.6g},{}\n", to_ms(latency.bucket_lower(i)),
                       to_ms(latency.bucket_upper(i)), latency.bucket(i));
  }
  return csv;
}

void write_report(const std::filesystem::path& dir, const nlohmann::json& summary,
                  const MetricsCollector& m, const App& app) {
  std::filesystem::create_directories(dir);
  write_file(dir / "summary.json", summary.dump(2) + "\n");
  write_file(dir / "latency_histogram.csv", latency_histogram_csv(m.latency()));

  const double w = m.window();
  // An LLM instance takes every request into its scheduler's waiting line at once, which
  // the engine's queue sample does not see: in LLM runs the columns would read 0 throughout.
  const bool queues = m.queues_sampled() && !summary.contains("llm");
  const bool gpu = !summary.value("gpu_seconds", nlohmann::json()).is_null();
  // Row by row to the file: a long run's time series is never held as one string.
  std::ofstream csv(dir / "timeseries.csv");
  if (!csv) throw std::runtime_error("cannot write " + (dir / "timeseries.csv").string());
  std::string row = "window_start_s,arrivals_rps,goodput_rps,late_rps,dropped_rps,failed_rps";
  if (gpu) row += ",gpu_busy";
  if (queues) {
    for (const Task& t : app.tasks) row += ",queue_" + t.name;
  }
  // Where the lost requests' work was done and where they were dropped, by the window in
  // which each ended (simulated runs; a load generator cannot see the stages).
  const bool stages = queues && gpu;
  if (stages) {
    for (const Task& t : app.tasks) row += ",wasted_gpu_" + t.name;
    for (const Task& t : app.tasks) row += ",dropped_at_" + t.name;
  }
  row += "\n";
  csv << row;
  // The charts get every window, or, for a run of more than kChartPoints windows, the
  // means of `stride` consecutive windows (a 900-pixel chart cannot show more), so a long
  // run's report is drawn in bounded memory; timeseries.csv keeps every window.
  constexpr std::size_t kChartPoints = 1800;
  const std::size_t count = m.window_count();
  const std::size_t stride = count > kChartPoints ? (count + kChartPoints - 1) / kChartPoints : 1;
  const char* per = stride > 1 ? " (means of consecutive windows)" : "";
  Chart rates{std::string("Request rates per window") + per,
              "time (s)",
              "requests/s",
              w * static_cast<double>(stride),
              {}};
  Chart queued{std::string("Queued items per stage (sampled at window end)") + per,
               "time (s)",
               "items",
               w * static_cast<double>(stride),
               {}};
  rates.series = {{"arrivals", {}}, {"goodput", {}}, {"late", {}}, {"dropped", {}}};
  for (const Task& t : app.tasks) queued.series.push_back({t.name, {}});
  std::vector<double> sums(rates.series.size() + queued.series.size(), 0.0);
  std::size_t in_bucket = 0;
  auto flush = [&] {
    const double n = static_cast<double>(in_bucket);
    for (std::size_t k = 0; k < rates.series.size(); ++k) {
      rates.series[k].values.push_back(stride > 1 ? sums[k] / n : sums[k]);
    }
    for (std::size_t k = 0; k < queued.series.size(); ++k) {
      const double v = sums[rates.series.size() + k];
      queued.series[k].values.push_back(stride > 1 ? v / n : v);
    }
    std::fill(sums.begin(), sums.end(), 0.0);
    in_bucket = 0;
  };
  m.for_each_window([&](std::size_t i, const WindowStats& ws) {
    auto per_s = [w](uint64_t n) { return static_cast<double>(n) / w; };
    row = fmt::format("{},{},{},{},{},{}", static_cast<double>(i) * w, per_s(ws.arrivals),
                      per_s(ws.ok), per_s(ws.late), per_s(ws.dropped), per_s(ws.failed));
    if (gpu) row += fmt::format(",{:.6g}", ws.gpu_busy / w);
    if (queues) {
      for (uint64_t q : ws.queue_length) row += fmt::format(",{}", q);
    }
    if (stages) {
      for (Time g : ws.wasted_gpu) row += fmt::format(",{:.6g}", g);
      for (uint64_t d : ws.dropped_at) row += fmt::format(",{}", d);
    }
    row += "\n";
    csv << row;
    sums[0] += per_s(ws.arrivals);
    sums[1] += per_s(ws.ok);
    sums[2] += per_s(ws.late);
    sums[3] += per_s(ws.dropped);
    for (std::size_t t = 0; t < ws.queue_length.size() && t < queued.series.size(); ++t) {
      sums[rates.series.size() + t] += static_cast<double>(ws.queue_length[t]);
    }
    if (++in_bucket == stride) flush();
  });
  if (in_bucket > 0) flush();
  csv.close();
  if (!csv) throw std::runtime_error("cannot write " + (dir / "timeseries.csv").string());
  std::vector<Chart> charts = {rates};
  if (queues) charts.push_back(queued);
  write_file(dir / "timeseries.svg", render_svg(charts));
}

}  // namespace tessera
