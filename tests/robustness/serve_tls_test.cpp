// The TLS half of the robustness campaign (docs/security.md#tls): a server whose HTTP
// port is TLS, against clients that speak plain HTTP to it, send garbage or a truncated
// handshake, or trickle a thousand handshakes from one address. Every connection ends
// in a close (never an answer in clear text, never a hang), within the header timeout
// for a handshake that stalls, and probes and inferences over TLS go on being served.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "raw_http.hpp"
#include "serve_fixture.hpp"
#include "tls_test_client.hpp"

namespace tessera::robustness {
namespace {

using Clock = std::chrono::steady_clock;
using testing::TestPki;
using testing::TlsAnswer;
using testing::TlsClient;

// The first bytes of a TLS 1.2+ ClientHello record (handshake, TLS 1.0 record version,
// 512 bytes announced): a handshake that never finishes.
const std::string kHelloStart("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);

struct TlsTask : OneTask {
  TestPki pki;
  TlsTask() { options.http_tls = TlsFiles{pki.pem("server.pem"), pki.pem("server.key"), ""}; }
  int probe(int port) {
    TlsClient c(port, pki);
    return c.request("GET", "/v2/health/ready").status;
  }
};

TEST(TlsHostile, PlainHttpGarbageAndBrokenHandshakesAreClosedCleanly) {
  TlsTask f;
  ASSERT_TRUE(f.pki.ok) << "openssl could not make the test certificates";
  f.options.header_timeout_s = 0.3;
  int port = 0;
  auto server = f.start(port);
  std::mt19937 rng(28);
  std::vector<std::string> hostile = {
      request("GET", "/v2/health/live"),
      request("POST", "/v2/models/app/infer", infer_body()),
      "\x16\x03\x01\xff\xff" + std::string(64, 'A'),   // a record longer than TLS allows
      std::string("\x15\x03\x03\x00\x02\x02\x28", 7),  // an alert before any hello
      kHelloStart,                                     // a hello that never ends
      "",                                              // connects and sends nothing
  };
  for (int i = 0; i < 8; ++i) {  // seeded garbage
    std::string junk(1 + rng() % 300, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng() % 256);
    hostile.push_back(std::move(junk));
  }
  for (const std::string& bytes : hostile) {
    const auto t0 = Clock::now();
    RawConn c(port, 5.0);
    c.send(bytes);
    std::string sent;
    EXPECT_TRUE(c.closes(&sent)) << "not closed after " << bytes.size() << " bytes";
    EXPECT_EQ(sent.rfind("HTTP/", 0), std::string::npos) << "answered in clear text";
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 4.0);
  }
  EXPECT_EQ(f.probe(port), 200);  // and the server goes on
  TlsClient c(port, f.pki);
  const TlsAnswer m = c.request("GET", "/metrics");
  EXPECT_GE(metric(m.body, "tessera_http_tls_handshake_failures_total"),
            static_cast<double>(hostile.size()))
      << m.body;
  EXPECT_EQ(c.request("POST", "/v2/models/app/infer", infer_body()).status, 200);
  EXPECT_EQ(c.request("GET", "/v2/health/live").status, 200);  // kept alive
  server->shutdown();
}

TEST(TlsHostile, TricklingHandshakesFromOneAddressLeaveProbesServed) {
  TlsTask f;
  ASSERT_TRUE(f.pki.ok) << "openssl could not make the test certificates";
  f.options.http_threads = 2;
  int port = 0;
  auto server = f.start(port);
  const int slow = scaled(600);
  std::vector<std::unique_ptr<RawConn>> conns;
  int probes = 0, probes_ok = 0;
  for (int i = 0; i < slow; ++i) {
    conns.push_back(std::make_unique<RawConn>(port, 0.2));
    conns.back()->send(kHelloStart);
    if (i % 100 == 99) {
      // A TLS probe from the same address: it gets in by shedding that address's oldest
      // connection still in its handshake.
      ++probes;
      probes_ok += f.probe(port) == 200 ? 1 : 0;
    }
  }
  EXPECT_EQ(probes_ok, probes);
  TlsClient c(port, f.pki);
  const TlsAnswer m = c.request("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_LE(metric(m.body, "tessera_http_connections"), 256 + 2) << m.body;
  if (slow > 256) {
    EXPECT_GE(metric(m.body, "tessera_http_connections_shed_reading_total"), slow - 256) << m.body;
  }
  server->shutdown();
}

}  // namespace
}  // namespace tessera::robustness
