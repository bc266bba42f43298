#include "spec/llm_fleet_sim.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "spec/llm_spec.hpp"

namespace tessera {
namespace {

// The step cost of each instance: backend i's model for worker i.
class FleetCostModel final : public CostModel {
 public:
  explicit FleetCostModel(std::vector<std::shared_ptr<const CostModel>> by_worker)
      : by_worker_(std::move(by_worker)) {}
  Time step_time(const Worker& worker, const StepContents& step) const override {
    return by_worker_.at(worker.id)->step_time(worker, step);
  }

 private:
  std::vector<std::shared_ptr<const CostModel>> by_worker_;
};

// The engine as each instance's scheduler sees it, with a finished request's token times
// also told to the router (the live gateway observes each stream it relayed).
class ObservingHost final : public SchedulerHost {
 public:
  ObservingHost(SchedulerHost& host, std::shared_ptr<LlmFleetState> fleet)
      : host_(host), fleet_(std::move(fleet)) {}
  Time now() const override { return host_.now(); }
  bool admit(Worker& w, const Item& item, Time start, Time exec) override {
    return host_.admit(w, item, start, exec);
  }
  void start_step(Worker& w) override { host_.start_step(w); }
  void set_timer(Worker& w, Time at) override { host_.set_timer(w, at); }
  void drop_queued(Worker& w, const Item& item, DropReason reason) override {
    host_.drop_queued(w, item, reason);
  }
  void start_step(Worker& w, const StepContents& contents) override {
    host_.start_step(w, contents);
  }
  void record_tokens(const Item& item, const TokenTimes& times) override {
    auto it = fleet_->routed.find(item.request);
    if (it != fleet_->routed.end()) {
      if (fleet_->router && times.ttft >= 0) {
        LlmRouteObservation o;
        o.backend = it->second.backend;
        o.prediction = it->second.prediction;
        o.ttft = times.ttft;
        o.tpot = times.tokens > 1 ? times.tpot : -1.0;
        o.prompt_tokens = it->second.prompt_tokens;
        o.output_tokens = times.tokens;
        fleet_->router->observe(o);
      }
      fleet_->routed.erase(it);
    }
    host_.record_tokens(item, times);
  }
  void report_llm_step(const Worker& w, const LlmStepStats& stats) override {
    host_.report_llm_step(w, stats);
  }

 private:
  SchedulerHost& host_;
  std::shared_ptr<LlmFleetState> fleet_;
};

// An instance's scheduler, with the host it reports through.
class FleetInstance final : public InstanceScheduler {
 public:
  FleetInstance(const LlmSchedulerConfig& config, SchedulerHost& host, const CostModel& cost,
                std::shared_ptr<LlmFleetState> fleet)
      : host_(host, std::move(fleet)), llm_(config, host_, cost) {}
  LlmInstanceScheduler& llm() { return llm_; }
  void on_queue_grew(Worker& w) override { llm_.on_queue_grew(w); }
  void on_step_done(Worker& w) override { llm_.on_step_done(w); }
  void on_timer(Worker& w) override { llm_.on_timer(w); }
  void on_settings_changed(Worker& w) override { llm_.on_settings_changed(w); }
  void release(Worker& w, std::vector<Item>& out) override { llm_.release(w, out); }
  bool cancel(Worker& w, RequestSlot request) override { return llm_.cancel(w, request); }

 private:
  ObservingHost host_;
  LlmInstanceScheduler llm_;
};

// The same hash for the same prefix: the live gateway hashes the prompt text's leading
// blocks of `block_tokens` * kLlmBytesPerToken bytes (llm_prefix_hashes); the simulator's
// prompt is `bytes_per_token` bytes a token, its group's shared prefix
// (Item::prefix_group, shared_prefix_tokens) and then the request's own.
std::vector<uint64_t> synthetic_prefix_hashes(const Item& item, const LlmFleetRequests& how,
                                              uint64_t serial) {
  std::vector<uint64_t> out;
  const uint64_t bytes = uint64_t{item.tokens_in} * how.bytes_per_token;
  const uint64_t block = uint64_t{how.block_tokens} * kLlmBytesPerToken;
  if (bytes == 0 || how.max_blocks == 0) return out;
  const auto key = [&](uint64_t end_byte, uint64_t chained) {
    const bool shared = end_byte <= uint64_t{item.shared_prefix_tokens} * how.bytes_per_token;
    return llm_hash(
        (shared ? "g" + std::to_string(item.prefix_group) : "r" + std::to_string(serial)) + "/" +
        std::to_string(end_byte) + "/" + std::to_string(chained));
  };
  if (bytes < block) {  // one hash of all of it
    out.push_back(key(bytes, 0));
    return out;
  }
  uint64_t h = 0;
  for (uint64_t b = 0; b < how.max_blocks && (b + 1) * block <= bytes; ++b) {
    h = key((b + 1) * block, h);
    out.push_back(h);
  }
  return out;
}

// The gateway's routing as the engine's dispatcher of the fleet's task.
class GatewayDispatcher final : public Dispatcher {
 public:
  GatewayDispatcher(std::shared_ptr<LlmFleetState> fleet, LlmFleetRequests how)
      : fleet_(std::move(fleet)), how_(std::move(how)) {}

