#include "serve/replan/live_controller.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/error.hpp"

namespace tessera {

std::unique_ptr<control::LiveReplanner> make_live_replanner(const control::ReplanSpec& spec,
                                                            const App& run_app,
                                                            const std::string& space) {
  const App& planned = spec.plan.input.app;
  const auto mismatch = [&](const std::string& why) {
    throw SpecError(spec.file.string(), "plan",
                    "the plan's app must be the served app (" + why +
                        "): give --replan a spec whose plan spec names the run's app file");
  };
  if (planned.tasks.size() != run_app.tasks.size()) {
    mismatch(std::to_string(planned.tasks.size()) + " tasks vs " +
             std::to_string(run_app.tasks.size()));
  }
  for (std::size_t t = 0; t < planned.tasks.size(); ++t) {
    const Task& a = planned.tasks[t];
    const Task& b = run_app.tasks[t];
    if (a.name != b.name)
      mismatch("task " + std::to_string(t) + ": '" + a.name + "' vs '" + b.name + "'");
    if (a.variants.size() != b.variants.size()) mismatch("task '" + a.name + "' variants differ");
    for (std::size_t v = 0; v < a.variants.size(); ++v) {
      if (a.variants[v].name != b.variants[v].name) {
        mismatch("task '" + a.name + "': variant '" + a.variants[v].name + "' vs '" +
                 b.variants[v].name + "'");
      }
    }
  }
  plan::PlanOptions options = spec.plan.options;
  options.space = space.empty() ? spec.spaces.front() : plan::parse_search_space(space);
  return std::make_unique<control::LiveReplanner>(spec.plan.input, options, spec.controller);
}

LiveController::LiveController(Server& server, std::unique_ptr<control::LiveReplanner> replanner)
    : server_(server), replanner_(std::move(replanner)) {}

LiveController::~LiveController() { stop(); }

void LiveController::start() {
  spdlog::info("live re-planning: {} search space, windows of {} s, mean of the last {} windows",
               replanner_->options().space.name(), replanner_->controller().bin,
               replanner_->controller().history_bins);
  thread_ = std::thread([this] { run(); });
}

void LiveController::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LiveController::run() {
  using SteadyTime = std::chrono::steady_clock;
  const auto bin = std::chrono::duration_cast<SteadyTime::duration>(
      std::chrono::duration<double>(replanner_->controller().bin));
  uint64_t seen = server_.deployment_status().arrivals;
  SteadyTime::time_point window_start = SteadyTime::now();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (wake_.wait_until(lock, window_start + bin, [this] { return stopping_; })) return;
    }
    const DeploymentStatus status = server_.deployment_status();
    // The server is stopping (its loop no longer answers): no window to close.
    if (status.arrivals < seen) return;
    const SteadyTime::time_point now = SteadyTime::now();
    const uint64_t arrivals = status.arrivals - seen;
    seen = status.arrivals;
    const double seconds = std::chrono::duration<double>(now - window_start).count();
    window_start = now;
    const auto t0 = SteadyTime::now();
    control::LiveDecision d = replanner_->close_window(arrivals, seconds);
    const double plan_s = std::chrono::duration<double>(SteadyTime::now() - t0).count();
    const std::string old_plan = deployment_summary(replanner_->input().app, status.deployment);
    if (!d.apply) {
      spdlog::info(
          "replan window {}: measured {:.2f} req/s ({} in {:.1f} s), predicted {:.2f} req/s -> "
          "keep ({}; planning {:.2f} s)",
          d.window, d.measured_rps, d.arrivals, d.seconds, d.record.predicted_rps, d.plan, plan_s);
      continue;
    }
    const std::string note = fmt::format("window {}: measured {:.2f} req/s, predicted {:.2f}",
                                         d.window, d.measured_rps, d.record.predicted_rps);
    const ReconfigureResult r = server_.reconfigure(*d.apply, &replanner_->input().profiles, note);
    spdlog::info(
        "replan window {}: measured {:.2f} req/s ({} in {:.1f} s), predicted {:.2f} req/s -> "
        "{} ({}; planning {:.2f} s): {} -> {}: {}",
        d.window, d.measured_rps, d.arrivals, d.seconds, d.record.predicted_rps,
        r.applied ? "reconfigured" : "REFUSED", d.plan, plan_s, old_plan,
        deployment_summary(replanner_->input().app, *d.apply),
        r.applied ? fmt::format("+{} / -{} instances, switch {:.2f} ms", r.started, r.stopped,
                                r.switch_ms)
                  : r.error);
  }
}

}  // namespace tessera
