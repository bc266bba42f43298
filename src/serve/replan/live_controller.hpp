#pragma once

// `tessera serve RUN --replan REPLAN`: JigsawServe's controller on the live server
// (docs/serve.md#live-re-planning). It plans with control/ (the MILP, on CBC) and
// reconfigures a serve/server Server (libtorch): nothing else may link both, so it is a
// module of its own on top of the two. A thread closes a demand window every controller.bin_s
// seconds with the requests the server admitted in it, asks control::LiveReplanner for
// the plan, and applies each new plan with Server::reconfigure; each decision is logged.
//
// Owns its thread; stop() (or the destructor) ends it before the server goes. The Server
// must outlive it.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "control/live_replanner.hpp"
#include "control/replan_spec.hpp"
#include "serve/server/server.hpp"

namespace tessera {

// The live controller's settings from a re-planning spec: the first search space (or
// `space` when given); the spec's plan app must be the run's app (same tasks and
// variants, in order), else a SpecError naming the replan file.
std::unique_ptr<control::LiveReplanner> make_live_replanner(const control::ReplanSpec& spec,
                                                            const App& run_app,
                                                            const std::string& space);

class LiveController {
 public:
  LiveController(Server& server, std::unique_ptr<control::LiveReplanner> replanner);
  ~LiveController();
  LiveController(const LiveController&) = delete;
  LiveController& operator=(const LiveController&) = delete;

  void start();
  void stop();

 private:
  void run();

  Server& server_;
  std::unique_ptr<control::LiveReplanner> replanner_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tessera
