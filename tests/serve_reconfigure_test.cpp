// Live reconfiguration of a running server (Server::reconfigure, /v2/tessera/deployment;
// docs/serve.md#live-re-planning): a new deployment applied while requests are in flight
// loses and duplicates none of them and serves afterwards; a bad one is refused with a
// clear error and the old deployment keeps serving. Real HTTP over loopback with the zoo's
// sleep model; tests wait on futures and the server's in-flight count, never on sleeps.

#include <gtest/gtest.h>
#include <httplib.h>

#include <future>
#include <nlohmann/json.hpp>
#include <regex>

#include "control/live_replanner.hpp"
#include "plan_fixture.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using nlohmann::json;
constexpr const char* kJson = "application/json";

ModelSpec sleep_spec(const std::string& variant, double latency_ms) {
  ModelSpec m;
  m.variant = variant;
  m.arch = "sleep";
  m.input_shape = {4};
  m.latency_ms = latency_ms;
  return m;
}

// App "work": one task with variants "fast" (deployed), "alt" (a model, not deployed) and
// "ghost" (profiled, but no model anywhere).
struct WorkApp {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  ModelsConfig models;
  ServeOptions options;
  WorkApp() {
    app.name = "work";
    app.slo = 20.0;
    Task t = testing::make_task("stage");
    t.variants = {Variant{"fast", 0.9, 1.0}, Variant{"alt", 0.95, 1.0}, Variant{"ghost", 1.0, 1.0}};
    app.tasks = {t};
    app.finalize();
    for (const char* v : {"fast", "alt", "ghost"})
      testing::add_affine(profiles, v, 1.0, 0.1, 8, "cpu");
    models.models = {sleep_spec("fast", 100.0), sleep_spec("alt", 20.0)};
    deployment.groups = {WorkerGroup{0, {0}, "cpu", 2, 1}};
    options.port = 0;
    options.drain_timeout_s = 5.0;
    options.keep_alive_timeout_s = 1.0;
    options.model_endpoints = false;
  }
};

std::string body() { return make_infer_body(FloatTensor{{1, 4}, {1, 2, 3, 4}}); }

// Sum of tessera_requests_total for the app over every outcome.
uint64_t answered_total(const std::string& metrics) {
  uint64_t n = 0;
  const std::regex line(R"re(tessera_requests_total\{app="work",outcome="[a-z_]+"\} (\d+))re");
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), line);
       it != std::sregex_iterator(); ++it) {
    n += std::stoull((*it)[1].str());
  }
  return n;
}

TEST(Reconfigure, InFlightRequestsEndExactlyOnceAndTheNewDeploymentServes) {
  WorkApp s;
  Server server(s.app, s.deployment, s.profiles, PolicyConfig{}, 1, s.models, s.options);
  const int port = server.start();
  constexpr int kRequests = 6;  // three batches of two at 100 ms on the one "fast" worker
  std::vector<std::future<int>> replies;
  for (int i = 0; i < kRequests; ++i) {
    replies.push_back(std::async(std::launch::async, [port] {
      httplib::Client cli("127.0.0.1", port);
      auto r = cli.Post("/v2/models/work/infer", body(), kJson);
      return r ? r->status : -1;
    }));
  }
  ASSERT_TRUE(server.wait_until_in_flight(kRequests, 30.0));

  // Two "alt" instances of batch 4 replace the "fast" one: its running batch finishes,
  // its queued requests move to the new instances.
  Deployment next;
  next.groups = {WorkerGroup{0, {1}, "cpu", 4, 2}};
  const ReconfigureResult r = server.reconfigure(next, nullptr, "test");
  ASSERT_TRUE(r.applied) << r.error;
  EXPECT_EQ(r.started, 2);
  EXPECT_EQ(r.stopped, 1);
  EXPECT_EQ(r.models_loaded, 1);
  for (auto& f : replies) EXPECT_EQ(f.get(), 200);

  // Every request ended exactly once; the new deployment serves the next one.
  httplib::Client cli("127.0.0.1", port);
  auto after = cli.Post("/v2/models/work/infer", body(), kJson);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(answered_total(cli.Get("/metrics")->body), static_cast<uint64_t>(kRequests + 1));
  const DeploymentStatus st = server.deployment_status();
  ASSERT_EQ(st.deployment.groups.size(), 1u);
  EXPECT_EQ(st.deployment.groups[0].variants, std::vector<int>{1});
  EXPECT_EQ(st.deployment.groups[0].count, 2);
  EXPECT_EQ(st.deployment.groups[0].max_batch, 4);
  ASSERT_EQ(st.group_batches.size(), 1u);
  EXPECT_GT(st.group_batches[0], 0u);
  EXPECT_EQ(st.arrivals, static_cast<uint64_t>(kRequests + 1));
  EXPECT_EQ(st.reconfigurations, 1u);
  EXPECT_GT(st.last_applied_unix_s, 0.0);
  ASSERT_EQ(st.history.size(), 1u);
  EXPECT_EQ(st.history[0].summary, "stage: alt@cpu x2 b4");
  EXPECT_EQ(st.history[0].note, "test");

  // The same target again changes nothing and is not counted.
  const ReconfigureResult same = server.reconfigure(next);
  EXPECT_TRUE(same.applied);
  EXPECT_EQ(same.started + same.stopped, 0);
  const std::string metrics = cli.Get("/metrics")->body;
  EXPECT_NE(metrics.find("tessera_reconfigurations_total 1\n"), std::string::npos);
  EXPECT_EQ(server.in_flight(), 0);
}

