// Endpoint's live reconfiguration (serve/server/live_deployment.hpp): the difference between
// the running instances and a target deployment (engine/deployment_diff.hpp), applied as one
// Engine::apply on the loop.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "engine/deployment_diff.hpp"

#include "core/input_limits.hpp"
#include "models/model_factory.hpp"
#include "serve/runtime/endpoint.hpp"

namespace tessera {
std::vector<std::string> Endpoint::emulated() const {
  std::lock_guard lock(emulated_mutex_);
  return emulated_;
}

void Endpoint::check_fits(TaskId task, const std::string& variant) const {
  const LoadedModel& lm = models_.at(variant);
  const ModelInfo& info = lm.model->info();
  const bool root = std::find(app_.roots.begin(), app_.roots.end(), task) != app_.roots.end();
  const bool takes_parent = !root && lm.spec.stage_input == ModelSpec::StageInput::kParent;
  if (takes_parent != static_cast<bool>(from_parent_[task])) {
    throw std::invalid_argument(
        "variant '" + variant + "' has stage_input " + (takes_parent ? "parent" : "request") +
        " but task '" + app_.tasks[task].name + "' runs on " +
        (from_parent_[task] ? "its parent's output" : "the request's input"));
  }
  check_stage_input(task, variant);
  for (const Worker* w : engine_->workers_of(task)) {
    const ModelInfo& other = model_of(*w).model->info();
    if (other.output_shape != info.output_shape) {
      throw std::invalid_argument(
          "variant '" + variant + "' outputs " + shape_string(info.output_shape) + " but task '" +
          app_.tasks[task].name + "' outputs " + shape_string(other.output_shape));
    }
  }
}

std::pair<int, int> Endpoint::reconfigure(const Deployment& target, const ProfileTable& profiles) {
  // Check the whole target before anything changes.
  std::vector<int> per_task(app_.tasks.size(), 0);
  for (const WorkerGroup& g : target.groups) {
    if (g.task >= app_.tasks.size()) {
      throw std::invalid_argument("the deployment names task " + std::to_string(g.task) +
                                  ", but app '" + app_.name + "' has " +
                                  std::to_string(app_.tasks.size()));
    }
    if (g.count < 0 || g.max_batch < 1 || g.variants.empty()) {
      throw std::invalid_argument("task '" + app_.tasks[g.task].name +
                                  "': a worker group needs a variant, max_batch >= 1 and "
                                  "count >= 0");
    }
    for (int v : g.variants) {
      if (v < 0 || static_cast<std::size_t>(v) >= app_.tasks[g.task].variants.size()) {
        throw std::invalid_argument("task '" + app_.tasks[g.task].name + "' has no variant " +
                                    std::to_string(v));
      }
      check_fits(g.task, app_.tasks[g.task].variants[static_cast<std::size_t>(v)].name);
    }
    per_task[g.task] += g.count;
  }
  for (std::size_t t = 0; t < per_task.size(); ++t) {
    if (per_task[t] == 0) {
      throw std::invalid_argument("the deployment has no instance of task '" + app_.tasks[t].name +
                                  "'");
    }
  }

  // The difference (engine/deployment_diff.hpp): what both have keeps running.
  DeploymentEdit edit = LiveInstances::of(*engine_).change_to(target);
  if (edit.empty()) return {0, 0};

  // The new instances' threads come first: the engine numbers new workers on from its
  // last, and may start a batch on one inside apply() (items re-dispatched from a leaving
  // instance).
  const std::size_t first = engine_->workers().size();
  int64_t adding = 0;
  for (const WorkerGroup& g : edit.start) adding += g.count;
  // Instances that left service stay in the engine's ledger: bound them over the life of
  // the endpoint, so that reconfigurations cannot grow it without end.
  if (static_cast<int64_t>(first) + adding > limits::kMaxWorkers) {
    throw std::invalid_argument("endpoint '" + name_ + "' has started " + std::to_string(first) +
                                " instances; starting " + std::to_string(adding) +
                                " more would pass the limit of " +
                                std::to_string(limits::kMaxWorkers) + " over its life");
  }
  {
    std::lock_guard lock(executors_mutex_);
    if (executors_.size() != first) throw std::logic_error("worker threads out of step");
    try {
      for (int64_t i = 0; i < adding; ++i) {
        executors_.push_back(std::make_unique<Executor>(
            [threads = torch_threads_] { configure_torch_threads(threads); }, model_timeout_s_));
      }
    } catch (const std::exception& e) {
      // Every thread started for this step goes again: the endpoint is as before.
      while (executors_.size() > first) {
        executors_.back()->stop();
        executors_.pop_back();
      }
      throw std::runtime_error("cannot start the worker threads of " + std::to_string(adding) +
                               " new instances (" + e.what() + "); nothing changed");
    }
  }
  // One atomic step: the engine checks it whole (profiles, links) before changing anything.
  std::vector<WorkerId> started;
  try {
    started = engine_->apply(edit, profiles);
  } catch (...) {
    std::lock_guard lock(executors_mutex_);
    while (executors_.size() > first) {
      executors_.back()->stop();
      executors_.pop_back();
    }
    throw;
  }
  for (WorkerId id : edit.stop) retire_if_idle(id);
  {
    std::lock_guard lock(emulated_mutex_);
    for (const WorkerGroup& g : edit.start) {
      for (int v : g.variants) {
        const std::string& variant = app_.tasks[g.task].variants[static_cast<std::size_t>(v)].name;
        if (models_.at(variant).model->info().kind == kProfileTimedKind &&
            std::find(emulated_.begin(), emulated_.end(), variant) == emulated_.end()) {
          emulated_.push_back(variant);
        }
      }
    }
  }
  set_max_request_rows(target);
  return {static_cast<int>(started.size()), static_cast<int>(edit.stop.size())};
}

void Endpoint::retire_if_idle(WorkerId id) {
  const Worker& w = *engine_->workers()[id];
  if (w.alive || w.busy || !w.running.empty()) return;
  std::lock_guard lock(executors_mutex_);
  executors_[id]->request_stop();  // its thread ends; stop_executors() joins it
}

Deployment Endpoint::live_deployment(std::vector<uint64_t>* batches) const {
  Deployment d;
  std::map<std::tuple<TaskId, std::vector<int>, std::string, int, Time>, std::size_t> index;
  if (batches) batches->clear();
  for (std::size_t t = 0; t < app_.tasks.size(); ++t) {
    for (const Worker* w : engine_->workers_of(static_cast<TaskId>(t))) {
      const auto key =
          std::make_tuple(w->task, w->variants, w->segment, w->max_batch, w->batch_timeout);
      auto [it, fresh] = index.emplace(key, d.groups.size());
      if (fresh) {
        d.groups.push_back(
            WorkerGroup{w->task, w->variants, w->segment, w->max_batch, 0, w->batch_timeout});
        if (batches) batches->push_back(0);
      }
      ++d.groups[it->second].count;
      if (batches) (*batches)[it->second] += w->batches;
    }
  }
  return d;
}

}  // namespace tessera
