#include "dataplane/ppipe/reactive_plane.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "dataplane/ppipe/forwarding.hpp"

namespace tessera::reservation {
namespace {
constexpr Time kEps = 1e-12;
}  // namespace

std::shared_ptr<ReactivePlane> ReactivePlane::create(const PpipeSetup& setup,
                                                     BatcherOptions options) {
  return std::shared_ptr<ReactivePlane>(new ReactivePlane(setup, options));
}

ReactivePlane::ReactivePlane(const PpipeSetup& setup, BatcherOptions options)
    : layout_(setup.pipelines), options_(options), task_pos_(setup.app.tasks.size(), {-1, -1}) {
  for (const LinkSpec& l : setup.deployment.links) link_bandwidth_.push_back(l.bandwidth);
  std::size_t max_parts = 0;
  for (std::size_t p = 0; p < layout_.size(); ++p) {
    const auto& lay = layout_[p];
    const std::size_t parts = lay.tasks.size();
    max_parts = std::max(max_parts, parts);
    pools_.emplace_back(parts);
    out_bandwidth_.emplace_back(parts, 0.0);
    for (std::size_t k = 0; k < parts; ++k) {
      task_pos_[lay.tasks[k]] = {static_cast<int>(p), static_cast<int>(k)};
    }
  }
  root_ = setup.app.roots.at(0);
  stats_.drops_per_partition.assign(max_parts, 0);
}

EnginePolicies ReactivePlane::policies() {
  EnginePolicies out = central_plane_policies();
  std::shared_ptr<ReactivePlane> self = shared_from_this();
  out.make_dispatcher = [self](TaskId task) -> std::unique_ptr<Dispatcher> {
    return std::make_unique<ForwardingDispatcher<ReactivePlane>>(self, task);
  };
  out.make_scheduler = [self](Worker& w, SchedulerHost& host,
                              const CostModel&) -> std::unique_ptr<InstanceScheduler> {
    self->attach(w, host);
    return std::make_unique<ForwardingScheduler<ReactivePlane>>(self);
  };
  return out;
}

void ReactivePlane::attach(Worker& w, SchedulerHost& host) {
  host_ = &host;
  if (w.task >= task_pos_.size() || task_pos_[w.task].first < 0) {
    throw std::invalid_argument("reactive data plane: instance of an unknown task");
  }
  const auto [p, k] = task_pos_[w.task];
  Member m;
  m.worker = &w;
  m.pipeline = p;
  m.partition = k;
  members_.push_back(m);
  const int id = static_cast<int>(members_.size() - 1);
  if (member_of_worker_.size() <= w.id) member_of_worker_.resize(w.id + 1, -1);
  member_of_worker_[w.id] = id;
  auto& pool = pools_[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)];
  pool.push_back(id);
  if (w.uplink != kNoLink) {
    out_bandwidth_[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)] =
        link_bandwidth_[w.uplink];
  }
  if (anchor_ < 0 && w.task == root_) anchor_ = id;
  // The planned time after each partition, and the pipelines' weights, once all are known.
  slack_.clear();
  weight_.clear();
  for (std::size_t pi = 0; pi < layout_.size(); ++pi) {
    const auto& lay = layout_[pi];
    const std::size_t parts = lay.tasks.size();
    std::vector<Time> slack(parts, 0.0);
    for (std::size_t kk = parts; kk-- > 1;) {
      // Downstream of kk-1: partition kk and the transfers after the one into kk.
      Time after = lay.planned_step[kk];
      if (kk + 1 < parts)
        after += transfer_out(static_cast<int>(pi), static_cast<int>(kk), lay.batch);
      slack[kk - 1] = slack[kk] + after;
    }
    slack_.push_back(slack);
    double wgt = lay.throughput;
    if (!(wgt > 0)) {
      wgt = static_cast<double>(pools_[pi][0].size()) * lay.batch / lay.planned_step[0];
    }
    weight_.push_back(pools_[pi][0].empty() ? 0.0 : wgt);
  }
  credit_.assign(layout_.size(), 0.0);
}

Time ReactivePlane::transfer_out(int p, int k, int batch) const {
  const auto& lay = layout_[static_cast<std::size_t>(p)];
  if (static_cast<std::size_t>(k) + 1 >= lay.tasks.size()) return 0.0;
  const double bw = out_bandwidth_[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)];
  if (!(bw > 0)) return 0.0;
  return lay.in_bytes[static_cast<std::size_t>(k) + 1] * batch / bw;
}

