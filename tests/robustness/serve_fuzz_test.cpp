// The HTTP half of the robustness campaign (docs/reliability.md): hostile requests against
// an in-process `tessera serve` on loopback. Every test asserts that the server lives,
// that each request is answered exactly once (or, for framing that cannot be parsed, that
// the connection is closed cleanly after at most one answer), that /metrics counts what
// the clients saw, and that memory stays within its bound.

#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "raw_http.hpp"
#include "serve_fixture.hpp"

namespace tessera::robustness {
namespace {

using nlohmann::json;

bool is_json_object(const std::string& body) {
  const json doc = json::parse(body, nullptr, false);
  return doc.is_object();
}

// One request on a fresh connection; the answer.
Reply once(int port, const std::string& bytes) {
  RawConn c(port);
  c.send(bytes);
  return c.read();
}

TEST(ServeFuzz, TheIssueReproducersGet4xxAndTheServerLives) {
  OneTask f;
  int port = 0;
  auto server = f.start(port);
  const std::vector<std::string> paths = {
      "/%FF",       "/\xFF",       "/\xE9",           "/%C3%28",
      "/%ED%A0%80", "/%E2%82",     "/v2/models/%FF",  "/v2/models/%C3%28/ready",
      "/v2/%FF%FE", "/metrics%FF", "/v2/models/\xFF", "/v2/models/app/versions/%FF/ready"};
  int answered = 0;
  for (const std::string& path : paths) {
    for (const char* method : {"GET", "POST", "DELETE"}) {
      const Reply r = once(port, request(method, path, std::string(method) == "POST" ? "{}" : ""));
      ASSERT_GT(r.status, 0) << method << " " << path;
      EXPECT_TRUE(r.status == 400 || r.status == 404 || r.status == 200) << r.status << r.body;
      EXPECT_TRUE(is_json_object(r.body)) << r.body;
      ++answered;
    }
  }
  // Invalid UTF-8 in the model name, the body, the id; 1e400 anywhere.
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"/v2/models/%FF/infer", infer_body()},
      {"/v2/models/app\xE9/infer", infer_body()},
      {"/v2/models/app/infer", infer_body(0.5f, "\xFF\xFE")},
      {"/v2/models/app/infer", "{\"inputs\": \"\xC3\x28\"}"},
      {"/v2/models/app/infer", "{\"\xED\xA0\x80\": 1}"},
      {"/v2/models/app/infer",
       R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1e400,2,3,4]}]})"},
      {"/v2/models/app/infer",
       R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"parameters":{"slo_ms":1e400}})"},
      {"/v2/models/app/infer", R"({"inputs":[{"datatype":"FP32","shape":[1e400],"data":[1]}]})"},
      {"/v2/models/app/infer", R"({"id":1e400})"},
  };
  for (const auto& [path, body] : bodies) {
    const Reply r = once(port, request("POST", path, body));
    EXPECT_EQ(r.status, 400) << path << " " << body << " -> " << r.body;
    EXPECT_TRUE(is_json_object(r.body)) << r.body;
  }
  const Reply live = once(port, request("GET", "/v2/health/live"));
  EXPECT_EQ(live.status, 200);
  const Reply metrics = once(port, request("GET", "/metrics"));
  // Seven of the bodies reached the app's endpoint: each counted once, as invalid.
  EXPECT_EQ(metric(metrics.body, "tessera_requests_total{app=\"app\",outcome=\"invalid\"}"), 7)
      << metrics.body;
  EXPECT_EQ(metric(metrics.body, "tessera_requests_total{app=\"app\",outcome=\"error\"}"), 0);
  server->shutdown();
}

TEST(ServeFuzz, PipelinedRequestsEachGetTheirAnswerInOrder) {
  OneTask f;
  int port = 0;
  auto server = f.start(port);
  RawConn c(port);
  std::string burst;
  for (int i = 0; i < 5; ++i) {
    burst += request("POST", "/v2/models/app/infer", infer_body(0.5f, "p" + std::to_string(i)));
    burst += request("GET", "/v2/health/live");
  }
  ASSERT_TRUE(c.send(burst));  // ten requests in one write
  for (int i = 0; i < 5; ++i) {
    const Reply infer = c.read();
    ASSERT_EQ(infer.status, 200) << infer.body;
    EXPECT_EQ(json::parse(infer.body)["id"], "p" + std::to_string(i));
    const Reply live = c.read();
    ASSERT_EQ(live.status, 200);
    EXPECT_EQ(live.body, R"({"live":true})");
  }
  // The connection stays open for more.
  ASSERT_TRUE(c.send(request("GET", "/v2/health/live")));
  EXPECT_EQ(c.read().status, 200);
  server->shutdown();
}

