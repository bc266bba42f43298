#include "experiments/iserve_cluster_run.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "dataplane/ppipe/forwarding.hpp"
#include "sim/simulator.hpp"
#include "workload/trace_source.hpp"

namespace tessera::iserve {
namespace {

// The SLO base of a model: its fastest FP16 configuration on the fewest GPUs that holds it.
int base_entry(const ClusterModel& m, const GpuSpec& gpu) {
  int best = -1;
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const ConfigMapEntry& e = m.entries[i];
    if (!plain_fp16(e)) continue;
    if (e.memory_bytes / e.gpus() > gpu.memory_bytes) continue;
    if (best < 0 || e.gpus() < m.entries[best].gpus() ||
        (e.gpus() == m.entries[best].gpus() && e.latency_s(100) < m.entries[best].latency_s(100))) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) {  // nothing fits a GPU: the fewest-GPU FP16 configuration
    for (size_t i = 0; i < m.entries.size(); ++i) {
      const ConfigMapEntry& e = m.entries[i];
      if (plain_fp16(e) && (best < 0 || e.gpus() < m.entries[best].gpus())) {
        best = static_cast<int>(i);
      }
    }
  }
  return best;
}

// The run's data plane on the engine: it routes every query to an endpoint of its model,
// reserves the endpoint's GPUs for it, starts each instance's queries at their reserved
// starts, and tallies what the queries measured. The engine's ForwardingScheduler and
// ForwardingDispatcher (dataplane/ppipe/forwarding.hpp) call it.
class ClusterPlane {
 public:
  ClusterPlane(const ClusterSpec& spec, const std::vector<Query>& queries, const Decide& decide,
               const std::vector<int>& slots)
      : spec_(spec),
        queries_(queries),
        decide_(decide),
        gpu_free_(spec.gpus, 0.0),
        endpoints_(spec.models.size()),
        instances_of_(spec.models.size()),
        base_(spec.models.size()),
        met_(spec.slo_scales.size(), 0) {
    for (size_t m = 0; m < slots.size(); ++m) {
      for (int k = 0; k < slots[m]; ++k) slot_order_.push_back({static_cast<int>(m), k});
    }
    gpus_.resize(spec.gpus);
    for (GpuState& g : gpus_) g.memory_bytes = spec.gpu.memory_bytes;
    for (size_t m = 0; m < spec.models.size(); ++m) base_[m] = base_entry(spec.models[m], spec.gpu);
  }

  // A new instance (in the deployment's order): the next endpoint slot.
  void attach(Worker& w, SchedulerHost& host) {
    host_ = &host;
    if (next_slot_ >= slot_order_.size()) throw std::logic_error("more instances than slots");
    const auto [m, k] = slot_order_[next_slot_++];
    if (w.id >= instance_.size()) instance_.resize(w.id + 1);
    instance_[w.id] = Instance{m, k, {}, 0.0};
    instances_of_[m].push_back(w.id);
  }

  // Deploys the models whose time has come by `t` (all of them for +infinity), in order,
  // each on the GPUs' state as the queries before left it.
  void deploy_until(double t) {
    const int n_models = static_cast<int>(spec_.models.size());
    while (next_model_ < n_models && next_model_ * spec_.deploy_interval_s <= t) {
      const double now = next_model_ * spec_.deploy_interval_s;
      endpoints_[next_model_] = decide_(next_model_, gpus_, now);
      if (endpoints_[next_model_].size() > instances_of_[next_model_].size()) {
        throw std::logic_error("a model got more endpoints than its slots");
      }
      ++next_model_;
    }
  }

  // Dispatcher: the n-th request is the n-th query. Its model's endpoint that can start it
  // first (the first such on ties); -1 (the request fails) when the model has none.
  int route(TaskId, const std::vector<Worker*>& workers, const Item& item) {
    if (next_ >= queries_.size()) throw std::logic_error("more requests than queries");
    const Query& q = queries_[next_++];
    if (item.origin != q.arrival) throw std::logic_error("a request out of the queries' order");
    deploy_until(q.arrival);
    ++queries_seen_;
    const std::vector<Endpoint>& eps = endpoints_[q.model];
    if (eps.empty()) return -1;
    size_t best = 0;
    double best_start = 0;
    for (size_t k = 0; k < eps.size(); ++k) {
      double start = q.arrival;
      for (int g : eps[k].gpus) start = std::max(start, gpu_free_[g]);
      if (k == 0 || start < best_start) {
        best = k;
        best_start = start;
      }
    }
    reserve(q, eps[best], best_start, instance_[instances_of_[q.model][best]]);
    return reservation::index_of(workers, worker_of(workers, instances_of_[q.model][best]));
  }

  // InstanceScheduler: each instance runs its queries one at a time, at their reserved starts.
  void on_queue_grew(Worker& w) { try_start(w); }
  void on_step_done(Worker& w) { try_start(w); }
  void on_timer(Worker& w) { try_start(w); }
  void release(Worker&, std::vector<Item>&) {}

