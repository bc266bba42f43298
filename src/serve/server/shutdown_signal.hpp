#pragma once

// Serving until SIGINT or SIGTERM, with a bounded shutdown (docs/reliability.md#shutdown):
// the signals are blocked in every thread and taken by one sigwait; the shutdown then runs
// under a watchdog that exits the process (status 1) when a second signal arrives or the
// bound passes first. For the commands that serve (`tessera serve`).
//
// Threads: block_shutdown_signals() before any thread is started; wait_then_shut_down()
// from the thread that will shut the server down.

#include <signal.h>

#include <functional>

namespace tessera {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts from
// then on) and returns them.
sigset_t block_shutdown_signals();

// Waits for one of `signals`, then calls `shut_down` with its name ("SIGINT", "SIGTERM")
// while a watchdog exits the process if a second signal arrives or `bound_s` passes.
void wait_then_shut_down(sigset_t signals, double bound_s,
                         const std::function<void(const char* signal)>& shut_down);

}  // namespace tessera