void ReactivePlane::pick_anchor() {
  anchor_ = -1;
  for (int id : pools_[static_cast<std::size_t>(task_pos_[root_].first)][0]) {
    if (members_[static_cast<std::size_t>(id)].worker->alive) {
      anchor_ = id;
      return;
    }
  }
}

int ReactivePlane::earliest_member(int p, int k) const {
  const Time t = now();
  int best = -1;
  Time best_t = std::numeric_limits<Time>::infinity();
  const auto& lay = layout_[static_cast<std::size_t>(p)];
  const Time step = lay.planned_step[static_cast<std::size_t>(k)];
  const Time per_item = step / lay.batch;
  const auto& pool = pools_[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)];
  const std::size_t n = pool.size();
  for (std::size_t i = 0; i < n; ++i) {
    const int id = pool[(i + rotate_) % n];
    const Member& m = members_[static_cast<std::size_t>(id)];
    if (!m.worker->alive) continue;
    Time done = m.worker->busy ? std::max(t, m.worker->running_expected_end) : t;
    done += per_item * static_cast<double>(m.queue.size() + m.worker->queue->size()) +
            step * static_cast<double>(m.inbound);
    if (done < best_t) {
      best_t = done;
      best = id;
    }
  }
  ++rotate_;
  return best;
}

int ReactivePlane::route(TaskId task, const std::vector<Worker*>& workers, const Item&) const {
  if (task == root_) {
    return anchor_ < 0 ? -1 : index_of(workers, members_[static_cast<std::size_t>(anchor_)].worker);
  }
  const auto [p, k] = task_pos_[task];
  const int id = earliest_member(p, k);
  if (id < 0) return -1;
  ++members_[static_cast<std::size_t>(id)].inbound;  // one transfer per routed batch
  return index_of(workers, members_[static_cast<std::size_t>(id)].worker);
}

void ReactivePlane::enqueue(Member& m, const Item& item) {
  if (looked_.size() <= item.request) looked_.resize(item.request + 1, 0);
  looked_[item.request] = 0;
  auto at = std::upper_bound(m.queue.begin(), m.queue.end(), item.deadline,
                             [](Time d, const Item& x) { return d < x.deadline; });
  m.queue.insert(at, item);
}

void ReactivePlane::on_queue_grew(Worker& w) {
  Member& self = members_[static_cast<std::size_t>(member_of_worker_[w.id])];
  const Time t = now();
  if (w.task == root_ && anchor_ >= 0 && &self == &members_[static_cast<std::size_t>(anchor_)]) {
    // Arrivals: a pipeline by weighted round robin, then its first pool's earliest member.
    std::vector<Member*> touched;
    while (!w.queue->empty()) {
      Item item = w.queue->pop();
      double total = 0.0;
      int best = -1;
      int id = -1;
      for (;;) {
        total = 0.0;
        best = -1;
        for (std::size_t p = 0; p < weight_.size(); ++p) {
          if (weight_[p] <= 0) continue;
          total += weight_[p];
          if (best < 0 || credit_[p] + weight_[p] > credit_[static_cast<std::size_t>(best)] +
                                                        weight_[static_cast<std::size_t>(best)]) {
            best = static_cast<int>(p);
          }
        }
        if (best < 0) break;
        id = earliest_member(best, 0);
        if (id >= 0) break;
        weight_[static_cast<std::size_t>(best)] = 0.0;  // its first pool has no live member
      }
      if (id < 0) {
        // No pipeline can take it. The host can only drop (no reason): nothing serves it.
        host_->drop_queued(w, item, DropReason::kNone);
        continue;
      }
      for (std::size_t p = 0; p < weight_.size(); ++p) credit_[p] += weight_[p];
      credit_[static_cast<std::size_t>(best)] -= total;
      item.task = layout_[static_cast<std::size_t>(best)].tasks[0];
      Member& m = members_[static_cast<std::size_t>(id)];
      enqueue(m, item);
      if (std::find(touched.begin(), touched.end(), &m) == touched.end()) touched.push_back(&m);
    }
    for (Member* m : touched) try_start(*m);
    return;
  }
  if (!w.queue->empty() && self.inbound > 0) --self.inbound;  // a transfer's items arrived
  while (!w.queue->empty()) {
    const Item item = w.queue->pop();
    if (item.request < sent_at_.size()) {
      ++stats_.transfers;
      stats_.transfer_time.add(t - sent_at_[item.request]);
    }
    enqueue(self, item);
  }
  try_start(self);
}