  // CostModel: the query the instance runs takes its reserved time.
  Time step_time(const Worker& w) const { return instance_.at(w.id).running; }

  SystemOutcome tallies(const std::string& name) const;
  int64_t served() const { return served_; }
  int64_t queries_seen() const { return queries_seen_; }

 private:
  struct Reservation {
    double start = 0;
    double service = 0;
  };
  struct Instance {
    int model = -1;
    int endpoint = -1;
    std::deque<Reservation> pending;  // its queries' reservations, in queue order
    double running = 0.0;             // the running query's time
  };

  static const Worker* worker_of(const std::vector<Worker*>& workers, WorkerId id) {
    for (const Worker* w : workers) {
      if (w->id == id) return w;
    }
    return nullptr;
  }

  void reserve(const Query& q, const Endpoint& ep, double start, Instance& inst) {
    const ClusterModel& model = spec_.models[q.model];
    const ConfigMapEntry& e = model.entries[ep.entry];
    const double service = e.latency_s(q.output);
    const double end = start + service;
    for (int g : ep.gpus) {
      gpu_free_[g] = end;
      gpus_[g].load.add_busy(start, end);
    }
    inst.pending.push_back({start, service});
    const double latency = end - q.arrival;
    latencies_.push_back(latency);
    ++served_;
    cost_sum_ += e.memory_bytes / 1e9 * latency;
    gpu_seconds_ += service * static_cast<double>(ep.gpus.size());
    if (base_[q.model] >= 0) {
      const double slo_base = model.entries[base_[q.model]].latency_s(q.output);
      for (size_t k = 0; k < spec_.slo_scales.size(); ++k) {
        if (latency <= spec_.slo_scales[k] * slo_base) ++met_[k];
      }
    }
  }

  void try_start(Worker& w) {
    if (w.busy || w.queue->empty()) return;
    Instance& inst = instance_.at(w.id);
    if (inst.pending.empty()) throw std::logic_error("a queued query without a reservation");
    const Reservation r = inst.pending.front();
    if (r.start > host_->now()) {
      host_->set_timer(w, r.start);
      return;
    }
    inst.pending.pop_front();
    inst.running = r.service;
    const Item item = w.queue->pop();
    w.running.clear();
    // assign, not push_back, into the emptied batch: the same, and GCC 12's -O3
    // -Wdangling-pointer does not mistake the local for one the vector keeps.
    if (host_->admit(w, item, host_->now(), r.service)) w.running.assign(1, item);
    w.running_variant = 0;
    host_->start_step(w);
  }

  const ClusterSpec& spec_;
  const std::vector<Query>& queries_;
  const Decide& decide_;
  std::vector<std::pair<int, int>> slot_order_;  // (model, endpoint) of each instance
  size_t next_slot_ = 0;
  int next_model_ = 0;
  SchedulerHost* host_ = nullptr;
  std::vector<GpuState> gpus_;
  std::vector<double> gpu_free_;
  std::vector<std::vector<Endpoint>> endpoints_;     // per model
  std::vector<std::vector<WorkerId>> instances_of_;  // per model, per endpoint
  std::vector<Instance> instance_;                   // by WorkerId
  std::vector<int> base_;
  size_t next_ = 0;
  int64_t queries_seen_ = 0;
  int64_t served_ = 0;
  std::vector<double> latencies_;
  std::vector<int64_t> met_;
  double cost_sum_ = 0;
  double gpu_seconds_ = 0;
};

class PlaneCost final : public CostModel {
 public:
  explicit PlaneCost(const ClusterPlane& plane) : plane_(plane) {}
  Time step_time(const Worker& worker, const StepContents&) const override {
    return plane_.step_time(worker);
  }

