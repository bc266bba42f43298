// End-to-end tests of `tessera serve` over loopback: real HTTP, the real engine on a real
// clock, and the zoo's noop / sleep models (fast and deterministic). No test sleeps to wait
// for something: they wait on futures and conditions with generous timeouts.

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "closed_port.hpp"
#include "loadgen/http_loadgen.hpp"
#include "loadgen/open_loop.hpp"
#include "metrics/report.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using testing::add_affine;
using testing::make_edge;
using testing::make_task;

constexpr const char* kJson = "application/json";

ModelSpec noop_spec(const std::string& variant, std::vector<int64_t> shape,
                    double latency_ms = 0.0) {
  ModelSpec m;
  m.variant = variant;
  m.arch = latency_ms > 0 ? "sleep" : "noop";
  m.input_shape = std::move(shape);
  m.latency_ms = latency_ms;
  return m;
}

struct Fixture {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  PolicyConfig policies;
  ModelsConfig models;
  ServeOptions options;

  Fixture() {
    options.port = 0;
    options.drain_timeout_s = 5.0;
    options.keep_alive_timeout_s = 1.0;
  }
  void add_worker(TaskId task, int max_batch = 4) {
    deployment.groups.push_back(WorkerGroup{task, {0}, "cpu", max_batch, 1});
    add_affine(profiles, app.tasks[task].variants[0].name, 1.0, 0.1, max_batch, "cpu");
  }
  std::unique_ptr<Server> start(int& port) {
    auto server = std::make_unique<Server>(app, deployment, profiles, policies, 1, models, options);
    port = server->start();
    return server;
  }
};

// One task "work" (app "slow") on one worker whose noop model takes `ms` per batch.
Fixture slow_fixture(double ms, int max_batch) {
  Fixture f;
  f.app.name = "slow";
  f.app.slo = 10.0;
  f.app.tasks = {make_task("work")};
  f.app.finalize();
  f.models.models = {noop_spec("work", {4}, ms)};
  f.add_worker(0, max_batch);
  return f;
}

// detect -> classify, both noop on 4 values.
Fixture chain_fixture() {
  Fixture f;
  f.app.name = "chain";
  f.app.slo = 5.0;
  f.app.tasks = {make_task("detect"), make_task("classify")};
  f.app.edges = {make_edge(0, 1)};
  f.app.finalize();
  f.models.models = {noop_spec("detect", {4}), noop_spec("classify", {4})};
  f.add_worker(0);
  f.add_worker(1);
  return f;
}

std::string body_of(std::vector<float> values, const std::string& id = "") {
  FloatTensor t{{1, static_cast<int64_t>(values.size())}, std::move(values)};
  return make_infer_body(t, id);
}

