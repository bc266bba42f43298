// The Open Inference Protocol v2 over HTTP against a live `tessera serve` on loopback
// (noop models, fast and deterministic): batched inputs, binary tensors, output
// selection, parameters, versions, health codes, the model repository and statistics
// extensions. No test sleeps to wait: each request waits for its answer.

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <nlohmann/json.hpp>

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

ModelSpec noop(const std::string& variant) {
  ModelSpec m;
  m.variant = variant;
  m.arch = "noop";
  m.input_shape = {4};
  return m;
}

// detect -> classify, both noop on 4 values; served on any free port.
struct ChainServer {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  PolicyConfig policies;
  ModelsConfig models;
  ServeOptions options;
  std::unique_ptr<Server> server;
  int port = 0;

  explicit ChainServer(AccessConfig access = {}) {
    options.access = std::move(access);
    options.port = 0;
    options.drain_timeout_s = 5.0;
    options.max_inflight = 16;
    app.name = "chain";
    app.slo = 5.0;
    app.tasks = {make_task("detect"), make_task("classify")};
    app.edges = {make_edge(0, 1)};
    app.finalize();
    models.models = {noop("detect"), noop("classify")};
    for (TaskId t = 0; t < 2; ++t) {
      deployment.groups.push_back(WorkerGroup{t, {0}, "cpu", 4, 1});
      add_affine(profiles, app.tasks[t].variants[0].name, 1.0, 0.1, 4, "cpu");
    }
    server = std::make_unique<Server>(app, deployment, profiles, policies, 1, models, options);
    port = server->start();
  }
  ~ChainServer() { server->shutdown(); }
};

std::string rows_body(int rows, const std::string& extra = "") {
  json data = json::array();
  for (int i = 0; i < rows * 4; ++i) data.push_back(i);
  json doc = {{"id", "b"},
              {"inputs",
               {{{"name", "input"}, {"datatype", "INT32"}, {"shape", {rows, 4}}, {"data", data}}}}};
  std::string s = doc.dump();
  if (!extra.empty()) s.insert(s.size() - 1, "," + extra);
  return s;
}

TEST(KServeHttp, BatchedInputIsAnsweredTogether) {
  ChainServer cs;
  httplib::Client cli("127.0.0.1", cs.port);
  auto res =
      cli.Post("/v2/models/chain/infer", rows_body(3, R"("parameters":{"tag":"t1"})"), kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json out = json::parse(res->body);
  EXPECT_EQ(out["id"], "b");
  EXPECT_EQ(out["model_version"], "1");
  EXPECT_EQ(out["parameters"]["tag"], "t1");  // passed through
  EXPECT_EQ(out["parameters"]["outcome"], "ok");
  ASSERT_EQ(out["outputs"].size(), 2u);  // the output and, for 3 rows, its input rows
  EXPECT_EQ(out["outputs"][0]["shape"], json::array({3, 4}));
  json expect = json::array();
  for (int i = 0; i < 12; ++i) expect.push_back(i);
  EXPECT_EQ(out["outputs"][0]["data"], expect);
  EXPECT_EQ(out["outputs"][1]["name"], "classify.input_row");
  EXPECT_EQ(out["outputs"][1]["data"], json::array({0, 1, 2}));

  // Three items went through the engine; the statistics extension counts them.
  const json stats = json::parse(cli.Get("/v2/models/chain/stats")->body)["model_stats"][0];
  EXPECT_EQ(stats["name"], "chain");
  EXPECT_EQ(stats["inference_count"], 3);
  EXPECT_EQ(stats["inference_stats"]["success"]["count"], 1);
  EXPECT_GE(stats["execution_count"].get<int>(), 2);  // at least one batch per stage
  EXPECT_EQ(stats["inference_stats"]["fail"]["count"], 0);

  // The same counts as Triton-style Prometheus metrics, with the process metrics.
  const std::string metrics = cli.Get("/metrics")->body;
  for (const char* line :
       {"tessera_inference_request_success_total{model=\"chain\",version=\"1\"} 1\n",
        "tessera_inference_request_failure_total{model=\"chain\",version=\"1\"} 0\n",
        "tessera_inference_count_total{model=\"chain\",version=\"1\"} 3\n",
        "tessera_inference_pending_request_count{model=\"chain\",version=\"1\"} 0\n",
        "tessera_inference_queue_duration_seconds_count{model=\"chain\",version=\"1\"} 1\n",
        "tessera_inference_compute_output_duration_seconds_count{model=\"chain\",version=\"1\"} "
        "1\n",
        // One request of three rows: requests and rows are counted apart.
        "tessera_requests_total{app=\"chain\",outcome=\"ok\"} 1\n",
        "tessera_rows_total{app=\"chain\",outcome=\"ok\"} 3\n", "\nprocess_cpu_seconds_total ",
        "\nprocess_resident_memory_bytes ", "\nprocess_open_fds "}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line;
  }

  // Too large a batch (more values than --max-inflight items hold: the parse stops
  // there), and a batch of 0, are refused.
  res = cli.Post("/v2/models/chain/infer", rows_body(17), kJson);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("the request holds more than 64 tensor elements"), std::string::npos)
      << res->body;
  res =
      cli.Post("/v2/models/chain/infer",
               R"({"inputs":[{"name":"input","datatype":"FP32","shape":[0,4],"data":[]}]})", kJson);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("batch of 0"), std::string::npos) << res->body;
  EXPECT_EQ(json::parse(cli.Get("/v2/models/chain/stats")
                            ->body)["model_stats"][0]["inference_stats"]["fail"]["count"],
            2);
}

