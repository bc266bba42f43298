#include "control/replanning.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "control/replan_decider.hpp"
#include "engine/deployment_diff.hpp"

namespace tessera::control {
namespace {

// Counts arrivals per bin as the simulator pulls them.
class CountingSource final : public ArrivalSource {
 public:
  CountingSource(ArrivalSource& inner, Time bin) : inner_(inner), bin_(bin) {}
  bool next(Arrival& out) override {
    if (!inner_.next(out)) return false;
    const auto b = static_cast<std::size_t>(std::floor(out.time / bin_));
    if (b >= counts_.size()) counts_.resize(b + 1, 0);
    ++counts_[b];
    return true;
  }
  std::string describe() const override { return inner_.describe(); }
  uint64_t count(std::size_t bin) const { return bin < counts_.size() ? counts_[bin] : 0; }
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  ArrivalSource& inner_;
  Time bin_;
  std::vector<uint64_t> counts_;
};

// The controller: the decisions (ReplanDecider, shared with the live server's
// controller) and the moves of the simulator's engine between plans.
class Controller {
 public:
  Controller(const plan::PlanInput& input, const plan::PlanOptions& options,
             const ControllerOptions& c)
      : input_(input), options_(c), decider_(input, options, c) {}

  // The first deployment, sized for `rps`; nullopt when no plan of the space serves any
  // demand (`why` says so).
  std::optional<Deployment> initial(double rps, BinRecord& rec, std::string& why) {
    const plan::JigsawPlan* p = decider_.initial(rps, rec, why);
    if (p == nullptr) return std::nullopt;
    Deployment first = plan::to_deployment(*p, input_);
    // The engine numbers the first deployment's workers from 0 in group order.
    WorkerId next = 0;
    for (const WorkerGroup& g : first.groups) {
      std::vector<WorkerId> ids;
      for (int i = 0; i < g.count; ++i) ids.push_back(next++);
      live_.add(g, ids);
    }
    return std::optional<Deployment>(std::move(first));
  }

  double accuracy_max() const {
    return decider_.current() ? decider_.current()->evaluation.accuracy_max : 0.0;
  }

  // At the start of bin `bin`: observe the last bin, plan, reconfigure.
  void tick(Simulator& sim, double last_bin_rps, BinRecord& rec) {
    const plan::JigsawPlan* p = decider_.tick(last_bin_rps, rec);
    if (p == nullptr) return;
    const Deployment target = plan::to_deployment(*p, input_);
    DeploymentEdit step = live_.change_to(target);
    rec.started = started_instances(step);
    rec.stopped = static_cast<int>(step.stop.size());

    // Disruptive: the old instances leave now (items for their tasks wait); the new ones
    // start after the reconfiguration delay. Make-before-break: both at the delay. Each is
    // one atomic edit of the running deployment.
    const Time ready = sim.now() + options_.reconfiguration_delay;
    DeploymentEdit later;
    later.start = step.start;
    later.batch_timeouts = std::move(step.batch_timeouts);
    if (options_.disruptive) {
      DeploymentEdit now;
      now.reconfiguring = true;
      now.stop = step.stop;
      sim.engine().apply(now, input_.profiles);
      later.reconfiguring = false;
    } else {
      later.stop = step.stop;
    }
    sim.schedule(ready, [this, &sim, groups = step.start, edit = std::move(later)] {
      std::vector<WorkerId> ids = sim.engine().apply(edit, input_.profiles);
      std::size_t next = 0;
      for (const WorkerGroup& g : groups) {
        std::vector<WorkerId> mine(ids.begin() + static_cast<std::ptrdiff_t>(next),
                                   ids.begin() + static_cast<std::ptrdiff_t>(next) + g.count);
        next += static_cast<std::size_t>(g.count);
        live_.add(g, mine);
      }
    });
  }

  int solves() const { return decider_.solves(); }
  int limited_solves() const { return decider_.limited_solves(); }