TEST(Serve, PipelineAnswersWithTheLeafOutput) {
  Fixture f = chain_fixture();
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);

  auto res = cli.Post("/v2/models/chain/infer", body_of({1, 2, 3, 4}, "req-7"), kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json out = json::parse(res->body);
  EXPECT_EQ(out["model_name"], "chain");
  EXPECT_EQ(out["id"], "req-7");
  EXPECT_EQ(out["parameters"]["outcome"], "ok");
  ASSERT_EQ(out["outputs"].size(), 1u);
  EXPECT_EQ(out["outputs"][0]["name"], "classify");
  EXPECT_EQ(out["outputs"][0]["shape"], json::array({1, 4}));
  EXPECT_EQ(out["outputs"][0]["data"], json::array({1.0, 2.0, 3.0, 4.0}));

  // Each deployed model is an endpoint of its own; shape [4] without the batch works too.
  FloatTensor flat{{4}, {5, 6, 7, 8}};
  res = cli.Post("/v2/models/detect/infer", make_infer_body(flat), kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["outputs"][0]["data"], json::array({5.0, 6.0, 7.0, 8.0}));

  // Health and metadata.
  EXPECT_EQ(cli.Get("/v2/health/live")->status, 200);
  EXPECT_EQ(cli.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(json::parse(cli.Get("/v2")->body)["name"], "tessera");
  const json meta = json::parse(cli.Get("/v2/models/chain")->body);
  EXPECT_EQ(meta["inputs"][0]["shape"], json::array({-1, 4}));
  EXPECT_EQ(meta["outputs"][0]["name"], "classify");
  EXPECT_EQ(cli.Get("/v2/models/chain/ready")->status, 200);
  EXPECT_EQ(cli.Get("/v2/models/nope")->status, 404);

  const std::string metrics = cli.Get("/metrics")->body;
  EXPECT_NE(metrics.find("tessera_requests_total{app=\"chain\",outcome=\"ok\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("tessera_batch_size_count{app=\"chain\",task=\"detect\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("tessera_variant_batches_total{app=\"chain\",task=\"classify\","
                         "variant=\"classify\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("tessera_queue_length{app=\"chain\",task=\"detect\"} 0"),
            std::string::npos);
  server->shutdown();
}

// The app "dag": detect, whose fan-out is the number of its outputs with sigmoid(x) > 0.5
// (i.e. x > 0), then classify; one worker each.
void use_detect_classify_dag(Fixture& f) {
  f.app.name = "dag";
  f.app.slo = 5.0;
  f.app.tasks = {make_task("detect"), make_task("classify")};
  f.app.tasks[0].variants[0].fanout_mean = 1.0;  // what the simulator would draw
  f.app.edges = {make_edge(0, 1)};
  f.app.finalize();
  ModelSpec detect = noop_spec("detect", {6});
  detect.fanout = FanoutRule{0.5, 8};
  f.models.models = {detect, noop_spec("classify", {6})};
  f.add_worker(0);
  f.add_worker(1);
}

TEST(Serve, DagFanOutComesFromTheModelOutput) {
  Fixture f;
  use_detect_classify_dag(f);
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);

  auto res = cli.Post("/v2/models/dag/infer", body_of({1, -1, 2, -2, 3, 0}), kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json out = json::parse(res->body);
  ASSERT_EQ(out["outputs"].size(), 1u);
  EXPECT_EQ(out["outputs"][0]["name"], "classify");
  EXPECT_EQ(out["outputs"][0]["shape"], json::array({3, 6}));  // three objects

  // Nothing passes: the request ends at detect, whose output is the result.
  res = cli.Post("/v2/models/dag/infer", body_of({-1, -1, -2, -2, -3, 0}), kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  out = json::parse(res->body);
  ASSERT_EQ(out["outputs"].size(), 1u);
  EXPECT_EQ(out["outputs"][0]["name"], "detect");
  EXPECT_EQ(out["outputs"][0]["shape"], json::array({1, 6}));
  server->shutdown();
}

TEST(Serve, MalformedRequestsGet4xxWithAMessage) {
  Fixture f = chain_fixture();
  f.options.max_body_bytes = 4096;
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);
  const auto expect_error = [&](const std::string& path, const std::string& body, int status,
                                const std::string& fragment) {
    auto res = cli.Post(path, body, kJson);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, status) << body.substr(0, 80) << " -> " << res->body;
    const json err = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(err.is_object()) << res->body;
    EXPECT_NE(err.value("error", "").find(fragment), std::string::npos) << res->body;
  };
  const std::string infer = "/v2/models/chain/infer";
  expect_error(infer, "{not json", 400, "invalid JSON");
  expect_error(infer, "[1, 2]", 400, "JSON object");
  expect_error(infer, R"({"inputs": []})", 400, "exactly 1 input");
  expect_error(infer,
               R"({"inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2,3,4]}]})", 400,
               "does not match");
  expect_error(
      infer, R"({"inputs":[{"name":"x","datatype":"BYTES","shape":[4],"data":["a","b","c","d"]}]})",
      400, "not supported");
  expect_error(infer, R"({"inputs":[{"name":"x","datatype":"FP32","shape":[4],"data":[1,2,3]}]})",
               400, "needs 4");
  expect_error(infer,
               R"({"inputs":[{"name":"x","datatype":"FP32","shape":[4],"data":[1,"a",3,4]}]})", 400,
               "numbers only");
  expect_error(
      infer,
      R"({"inputs":[{"name":"x","datatype":"FP32","shape":[4],"data":[1,2,3,4]}],"parameters":{"slo_ms":-1}})",
      400, "slo_ms");
  expect_error("/v2/models/nope/infer", body_of({1, 2, 3, 4}), 400, "unknown model 'nope'");
  expect_error(infer, std::string(5000, ' '), 413, "larger than 4096");
  expect_error("/v3/anything", "{}", 404, "no route");

  // The server still serves after all that, and counted the refusals.
  auto res = cli.Post(infer, body_of({1, 2, 3, 4}), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const std::string metrics = cli.Get("/metrics")->body;
  EXPECT_NE(metrics.find("tessera_requests_total{app=\"chain\",outcome=\"invalid\"} 8"),
            std::string::npos)
      << metrics;
  server->shutdown();
}

// Sends `n` requests at once from `n` threads; returns the status of each (0: no answer).
std::vector<int> burst(int port, const std::string& path, int n, const std::string& body) {
  std::vector<std::future<int>> results;
  for (int i = 0; i < n; ++i) {
    results.push_back(std::async(std::launch::async, [port, path, body] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(30);
      auto res = cli.Post(path, body, kJson);
      return res ? res->status : 0;
    }));
  }
  std::vector<int> statuses;
  for (auto& r : results) statuses.push_back(r.get());
  return statuses;
}

