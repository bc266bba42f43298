#include "serve/runtime/endpoint.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>

#include "models/model_factory.hpp"

namespace tessera {

Endpoint::Endpoint(std::string name, App app, const Deployment& deployment,
                   const ProfileTable& profiles, const PolicySet& policies,
                   const ModelRegistry& models, const SteadyClock& clock, EventLoop& loop,
                   ServerMetrics& metrics, uint64_t seed, int torch_threads, bool inline_noop,
                   double model_timeout_s)
    : name_(std::move(name)),
      app_(std::move(app)),
      models_(models),
      clock_(clock),
      loop_(loop),
      server_metrics_(metrics),
      metrics_(metrics.add_endpoint(name_, app_)),
      inline_noop_(inline_noop),
      model_timeout_s_(model_timeout_s),
      torch_threads_(torch_threads) {
  // A stage runs on the request's input, or on its parent's output when its model says
  // `stage_input: parent` (docs/serve.md#stage-inputs); every stage of the first kind must
  // take the same input shape, the request's.
  std::vector<std::vector<int64_t>> task_output(app_.tasks.size());
  std::vector<int> task_stage_input(app_.tasks.size(), -1);  // -1: no variant deployed yet
  for (const WorkerGroup& g : deployment.groups) {
    for (int v : g.variants) {
      const std::string& variant = app_.tasks[g.task].variants[static_cast<std::size_t>(v)].name;
      const LoadedModel& lm = models_.at(variant);
      const ModelInfo& info = lm.model->info();
      if (info.kind == kProfileTimedKind &&
          std::find(emulated_.begin(), emulated_.end(), variant) == emulated_.end()) {
        emulated_.push_back(variant);
      }
      const bool root = std::find(app_.roots.begin(), app_.roots.end(), g.task) != app_.roots.end();
      const int takes = !root && lm.spec.stage_input == ModelSpec::StageInput::kParent ? 1 : 0;
      int& task_takes = task_stage_input[g.task];
      if (task_takes >= 0 && task_takes != takes) {
        throw std::invalid_argument("endpoint '" + name_ + "': the variants of task '" +
                                    app_.tasks[g.task].name +
                                    "' differ in stage_input (request / parent)");
      }
      task_takes = takes;
      // The request's shape is the first such stage's; check_stage_input() holds every
      // stage to its input (set_stage_inputs below).
      if (takes == 0 && input_shape_.empty()) input_shape_ = info.input_shape;
      auto& out = task_output[g.task];
      if (!out.empty() && out != info.output_shape) {
        throw std::invalid_argument("endpoint '" + name_ + "': the variants of task '" +
                                    app_.tasks[g.task].name + "' have different output shapes");
      }
      out = info.output_shape;
    }
  }
  set_stage_inputs(deployment, task_output, task_stage_input);
  for (std::size_t t = 0; t < app_.tasks.size(); ++t) {
    if (app_.tasks[t].is_leaf()) outputs_.emplace_back(app_.tasks[t].name, task_output[t]);
  }
  set_max_request_rows(deployment);
  engine_ = std::make_unique<Engine>(app_, deployment, profiles, policies.instantiate(app_, seed),
                                     clock_, *this, *this, seed);
  for (std::size_t w = 0; w < engine_->workers().size(); ++w) {
    executors_.push_back(std::make_unique<Executor>(
        [torch_threads] { configure_torch_threads(torch_threads); }, model_timeout_s));
  }
}

Endpoint::~Endpoint() { stop_executors(); }

void Endpoint::set_stage_inputs(const Deployment& deployment,
                                const std::vector<std::vector<int64_t>>& task_output,
                                const std::vector<int>& task_stage_input) {
  const std::size_t n = app_.tasks.size();
  task_output_ = task_output;
  from_parent_.assign(n, false);
  parent_of_.assign(n, 0);
  keep_output_.assign(n, false);
  for (std::size_t t = 0; t < n; ++t) {
    if (task_stage_input[t] != 1) continue;
    const Task& task = app_.tasks[t];
    const std::string where = "endpoint '" + name_ + "': task '" + task.name +
                              "' takes its parent's output (stage_input: parent)";
    if (task.in_edges.size() != 1) {
      throw std::invalid_argument(where + " but has " + std::to_string(task.in_edges.size()) +
                                  " parents; it needs exactly one");
    }
    const TaskId parent = app_.edges[task.in_edges.front()].from;
    // Each task upstream must pass exactly one item per request on, so that the parent's
    // output for a request is one tensor.
    for (TaskId a : task.ancestors) {
      const Task& up = app_.tasks[a];
      bool one = up.fanout == FanoutDistribution::kFixed;
      for (const Variant& v : up.variants) one = one && std::lround(v.fanout_mean) == 1;
      for (const Variant& v : up.variants) {
        if (models_.has(v.name) && models_.at(v.name).spec.fanout) one = false;
      }
      if (!one) {
        throw std::invalid_argument(where + " but task '" + up.name +
                                    "' upstream may pass on other than one item per request "
                                    "(its fanout must be fixed at 1, with no fanout rule)");
      }
    }
    if (task_output[parent].empty()) {
      throw std::invalid_argument(where + " but its parent '" + app_.tasks[parent].name +
                                  "' has no deployed model");
    }
    from_parent_[t] = true;
    parent_of_[t] = parent;
    keep_output_[parent] = true;
  }
  // Now that the parents' outputs are known: each such stage's models take them.
  for (const WorkerGroup& g : deployment.groups) {
    for (int v : g.variants) {
      const std::string& variant = app_.tasks[g.task].variants[static_cast<std::size_t>(v)].name;
      check_stage_input(g.task, variant);
    }
  }
}

const std::vector<int64_t>& Endpoint::stage_input_shape(TaskId task) const {
  return from_parent_[task] ? task_output_[parent_of_[task]] : input_shape_;
}

void Endpoint::check_stage_input(TaskId task, const std::string& variant) const {
  const ModelInfo& info = models_.at(variant).model->info();
  const std::vector<int64_t>& want = stage_input_shape(task);
  if (info.input_shape == want) return;
  if (from_parent_[task]) {
    throw std::invalid_argument("endpoint '" + name_ + "': variant '" + variant + "' takes input " +
                                shape_string(info.input_shape) + " but task '" +
                                app_.tasks[task].name + "' runs on its parent '" +
                                app_.tasks[parent_of_[task]].name + "''s output, " +
                                shape_string(want) + " (stage_input: parent)");
  }
  throw std::invalid_argument("endpoint '" + name_ + "': variant '" + variant + "' takes input " +
                              shape_string(info.input_shape) + " but endpoint '" + name_ +
                              "' takes " + shape_string(want) +
                              "; every stage without `stage_input: parent` runs on the "
                              "request's input");
}

void Endpoint::set_max_request_rows(const Deployment& deployment) {
  int rows = 1;
  for (const WorkerGroup& g : deployment.groups) {
    if (std::find(app_.roots.begin(), app_.roots.end(), g.task) != app_.roots.end()) {
      rows = std::max(rows, g.max_batch);
    }
  }
  max_request_rows_.store(rows, std::memory_order_relaxed);
}

void Endpoint::stop_executors(std::chrono::steady_clock::time_point deadline) {
  std::lock_guard lock(executors_mutex_);
  for (auto& e : executors_) e->request_stop();
  for (auto& e : executors_) e->stop(deadline);
}

int Endpoint::workers_replaced() const {
  std::lock_guard lock(executors_mutex_);
  int n = 0;
  for (const auto& e : executors_) n += e->replaced();
  return n;
}

void Endpoint::submit(std::shared_ptr<const FloatTensor> input, double slo_s, Done done) {
  // An idle loop is run here rather than woken (EventLoop::post_or_run).
  loop_.post_or_run([this, in = std::move(input), slo_s, d = std::move(done)]() mutable {
    admit(std::move(in), slo_s, std::move(d));
  });
}

void Endpoint::submit_rows(std::vector<std::shared_ptr<const FloatTensor>> inputs, double slo_s,
                           std::vector<Done> dones) {
  if (inputs.size() != dones.size()) throw std::logic_error("submit_rows: one done per row");
  loop_.post_or_run([this, in = std::move(inputs), slo_s, d = std::move(dones)]() mutable {
    // The engine may answer inside submit_together() (a drop at the first queue), so
    // every row's side-table entry goes in first, under the ids the engine will give.
    const uint64_t first = engine_->submitted();
    std::vector<Arrival> arrivals;
    arrivals.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      arrivals.push_back(prepare(first + i, std::move(in[i]), slo_s, std::move(d[i])));
    }
    const uint64_t given = engine_->submit_together(arrivals);
    if (given != first) throw std::logic_error("engine request ids out of step");
    for (std::size_t i = 0; i < arrivals.size(); ++i) schedule_expiry(first + i, arrivals[i]);
  });
}

