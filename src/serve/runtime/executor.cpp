#include "serve/runtime/executor.hpp"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

namespace tessera {

using SteadyTime = std::chrono::steady_clock::time_point;

struct Executor::Runner {
  std::thread thread;
  bool busy = false;
  bool abandoned = false;
  bool finished = false;
  SteadyTime started;
  std::function<void()> on_abandon;
};

struct Executor::State {
  std::function<void()> on_start;
  double timeout_s = 0.0;
  std::mutex mutex;
  std::condition_variable wake;     // runners: a job came, or stop
  std::condition_variable changed;  // supervisor and stop(): a job started or ended
  std::deque<std::pair<std::function<void()>, std::function<void()>>> jobs;
  std::shared_ptr<Runner> current;
  bool stopping = false;
  bool stopped = false;
  int replaced = 0;
};

namespace {

void run_jobs(const std::shared_ptr<Executor::State>& st,
              const std::shared_ptr<Executor::Runner>& me) {
  if (st->on_start) st->on_start();
  std::unique_lock lock(st->mutex);
  while (true) {
    st->wake.wait(lock, [&] { return me->abandoned || st->stopping || !st->jobs.empty(); });
    if (me->abandoned || st->stopping) break;
    auto job = std::move(st->jobs.front());
    st->jobs.pop_front();
    me->busy = true;
    me->started = std::chrono::steady_clock::now();
    me->on_abandon = std::move(job.second);
    st->changed.notify_all();
    lock.unlock();
    std::string error;
    try {
      job.first();
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    job.first = nullptr;
    lock.lock();
    me->busy = false;
    me->on_abandon = nullptr;
    st->changed.notify_all();
    if (me->abandoned) break;  // replaced meanwhile: the new thread owns the queue
    if (!error.empty()) spdlog::error("executor job failed: {}", error);
  }
  me->finished = true;
  st->changed.notify_all();
}

std::shared_ptr<Executor::Runner> start_runner(const std::shared_ptr<Executor::State>& st) {
  auto r = std::make_shared<Executor::Runner>();
  r->thread = std::thread([st, r] { run_jobs(st, r); });
  return r;
}

void supervise(const std::shared_ptr<Executor::State>& st) {
  const auto limit = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(st->timeout_s));
  std::unique_lock lock(st->mutex);
  while (!st->stopping) {
    const std::shared_ptr<Executor::Runner> r = st->current;
    if (!r->busy) {
      st->changed.wait(lock);
      continue;
    }
    const SteadyTime due = r->started + limit;
    if (std::chrono::steady_clock::now() < due) {
      st->changed.wait_until(lock, due);
      continue;
    }
    // Overran: leave the thread to its call, hand the queue to a fresh one.
    r->abandoned = true;
    std::function<void()> on_abandon = std::move(r->on_abandon);
    r->thread.detach();
    st->replaced++;
    st->current = start_runner(st);
    lock.unlock();
    if (on_abandon) on_abandon();
    lock.lock();
  }
}

}  // namespace

Executor::Executor(std::function<void()> on_start, double timeout_s)
    : state_(std::make_shared<State>()) {
  state_->on_start = std::move(on_start);
  state_->timeout_s = timeout_s;
  std::lock_guard lock(state_->mutex);
  state_->current = start_runner(state_);
  if (timeout_s > 0) supervisor_ = std::thread([st = state_] { supervise(st); });
}

Executor::~Executor() { stop(); }

void Executor::post(std::function<void()> job, std::function<void()> on_abandon) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    state_->jobs.emplace_back(std::move(job), std::move(on_abandon));
  }
  state_->wake.notify_all();
}

void Executor::request_stop() {
  std::deque<std::pair<std::function<void()>, std::function<void()>>> dropped;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    dropped.swap(state_->jobs);
  }
  state_->wake.notify_all();
  state_->changed.notify_all();
}

void Executor::stop(std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopped) return;
    state_->stopped = true;
  }
  request_stop();
  if (supervisor_.joinable()) supervisor_.join();
  std::shared_ptr<Runner> r;
  bool finished = false;
  {
    std::unique_lock lock(state_->mutex);
    r = state_->current;
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      state_->changed.wait(lock, [&] { return r->finished; });
    } else {
      state_->changed.wait_until(lock, deadline, [&] { return r->finished; });
    }
    finished = r->finished;
  }
  if (finished) {
    r->thread.join();
  } else {
    spdlog::warn("an executor thread is still in a model call at shutdown; leaving it");
    r->thread.detach();
  }
}

int Executor::replaced() const {
  std::lock_guard lock(state_->mutex);
  return state_->replaced;
}

}  // namespace tessera