 private:
  const plan::PlanInput& input_;
  ControllerOptions options_;
  ReplanDecider decider_;
  LiveInstances live_;
};

}  // namespace

std::vector<uint64_t> count_per_bin(ArrivalSource& arrivals, Time bin) {
  CountingSource counted(arrivals, bin);
  Arrival a;
  while (counted.next(a)) {
  }
  return counted.counts();
}

ReplanResult run_replanning(const plan::PlanInput& input, const plan::PlanOptions& options,
                            const PolicyConfig& policies, const SimOptions& sim_options,
                            const ControllerOptions& c, ArrivalSource& arrivals,
                            const std::vector<uint64_t>& expected_counts) {
  if (c.bin <= 0) throw std::invalid_argument("the controller's bin must be positive");
  if (c.reconfiguration_delay < 0 || c.reconfiguration_delay >= c.bin) {
    throw std::invalid_argument("the reconfiguration delay must be in [0, bin)");
  }
  const auto wall_start = std::chrono::steady_clock::now();
  ReplanResult result;
  result.space = options.space.name();
  result.slices_available = input.slices;
  result.bin = c.bin;
  for (const Task& t : input.app.tasks) result.tasks.push_back(t.name);

  if (expected_counts.empty()) throw std::invalid_argument("the workload has no arrivals");
  const int bin_count = static_cast<int>(expected_counts.size());
  Controller controller(input, options, c);
  std::vector<BinRecord> bins(1);
  const std::optional<Deployment> first =
      controller.initial(static_cast<double>(expected_counts[0]) / c.bin, bins[0], result.message);
  if (!first) {
    spdlog::warn("{}: {}", result.space, result.message);
    result.infeasible = true;
    result.solves = controller.solves();
    result.limited_solves = controller.limited_solves();
    result.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;
  }
  spdlog::info("{}: bin 0 planned for {:.1f} req/s: {} slices, {} workers", result.space,
               bins[0].planned_rps, bins[0].slices, bins[0].workers);

  SimOptions so = sim_options;
  so.window = c.bin;
  const PolicySet policy_set(policies);
  Simulator sim(input.app, *first, input.profiles, policy_set, so);
  CountingSource counted(arrivals, c.bin);

  // At the start of each bin: observe, plan, reconfigure.
  std::function<void(int)> tick = [&](int bin) {
    const double last_rps =
        static_cast<double>(counted.count(static_cast<std::size_t>(bin - 1))) / c.bin;
    if (bins.size() <= static_cast<std::size_t>(bin))
      bins.resize(static_cast<std::size_t>(bin) + 1);
    BinRecord& rec = bins[static_cast<std::size_t>(bin)];
    controller.tick(sim, last_rps, rec);
    if (sim_options.progress && bin % 12 == 0) {
      spdlog::info("{}: bin {} predicted {:.1f} req/s -> {} slices{}, +{} / -{} workers",
                   result.space, bin, rec.predicted_rps, rec.slices,
                   rec.fallback ? " (max-demand plan)" : "", rec.started, rec.stopped);
    }
  };
  // One tick per bin boundary; each arms the next, up to the last bin with arrivals.
  std::function<void(int)> arm = [&](int bin) {
    if (bin >= bin_count) return;
    sim.schedule(c.bin * bin, [&, bin] {
      tick(bin);
      arm(bin + 1);
    });
  };
  arm(1);
  sim.run(counted);

  // Outcomes per bin (by finish time) from the simulator's windows.
  const auto& windows = sim.metrics().windows();
  if (bins.size() < windows.size()) bins.resize(windows.size());
  for (std::size_t b = 0; b < bins.size(); ++b) {
    BinRecord& rec = bins[b];
    rec.bin = static_cast<int>(b);
    rec.demand_rps = static_cast<double>(counted.count(b)) / c.bin;
    if (b >= windows.size()) continue;
    const WindowStats& w = windows[b];
    rec.ok = w.ok;
    rec.late = w.late;
    rec.dropped = w.dropped;
    rec.failed = w.failed;
    rec.finished = w.ok + w.late + w.dropped + w.failed;
    rec.accuracy = w.accuracy_count ? w.accuracy_sum / static_cast<double>(w.accuracy_count) : 0.0;
    rec.subrequests = w.subrequests;
    rec.subrequests_violated = w.subrequests_violated;
    rec.dropped_at = w.dropped_at;
  }
  // Bins after the last tick (requests finishing after the last arrival) carry no plan of
  // their own: they run the last one.
  for (std::size_t b = 1; b < bins.size(); ++b) {
    if (bins[b].workers == 0 && bins[b].slices == 0) {
      const BinRecord prev = bins[b - 1];
      bins[b].slices = prev.slices;
      bins[b].planned_accuracy = prev.planned_accuracy;
      bins[b].workers = prev.workers;
      bins[b].planned_rps = prev.planned_rps;
      bins[b].predicted_rps = prev.predicted_rps;
      bins[b].fallback = prev.fallback;
    }
  }
  const MetricsCollector& m = sim.metrics();
  result.bins = std::move(bins);
  result.solves = controller.solves();
  result.accuracy_max = controller.accuracy_max();
  result.submitted = m.submitted();
  result.ok = m.count(Outcome::kOk);
  result.late = m.count(Outcome::kLate);
  result.dropped = m.count(Outcome::kDropped);
  result.failed = m.count(Outcome::kFailed);
  result.subrequests = m.subrequests();
  result.subrequests_violated = m.subrequests_violated();
  result.limited_solves = controller.limited_solves();
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace tessera::control