Arrival Endpoint::prepare(uint64_t id, std::shared_ptr<const FloatTensor> input, double slo_s,
                          Done done) {
  Pending& p = pending_[id];
  p.input = std::move(input);
  p.done = std::move(done);
  p.arrival = clock_.now();
  ++waiting_;
  Arrival arrival;
  arrival.time = p.arrival;
  arrival.slo_s = slo_s;
  return arrival;
}

void Endpoint::admit(std::shared_ptr<const FloatTensor> input, double slo_s, Done done) {
  // The engine may answer inside submit() (a drop at the first queue), so the side-table
  // entry goes in first under the id the engine will give (ids count up from 0).
  const uint64_t id = engine_->submitted();
  const Arrival arrival = prepare(id, std::move(input), slo_s, std::move(done));
  const uint64_t given = engine_->submit(arrival);
  if (given != id) throw std::logic_error("engine request ids out of step");
  schedule_expiry(id, arrival);
}

void Endpoint::schedule_expiry(uint64_t id, const Arrival& arrival) {
  const double slo_s = arrival.slo_s;
  // A request no policy has finished by twice its SLO (at least its SLO + 1 s) is answered
  // as expired, so that no client waits on a request starved in a queue (HBF order keeps
  // serving fresher ones under sustained overload). The engine may still drop or finish
  // it later; only its answer is given now.
  // The deadlines wait in arrival order with one loop timer for the earliest (a timer per
  // request would keep a heap of every request of the last two SLOs); one that comes
  // before the last queued (a shorter per-request SLO) gets a timer of its own.
  const Time slo = slo_s > 0 ? slo_s : app_.slo;
  const Time expires = arrival.time + slo + std::max(slo, 1.0);
  if (!expiries_.empty() && expires < expiries_.back().first) {
    loop_.post_at(expires, [this, id] { expire(id); });
    return;
  }
  expiries_.emplace_back(expires, id);
  if (!expiry_timer_) {
    expiry_timer_ = true;
    loop_.post_at(expires, [this] { expire_due(); });
  }
}

