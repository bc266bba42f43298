// Probes and other clients under slow clients from one address (docs/reliability.md,
// docs/security.md): tessera serve (the no-op app of bench/noop_server.hpp, default
// limits) while one address (127.0.0.1) runs an attack, and two other addresses on
// loopback probe it (127.0.0.3: GET /v2/health/ready every 20 ms) and send it small
// inferences (127.0.0.2: one every 10 ms, each on a fresh connection). A probe from the
// attacker's own address (a sidecar on the same host) is sent every 100 ms too.
//
//   slow_clients_bench [--seconds S]      (default 10 per scenario)
//
// Scenarios, each on a fresh server: none (the baseline); 1,000 connections trickling a
// header byte every 100 ms (reopened when closed); 32 connections announcing 16 MiB bodies
// and sending 1 KiB every 100 ms (reopened when closed). Every request has a 5 s deadline.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "noop_server.hpp"
#include "raw_http.hpp"
#include "serve/kserve/protocol.hpp"

namespace {

using namespace tessera;
using robustness::RawConn;
using robustness::Reply;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Series {
  std::vector<double> seconds;  // answered 200: how long it took
  int sent = 0;
  int ok = 0;
};

// Sends `text` from `source` every `period_s` until `stop`; records each answer.
void drive(int port, const char* source, const std::string& text, double period_s,
           const std::atomic<bool>& stop, Series& out) {
  while (!stop.load()) {
    const auto t0 = Clock::now();
    RawConn c(port, 5.0, source);
    c.send(text);
    const Reply r = c.read();
    ++out.sent;
    if (r.status == 200) {
      ++out.ok;
      out.seconds.push_back(since(t0));
    }
    const double left = period_s - since(t0);
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
  }
}

// One attack connection: `opening` once, then `trickle` (one piece every 100 ms); reopened
// when the server closes it.
void attack(int port, int connections, const std::string& opening, const std::string& trickle,
            const std::atomic<bool>& stop, std::atomic<uint64_t>& opened) {
  std::vector<std::unique_ptr<RawConn>> conns(static_cast<std::size_t>(connections));
  while (!stop.load()) {
    const auto t0 = Clock::now();
    for (auto& c : conns) {
      if (stop.load()) break;
      if (!c || !c->ok() || !c->send(trickle)) {
        c = std::make_unique<RawConn>(port, 0.01, "127.0.0.1");
        ++opened;
        c->send(opening);
      }
    }
    const double left = 0.1 - since(t0);
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
  }
}

void scenario(const char* name, double seconds, int connections, const std::string& opening,
              const std::string& trickle) {
  const bench::NoopServing noop = bench::noop_serving();
  ServeOptions options;
  options.port = 0;
  options.model_endpoints = false;
  options.http_threads = 2;
  Server server(noop.app, noop.deployment, noop.profiles, PolicyConfig{}, 1, noop.models, options);
  const int port = server.start();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> opened{0};
  std::thread attacker;
  if (connections > 0) {
    attacker = std::thread([&] { attack(port, connections, opening, trickle, stop, opened); });
    std::this_thread::sleep_for(std::chrono::seconds(1));  // let the attack build up
  }
  const std::string probe = robustness::request("GET", "/v2/health/ready");
  const std::string infer = robustness::request("POST", "/v2/models/noop/infer",
                                                make_infer_body(FloatTensor{{1, 4}, {1, 2, 3, 4}}));
  Series probes, own_probes, infers;
  std::thread p([&] { drive(port, "127.0.0.3", probe, 0.02, stop, probes); });
  std::thread q([&] { drive(port, "127.0.0.1", probe, 0.1, stop, own_probes); });
  std::thread i([&] { drive(port, "127.0.0.2", infer, 0.01, stop, infers); });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  p.join();
  q.join();
  i.join();
  if (attacker.joinable()) attacker.join();
  std::printf("| %s | %llu | %d/%d | %.1f | %.1f | %d/%d | %.1f | %d/%d (%.2f %%) | %.1f |\n", name,
              static_cast<unsigned long long>(opened.load()), probes.ok, probes.sent,
              percentile(probes.seconds, 0.5) * 1e3, percentile(probes.seconds, 0.99) * 1e3,
              own_probes.ok, own_probes.sent, percentile(own_probes.seconds, 0.99) * 1e3, infers.ok,
              infers.sent, infers.sent > 0 ? 100.0 * infers.ok / infers.sent : 0.0,
              percentile(infers.seconds, 0.99) * 1e3);
  std::fflush(stdout);
  server.shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10.0;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (std::strcmp(argv[a], "--seconds") == 0) seconds = std::stod(argv[a + 1]);
  }
  spdlog::set_level(spdlog::level::err);
  std::printf(
      "| attack (from 127.0.0.1) | attack connections opened | probes ok (127.0.0.3) | probe p50 "
      "ms | probe p99 ms | probes ok (127.0.0.1) | its p99 ms | small inferences ok "
      "(127.0.0.2) | inference p99 ms |\n|---|---|---|---|---|---|---|---|---|\n");
  scenario("none", seconds, 0, "", "");
  scenario("1,000 connections trickling a header", seconds, 1000,
           "POST /v2/models/noop/infer HTTP/1.1\r\n", "X");
  const std::string body_head =
      "POST /v2/models/noop/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(16u << 20) + "\r\n\r\n";
  scenario("32 slow 16 MiB bodies", seconds, 32, body_head, std::string(1024, ' '));
  return 0;
}
