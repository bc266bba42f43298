#pragma once

// RequestThreads: where the LLM gateway runs each proxied request (a blocking upstream call
// that can stream for minutes). A request runs on an idle thread of the cache when there
// is one, else on a new thread; a thread that finishes a request waits up to `idle_keep`
// for the next one, then exits. So the number of threads follows the requests in flight
// (which the gateway's admission bounds) without a thread start per request: a thread
// start with its stack's first page faults was most of the gateway's CPU per request.
//
// Ownership: the cache's state is shared with its threads (which run detached), so a
// thread may outlive the RequestThreads object and whatever owned it; a task must not
// touch its submitter's state after signalling that it is done (the gateway counts its
// running requests under its own lock, as it did with a thread per request).
//
// Thread safety: run() and stop() may be called from any thread. After stop(), tasks
// already queued still run; run() starts new ones as before (the owner stops submitting).

#include <chrono>
#include <functional>
#include <memory>

namespace tessera {

class RequestThreads {
 public:
  explicit RequestThreads(std::chrono::milliseconds idle_keep = std::chrono::seconds(10));
  ~RequestThreads();  // stop()
  RequestThreads(const RequestThreads&) = delete;
  RequestThreads& operator=(const RequestThreads&) = delete;

  // Runs `task` on an idle thread, or a new one; never blocks on the task.
  void run(std::function<void()> task);
  // Idle threads exit now, busy ones after their queued tasks; later idle ones at once.
  void stop();

  int threads() const;  // alive now (busy or idle)
  int idle() const;     // waiting for a task now

 private:
  struct State;
  static void serve_tasks(const std::shared_ptr<State>& s);  // a thread's loop
  std::shared_ptr<State> state_;
};

}  // namespace tessera