void Endpoint::expire(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.answered) return;
  Answer a;
  a.kind = AnswerKind::kDropped;
  a.reason = DropReason::kExpired;
  answer(it->second, std::move(a));
}

void Endpoint::expire_due() {
  expiry_timer_ = false;
  const Time now = clock_.now();
  while (!expiries_.empty() && expiries_.front().first <= now) {
    const uint64_t id = expiries_.front().second;
    expiries_.pop_front();
    expire(id);
  }
  if (!expiries_.empty()) {
    expiry_timer_ = true;
    loop_.post_at(expiries_.front().first, [this] { expire_due(); });
  }
}

const LoadedModel& Endpoint::model_of(const Worker& worker) const {
  const int v = worker.variants[static_cast<std::size_t>(worker.running_variant)];
  return models_.at(app_.tasks[worker.task].variants[static_cast<std::size_t>(v)].name);
}

void Endpoint::start_batch(const Worker& worker) {
  const LoadedModel& lm = model_of(worker);
  std::vector<std::shared_ptr<const FloatTensor>> inputs;
  inputs.reserve(worker.running.size());
  const Time now = clock_.now();
  for (const Item& item : worker.running) {
    Pending& p = pending_.at(engine_->request_id(item.request));
    if (p.first_start < 0) p.first_start = now;  // the end of its first queue wait
    if (from_parent_[worker.task]) {
      // The parent's output for this request (docs/serve.md#stage-inputs); present, as the
      // item exists only once its parent's item finished here.
      const TaskId parent = parent_of_[worker.task];
      const auto& kept = parent < p.stage_outputs.size() ? p.stage_outputs[parent] : nullptr;
      inputs.push_back(kept ? kept : std::make_shared<const FloatTensor>());
    } else {
      inputs.push_back(p.input);
    }
  }
  const bool want_fanout = lm.spec.fanout.has_value() && !app_.tasks[worker.task].is_leaf();
  const WorkerId id = worker.id;
  // Whoever takes `claimed` first delivers the batch's result: the job when the model
  // returns, or the executor's supervisor when the call overran model_timeout_s (the job,
  // left running on an abandoned thread, then touches nothing but its own captures).
  auto claimed = std::make_shared<std::atomic<bool>>(false);
  // A profile-timed emulation (docs/serve.md#profile-timed-emulation) returns its inputs
  // at once, here on the loop thread; its batch is delivered when the worker's profiled
  // latency for this batch size (the engine's cost model: variant, segment, size) is up.
  const bool timed = lm.model->info().kind == kProfileTimedKind;
  const Time done_at = timed ? clock_.now() + worker.running_duration : -1.0;
  auto job = [this, id, model = lm.model, rule = lm.spec.fanout, want_fanout,
              in = std::move(inputs), claimed, done_at] {
    BatchResult result;
    const auto run_items = [&](std::span<const std::shared_ptr<const FloatTensor>> items) {
      std::vector<const FloatTensor*> ptrs;
      ptrs.reserve(items.size());
      for (const auto& t : items) ptrs.push_back(t.get());
      std::vector<FloatTensor> out = model->run(ptrs);
      if (out.size() != items.size()) throw std::runtime_error("wrong number of outputs");
      return out;
    };
    try {
      result.outputs = run_items(in);
    } catch (const std::exception& e) {
      result.outputs.clear();
      if (in.size() == 1) {
        result.error = e.what();
      } else {
        // One bad input should fail only its own request: retry the items one by one.
        result.item_errors.assign(in.size(), std::string());
        for (std::size_t i = 0; i < in.size(); ++i) {
          try {
            result.outputs.push_back(std::move(run_items({&in[i], 1})[0]));
          } catch (const std::exception& item_error) {
            result.outputs.emplace_back();
            result.item_errors[i] = item_error.what();
          }
        }
      }
    }
    if (result.error.empty() && want_fanout) {
      for (std::size_t i = 0; i < result.outputs.size(); ++i) {
        const bool failed = !result.item_errors.empty() && !result.item_errors[i].empty();
        result.fanout.push_back(failed ? 0 : apply_fanout_rule(*rule, result.outputs[i].data));
      }
    }
    if (!result.error.empty()) result.fanout.assign(in.size(), 0);
    if (claimed->exchange(true)) return;  // abandoned: the supervisor answered
    auto deliver = [this, id, r = std::move(result)]() mutable { executed(id, std::move(r)); };
    if (done_at >= 0.0) {
      loop_.post_at(done_at, std::move(deliver));
    } else {
      loop_.post(std::move(deliver));
    }
  };
  const std::size_t items = worker.running.size();
  auto on_abandon = [this, id, items, claimed, timeout = model_timeout_s_,
                     variant = lm.spec.variant] {
    if (claimed->exchange(true)) return;
    BatchResult result;
    result.fanout.assign(items, 0);
    result.error = "the call took more than " + fmt::format("{:g}", timeout) +
                   " s (--model-timeout); its worker thread was abandoned and replaced";
    spdlog::error("endpoint '{}': model '{}': {}", name_, variant, result.error);
    loop_.post([this, id, r = std::move(result)]() mutable { executed(id, std::move(r)); });
  };
  // The no-op model costs nothing: running it here saves two thread hand-offs. Its
  // result still comes back through the loop's queue, never from inside this call.
  if (timed || (inline_noop_ && lm.model->info().kind == "noop")) {
    job();
  } else {
    executors_[id]->post(std::move(job), std::move(on_abandon));
  }
}