TEST(Serve, OverloadBurstIsBoundedAndEveryRequestAnswered) {
  // One slow worker (50 ms per batch of at most 2), at most 4 requests admitted and a
  // queue bound of 2: a burst of 40 gets 200s, queue_full drops (503) and refusals (429).
  Fixture f = slow_fixture(50, 2);
  f.policies.max_queue = 1;
  f.options.max_inflight = 4;
  f.options.http_threads = 48;
  f.options.model_endpoints = false;
  int port = 0;
  auto server = f.start(port);

  const std::vector<int> statuses = burst(port, "/v2/models/slow/infer", 40, body_of({1, 2, 3, 4}));
  int ok = 0, rejected = 0, dropped = 0, other = 0;
  for (int s : statuses) {
    if (s == 200)
      ++ok;
    else if (s == 429)
      ++rejected;
    else if (s == 503)
      ++dropped;
    else
      ++other;
  }
  EXPECT_EQ(ok + rejected + dropped, 40) << "other statuses: " << other;
  EXPECT_GE(ok, 1);
  EXPECT_GE(rejected, 1);  // at most 4 admitted while the worker sleeps 50 ms per batch
  EXPECT_EQ(server->in_flight(), 0);

  // The refusals carry Retry-After.
  httplib::Client cli("127.0.0.1", port);
  const std::string metrics = cli.Get("/metrics")->body;
  EXPECT_NE(metrics.find("tessera_requests_total{app=\"slow\",outcome=\"rejected\"} " +
                         std::to_string(rejected)),
            std::string::npos)
      << metrics;
  server->shutdown();
}

TEST(Serve, RefusalsCarryRetryAfter) {
  Fixture f = slow_fixture(200, 1);
  f.options.max_inflight = 1;
  f.options.model_endpoints = false;
  int port = 0;
  auto server = f.start(port);
  auto first = std::async(std::launch::async, [port] {
    httplib::Client cli("127.0.0.1", port);
    return cli.Post("/v2/models/slow/infer", body_of({1, 2, 3, 4}), kJson)->status;
  });
  ASSERT_TRUE(server->wait_until_in_flight(1, 30.0));
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Post("/v2/models/slow/infer", body_of({1, 2, 3, 4}), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
  EXPECT_EQ(first.get(), 200);
  server->shutdown();
}

TEST(Serve, ShutdownAnswersEveryRequestInFlight) {
  // 12 requests on one worker that takes 200 ms per batch of 2: they need 1.2 s, the
  // drain allows 0.3 s. Those that finish get 200, the rest 503; none is lost.
  Fixture f = slow_fixture(200, 2);
  f.options.drain_timeout_s = 0.3;
  f.options.model_endpoints = false;
  int port = 0;
  auto server = f.start(port);

  constexpr int kRequests = 12;
  std::vector<std::future<std::pair<int, std::string>>> results;
  for (int i = 0; i < kRequests; ++i) {
    results.push_back(std::async(std::launch::async, [port] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(30);
      auto res = cli.Post("/v2/models/slow/infer", body_of({1, 2, 3, 4}), kJson);
      return res ? std::make_pair(res->status, res->body) : std::make_pair(0, std::string());
    }));
  }
  ASSERT_TRUE(server->wait_until_in_flight(kRequests, 30.0));
  server->shutdown();
  int ok = 0, refused = 0;
  for (auto& r : results) {
    const auto [status, body] = r.get();
    if (status == 200) {
      ++ok;
    } else {
      ASSERT_EQ(status, 503) << body;
      EXPECT_NE(body.find("shutting down"), std::string::npos) << body;
      ++refused;
    }
  }
  EXPECT_EQ(ok + refused, kRequests);
  EXPECT_GE(refused, 1);
  EXPECT_EQ(server->in_flight(), 0);
}

// The chain with a 1 ms SLO and expired dropping: detect takes 5 ms, so the second
// stage's items are past their deadline and dropped there.
Fixture expired_chain_fixture() {
  Fixture f = chain_fixture();
  f.app.slo = 0.001;
  f.models.models = {noop_spec("detect", {4}, 5.0), noop_spec("classify", {4})};
  f.policies.dropping = DroppingKind::kExpired;
  return f;
}

