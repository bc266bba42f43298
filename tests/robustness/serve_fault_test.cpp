// The fault half of the robustness campaign (docs/reliability.md): a model call that
// never returns, a model that throws on one input, and SIGTERM under load (on a spawned
// `tessera serve`, whose watchdog bounds the exit).

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <iterator>
#include <regex>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "raw_http.hpp"
#include "serve_fixture.hpp"

namespace tessera::robustness {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Reply infer(int port, float first, double timeout_s = 10.0) {
  RawConn c(port, timeout_s);
  c.send(request("POST", "/v2/models/app/infer", infer_body(first)));
  return c.read();
}

TEST(ServeFaults, AStuckModelCallIsAbandonedAndItsWorkerReplaced) {
  // The faulty model stalls 20 s on an input whose first value is >= 1000; calls may
  // take 0.3 s.
  OneTask f("faulty", 20000.0, 1);
  f.options.model_timeout_s = 0.3;
  int port = 0;
  auto server = f.start(port);
  for (int round = 1; round <= 2; ++round) {
    const auto t0 = Clock::now();
    const Reply stuck = infer(port, 5000.0f);
    EXPECT_EQ(stuck.status, 500);
    EXPECT_NE(stuck.body.find("more than 0.3 s"), std::string::npos) << stuck.body;
    EXPECT_LT(since(t0), 3.0);
    // The replacement worker serves the next request at once.
    const Reply ok = infer(port, 1.0f);
    EXPECT_EQ(ok.status, 200) << ok.body;
    RawConn m(port);
    m.send(request("GET", "/metrics"));
    EXPECT_EQ(metric(m.read().body, "tessera_workers_replaced_total"), round);
  }
  // Shutdown does not wait for the abandoned calls.
  const auto t0 = Clock::now();
  server->shutdown();
  EXPECT_LT(since(t0), 3.0);
}

TEST(ServeFaults, AModelExceptionFailsOnlyTheBadRequest) {
  // One worker, batches of up to 4. A first request stalls the worker 300 ms, so the next
  // three queue and run as one batch; one of them makes the model throw. The batch is
  // retried item by item: only that request fails.
  OneTask f("faulty", 300.0, 4);
  f.options.model_timeout_s = 0;
  int port = 0;
  auto server = f.start(port);
  auto first = std::async(std::launch::async, [port] { return infer(port, 2000.0f); });
  ASSERT_TRUE(server->wait_until_in_flight(1, 10.0));
  std::vector<std::future<Reply>> rest;
  for (float v : {1.0f, -1.0f, 2.0f}) {
    rest.push_back(std::async(std::launch::async, [port, v] { return infer(port, v); }));
  }
  EXPECT_EQ(first.get().status, 200);
  EXPECT_EQ(rest[0].get().status, 200);
  const Reply bad = rest[1].get();
  EXPECT_EQ(bad.status, 500);
  EXPECT_NE(bad.body.find("negative first value"), std::string::npos) << bad.body;
  EXPECT_EQ(rest[2].get().status, 200);
  RawConn m(port);
  m.send(request("GET", "/metrics"));
  const std::string text = m.read().body;
  EXPECT_EQ(metric(text, "tessera_requests_total{app=\"app\",outcome=\"error\"}"), 1) << text;
  EXPECT_EQ(metric(text, "tessera_requests_total{app=\"app\",outcome=\"ok\"}"), 3) << text;
  server->shutdown();
}

#ifdef TESSERA_BINARY
// Starts `tessera serve` on the sleep example; returns its pid once it answers.
pid_t spawn_serve(int port, const std::string& models, const std::string& log) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/serve/";
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string port_s = std::to_string(port);
    std::freopen(log.c_str(), "w", stderr);
    std::freopen(log.c_str(), "a", stdout);
    execl(TESSERA_BINARY, TESSERA_BINARY, "serve", (dir + "run-sleep.yaml").c_str(), "--models",
          models.c_str(), "--port", port_s.c_str(), "--no-warmup", "--drain-timeout", "1",
          "--model-timeout", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto t0 = Clock::now();
  while (since(t0) < 60.0) {
    RawConn c(port, 1.0);
    if (c.ok() && c.send(request("GET", "/v2/health/live")) && c.read().status == 200) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// SIGTERM while clients keep sending; returns the seconds to exit and its status.
std::pair<double, int> terminate_under_load(int port, pid_t pid, int& answered, int& unanswered) {
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, lost{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 16; ++t) {
    clients.emplace_back([&, t] {
      const auto t0 = Clock::now();
      while (!stop.load() && since(t0) < 30.0) {
        RawConn c(port, 15.0);
        if (!c.ok()) break;  // the listener is gone
        if (!c.send(request("POST", "/v2/models/vision_pipeline/infer",
                            R"({"inputs":[{"datatype":"FP32","shape":[16],"data":[)" +
                                std::to_string(t) + ",0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]}"))) {
          break;
        }
        const Reply r = c.read();
        if (r.status == 200 || r.status == 503 || r.status == 429) {
          ok++;
        } else {
          lost++;
        }
      }
    });
  }
  // SIGTERM once the load is flowing: every client has had answers (bounded wait).
  for (const auto w0 = Clock::now(); ok.load() < 64 && since(w0) < 30.0;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto t0 = Clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0 && since(t0) < 30.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double took = since(t0);
  if (took >= 30.0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  stop = true;
  for (auto& c : clients) c.join();
  answered = ok.load();
  unanswered = lost.load();
  return {took, status};
}

TEST(ServeFaults, SigtermUnderLoadExitsWithinTheBound) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/serve/";
  const std::string log = ::testing::TempDir() + "sigterm_serve.log";
  const int port = free_port();
  const pid_t pid = spawn_serve(port, dir + "models-sleep.yaml", log);
  ASSERT_GT(pid, 0) << "tessera serve did not start; see " << log;
  int answered = 0, unanswered = 0;
  const auto [took, status] = terminate_under_load(port, pid, answered, unanswered);
  std::printf("SIGTERM under load: exit in %.2f s; %d requests answered, %d not\n", took, answered,
              unanswered);
  EXPECT_LT(took, 1.0 + 5.0);  // --drain-timeout + the watchdog's slack
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(answered, 0);
  // A request goes unanswered only if the server had not read it when it stopped
  // listening (a connection still in the kernel's backlog, or one whose bytes had not
  // arrived): at most the one each client had in flight at that instant, or two in a race.
  EXPECT_LE(unanswered, 2 * 16);
  // The server's own ledger at exit: every request it admitted before the signal (and
  // during the drain) was answered; none is left.
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      text, m,
      std::regex(R"(shutdown ledger: (\d+) requests admitted, (\d+) answered, (\d+) never)")))
      << text.substr(text.size() > 2000 ? text.size() - 2000 : 0);
  const uint64_t admitted = std::stoull(m[1].str());
  EXPECT_EQ(std::stoull(m[2].str()), admitted);
  EXPECT_EQ(std::stoull(m[3].str()), 0u);
  EXPECT_GT(admitted, 0u);
}

TEST(ServeFaults, SigtermWithAStuckModelExitsWithinTheBound) {
  // resnet34's stage stalls 60 s on every request (first value >= 1000) and model calls
  // have no deadline: shutdown must still end within the bound.
  const std::string models = ::testing::TempDir() + "models-stuck.yaml";
  std::ofstream(models) << "input: [16]\nmodels:\n"
                           "  - {variant: resnet18, zoo: sleep, latency_ms: 1}\n"
                           "  - {variant: resnet34, zoo: faulty, latency_ms: 60000}\n"
                           "  - {variant: small_cnn, zoo: sleep, latency_ms: 1}\n";
  const std::string log = ::testing::TempDir() + "sigterm_stuck_serve.log";
  const int port = free_port();
  const pid_t pid = spawn_serve(port, models, log);
  ASSERT_GT(pid, 0) << "tessera serve did not start; see " << log;
  std::vector<std::future<Reply>> stuck;
  for (int i = 0; i < 4; ++i) {
    stuck.push_back(std::async(std::launch::async, [port] {
      RawConn c(port, 20.0);
      c.send(request(
          "POST", "/v2/models/vision_pipeline/infer",
          R"({"inputs":[{"datatype":"FP32","shape":[16],"data":[5000,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]})"));
      return c.read();
    }));
  }
  // SIGTERM once all four are inside the server (admitted, stuck in resnet34's stage).
  for (const auto w0 = Clock::now(); since(w0) < 30.0;) {
    RawConn m(port, 5.0);
    if (m.send(request("GET", "/metrics")) &&
        metric(m.read().body, "tessera_requests_in_flight") >= 4) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto t0 = Clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0 && since(t0) < 30.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double took = since(t0);
  if (took >= 30.0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  std::printf("SIGTERM with 4 requests in a stuck model: exit in %.2f s\n", took);
  EXPECT_LT(took, 1.0 + 5.0);
  for (auto& s : stuck) {
    const Reply r = s.get();
    EXPECT_EQ(r.status, 503) << r.body;  // refused at shutdown, never left hanging
  }
}
#endif

}  // namespace
}  // namespace tessera::robustness