void Endpoint::executed(WorkerId id, BatchResult result) {
  const Worker& worker = *engine_->workers()[id];
  const TaskId task = worker.task;
  const bool leaf = app_.tasks[task].is_leaf();
  for (std::size_t i = 0; i < worker.running.size(); ++i) {
    auto it = pending_.find(engine_->request_id(worker.running[i].request));
    if (it == pending_.end() || it->second.answered) continue;
    Pending& p = it->second;
    const std::string& error = result.error.empty() && i < result.item_errors.size()
                                   ? result.item_errors[i]
                                   : result.error;
    if (!error.empty()) {
      Answer a;
      a.kind = AnswerKind::kError;
      a.stage = app_.tasks[task].name;
      a.message = "model '" + model_of(worker).spec.variant + "' failed: " + error;
      answer(p, std::move(a));
      continue;
    }
    const bool final_result = leaf || (i < result.fanout.size() && result.fanout[i] == 0);
    if (keep_output_[task]) {  // a child stage runs on it (stage_input: parent)
      if (p.stage_outputs.size() <= task) p.stage_outputs.resize(app_.tasks.size());
      p.stage_outputs[task] = std::make_shared<const FloatTensor>(
          final_result ? result.outputs[i] : std::move(result.outputs[i]));
    }
    if (final_result) p.results.emplace_back(task, std::move(result.outputs[i]));
  }
  if (!result.error.empty()) spdlog::error("endpoint '{}': {}", name_, result.error);
  for (const std::string& e : result.item_errors) {
    if (!e.empty()) spdlog::error("endpoint '{}': one item failed: {}", name_, e);
  }
  engine_->on_batch_done(id, result.fanout);
  retire_if_idle(id);
}