TEST(ServeFuzz, ExpectContinueAndHttp10AreServed) {
  OneTask f;
  int port = 0;
  auto server = f.start(port);
  {
    // curl sends large bodies only after "100 Continue".
    RawConn c(port);
    const std::string body = infer_body(0.5f, "e");
    ASSERT_TRUE(
        c.send("POST /v2/models/app/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
               "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n"));
    ASSERT_TRUE(c.send(body));
    const Reply r = c.read();  // skips the 100
    EXPECT_EQ(r.status, 200) << r.body;
  }
  {
    // HTTP/1.0 without keep-alive: one answer, then the server closes.
    RawConn c(port);
    ASSERT_TRUE(c.send("GET /v2/health/live HTTP/1.0\r\n\r\n"));
    EXPECT_EQ(c.read().status, 200);
    EXPECT_TRUE(c.closed_by_peer());
  }
  server->shutdown();
}

TEST(ServeFuzz, OversizedBodiesAreRefusedBeforeTheyAreReadAndMemoryComesBack) {
  // Eight clients announce 16 MiB bodies at once; the limit is 1 MiB: each gets 413 at
  // once, having sent only its header.
  OneTask f;
  f.options.max_body_bytes = 1u << 20;
  f.options.body_budget_bytes = 4u << 20;
  int port = 0;
  auto server = f.start(port);
  for (int i = 0; i < 8; ++i) {
    RawConn c(port);
    c.send("POST /v2/models/app/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n");
    const Reply r = c.read();
    EXPECT_EQ(r.status, 413);
    EXPECT_NE(r.body.find("larger than 1048576"), std::string::npos) << r.body;
  }
  // Bodies within the limit but over the budget together: those that do not fit get 503.
  const double before = rss_mib();
  std::string numbers = "[";
  for (int i = 0; numbers.size() < (900u << 10); ++i) numbers += "0.25,";
  numbers += "1]";
  const std::string big = R"({"inputs":[{"datatype":"FP32","shape":[4],"data":)" + numbers + "}]}";
  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < 8; ++i) {
    conns.push_back(std::make_unique<RawConn>(port));
    const std::string req = request("POST", "/v2/models/app/infer", big);
    conns.back()->send(req.substr(0, req.size() - 10));  // all but the last bytes
  }
  // Budget is reserved when a header is read and given back when its request is answered:
  // finish no body before the server has judged all eight headers (4 fit, 4 get 503), or an
  // early answer frees room for a header it had not read yet. /metrics round-trips, no sleep.
  auto budget_refusals = [&] {
    return metric(once(port, request("GET", "/metrics")).body,
                  "tessera_http_errors_total{code=\"503\"}");
  };
  for (int round = 0; round < 100000 && budget_refusals() < 4; ++round) {
  }
  int refused = 0, invalid = 0;
  for (auto& c : conns) {
    c->send(std::string_view(big).substr(big.size() - 10));
    const Reply r = c->read();
    if (r.status == 503) ++refused;
    if (r.status == 400) ++invalid;
    EXPECT_TRUE(r.status == 503 || r.status == 400) << r.status << " " << r.body.substr(0, 200);
  }
  EXPECT_EQ(refused + invalid, 8);
  EXPECT_EQ(refused, 4);  // 4 MiB of budget holds 4 bodies of ~0.9 MiB, not 5
  conns.clear();
  ASSERT_EQ(once(port, request("GET", "/v2/health/live")).status, 200);
  malloc_trim(0);
#ifndef TESSERA_SANITIZED
  EXPECT_LT(rss_mib() - before, 32.0) << "RSS did not come back after the large bodies";
#endif
  (void)before;
  server->shutdown();
}

// The generator of hostile inputs: each case says what it sends and how to judge it.
struct Case {
  std::string bytes;
  bool framing = false;  // may close without an answer; sent on a fresh connection
  bool to_app = false;   // reaches the app's endpoint: counted in tessera_requests_total
  int pipelined = 1;     // requests in `bytes`
};

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

std::string mutate(std::mt19937_64& rng, std::string s) {
  const int edits = 1 + static_cast<int>(rng() % 5);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0:
        s[at] = static_cast<char>(rng() & 0xff);
        break;
      case 1:
        s.erase(at, 1 + rng() % 8);
        break;
      case 2:
        s.insert(at, random_bytes(rng, 1 + rng() % 8));
        break;
      default:
        s.insert(at, std::string(1, "{}[]\",:0e-+.\\"[rng() % 13]));
        break;
    }
  }
  return s;
}