 private:
  const ClusterPlane& plane_;
};

SystemOutcome ClusterPlane::tallies(const std::string& name) const {
  const int n_models = static_cast<int>(spec_.models.size());
  SystemOutcome out;
  out.name = name;
  out.queries = static_cast<int64_t>(queries_.size());
  out.served = served_;
  std::set<int> used;
  for (int m = 0; m < n_models; ++m) {
    ModelOutcome mo;
    mo.label = spec_.models[m].label;
    mo.replicas = static_cast<int>(endpoints_[m].size());
    mo.config =
        endpoints_[m].empty() ? "-" : spec_.models[m].entries[endpoints_[m][0].entry].config.name();
    for (const Endpoint& ep : endpoints_[m]) {
      out.memory_gb += spec_.models[m].entries[ep.entry].memory_bytes / 1e9;
      for (int g : ep.gpus) used.insert(g);
    }
    if (!endpoints_[m].empty()) {
      ++out.models_deployed;
      const Endpoint& ep = endpoints_[m][0];
      std::ostringstream g, l;
      for (size_t s = 0; s < ep.layers.size(); ++s) {
        if (s) {
          g << "|";
          l << "/";
        }
        l << ep.layers[s];
        for (int r = 0; r < ep.tp; ++r) g << (r ? "," : "") << ep.gpus[s * ep.tp + r];
      }
      mo.gpus = g.str();
      mo.layers = l.str();
    }
    out.models.push_back(mo);
  }
  out.gpus_used = static_cast<int>(used.size());
  if (!latencies_.empty()) {
    std::vector<double> sorted = latencies_;
    std::sort(sorted.begin(), sorted.end());
    auto pct = [&](double p) {
      const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - 1;
      return sorted[std::min(i, sorted.size() - 1)];
    };
    out.p50_s = pct(0.50);
    out.p95_s = pct(0.95);
    out.p99_s = pct(0.99);
    out.mean_cost_gbs = cost_sum_ / static_cast<double>(sorted.size());
  }
  out.gpu_hours = gpu_seconds_ / 3600.0;
  const double span = queries_.empty() ? 1.0 : std::max(1.0, queries_.back().arrival);
  out.throughput_per_gpu =
      out.gpus_used ? static_cast<double>(out.served) / span / out.gpus_used : 0.0;
  out.slo_attainment.assign(spec_.slo_scales.size(), 0.0);
  for (size_t k = 0; k < met_.size(); ++k) {
    out.slo_attainment[k] =
        out.queries ? static_cast<double>(met_[k]) / static_cast<double>(out.queries) : 0.0;
  }
  return out;
}

// The engine's side of the run: one task whose every request is a query; instances on a
// segment "gpu" with a placeholder profile (the plane's cost model times every step).
constexpr const char* kVariant = "query";
constexpr const char* kSegment = "gpu";

App cluster_app() {
  App app;
  app.name = "iserve-cluster";
  app.slo = 1e12;  // every served query ends ok: the SLO scales are judged by the plane
  Task task;
  task.name = "llm";
  task.variants = {Variant{kVariant}};
  app.tasks = {task};
  app.finalize();
  return app;
}

ProfileTable cluster_profiles() {
  ProfileTable t;
  t.add(kVariant, kSegment, 1, 1.0);
  return t;
}

}  // namespace

SystemOutcome simulate_on_engine(const ClusterSpec& spec, const std::vector<Query>& queries,
                                 const std::string& name, const Decide& decide,
                                 const std::vector<int>& slots) {
  const App app = cluster_app();
  const ProfileTable profiles = cluster_profiles();
  auto plane = std::make_shared<ClusterPlane>(spec, queries, decide, slots);
  EnginePolicies policies = reservation::central_plane_policies();
  policies.make_dispatcher = [plane](TaskId task) {
    return std::make_unique<reservation::ForwardingDispatcher<ClusterPlane>>(plane, task);
  };
  policies.make_scheduler = [plane](Worker& w, SchedulerHost& host, const CostModel&) {
    plane->attach(w, host);
    return std::make_unique<reservation::ForwardingScheduler<ClusterPlane>>(plane);
  };
  EngineOptions engine_options;
  engine_options.cost_model = std::make_shared<PlaneCost>(*plane);
  // One instance per endpoint slot, model by model.
  Deployment deployment;
  for (int n : slots) {
    for (int k = 0; k < n; ++k) {
      WorkerGroup group;
      group.task = 0;
      group.variants = {0};
      group.segment = kSegment;
      deployment.groups.push_back(group);
    }
  }
  SimOptions options;
  options.window = std::max(1.0, spec.duration_s / 1000.0);
  Simulator sim(app, deployment, profiles, std::move(policies), options, engine_options);
  std::vector<Arrival> arrivals;
  arrivals.reserve(queries.size());
  for (const Query& q : queries) {
    Arrival a;
    a.time = q.arrival;
    a.output_tokens = static_cast<uint32_t>(q.output);
    arrivals.push_back(a);
  }
  TraceSource source(std::move(arrivals), "iServe cluster queries");
  sim.run(source);
  // The models deployed after the last query: their decisions, for the table.
  plane->deploy_until(std::numeric_limits<double>::infinity());
  // The engine's ledger agrees with the reservations: every served query ended once, ok,
  // and every query of a model without an endpoint failed.
  const MetricsCollector& metrics = sim.metrics();
  const auto ok = static_cast<int64_t>(metrics.count(Outcome::kOk));
  const auto failed = static_cast<int64_t>(metrics.count(Outcome::kFailed));
  const auto submitted = static_cast<int64_t>(metrics.submitted());
  const auto queries_n = static_cast<int64_t>(queries.size());
  // (Without any instance, e.g. an AlpaServe plan that placed nothing, the engine fails every
  // request without asking the plane.)
  const bool routed = plane->queries_seen() == queries_n || plane->queries_seen() == 0;
  if (ok != plane->served() || submitted != queries_n || !routed || ok + failed != submitted) {
    throw std::logic_error("the engine's ledger (" + std::to_string(ok) + " ok, " +
                           std::to_string(failed) + " failed of " + std::to_string(submitted) +
                           ") and the cluster's reservations (" + std::to_string(plane->served()) +
                           " served of " + std::to_string(plane->queries_seen()) + " of " +
                           std::to_string(queries_n) + " queries) disagree");
  }
  return plane->tallies(name);
}

}  // namespace tessera::iserve
