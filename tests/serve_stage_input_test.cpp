// Stage inputs (docs/serve.md#stage-inputs): a stage whose model says `stage_input: parent`
// runs on the output of the stage before it for the same request, not on the request's own
// input, so that the stages of a chain may take different shapes (a DNN cut into
// partitions). Over loopback with the zoo's `sleep` model given its own `output` shape, and
// with the middle stage a `remote:` model on an in-process worker; hostile specs are
// refused naming the file and field, or the variant and task.

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/error.hpp"
#include "fleet_support.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server.hpp"
#include "spec_error.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using testing::add_affine;
using testing::make_edge;
using testing::make_task;

constexpr const char* kJson = "application/json";

// `sleep` (no delay) from `in` to `out` values per item; `parent`: stage_input parent.
ModelSpec part(const std::string& variant, int64_t in, int64_t out, bool parent) {
  ModelSpec m;
  m.variant = variant;
  m.arch = "sleep";
  m.input_shape = {in};
  m.output_shape = {out};
  if (parent) m.stage_input = ModelSpec::StageInput::kParent;
  return m;
}

// The chain p0 -> p1 -> p2 ("parts"), one worker each.
struct Chain {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  PolicyConfig policies;
  ModelsConfig models;
  ServeOptions options;

  Chain() {
    app.name = "parts";
    app.slo = 5.0;
    app.tasks = {make_task("p0"), make_task("p1"), make_task("p2")};
    app.edges = {make_edge(0, 1), make_edge(1, 2)};
    app.finalize();
    for (TaskId t = 0; t < 3; ++t) {
      deployment.groups.push_back(WorkerGroup{t, {0}, "cpu", 4, 1});
      add_affine(profiles, app.tasks[t].variants[0].name, 1.0, 0.1, 4, "cpu");
    }
    options.port = 0;
    options.drain_timeout_s = 5.0;
    options.keep_alive_timeout_s = 1.0;
  }
  std::unique_ptr<Server> make() {
    return std::make_unique<Server>(app, deployment, profiles, policies, 1, models, options);
  }
};

json infer(int port, const std::string& model, std::vector<float> values, int* status) {
  httplib::Client cli("127.0.0.1", port);
  FloatTensor t{{1, static_cast<int64_t>(values.size())}, std::move(values)};
  auto res = cli.Post("/v2/models/" + model + "/infer", make_infer_body(t), kJson);
  *status = res ? res->status : -1;
  return res ? json::parse(res->body) : json();
}

// p0 takes the request's [4] and outputs [6] (its input, zero-padded); p1 takes that [6]
// and outputs [3]; p2 takes the [3]. On today's code every stage took the request's [4].
TEST(StageInput, EachPartitionRunsOnThePreviousPartitionsOutput) {
  Chain c;
  c.models.models = {part("p0", 4, 6, false), part("p1", 6, 3, true), part("p2", 3, 3, true)};
  auto server = c.make();
  const int port = server->start();
  int status = 0;
  json out = infer(port, "parts", {1, 2, 3, 4}, &status);
  ASSERT_EQ(status, 200) << out.dump();
  ASSERT_EQ(out["outputs"].size(), 1u);
  EXPECT_EQ(out["outputs"][0]["name"], "p2");
  EXPECT_EQ(out["outputs"][0]["shape"], json::array({1, 3}));
  EXPECT_EQ(out["outputs"][0]["data"], json::array({1.0, 2.0, 3.0}));
  // The app takes the first stage's input; a partition's own endpoint takes its own.
  httplib::Client cli("127.0.0.1", port);
  const json meta = json::parse(cli.Get("/v2/models/parts")->body);
  EXPECT_EQ(meta["inputs"][0]["shape"], json::array({-1, 4}));
  out = infer(port, "p1", {9, 8, 7, 6, 5, 4}, &status);
  ASSERT_EQ(status, 200) << out.dump();
  EXPECT_EQ(out["outputs"][0]["data"], json::array({9.0, 8.0, 7.0}));
  server->shutdown();
}

