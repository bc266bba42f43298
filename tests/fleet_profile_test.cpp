// Profiles measured through a fleet (docs/serve.md#tessera-profile): a `remote:` model is
// timed through its backends, so its profile holds the network hop and the backend's own
// queueing on top of the model's time, and the file it writes is taken as is by the
// simulator and by a serving front end. The backends are in-process workers on loopback
// (fleet_support.hpp); `sleep` models make the model's own time known.

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fleet_support.hpp"
#include "metrics/report.hpp"
#include "models/model_factory.hpp"
#include "models/profiler.hpp"
#include "policy/policy_set.hpp"
#include "profile/profile_yaml.hpp"
#include "serve/fleet/remote_model.hpp"
#include "serve/kserve/protocol.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

using fleet::remote_spec;
using fleet::Worker;
using fleet::zoo;

constexpr double kSleepMs = 3.0;
constexpr double kPerItemMs = 0.5;

ModelSpec sleep_model(const std::string& variant) {
  ModelSpec m = zoo(variant, "sleep", {4});
  m.latency_ms = kSleepMs;
  m.per_item_ms = kPerItemMs;
  return m;
}

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The same `sleep` model timed in this process and through a worker, alone and with two
// instances at once: at every batch size the remote median is at least the local one and
// the model's own time, and every timed run went through the backend.
TEST(FleetProfile, ARemoteModelIsTimedThroughItsBackend) {
  const ModelSpec local_spec = sleep_model("m");
  ModelsConfig wm;
  wm.models = {local_spec};
  Worker w(wm);
  w.start();
  std::unique_ptr<Model> local = load_model(local_spec);
  const ModelSpec spec = remote_spec("m", {4}, {w.url()});
  RemoteModel remote(spec);

  ProfileOptions o;
  o.batches = {1, 4};
  o.warmup = 1;
  o.reps = 7;
  for (int n : {1, 2}) {
    o.concurrent = n;
    const ModelProfile here = profile_model(*local, local_spec, o);
    const uint64_t sent_before = remote.backends()[0].requests;
    const ModelProfile there = profile_model(remote, spec, o);
    const uint64_t sent = remote.backends()[0].requests - sent_before;
    ASSERT_EQ(there.timings.size(), o.batches.size());
    ASSERT_EQ(here.timings.size(), o.batches.size());
    for (std::size_t i = 0; i < o.batches.size(); ++i) {
      const int batch = o.batches[i];
      EXPECT_EQ(there.timings[i].batch, batch);
      EXPECT_GE(there.timings[i].median_ms, kSleepMs + kPerItemMs * batch)
          << "batch " << batch << ", " << n << " at once";
      EXPECT_GE(there.timings[i].median_ms, here.timings[i].median_ms)
          << "batch " << batch << ", " << n << " at once";
    }
    // One untimed run per batch size, then each instance's warm-up and timed runs (and
    // possibly extra untimed runs while the other instance finishes).
    const auto timed = static_cast<uint64_t>(o.batches.size()) *
                       static_cast<uint64_t>(1 + n * (o.warmup + o.reps));
    EXPECT_GE(sent, timed) << n << " at once";
    EXPECT_EQ(remote.backends()[0].failures, 0u);
    EXPECT_EQ(there.max_overlap, n);
  }
}

// A batched request reaching an idle worker runs as one batch: its rows arrive at the
// engine together (Endpoint::submit_rows), so eager batching does not start the first row
// alone and the rest after it (which made a batch of N cost two model runs through the
// fleet, read as a "hop" of a whole batch-1 run in the profiles).
TEST(FleetProfile, AWorkerRunsABatchedRequestAsOneBatch) {
  ModelsConfig wm;
  wm.models = {sleep_model("m")};
  Worker w(wm);
  w.start();
  RemoteModel remote(remote_spec("m", {4}, {w.url()}));
  std::vector<FloatTensor> rows(4, FloatTensor{{4}, {1, 2, 3, 4}});
  std::vector<const FloatTensor*> batch;
  for (const FloatTensor& r : rows) batch.push_back(&r);
  ASSERT_EQ(remote.run(batch).size(), 4u);
  httplib::Client c("127.0.0.1", w.port);
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  const std::string want = "tessera_variant_batches_total{app=\"m\",task=\"m\",variant=\"m\"} 1\n";
  EXPECT_NE(res->body.find(want), std::string::npos) << res->body;
}

#ifdef TESSERA_BINARY
// `tessera profile --models F --concurrent 2` on a models file whose model is `remote:`
// writes a profile that includes the hop and says so; `simulate` and a serving front end
// whose models are that file take the profile as is.
TEST(FleetProfile, TheProfileCommandWritesAProfileSimulateAndServeTake) {
  ModelsConfig wm;
  wm.models = {sleep_model("m")};
  Worker w(wm);
  w.start();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "fleet_profile";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "models.yaml")
      << "input: [4]\nmodels:\n  - variant: m\n    remote: "
      << "{endpoints: [" << w.url() << "], health_interval_ms: 0, output: [4]}\n";
  const std::string command =
      std::string(TESSERA_BINARY) + " profile --models " + (dir / "models.yaml").string() +
      " --batches 1,2,4 --warmup 1 --reps 3 --concurrent 2 --out " +
      (dir / "profiles.yaml").string() + " > " + (dir / "profile.log").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << slurp(dir / "profile.log");

  const ProfileTable table = load_profile_yaml_file(dir / "profiles.yaml");
  ASSERT_TRUE(table.has("m", "cpu"));
  for (int batch : {1, 2, 4}) {
    EXPECT_GE(to_ms(table.latency("m", "cpu", batch)), kSleepMs + kPerItemMs * batch)
        << "batch " << batch;
  }
  const std::string source = table.curve("m", "cpu").source;
  EXPECT_NE(source.find("through " + w.url()), std::string::npos) << source;
  EXPECT_NE(source.find("x 2 instances"), std::string::npos) << source;

  std::ofstream(dir / "run.yaml") << R"(app:
  name: fleet
  slo_ms: 500
  tasks: [{name: m, variants: [m]}]
profiles:
  - file: profiles.yaml
deployment:
  workers: [{task: m, variant: m, segment: cpu, max_batch: 4, count: 2}]
models: models.yaml
workload:
  source: {kind: poisson, rate_rps: 50, duration_s: 2}
policies: {preset: pard-hbf, batching: eager}
simulation: {seed: 1}
)";
  const RunSpec run = load_run_spec(dir / "run.yaml");
  const PolicySet policies(run.policies);
  Simulator sim(run.app, run.deployment, run.profiles, policies, run.sim);
  sim.run(*make_run_arrivals(run));
  const nlohmann::json summary = summarize(sim.metrics(), run.app);
  EXPECT_GT(summary["submitted"].get<uint64_t>(), 0u);
  EXPECT_GT(summary["ok"].get<uint64_t>(), 0u) << summary.dump();

  ServeOptions o;
  o.port = 0;
  o.http_threads = 2;
  o.warmup = false;
  Server front(run, load_models_config(run.models_file), o);
  const int port = front.start();
  httplib::Client c("127.0.0.1", port);
  FloatTensor in{{4}, {1, 2, 3, 4}};
  auto res = c.Post("/v2/models/fleet/infer", make_infer_body(in), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  front.shutdown();
}
#endif  // TESSERA_BINARY

}  // namespace
}  // namespace tessera