TEST(Serve, DropsAreAnsweredAt503WithStageAndReason) {
  Fixture f = expired_chain_fixture();
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Post("/v2/models/chain/infer", body_of({1, 2, 3, 4}), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  const json err = json::parse(res->body);
  EXPECT_EQ(err["outcome"], "dropped");
  EXPECT_EQ(err["stage"], "classify");
  EXPECT_EQ(err["reason"], "expired");
  server->shutdown();
}

// A request of several rows, as KServe v2 sends a batch: `rows` values of `width` each.
std::string rows_of(const std::vector<std::vector<float>>& rows, const std::string& extra = "") {
  FloatTensor t{{static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, {}};
  for (const auto& r : rows) t.data.insert(t.data.end(), r.begin(), r.end());
  std::string body = make_infer_body(t);
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

// A fan-out stage answers any number of rows per input row: each output comes with its
// INT64 companion `<task>.input_row` naming, per output row, the input row it came from.
TEST(Serve, FanOutOutputsNameTheInputRowOfEachOutputRow) {
  Fixture f;
  use_detect_classify_dag(f);
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);
  // Row 0: three objects; row 1: none (its path ends at detect); row 2: two objects.
  const std::string body =
      rows_of({{1, -1, 2, -2, 3, 0}, {-1, -1, -1, -1, -1, -1}, {-1, 1, -1, 1, -1, -1}});
  auto res = cli.Post("/v2/models/dag/infer", body, kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json out = json::parse(res->body);
  std::map<std::string, json> by_name;
  for (const json& o : out["outputs"]) by_name[o["name"]] = o;
  ASSERT_EQ(by_name.size(), 4u) << res->body;
  EXPECT_EQ(by_name["classify"]["shape"], json::array({5, 6}));
  EXPECT_EQ(by_name["classify.input_row"]["datatype"], "INT64");
  EXPECT_EQ(by_name["classify.input_row"]["shape"], json::array({5}));
  EXPECT_EQ(by_name["classify.input_row"]["data"], json::array({0, 0, 0, 2, 2}));
  EXPECT_EQ(by_name["detect"]["shape"], json::array({1, 6}));
  EXPECT_EQ(by_name["detect.input_row"]["data"], json::array({1}));

  // Asked for by name, in binary: 8 little-endian bytes per output row.
  res = cli.Post("/v2/models/dag/infer",
                 rows_of({{1, -1, 2, -2, 3, 0}, {-1, 1, -1, 1, -1, -1}},
                         R"("outputs":[{"name":"classify.input_row","parameters":)"
                         R"({"binary_data":true}}])"),
                 kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::size_t n = std::stoul(res->get_header_value("Inference-Header-Content-Length"));
  out = json::parse(res->body.substr(0, n));
  ASSERT_EQ(out["outputs"].size(), 1u);
  EXPECT_EQ(out["outputs"][0]["parameters"]["binary_data_size"], 40);
  std::vector<int64_t> rows(5);
  ASSERT_EQ(res->body.size(), n + 40);
  std::memcpy(rows.data(), res->body.data() + n, 40);
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 0, 0, 1, 1}));
  server->shutdown();
}

// A request is answered whole: a row not completed makes it a 503 naming that row, and
// `rows` gives every row's outcome, so a client knows what to resend.
TEST(Serve, ADroppedRowIsNamedWithEveryRowsOutcome) {
  Fixture f = expired_chain_fixture();
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Post("/v2/models/chain/infer", rows_of({{1, 2, 3, 4}, {5, 6, 7, 8}}), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  const json err = json::parse(res->body);
  EXPECT_EQ(err["outcome"], "dropped");
  EXPECT_NE(err["error"].get<std::string>().find("row 0 of 2"), std::string::npos) << res->body;
  ASSERT_EQ(err["rows"].size(), 2u) << res->body;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(err["rows"][i]["row"], i);
    EXPECT_EQ(err["rows"][i]["outcome"], "dropped");
    EXPECT_EQ(err["rows"][i]["stage"], "classify");
    EXPECT_EQ(err["rows"][i]["reason"], "expired");
  }
  server->shutdown();
}

// More rows than the first stage batches at once would queue behind each other (and a
// policy purging items that wait past their batch timeout drops them on an idle server):
// such a request is refused at once, naming the limit. A request that fits is served.
TEST(Serve, MoreRowsThanTheFirstStageBatchesAreRefusedAtOnce) {
  Fixture f = slow_fixture(20.0, 1);
  f.policies.dropping = DroppingKind::kJigsaw;
  f.policies.stale_after = 0.001;
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Post("/v2/models/slow/infer", rows_of({{1, 2, 3, 4}, {5, 6, 7, 8}}), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_NE(res->body.find("a batch of 2 rows is more than model 'slow' takes at once: its "
                           "first stage batches at most 1"),
            std::string::npos)
      << res->body;
  res = cli.Post("/v2/models/slow/infer", rows_of({{1, 2, 3, 4}}), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  server->shutdown();
}

// The model's one input is taken whatever its name: a client of the Triton model the
// worker stands in for sends Triton's name (INPUT__0).
TEST(Serve, TheOneInputIsTakenUnderAnyName) {
  Fixture f = slow_fixture(0.0, 4);
  f.models.models = {noop_spec("work", {4})};
  int port = 0;
  auto server = f.start(port);
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Post(
      "/v2/models/slow/infer",
      R"({"inputs":[{"name":"INPUT__0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})",
      kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  server->shutdown();
}

TEST(Loadgen, ReplaysArrivalsAndFillsTheSummaryMetrics) {
  Fixture f = chain_fixture();
  int port = 0;
  auto server = f.start(port);
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 20; ++i) arrivals.push_back(Arrival{0.005 * i, 0, 0, 0.0});
  LoadgenOptions o;
  o.port = port;
  o.connections = 4;
  const LoadgenResult r = run_loadgen(f.app, arrivals, o);
  EXPECT_EQ(r.metrics.submitted(), 20u);
  EXPECT_EQ(r.metrics.count(Outcome::kOk), 20u);
  EXPECT_EQ(r.metrics.latency().count(), 20u);
  ASSERT_EQ(r.stats.status_counts.size(), 1u);
  EXPECT_EQ(r.stats.status_counts[0], std::make_pair(200, uint64_t{20}));
  server->shutdown();

  // The summary holds only what a client measured: the server's answers carry accuracy,
  // but batches, GPU time and sub-requests are null with the reason, and out of the table.
  const json summary = summarize(r.metrics, f.app, r.unmeasured);
  EXPECT_TRUE(summary["mean_accuracy"].is_number());
  for (const char* key : {"gpu_seconds", "wasted_gpu_seconds", "invalid_rate", "subrequests"}) {
    EXPECT_TRUE(summary[key].is_null()) << key << ": " << summary[key];
    EXPECT_TRUE(summary["not_measured"].contains(key)) << key;
  }
  EXPECT_FALSE(summary["not_measured"].contains("mean_accuracy"));
  for (const auto& [task, t] : summary["tasks"].items()) {
    EXPECT_TRUE(t["batches"].is_null()) << task;
    EXPECT_TRUE(t["gpu_seconds"].is_null()) << task;
    EXPECT_EQ(t["dropped"], 0) << task;
  }
  const std::string table = format_summary(summary);
  EXPECT_EQ(table.find("\n  sub-request violations "), std::string::npos) << table;
  EXPECT_EQ(table.find("\n  invalid (wasted) GPU "), std::string::npos) << table;
  EXPECT_EQ(table.find("\n  stage "), std::string::npos) << table;
  EXPECT_NE(table.find("\n  mean accuracy "), std::string::npos) << table;
  EXPECT_NE(table.find("\n  not measured: batches and GPU time"), std::string::npos) << table;
  EXPECT_NE(table.find("\n  not measured: sub-request violations"), std::string::npos) << table;
}

TEST(Loadgen, LateSendsAreCountedByTheirCause) {
  // One connection and answers that take 50 ms: requests 1 and 2 (due 1 and 2 ms in) wait
  // for it, so they are late because no connection was free, not because the client was
  // slow to send. (Request 0's send may be late on a busy machine: the other cause.)
  const OpenLoopClient one{"127.0.0.1", 1, 1, 1.0, "", false};
  const OpenLoopStats sent = run_open_loop(
      std::vector<double>{0.0, 0.001, 0.002}, one,
      [](std::size_t, httplib::Client&, const SinceStart&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the answer's time
      });
  EXPECT_EQ(sent.late_no_free_connection.count, 2u);
  EXPECT_GE(sent.late_no_free_connection.worst_s, 0.098);  // request 2 waits for two answers
  EXPECT_LE(sent.late_client_slow.count, 1u);
  EXPECT_GE(sent.max_send_lag_s, sent.late_no_free_connection.worst_s);
}

TEST(Loadgen, AClosedPortIsReportedWithTheWholeReason) {
  const testing::ClosedPort closed;
  ASSERT_GT(closed.port(), 0);
  const int port = closed.port();
  Fixture f = chain_fixture();
  LoadgenOptions o;
  o.port = port;
  try {
    run_loadgen(f.app, {Arrival{}}, o);
    FAIL() << "no error for a closed port";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("could not connect to 127.0.0.1:" + std::to_string(port) +
                        ": Connection refused"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace tessera