const std::vector<std::string>& hostile_bodies() {
  static const std::vector<std::string> bodies = {
      "",
      "{",
      "null",
      "[]",
      "\"\xFF\"",
      R"({"inputs":[]})",
      R"({"inputs":{}})",
      R"({"inputs":[1]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]},{}]})",
      R"({"inputs":[{"datatype":7,"shape":[4],"data":[1,2,3,4]}]})",
      R"({"inputs":[{"datatype":"BYTES","shape":[4],"data":["a","b","c","d"]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":"4","data":[1,2,3,4]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4.5],"data":[1,2,3,4]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[18446744073709551615],"data":[1]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[-4],"data":[1,2,3,4]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,99999999999999999999999]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,-1e308]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,1e-400]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,NaN]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,true]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,null]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[[1,2],[3,4]]}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":{"a":1}}]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"id":["x"]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"parameters":[]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"parameters":{"slo_ms":"1"}})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"parameters":{"slo_ms":0}})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"inputs":[]})",
      R"({"inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4],"data":[1,2,3,4]}]})",
      R"({"id":"\ud800","inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}]})",
      R"({"id":"\u0000\u001f","inputs":[{"datatype":"FP32","shape":[4],"data":[1,2,3,4]}]})",
      std::string("{\"inputs\":[{\"datatype\":\"FP32\",\"shape\":[4],\"data\":[1,2,3,4]}]}\0gar",
                  65),
      "\xEF\xBB\xBF{}",
  };
  return bodies;
}

Case make_case(std::mt19937_64& rng) {
  Case c;
  const std::string valid = infer_body(static_cast<float>(rng() % 100) / 10.0f);
  switch (rng() % 12) {
    case 0: {  // random bytes, then the client half-closes
      c.framing = true;
      c.bytes = random_bytes(rng, 1 + rng() % 600);
      break;
    }
    case 1: {  // a random header after a valid request line
      c.framing = true;
      c.bytes = "POST /v2/models/nope/infer HTTP/1.1\r\n" + random_bytes(rng, 1 + rng() % 200) +
                "\r\n\r\n";
      break;
    }
    case 2: {  // framing attacks
      c.framing = true;
      static const std::vector<std::string> framing = {
          "POST /v2/models/nope/infer HTTP/1.1\r\nContent-Length: abc\r\n\r\n{}",
          "POST /v2/models/nope/infer HTTP/1.1\r\nContent-Length: -1\r\n\r\n{}",
          "POST /v2/models/nope/infer HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
          "POST /v2/models/nope/infer HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
          "POST /v2/models/nope/infer HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n",
          "POST /v2/models/nope/infer HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          "ffffffffffffffffff\r\n",
          "POST /v2/models/nope/infer HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"truncated",
          "GET / HTTP/9.9\r\n\r\n",
          "GET\r\n\r\n",
          "\r\n\r\n\r\n",
          "GET /v2/health/live HTTP/1.1\r\nNoColonHere\r\n\r\n",
          "GET /v2/health/live HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n",
          "POST /v2/models/nope/infer HTTP/1.1\r\nContent-Length: 9999999\r\n\r\n",
          "GET /v2/health/live HTTP/1.1\r\nHost: x",  // never finished
      };
      c.bytes = framing[rng() % framing.size()];
      break;
    }
    case 3:
    case 4: {  // hostile paths, well framed
      static const std::vector<std::string> pieces = {
          "%FF",      "\xFF",    "%C3%28", "%ED%A0%80", "%E2%82", "%00",   "%",
          "%G1",      "..",      "v2",     "models",    "app",    "infer", "ready",
          "versions", "metrics", "health", "",          "\xE9"};
      std::string path;
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i) path += "/" + pieces[rng() % pieces.size()];
      if (path == "/v2/models/app/infer" || path.rfind("/v2/models/app/versions/", 0) == 0 ||
          path == "/metrics") {
        path = "/v2/models/app/x";  // keep the endpoint's own count exact
      }
      static const char* methods[] = {"GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS"};
      const std::string method = methods[rng() % 6];
      c.bytes = request(method, path, method == "POST" ? valid : "");
      if (method == "HEAD") c.framing = true;  // an answer to HEAD has no body to read
      break;
    }
    case 5:
    case 6:
    case 7: {  // hostile bodies to the endpoint
      const auto& bodies = hostile_bodies();
      c.to_app = true;
      c.bytes = request("POST", "/v2/models/app/infer", bodies[rng() % bodies.size()]);
      break;
    }
    case 8:
    case 9: {  // mutated or truncated valid bodies
      c.to_app = true;
      std::string body = rng() % 2 ? mutate(rng, valid) : valid.substr(0, rng() % valid.size());
      c.bytes = request("POST", "/v2/models/app/infer", body);
      break;
    }
    case 10: {  // deep nesting and many values
      c.to_app = true;
      const std::size_t depth = 1 + rng() % 20000;
      const std::string where = rng() % 2 ? "data" : "ignored";
      const std::string nested = std::string(depth, '[') + "1" + std::string(depth, ']');
      std::string body = R"({"inputs":[{"datatype":"FP32","shape":[4],")" + where + "\":" + nested +
                         (where == "data" ? "" : R"(,"data":[1,2,3,4])") + "}]}";
      if (rng() % 3 == 0) {
        std::string many = "[";
        for (int i = 0; i < 20000; ++i) many += "1,";
        body = R"({"inputs":[{"datatype":"FP32","shape":[4],"data":)" + many + "1]}]}";
      }
      c.bytes = request("POST", "/v2/models/app/infer", body);
      break;
    }
    default: {  // pipelined valid and hostile requests
      c.to_app = true;
      c.pipelined = 2 + static_cast<int>(rng() % 4);
      for (int i = 0; i < c.pipelined; ++i) {
        const auto& bodies = hostile_bodies();
        c.bytes +=
            request("POST", "/v2/models/app/infer", i % 2 ? valid : bodies[rng() % bodies.size()]);
      }
      break;
    }
  }
  return c;
}

