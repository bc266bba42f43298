#include "serve/server/shutdown_signal.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <ctime>
#include <thread>

namespace tessera {

sigset_t block_shutdown_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void wait_then_shut_down(sigset_t signals, double bound_s,
                         const std::function<void(const char* signal)>& shut_down) {
  int sig = 0;
  sigwait(&signals, &sig);
  // Shutdown is bounded by design (drain, then at most a few seconds to close connections
  // and leave stuck model calls); the watchdog makes it a guarantee, and a second signal
  // exits at once.
  std::thread([bound_s, signals]() mutable {
    struct timespec wait {};
    wait.tv_sec = static_cast<time_t>(bound_s);
    wait.tv_nsec = static_cast<long>((bound_s - static_cast<double>(wait.tv_sec)) * 1e9);
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      spdlog::error("second signal: exiting now");
    } else {
      spdlog::error("shutdown took more than {} s: exiting now", bound_s);
    }
    spdlog::default_logger()->flush();
    _exit(1);
  }).detach();
  shut_down(sig == SIGINT ? "SIGINT" : "SIGTERM");
}

}  // namespace tessera