TEST(KServeHttp, BinaryInputsAndOutputs) {
  ChainServer cs;
  httplib::Client cli("127.0.0.1", cs.port);
  const std::string head =
      R"({"inputs":[{"name":"input","datatype":"UINT8","shape":[2,4],)"
      R"("parameters":{"binary_data_size":8}}],"outputs":[{"name":"classify","parameters":{"binary_data":true}}]})";
  const std::string data{1, 2, 3, 4, 5, 6, 7, (char)255};
  httplib::Headers h{{"Inference-Header-Content-Length", std::to_string(head.size())}};
  auto res = cli.Post("/v2/models/chain/infer", h, head + data, "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/octet-stream");
  const std::size_t n = std::stoul(res->get_header_value("Inference-Header-Content-Length"));
  ASSERT_EQ(res->body.size(), n + 8 * 4);
  const json out = json::parse(res->body.substr(0, n));
  EXPECT_EQ(out["outputs"][0]["parameters"]["binary_data_size"], 32);
  EXPECT_EQ(out["outputs"][0]["shape"], json::array({2, 4}));
  std::vector<float> got(8);
  std::memcpy(got.data(), res->body.data() + n, 32);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 255}));

  // Lying lengths and truncated binary data are 400s naming the problem.
  httplib::Headers lie{{"Inference-Header-Content-Length", "100000"}};
  res = cli.Post("/v2/models/chain/infer", lie, head + data, "application/octet-stream");
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("larger than the body"), std::string::npos) << res->body;
  res = cli.Post("/v2/models/chain/infer", h, head + data.substr(0, 6), "application/octet-stream");
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("truncated binary data"), std::string::npos) << res->body;
  // A datatype the FP32 model cannot take, and an unknown output.
  res = cli.Post(
      "/v2/models/chain/infer",
      R"({"inputs":[{"name":"input","datatype":"BYTES","shape":[4],"data":["a","b","c","d"]}]})",
      kJson);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("not supported"), std::string::npos) << res->body;
  res = cli.Post("/v2/models/chain/infer", rows_body(1, R"("outputs":[{"name":"nope"}])"), kJson);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("unknown output 'nope': model 'chain' has outputs 'classify'"),
            std::string::npos)
      << res->body;
}

TEST(KServeHttp, VersionsHealthAndRepository) {
  // Load and unload change state: enabled, with a control key (docs/security.md).
  ChainServer cs(AccessConfig{{}, {"control-key"}, true});
  httplib::Client cli("127.0.0.1", cs.port);
  cli.set_bearer_token_auth("control-key");
  const json meta = json::parse(cli.Get("/v2")->body);
  EXPECT_EQ(meta["extensions"],
            json::array({"binary_tensor_data", "parameters", "model_repository", "statistics"}));
  EXPECT_EQ(cli.Get("/v2/models/chain/versions/1")->status, 200);
  EXPECT_EQ(cli.Get("/v2/models/chain/versions/1/ready")->status, 200);
  EXPECT_EQ(cli.Get("/v2/models/chain/versions/2")->status, 404);
  EXPECT_EQ(cli.Get("/v2/models/chain/versions/2/ready")->status, 404);
  EXPECT_EQ(cli.Post("/v2/models/chain/versions/1/infer", rows_body(1), kJson)->status, 200);
  EXPECT_EQ(cli.Post("/v2/models/chain/versions/2/infer", rows_body(1), kJson)->status, 400);

  json index = json::parse(cli.Post("/v2/repository/index", "", kJson)->body);
  ASSERT_EQ(index.size(), 3u);  // the app and its two models
  EXPECT_EQ(index[0],
            json({{"name", "chain"}, {"version", "1"}, {"state", "READY"}, {"reason", ""}}));

  EXPECT_EQ(cli.Post("/v2/repository/models/chain/unload", "", kJson)->status, 200);
  EXPECT_EQ(cli.Get("/v2/models/chain/ready")->status, 400);  // 4xx: not ready
  EXPECT_EQ(cli.Get("/v2/health/ready")->status, 200);        // the server still is
  auto res = cli.Post("/v2/models/chain/infer", rows_body(1), kJson);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("'chain' is unloaded"), std::string::npos) << res->body;
  index = json::parse(cli.Post("/v2/repository/index", R"({"ready":true})", kJson)->body);
  EXPECT_EQ(index.size(), 2u);
  index = json::parse(cli.Post("/v2/repository/index", "", kJson)->body);
  EXPECT_EQ(index[0]["state"], "UNAVAILABLE");

  EXPECT_EQ(cli.Post("/v2/repository/models/chain/load", "", kJson)->status, 200);
  EXPECT_EQ(cli.Get("/v2/models/chain/ready")->status, 200);
  EXPECT_EQ(cli.Post("/v2/models/chain/infer", rows_body(1), kJson)->status, 200);
  EXPECT_EQ(cli.Post("/v2/repository/models/nope/load", "", kJson)->status, 400);
  EXPECT_EQ(cli.Post("/v2/repository/index", "[1]", kJson)->status, 400);

  const json all = json::parse(cli.Get("/v2/models/stats")->body);
  EXPECT_EQ(all["model_stats"].size(), 3u);
}

}  // namespace
}  // namespace tessera