// The middle partition is a `remote:` model with its own input shape [6] on a worker.
TEST(StageInput, ARemotePartitionTakesItsOwnInputShape) {
  ModelsConfig wm;
  wm.models = {part("p1", 6, 3, false)};
  fleet::Worker worker(wm);
  worker.start();
  Chain c;
  ModelSpec remote = fleet::remote_spec("p1", {6}, {worker.url()});
  remote.stage_input = ModelSpec::StageInput::kParent;
  c.models.models = {part("p0", 4, 6, false), remote, part("p2", 3, 3, true)};
  auto server = c.make();
  const int port = server->start();
  for (int r = 0; r < 3; ++r) {
    int status = 0;
    const float x = static_cast<float>(r);
    const json out = infer(port, "parts", {x, x + 1, x + 2, x + 3}, &status);
    ASSERT_EQ(status, 200) << out.dump();
    EXPECT_EQ(out["outputs"][0]["data"], json::array({x, x + 1, x + 2}));
  }
  server->shutdown();
  worker.stop();
}

std::string construction_error(Chain& c) {
  try {
    c.make();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StageInput, AStageThatCannotTakeItsParentsOutputIsRefused) {
  {  // p1 takes [5], but p0 outputs [6]
    Chain c;
    c.models.models = {part("p0", 4, 6, false), part("p1", 5, 3, true), part("p2", 3, 3, true)};
    const std::string e = construction_error(c);
    EXPECT_NE(e.find("variant 'p1' takes input [5]"), std::string::npos) << e;
    EXPECT_NE(e.find("'p0''s output, [6]"), std::string::npos) << e;
  }
  {  // without stage_input p1 would have to take the request's [4]
    Chain c;
    c.models.models = {part("p0", 4, 6, false), part("p1", 6, 3, false), part("p2", 3, 3, true)};
    const std::string e = construction_error(c);
    EXPECT_NE(e.find("variant 'p1' takes input [6]"), std::string::npos) << e;
    EXPECT_NE(e.find("stage_input: parent"), std::string::npos) << e;
  }
  {  // p0 may pass on several items per request: whose output would p1 take?
    Chain c;
    c.app.tasks[0].variants[0].fanout_mean = 2.0;
    c.models.models = {part("p0", 4, 6, false), part("p1", 6, 3, true), part("p2", 3, 3, true)};
    const std::string e = construction_error(c);
    EXPECT_NE(e.find("task 'p1' takes its parent's output"), std::string::npos) << e;
    EXPECT_NE(e.find("task 'p0' upstream may pass on other than one item"), std::string::npos) << e;
  }
  {  // a join has two parents
    Chain c;
    c.app.edges = {make_edge(0, 1), make_edge(1, 2), make_edge(0, 2)};
    c.app.finalize();
    c.models.models = {part("p0", 4, 3, false), part("p1", 3, 3, true), part("p2", 3, 3, true)};
    const std::string e = construction_error(c);
    EXPECT_NE(e.find("task 'p2' takes its parent's output (stage_input: parent) but has 2"),
              std::string::npos)
        << e;
  }
}

TEST(StageInput, TheModelsFileNamesABadStageInputOrOutput) {
  const auto parse = [](const std::string& yaml) {
    return parse_models_config(SpecNode::load_string(yaml, "models.yaml"));
  };
  const ModelsConfig ok = parse(
      "models:\n  - {variant: a, zoo: sleep, input: [4], output: [2], stage_input: parent}\n");
  EXPECT_EQ(ok.models[0].stage_input, ModelSpec::StageInput::kParent);
  EXPECT_EQ(ok.models[0].output_shape, (std::vector<int64_t>{2}));
  SpecError e = testing::spec_error(
      [&] { parse("models:\n  - {variant: a, zoo: sleep, stage_input: sideways}\n"); });
  EXPECT_NE(std::string(e.what()).find("models.yaml"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("stage_input"), std::string::npos) << e.what();
  e = testing::spec_error(
      [&] { parse("models:\n  - {variant: a, zoo: resnet18, output: [2]}\n"); });
  EXPECT_NE(std::string(e.what()).find("output"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("only the zoo's 'sleep' model"), std::string::npos)
      << e.what();
}

}  // namespace
}  // namespace tessera