void ReactivePlane::try_start(Member& m) {
  Worker& w = *m.worker;
  if (w.busy || !w.alive) return;
  const auto& lay = layout_[static_cast<std::size_t>(m.pipeline)];
  const auto k = static_cast<std::size_t>(m.partition);
  auto fits = [&](int bs, Time remaining) {
    return w.profiled_latency(0, bs) + transfer_out(m.pipeline, m.partition, bs) <= remaining;
  };
  while (!m.queue.empty()) {
    const Time t = now();
    const Item& head = m.queue.front();
    const Time remaining = head.deadline - t - slack_[static_cast<std::size_t>(m.pipeline)][k];
    const bool first = looked_[head.request] == 0;
    looked_[head.request] = 1;
    int lowest = 1;
    if (first && options_.first_look_fraction > 0) {
      lowest = std::max(1, static_cast<int>(std::lround(options_.first_look_fraction * lay.batch)));
    }
    int bs = 0;
    for (int b = lay.batch; b >= lowest; --b) {
      if (fits(b, remaining)) {
        bs = b;
        break;
      }
    }
    if (bs == 0) {
      const Item item = head;
      m.queue.pop_front();
      ++stats_.drops;
      stats_.first_look_drops += lowest > 1 ? 1 : 0;
      ++stats_.drops_per_partition[k];
      host_->drop_queued(w, item, DropReason::kPredictedLate);
      continue;
    }
    const int n = static_cast<int>(m.queue.size());
    if (n < bs) {
      const Time slack =
          remaining - w.profiled_latency(0, n) - transfer_out(m.pipeline, m.partition, n);
      if (slack > options_.last_moment_tolerance) {
        ++stats_.waits;
        host_->set_timer(w, t + slack - 0.5 * options_.last_moment_tolerance);
        return;
      }
      bs = 0;
      for (int b = n; b >= 1; --b) {
        if (fits(b, remaining)) {
          bs = b;
          break;
        }
      }
      if (bs == 0) {
        const Item item = head;
        m.queue.pop_front();
        ++stats_.drops;
        ++stats_.drops_per_partition[k];
        host_->drop_queued(w, item, DropReason::kPredictedLate);
        continue;
      }
    }
    const Time exec = w.profiled_latency(0, bs);
    w.running.clear();
    for (int i = 0; i < bs; ++i) {
      const Item item = m.queue.front();
      m.queue.pop_front();
      if (host_->admit(w, item, t, exec)) w.running.push_back(item);
    }
    if (w.running.empty()) continue;
    ++stats_.batches;
    stats_.batch_items += w.running.size();
    m.running_slots.clear();
    for (const Item& item : w.running) m.running_slots.push_back(item.request);
    w.running_variant = 0;
    host_->start_step(w);
    return;
  }
}

void ReactivePlane::on_step_done(Worker& w) {
  Member& m = members_[static_cast<std::size_t>(member_of_worker_[w.id])];
  // The engine sends the finished items on right after this call: they leave now.
  const Time t = now();
  for (RequestSlot slot : m.running_slots) {
    if (sent_at_.size() <= slot) sent_at_.resize(slot + 1, 0.0);
    sent_at_[slot] = t;
  }
  m.running_slots.clear();
  try_start(m);
}

void ReactivePlane::on_timer(Worker& w) {
  try_start(members_[static_cast<std::size_t>(member_of_worker_[w.id])]);
}

void ReactivePlane::release(Worker& w, std::vector<Item>& out) {
  const auto id = static_cast<int>(member_of_worker_[w.id]);
  Member& m = members_[static_cast<std::size_t>(id)];
  out.insert(out.end(), m.queue.begin(), m.queue.end());
  m.queue.clear();
  auto& pool = pools_[static_cast<std::size_t>(m.pipeline)][static_cast<std::size_t>(m.partition)];
  pool.erase(std::remove(pool.begin(), pool.end(), id), pool.end());
  if (id == anchor_) pick_anchor();
}

}  // namespace tessera::reservation