TEST(Reconfigure, ABadPlanIsRefusedAndTheOldDeploymentKeepsServing) {
  WorkApp s;
  Server server(s.app, s.deployment, s.profiles, PolicyConfig{}, 1, s.models, s.options);
  const int port = server.start();
  const auto refused = [&](const Deployment& d, const std::string& words) {
    const ReconfigureResult r = server.reconfigure(d);
    EXPECT_FALSE(r.applied);
    EXPECT_NE(r.error.find(words), std::string::npos) << r.error;
  };
  Deployment ghost;  // a variant no models file entry or zoo architecture serves
  ghost.groups = {WorkerGroup{0, {2}, "cpu", 2, 1}};
  refused(ghost, "'ghost'");
  Deployment unknown;  // a variant index the task does not have
  unknown.groups = {WorkerGroup{0, {7}, "cpu", 2, 1}};
  refused(unknown, "has no variant 7");
  Deployment empty;  // a task left without instances
  refused(empty, "no instance of task 'stage'");
  Deployment no_profile;
  no_profile.groups = {WorkerGroup{0, {1}, "gpu", 2, 1}};
  refused(no_profile, "no profile");

  // Over HTTP: an unknown variant name is a 400 naming it; nothing changed.
  httplib::Client cli("127.0.0.1", port);
  auto post =
      cli.Post("/v2/tessera/deployment",
               R"({"workers": [{"task": "stage", "variant": "nosuch", "segment": "cpu"}]})", kJson);
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 400);
  EXPECT_NE(post->body.find("nosuch"), std::string::npos) << post->body;
  post = cli.Post("/v2/tessera/deployment", "{not yaml: [", kJson);
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 400);

  auto res = cli.Post("/v2/models/work/infer", body(), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  auto get = cli.Get("/v2/tessera/deployment");
  ASSERT_TRUE(get);
  ASSERT_EQ(get->status, 200);
  const json doc = json::parse(get->body);
  EXPECT_EQ(doc["summary"], "stage: fast@cpu x1 b2");
  EXPECT_EQ(doc["reconfigurations"], 0);
  EXPECT_EQ(doc["groups"][0]["batches"], 1);

  // A good POST applies; GET shows it.
  post = cli.Post(
      "/v2/tessera/deployment",
      R"({"workers": [{"task": "stage", "variant": "alt", "segment": "cpu", "max_batch": 4}]})",
      kJson);
  ASSERT_TRUE(post);
  ASSERT_EQ(post->status, 200) << post->body;
  EXPECT_EQ(json::parse(post->body)["started"], 1);
  res = cli.Post("/v2/models/work/infer", body(), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  const json now = json::parse(cli.Get("/v2/tessera/deployment")->body);
  EXPECT_EQ(now["summary"], "stage: alt@cpu x1 b4");
  EXPECT_EQ(now["reconfigurations"], 1);
  EXPECT_EQ(now["history"][0]["deployment"], "stage: alt@cpu x1 b4");
}

// The live controller (serve --replan) driving a running server: windows are closed
// explicitly with a measured count; each new plan is applied with Server::reconfigure
// (the plan's profiles time the new instances) and the server serves on it.
TEST(LiveReplan, AStepInMeasuredDemandReconfiguresTheRunningServer) {
  const plan::PlanInput in = testing::tiny_plan_input();
  plan::PlanOptions options;
  options.space = plan::parse_search_space("A+S+T");
  control::ControllerOptions c;
  c.bin = 10.0;
  c.history_bins = 1;
  c.demand_step = 0.0;

  ModelsConfig models;
  models.models = {sleep_spec("d", 1.0), sleep_spec("c", 1.0)};
  Deployment first;
  first.groups = {WorkerGroup{0, {0}, "1g", 1, 1}, WorkerGroup{1, {0}, "1g", 1, 1}};
  ServeOptions options_s;
  options_s.port = 0;
  options_s.model_endpoints = false;
  Server server(in.app, first, in.profiles, PolicyConfig{}, 1, models, options_s);
  const int port = server.start();
  httplib::Client cli("127.0.0.1", port);

  control::LiveReplanner live(in, options, c);
  int workers_before = 0;
  for (const double rps : {20.0, 400.0}) {
    const control::LiveDecision d = live.close_window(static_cast<uint64_t>(rps * c.bin), c.bin);
    ASSERT_TRUE(d.apply.has_value()) << d.plan;
    const ReconfigureResult r = server.reconfigure(*d.apply, &live.input().profiles, d.plan);
    ASSERT_TRUE(r.applied) << r.error;
    const DeploymentStatus st = server.deployment_status();
    EXPECT_EQ(st.deployment.total_workers(), d.record.workers);
    EXPECT_GT(st.deployment.total_workers(), workers_before);  // the step needs more
    workers_before = st.deployment.total_workers();
    auto res = cli.Post("/v2/models/tiny/infer", body(), kJson);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
  }
  EXPECT_EQ(server.deployment_status().reconfigurations, 2u);
  // The same demand again keeps the plan: nothing to apply.
  EXPECT_FALSE(live.close_window(4000, c.bin).apply.has_value());
}

}  // namespace
}  // namespace tessera