TEST(ServeFuzz, TenThousandHostileRequestsNeitherCrashNorLoseAnAnswer) {
  OneTask f;
  f.options.max_body_bytes = 1u << 20;
  f.options.body_budget_bytes = 16u << 20;
  f.options.max_header_bytes = 8u << 10;
  int port = 0;
  auto server = f.start(port);
  const double rss_before = rss_mib();

  const int total = scaled(12000);
  constexpr int kThreads = 4;
  std::atomic<int> app_answers{0}, http_errors{0}, tried{0}, framing_closed{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + static_cast<uint64_t>(t));
      auto conn = std::make_unique<RawConn>(port);
      for (int i = t; i < total; i += kThreads) {
        const Case c = make_case(rng);
        tried++;
        if (c.framing) {
          RawConn fresh(port);
          fresh.send(c.bytes);
          fresh.shutdown_write();
          // Random bytes may hold a whole request before the junk: each request read is
          // answered once, then the unparseable rest closes the connection.
          int answers = 0;
          for (Reply r = fresh.read(); r.status != 0 && answers < 64; r = fresh.read()) {
            ++answers;
            if (r.status >= 400) http_errors++;
            if (r.status < 400 && r.status != 200) failures++;
          }
          if (answers == 0) framing_closed++;
          if (!fresh.closed_by_peer()) {
            ADD_FAILURE() << "connection not closed after a framing case";
            failures++;
          }
          continue;
        }
        if (!conn->ok()) conn = std::make_unique<RawConn>(port);
        if (!conn->send(c.bytes)) {
          ADD_FAILURE() << "send failed";
          failures++;
          conn = std::make_unique<RawConn>(port);
          continue;
        }
        bool reopen = false;
        for (int k = 0; k < c.pipelined; ++k) {
          const Reply r = conn->read();
          const bool allowed = r.status == 200 || r.status == 400 || r.status == 404 ||
                               r.status == 429 || r.status == 503;
          if (!allowed || !is_json_object(r.body)) {
            ADD_FAILURE() << "status " << r.status << " body " << r.body.substr(0, 200) << " for "
                          << c.bytes.substr(0, 200);
            failures++;
            reopen = true;
            break;
          }
          if (c.to_app) {
            app_answers++;
          } else if (r.status >= 400) {
            http_errors++;
          }
          if (r.headers.count("connection") && r.headers.at("connection") == "close") reopen = true;
        }
        if (reopen) conn = std::make_unique<RawConn>(port);
        if (failures.load() > 20) return;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(tried.load(), total);

  // Alive, and /metrics counted exactly what the clients saw.
  const Reply live = once(port, request("GET", "/v2/health/live"));
  ASSERT_EQ(live.status, 200);
  const Reply metrics = once(port, request("GET", "/metrics"));
  EXPECT_EQ(metric_sum(metrics.body, "tessera_requests_total{app=\"app\""), app_answers.load());
  EXPECT_EQ(metric_sum(metrics.body, "tessera_http_errors_total{"), http_errors.load());
  EXPECT_EQ(metric(metrics.body, "tessera_requests_total{app=\"app\",outcome=\"error\"}"), 0);
  EXPECT_EQ(server->in_flight(), 0);
  std::printf(
      "hostile inputs tried: %d (%d answered by the endpoint, %d refused before it, %d "
      "closed without an answer); RSS %.0f -> %.0f MiB, peak %.0f MiB\n",
      tried.load(), app_answers.load(), http_errors.load(), framing_closed.load(), rss_before,
      rss_mib(), rss_mib("VmHWM:"));
#ifndef TESSERA_SANITIZED
  malloc_trim(0);
  EXPECT_LT(rss_mib() - rss_before, 64.0);
#endif
  server->shutdown();
}

}  // namespace
}  // namespace tessera::robustness
