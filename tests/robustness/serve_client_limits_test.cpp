// The per-client half of the robustness campaign (docs/security.md, docs/reliability.md):
// one address (127.0.0.1) opening a thousand trickling connections or many slow large
// bodies, while probes and another client (127.0.0.2, another address on loopback) are
// served. Every loop is bounded and stops by itself; the timings the goals name
// are measured by bench/slow_clients_bench, not asserted here.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "raw_http.hpp"
#include "serve_fixture.hpp"

namespace tessera::robustness {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kOther = "127.0.0.2";

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int status_of(int port, const std::string& text, const char* source = nullptr) {
  RawConn c(port, 5.0, source);
  c.send(text);
  return c.read().status;
}

std::string metrics_of(int port) {
  RawConn c(port, 5.0, kOther);
  c.send(request("GET", "/metrics"));
  return c.read().body;
}

TEST(ClientLimits, AThousandTricklingConnectionsFromOneAddressLeaveOthersServed) {
  OneTask f;
  f.options.http_threads = 2;
  int port = 0;
  auto server = f.start(port);
  const int slow = scaled(1000);
  std::vector<std::unique_ptr<RawConn>> conns;
  int probes_ok = 0, others_ok = 0, probes = 0;
  for (int i = 0; i < slow; ++i) {
    conns.push_back(std::make_unique<RawConn>(port, 0.2));
    conns.back()->send("POST /v2/models/app/infer HTTP/1.1\r\nHost: x\r\n");
    if (i % 50 == 49) {
      // A probe from the attacker's own address (a sidecar on the same host) and a small
      // inference from another client, while the flood goes on.
      ++probes;
      probes_ok += status_of(port, request("GET", "/v2/health/ready")) == 200 ? 1 : 0;
      others_ok +=
          status_of(port, request("POST", "/v2/models/app/infer", infer_body()), kOther) == 200 ? 1
                                                                                                : 0;
    }
  }
  EXPECT_EQ(probes_ok, probes);
  EXPECT_EQ(others_ok, probes);
  const std::string m = metrics_of(port);
  // The address holds at most its share of the connections; the rest were shed.
  EXPECT_LE(metric(m, "tessera_http_connections"), 256 + 2) << m;
  EXPECT_GE(metric(m, "tessera_http_connections_shed_reading_total") +
                metric(m, "tessera_http_connections_shed_total"),
            slow - 256)
      << m;
  server->shutdown();
}

TEST(ClientLimits, SlowLargeBodiesFromOneAddressTakeOnlyItsShare) {
  OneTask f;
  int port = 0;
  auto server = f.start(port);
  // 32 requests announcing 16 MiB bodies, each sending 1 KiB and then nothing: the
  // address's 64 MiB share holds four; the rest are answered 503 at once.
  const std::size_t big = 16u << 20;
  std::vector<std::unique_ptr<RawConn>> conns;
  int refused = 0;
  for (int i = 0; i < 32; ++i) {
    conns.push_back(std::make_unique<RawConn>(port, 0.3));
    conns.back()->send(
        "POST /v2/models/app/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(big) + "\r\n\r\n" + std::string(1024, ' '));
  }
  for (auto& c : conns) {
    const Reply r = c->read();
    if (r.status == 503) {
      ++refused;
      EXPECT_NE(r.body.find("your address"), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(refused, 28);
  // Another client's small inferences and bodies are served meanwhile.
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(status_of(port, request("POST", "/v2/models/app/infer", infer_body()), kOther), 200);
  }
  EXPECT_EQ(metric(metrics_of(port), "tessera_http_client_refused_total"), 28);
  server->shutdown();
}

TEST(ClientLimits, AHeaderMustArriveWithinTheHeaderTimeout) {
  OneTask f;
  f.options.header_timeout_s = 0.3;
  f.options.read_timeout_s = 10.0;
  int port = 0;
  auto server = f.start(port);
  const auto t0 = Clock::now();
  RawConn slow(port, 5.0);
  slow.send("GET /v2/health/live HTTP/1.1\r\n");
  EXPECT_TRUE(slow.closed_by_peer());
  const double closed_after = since(t0);
  EXPECT_LT(closed_after, 4.0);  // well before the 10 s read timeout
  // A complete header with a body that follows later is not cut by the header timeout.
  RawConn body(port, 5.0);
  const std::string full = request("POST", "/v2/models/app/infer", infer_body());
  const std::size_t head = full.find("\r\n\r\n") + 4;
  body.send(full.substr(0, head));
  ASSERT_FALSE(slow.pending());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the header timeout
  body.send(full.substr(head));
  EXPECT_EQ(body.read().status, 200);
  server->shutdown();
}

}  // namespace
}  // namespace tessera::robustness