  int pick(const std::vector<Worker*>& workers, const Item& item) override {
    const Time now = item.enqueued;  // the engine stamps it just before the pick
    view_.clear();
    for (const Worker* w : workers) view_.push_back(fleet_->route_backend(*w, now));
    LlmRouteRequest request = how_.defaults;
    // The gateway's estimate from the prompt's text, as the live gateway makes it.
    request.prompt_tokens =
        llm_estimated_tokens(std::size_t{item.tokens_in} * how_.bytes_per_token);
    const std::vector<uint64_t> hashes = synthetic_prefix_hashes(item, how_, ++serial_);
    request.prefix_hashes = hashes;
    const LlmRouteDecision d = fleet_->router->pick(request, view_, {}, now);
    refusal_ =
        d.kind == LlmRouteDecision::Kind::kShed ? DropReason::kGatewayShed : DropReason::kNone;
    if (d.kind != LlmRouteDecision::Kind::kRoute) return -1;
    fleet_->routed[item.request] = {d.backend, d.prediction, request.prompt_tokens};
    return d.backend;
  }
  DropReason last_refusal() const override { return refusal_; }

 private:
  std::shared_ptr<LlmFleetState> fleet_;
  LlmFleetRequests how_;
  uint64_t serial_ = 0;
  std::vector<LlmRouteBackend> view_;
  DropReason refusal_ = DropReason::kNone;
};

}  // namespace

LlmRouteBackend LlmFleetState::route_backend(const Worker& worker, Time now) {
  LlmRouteBackend v;
  v.up = worker.alive;
  v.outstanding = static_cast<int>(worker.load());
  if (worker.id >= backends.size() || backends[worker.id].scheduler == nullptr) return v;
  LlmFleetBackend& b = backends[worker.id];
  const LlmInstanceScheduler& llm = *b.scheduler;
  v.outstanding = static_cast<int>(worker.queue->size() + llm.waiting() + llm.admitted());
  const LlmInstanceScheduler::AwaitingFirst a = llm.awaiting_first_token();
  v.awaiting_first = static_cast<int>(a.requests + worker.queue->size());
  v.awaiting_prompt_tokens = a.prompt_tokens;
  if (reads_engine_load &&
      (b.scraped_at < 0 || (scrape_interval > 0 && now >= b.scraped_at + scrape_interval))) {
    const KvBlockPool& kv = llm.kv();
    b.scraped.load_known = true;
    b.scraped.running = static_cast<double>(llm.admitted());
    b.scraped.waiting = static_cast<double>(llm.waiting() + worker.queue->size());
    b.scraped.kv_usage = kv.total() > 0 ? static_cast<double>(kv.used()) / kv.total() : 0.0;
    b.scraped_at = now;
  }
  v.load_known = b.scraped.load_known;
  v.running = b.scraped.running;
  v.waiting = b.scraped.waiting;
  v.kv_usage = b.scraped.kv_usage;
  return v;
}

Deployment llm_fleet_deployment(const Deployment& base, std::size_t backends) {
  if (base.groups.empty()) throw std::invalid_argument("the run's deployment has no workers");
  WorkerGroup one = base.groups.front();
  one.count = 1;
  Deployment fleet;
  fleet.groups.assign(backends, one);
  return fleet;
}

void simulate_llm_fleet(const LlmGatewaySpec& gateway, const LlmSpec& llm, SimOptions& sim) {
  const LlmRoutingRow* row = find_llm_routing(gateway.routing);
  if (row == nullptr) throw std::invalid_argument("unknown routing policy " + gateway.routing);
  std::vector<std::shared_ptr<const CostModel>> costs;
  std::vector<LlmSchedulerConfig> configs;
  // What the live gateway builds its router from (the backends' spec'd step costs).
  const LlmRouterSetup setup = llm_router_setup(gateway);
  for (const LlmBackendSpec& b : gateway.backends) {
    costs.push_back(b.sim_cost ? b.sim_cost : sim.cost_model ? sim.cost_model : b.cost);
    LlmSchedulerConfig c = llm.scheduler;
    c.kv_blocks = b.kv_blocks;
    configs.push_back(c);
  }
  auto fleet = std::make_shared<LlmFleetState>();
  fleet->reads_engine_load = row->reads_engine_load;
  fleet->scrape_interval = gateway.health_interval_ms / 1000.0;
  sim.cost_model = std::make_shared<FleetCostModel>(costs);
  sim.make_scheduler = [fleet, configs, costs](
                           Worker& worker, SchedulerHost& host,
                           const CostModel& /*engine's*/) -> std::unique_ptr<InstanceScheduler> {
    const std::size_t i = worker.id;
    if (i >= configs.size()) throw std::logic_error("a gateway fleet instance with no backend");
    auto s = std::make_unique<FleetInstance>(configs[i], host, *costs[i], fleet);
    if (fleet->backends.size() <= i) fleet->backends.resize(i + 1);
    fleet->backends[i] = LlmFleetBackend{&s->llm(), {}, -1.0};
    return s;
  };
  LlmFleetRequests how;
  how.defaults.priority = gateway.default_priority;
  how.defaults.ttft_slo = llm.scheduler.ttft_slo;
  how.defaults.tpot_slo = llm.scheduler.tpot_slo;
  how.block_tokens = gateway.block_tokens;
  how.max_blocks = static_cast<uint32_t>(gateway.routing_config.affinity_blocks);
  how.bytes_per_token = sim.gateway_bytes_per_token;
  sim.make_dispatcher = [fleet, row, setup, how](TaskId) -> std::unique_ptr<Dispatcher> {
    fleet->router = row->make(setup);  // a fresh router for each engine
    fleet->routed.clear();
    return std::make_unique<GatewayDispatcher>(fleet, how);
  };
}

}  // namespace tessera