void Endpoint::set_timer(WorkerId worker, uint64_t generation, Time at) {
  loop_.post_at(at, [this, worker, generation] { engine_->on_timer(worker, generation); });
}

void Endpoint::deliver_later(std::span<const Item> items, Time at) {
  loop_.post_at(at, [this, batch = std::vector<Item>(items.begin(), items.end())] {
    engine_->deliver(batch);
  });
}

std::vector<NamedOutput> Endpoint::stack_results(Pending& p) const {
  std::vector<NamedOutput> out;
  for (std::size_t t = 0; t < app_.tasks.size(); ++t) {
    NamedOutput named;
    std::size_t count = 0;
    for (auto& [task, tensor] : p.results) {
      if (task != t) continue;
      if (count == 0) {
        named.tensor.shape = tensor.shape;
        named.tensor.shape.insert(named.tensor.shape.begin(), 0);
      }
      named.tensor.data.insert(named.tensor.data.end(), tensor.data.begin(), tensor.data.end());
      ++count;
    }
    if (count == 0) continue;
    named.name = app_.tasks[t].name;
    named.tensor.shape[0] = static_cast<int64_t>(count);
    out.push_back(std::move(named));
  }
  return out;
}

void Endpoint::answer(Pending& p, Answer&& a) {
  p.answered = true;
  --waiting_;
  a.latency = clock_.now() - p.arrival;
  a.queue = p.first_start < 0 ? a.latency : p.first_start - p.arrival;
  server_metrics_.answered(metrics_, a.kind, a.latency);
  Done done = std::move(p.done);
  // The input and the stage outputs stay until the engine has finished the request
  // (on_request_done): items of a request answered early (refused at shutdown, expired) may
  // still be in a batch being formed.
  p.results.clear();
  done(std::move(a));
}

void Endpoint::on_request_stopped(uint64_t id, Outcome outcome, TaskId task, DropReason reason) {
  if (outcome == Outcome::kDropped) server_metrics_.dropped(metrics_, task, reason);
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.answered) return;
  Answer a;
  a.kind = outcome == Outcome::kDropped ? AnswerKind::kDropped : AnswerKind::kFailed;
  a.stage = app_.tasks[task].name;
  a.reason = reason;
  answer(it->second, std::move(a));
}

void Endpoint::on_request_done(const RequestRecord& record) {
  auto it = pending_.find(record.id);
  if (it == pending_.end()) return;
  if (!it->second.answered) {
    Answer a;
    a.kind = record.outcome == Outcome::kOk ? AnswerKind::kOk : AnswerKind::kLate;
    a.accuracy = record.accuracy;
    a.outputs = stack_results(it->second);
    answer(it->second, std::move(a));
  }
  pending_.erase(it);
}

void Endpoint::on_batch_start(const Worker& worker, Time) {
  server_metrics_.batch_started(metrics_, worker.task,
                                worker.variants[static_cast<std::size_t>(worker.running_variant)],
                                worker.running.size());
}

void Endpoint::on_batch_done(const Worker& worker, Time duration, Time) {
  server_metrics_.batch_finished(metrics_, worker.task, duration);
}

void Endpoint::refuse_all(const std::string& why) {
  for (auto& [id, p] : pending_) {
    if (p.answered) continue;
    Answer a;
    a.kind = AnswerKind::kShutdown;
    a.message = why;
    answer(p, std::move(a));
  }
}

std::vector<std::size_t> Endpoint::queue_lengths() const {
  std::vector<std::size_t> out;
  for (std::size_t t = 0; t < app_.tasks.size(); ++t) {
    out.push_back(engine_->queued_at(static_cast<TaskId>(t)));
  }
  return out;
}

}  // namespace tessera
