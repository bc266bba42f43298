#pragma once

// The loopback cluster tests' processes (test-only; tests/export*): an exported Service stood
// in for by a `tessera` process bound to the Service's own port at its own loopback address
// (the Service's name "resolved" to it, as a cluster's DNS would), a per-process address
// block so parallel runs (ctest -j, the sanitizer suite) cannot collide, and the readiness
// wait and metric sums the tests check with. The process starters need TESSERA_BINARY (the CLI
// under test).

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::testing {

struct LoopbackProcess {
  pid_t pid = -1;
  std::string address;
  int http_port = 0;
};

// "127.<first>.B." with B from this process's id: each test process its own /24 on loopback.
inline std::string loopback_block(int first) {
  return "127." + std::to_string(first) + "." + std::to_string(::getpid() % 250 + 1) + ".";
}

#ifdef TESSERA_BINARY
// Starts `tessera ARGS` in `cwd`, its output appended to `log`.
inline LoopbackProcess spawn_tessera(const std::vector<std::string>& args,
                                     const std::string& address, int http_port,
                                     const std::filesystem::path& cwd,
                                     const std::filesystem::path& log) {
  LoopbackProcess p{-1, address, http_port};
  p.pid = fork();
  if (p.pid == 0) {
    if (::chdir(cwd.c_str()) != 0) _exit(126);
    if (std::freopen(log.c_str(), "a", stderr) == nullptr) _exit(126);
    if (std::freopen(log.c_str(), "a", stdout) == nullptr) _exit(126);
    std::vector<char*> argv = {const_cast<char*>(TESSERA_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(TESSERA_BINARY, argv.data());
    _exit(127);
  }
  return p;
}

// Runs `tessera ARGS` to its end; its exit status (-1 when it did not exit normally).
inline int run_tessera(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                       const std::filesystem::path& log) {
  const LoopbackProcess p = spawn_tessera(args, "", 0, cwd, log);
  int status = 0;
  if (waitpid(p.pid, &status, 0) != p.pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

#endif  // TESSERA_BINARY

// Polls `path` until it answers 200 (true), the process exits or a minute passes (false).
inline bool wait_ready(const LoopbackProcess& p, const std::string& path = "/v2/health/ready") {
  httplib::Client c(p.address, p.http_port);
  c.set_connection_timeout(1, 0);
  for (int i = 0; i < 1200; ++i) {  // at most a minute (a child loading libtorch)
    auto res = c.Get(path);
    if (res && res->status == 200) return true;
    if (waitpid(p.pid, nullptr, WNOHANG) == p.pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Sends SIGTERM to each process and reaps it.
inline void stop_all(const std::vector<LoopbackProcess>& processes) {
  for (const auto& p : processes)
    if (p.pid > 0) kill(p.pid, SIGTERM);
  for (const auto& p : processes)
    if (p.pid > 0) waitpid(p.pid, nullptr, 0);
}

// The sum of every Prometheus sample whose line starts with `prefix`.
inline double metric_sum(const std::string& text, const std::string& prefix) {
  double sum = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

}  // namespace tessera::testing
