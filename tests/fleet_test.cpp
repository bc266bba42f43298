// A fleet of backends (docs/serve.md#remote-backends): a front end whose models are
// `remote:` over `tessera serve --worker` servers started in this process on loopback
// (port 0, the bound port read back). Results equal a local run; a worker stopped under
// load loses no request and answers none twice, is shown down in /metrics and comes back
// after a health check; a hostile backend's replies are errors naming the backend and the
// field. Health checks are triggered explicitly (check_now / check_backends_now); no test
// sleeps to wait.

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "fleet_support.hpp"
#include "models/model_factory.hpp"
#include "robustness/raw_http.hpp"
#include "serve/fleet/remote_model.hpp"
#include "serve/fleet/remote_wire.hpp"
#include "serve/kserve/protocol.hpp"
#include "serve/server/server.hpp"
#include "serve/server/worker_mode.hpp"
#include "spec_error.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using testing::add_affine;
using testing::make_task;

using fleet::remote_spec;
using fleet::Worker;
using fleet::zoo;

// A front end serving app "fleet" (one task "m") whose model is `remote` over `urls`.
struct FrontEnd {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  PolicyConfig policies;
  ModelsConfig models;
  std::unique_ptr<Server> server;
  int port = 0;

  FrontEnd(const ModelSpec& remote, int instances) {
    app.name = "fleet";
    app.slo = 30.0;
    app.tasks = {make_task(remote.variant)};
    app.finalize();
    models.models = {remote};
    deployment.groups.push_back(WorkerGroup{0, {0}, "cpu", 4, instances});
    add_affine(profiles, remote.variant, 1.0, 0.1, 4, "cpu");
    ServeOptions o;
    o.port = 0;
    o.http_threads = 4;
    o.max_inflight = 512;
    o.drain_timeout_s = 5.0;
    server = std::make_unique<Server>(app, deployment, profiles, policies, 1, models, o);
    port = server->start();
  }
  ~FrontEnd() { server->shutdown(); }
  std::string metrics() {
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get("/metrics");
    return res ? res->body : "";
  }
};

FloatTensor ramp(std::vector<int64_t> shape, float start) {
  FloatTensor t;
  t.shape = std::move(shape);
  t.data.resize(static_cast<std::size_t>(shape_numel(t.shape)));
  for (std::size_t i = 0; i < t.data.size(); ++i) {
    t.data[i] = start + 0.01f * static_cast<float>(i % 97);
  }
  return t;
}

// The sample line that starts with `prefix` ("" if none; HELP and TYPE lines never match).
std::string metric_line(const std::string& text, const std::string& prefix) {
  auto at = text.rfind(prefix, 0) == 0 ? 0 : text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  if (text[at] == '\n') ++at;
  return text.substr(at, text.find('\n', at) - at);
}

double metric(const std::string& text, const std::string& prefix) {
  const std::string line = metric_line(text, prefix);
  return line.empty() ? -1.0 : std::stod(line.substr(line.rfind(' ') + 1));
}

// --- the models file ---

ModelsConfig parse(const std::string& yaml) {
  return parse_models_config(SpecNode::load_string(yaml, "models.yaml"));
}

TEST(FleetSpec, RemoteSourceParsesEveryField) {
  const ModelsConfig c = parse(R"(
models:
  - variant: det
    input: [4]
    remote:
      endpoints: [http://127.0.0.1:9001, "http://127.0.0.1:9002/"]
      protocol: http
      model: yolo
      input_name: images
      output_name: out
      output: [2, 3]
      timeout_ms: 250
      retries: 2
      health_interval_ms: 0
      health_timeout_ms: 100
      pool: 8
      max_reply_bytes: 4096
      binary: false
)");
  ASSERT_EQ(c.models.size(), 1u);
  const ModelSpec& m = c.models[0];
  EXPECT_EQ(m.source, ModelSpec::Source::kRemote);
  EXPECT_EQ(m.remote.endpoints.size(), 2u);
  EXPECT_EQ(m.remote.model, "yolo");
  EXPECT_EQ(m.remote.output_name, "out");
  EXPECT_EQ(m.remote.input_name, "images");
  EXPECT_EQ(m.remote.output, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.remote.timeout_ms, 250);
  EXPECT_EQ(m.remote.retries, 2);
  EXPECT_EQ(m.remote.pool, 8);
  EXPECT_EQ(m.remote.max_reply_bytes, 4096);
  EXPECT_FALSE(m.remote.binary);
  const RemoteAddress a = parse_remote_address(m.remote.endpoints[1], m.remote.protocol);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9002);
  // The model name defaults to the variant.
  EXPECT_EQ(parse("models: [{variant: v, remote: {endpoints: ['h:1'], protocol: grpc}}]")
                .models[0]
                .remote.model,
            "v");
}

TEST(FleetSpec, HostileRemoteFieldsAreErrorsNamingTheField) {
  struct Case {
    const char* yaml;
    const char* field;
  };
  const Case cases[] = {
      {"models: [{variant: v, remote: {endpoints: []}}]", "endpoints"},
      {"models: [{variant: v, remote: {endpoints: ['http://h']}}]", "endpoints[0]"},
      {"models: [{variant: v, remote: {endpoints: ['http://h:99999']}}]", "endpoints[0]"},
      {"models: [{variant: v, remote: {endpoints: ['https://h:1']}}]", "endpoints[0]"},
      {"models: [{variant: v, remote: {endpoints: ['h:1', 'h:1']}}]", "endpoints[1]"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], protocol: udp}}]", "protocol"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], timeout_ms: 0}}]", "timeout_ms"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], retries: 99}}]", "retries"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], model: 'a/b'}}]", "model"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], output: []}}]", "output"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], colour: red}}]", "colour"},
      {"models: [{variant: v, remote: {endpoints: ['h:1']}, zoo: noop}]", "models[0]"},
      {"models: [{variant: v, remote: {endpoints: ['h:1']}, seed: 3}]", "seed"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], api_key_env: 'sk-123 456'}}]",
       "api_key_env"},
      {"models: [{variant: v, remote: {endpoints: ['h:1'], api_key_env: K, api_key_file: f}}]",
       "remote"},
  };
  for (const Case& c : cases) {
    const SpecError e = testing::spec_error([&] { parse(c.yaml); });
    EXPECT_NE(e.field().find(c.field), std::string::npos) << c.yaml << " -> " << e.what();
  }
}

// --- worker mode and results ---

TEST(Fleet, WorkerServesEachModelAsAPlainModel) {
  ModelsConfig wm;
  wm.models = {zoo("a", "noop", {4}), zoo("b", "noop", {2})};
  Worker w(wm);
  w.start();
  EXPECT_EQ(w.server->endpoint_names(), (std::vector<std::string>{"a", "b"}));
  httplib::Client c("127.0.0.1", w.port);
  auto res = c.Post(
      "/v2/models/b/infer",
      R"({"inputs":[{"name":"input","datatype":"FP32","shape":[3,2],"data":[1,2,3,4,5,6]}]})",
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json out = json::parse(res->body)["outputs"][0];
  EXPECT_EQ(out["shape"], json::parse("[3,2]"));
  EXPECT_EQ(out["data"], json::parse("[1,2,3,4,5,6]"));
  EXPECT_FALSE(c.Post("/v2/models/tessera-worker/infer", "{}", "application/json")->status == 200);
  w.stop();
}

TEST(Fleet, WorkerModeRefusesAnEmulatedModel) {
  ModelsConfig wm;
  ModelSpec e = zoo("e", "noop", {4});
  e.source = ModelSpec::Source::kProfileTimed;
  wm.models = {e};
  EXPECT_THROW(make_worker_server(wm, WorkerOptions{}, ServeOptions{}), std::invalid_argument);
  EXPECT_THROW(make_worker_server(ModelsConfig{}, WorkerOptions{}, ServeOptions{}),
               std::invalid_argument);
}

// (a) The same zoo model, run locally and through the front end over two workers (HTTP
// with binary tensors, HTTP JSON, and gRPC), gives the same outputs.
TEST(Fleet, RemoteResultsEqualALocalRun) {
  const ModelSpec local_spec = zoo("cnn", "small_cnn", {3, 16, 16});
  ModelsConfig wm;
  wm.models = {local_spec};
  Worker w1(wm), w2(wm);
  w1.start(0, true);
  w2.start(0, true);
  auto local = load_model(local_spec);
  std::vector<FloatTensor> inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(ramp({3, 16, 16}, static_cast<float>(i)));
  std::vector<const FloatTensor*> batch;
  for (const auto& t : inputs) batch.push_back(&t);
  const std::vector<FloatTensor> want = local->run(batch);

  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    ModelSpec r = remote_spec("cnn", {3, 16, 16}, {w1.url(), w2.url()});
    if (variant == 1) r.remote.binary = false;
    if (variant == 2) {
      r.remote.protocol = RemoteSpec::Protocol::kGrpc;
      r.remote.endpoints = {"127.0.0.1:" + std::to_string(w1.grpc_port),
                            "grpc://127.0.0.1:" + std::to_string(w2.grpc_port)};
    }
    RemoteModel remote(r);
    EXPECT_EQ(remote.info().output_shape, local->info().output_shape);  // from metadata
    for (int call = 0; call < 2; ++call) {                              // both backends
      const std::vector<FloatTensor> got = remote.run(batch);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].shape, want[i].shape);
        for (std::size_t k = 0; k < got[i].data.size(); ++k) {
          EXPECT_NEAR(got[i].data[k], want[i].data[k], 1e-4f);
        }
      }
    }
    for (const RemoteBackendStats& b : remote.backends()) {
      EXPECT_TRUE(b.up);
      EXPECT_EQ(b.requests, 1u);
      EXPECT_EQ(b.failures, 0u);
    }
  }
  // And through a front end's HTTP API.
  FrontEnd fe(remote_spec("cnn", {3, 16, 16}, {w1.url(), w2.url()}), 2);
  httplib::Client c("127.0.0.1", fe.port);
  auto res = c.Post("/v2/models/fleet/infer", make_infer_body(inputs[3]), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json data = json::parse(res->body)["outputs"][0]["data"];
  ASSERT_EQ(data.size(), want[3].data.size());
  for (std::size_t k = 0; k < data.size(); ++k) {
    EXPECT_NEAR(data[k].get<float>(), want[3].data[k], 1e-4f);
  }
}

// (b) Three workers; N requests in flight from 8 clients; one worker stopped while it
// holds a batch. Every request ends exactly once: 200 with its own input back (the
// `sleep` model returns its input), or an error with a reason. The stopped worker shows
// down in /metrics, the batch it held was re-dispatched, and once restarted on its port a
// health check brings it back.
TEST(Fleet, AWorkerStoppedUnderLoadLosesNoRequest) {
  ModelsConfig wm;
  ModelSpec sleep = zoo("m", "sleep", {4});
  sleep.latency_ms = 20.0;
  wm.models = {sleep};
  Worker w0(wm), w1(wm), w2(wm);
  w0.start();
  w1.start();
  w2.start();
  FrontEnd fe(remote_spec("m", {4}, {w0.url(), w1.url(), w2.url()}, 2), 3);

  constexpr int kClients = 8;
  constexpr int kPerClient = 12;
  std::atomic<int> ok{0}, failed{0}, wrong{0}, unanswered{0};
  std::vector<std::string> reasons(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", fe.port);
      cli.set_read_timeout(30, 0);
      for (int i = 0; i < kPerClient; ++i) {
        FloatTensor in{{4}, {static_cast<float>(c), static_cast<float>(i), 0.5f, 1.5f}};
        auto res = cli.Post("/v2/models/fleet/infer", make_infer_body(in), "application/json");
        if (!res) {
          ++unanswered;
          continue;
        }
        if (res->status == 200) {
          const json data = json::parse(res->body)["outputs"][0]["data"];
          if (data == json(in.data)) {
            ++ok;
          } else {
            ++wrong;
          }
        } else {
          const json body = json::parse(res->body, nullptr, false);
          if (body.is_object() && body.contains("error") &&
              !body["error"].get<std::string>().empty()) {
            ++failed;
            reasons[static_cast<std::size_t>(c)] = body["error"];
          } else {
            ++wrong;
          }
        }
      }
    });
  }
  // Stop worker 1 while it holds a batch (waits for that, not for time).
  ASSERT_TRUE(w1.server->wait_until_in_flight(1, 20.0));
  const int port1 = w1.port;
  w1.stop();
  for (auto& t : clients) t.join();

  EXPECT_EQ(unanswered.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(ok.load() + failed.load(), kClients * kPerClient);
  // Two healthy backends remain and a failed batch is re-sent: none fails.
  EXPECT_EQ(failed.load(), 0) << reasons[0] << reasons[1];
  const std::string b1 = "backend=\"http://127.0.0.1:" + std::to_string(port1) + "\"";
  fe.server->check_backends_now();
  std::string text = fe.metrics();
  EXPECT_EQ(metric(text, "tessera_backend_up{model=\"m\"," + b1 + "}"), 0) << text;
  EXPECT_GE(metric(text, "tessera_backend_failures_total{model=\"m\"," + b1 + "}"), 1) << text;
  double redispatched = 0;
  for (const Worker* w : {&w0, &w2}) {
    redispatched += metric(
        text, "tessera_backend_redispatches_total{model=\"m\",backend=\"" + w->url() + "\"}");
  }
  EXPECT_GE(redispatched, 1) << text;

  // Restarted on its port, it is back after one health check, and takes work again.
  w1.start(port1);
  fe.server->check_backends_now();
  text = fe.metrics();
  EXPECT_EQ(metric(text, "tessera_backend_up{model=\"m\"," + b1 + "}"), 1) << text;
  const double before = metric(text, "tessera_backend_requests_total{model=\"m\"," + b1 + "}");
  httplib::Client cli("127.0.0.1", fe.port);
  for (int i = 0; i < 6; ++i) {
    FloatTensor in{{4}, {1, 2, 3, static_cast<float>(i)}};
    auto res = cli.Post("/v2/models/fleet/infer", make_infer_body(in), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
  }
  text = fe.metrics();
  EXPECT_GT(metric(text, "tessera_backend_requests_total{model=\"m\"," + b1 + "}"), before);
}

#ifdef TESSERA_BINARY
// `tessera serve --worker MODELS --port PORT` as a child process; its pid once it is
// ready (-1 if it never is).
pid_t spawn_worker(const std::string& models, int port, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string port_s = std::to_string(port);
    std::freopen(log.c_str(), "a", stderr);
    std::freopen(log.c_str(), "a", stdout);
    execl(TESSERA_BINARY, TESSERA_BINARY, "serve", "--worker", models.c_str(), "--port",
          port_s.c_str(), "--no-warmup", static_cast<char*>(nullptr));
    _exit(127);
  }
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1, 0);
  for (int i = 0; i < 1200; ++i) {  // at most a minute (a child loading libtorch)
    auto res = c.Get("/v2/health/ready");
    if (res && res->status == 200) return pid;
    if (waitpid(pid, nullptr, WNOHANG) == pid) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// A worker process killed (SIGKILL) while it holds a batch: the connection dies mid-call,
// the batch is re-sent to the other backend and answered once, with the right values; the
// dead backend is out of service, and a health check after its restart brings it back.
TEST(Fleet, AWorkerProcessKilledMidBatchIsReDispatched) {
  const std::string dir = ::testing::TempDir();
  const std::string models = dir + "fleet_worker_models.yaml";
  std::ofstream(models) << "input: [4]\nmodels:\n  - {variant: m, zoo: sleep, latency_ms: 500}\n";
  const std::string log = dir + "fleet_worker.log";
  const int port = robustness::free_port();
  pid_t child = spawn_worker(models, port, log);
  ASSERT_GT(child, 0) << "see " << log;
  ModelsConfig wm;
  wm.models = {zoo("m", "sleep", {4})};
  Worker local(wm);
  local.start();
  const std::string child_url = "http://127.0.0.1:" + std::to_string(port);
  ModelSpec spec = remote_spec("m", {4}, {child_url, local.url()}, 1);
  RemoteModel remote(spec);  // the first call goes to the first backend: the child

  FloatTensor in{{4}, {4, 3, 2, 1}};
  const FloatTensor* batch[] = {&in};
  std::vector<FloatTensor> out;
  std::string error;
  std::thread call([&] {
    try {
      out = remote.run(batch);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // Wait until the child holds the batch (its /metrics says so), then kill it.
  httplib::Client probe("127.0.0.1", port);
  bool holding = false;
  for (int i = 0; i < 2000 && !holding; ++i) {
    auto res = probe.Get("/metrics");
    holding = res && res->status == 200 && metric(res->body, "tessera_requests_in_flight ") >= 1;
  }
  EXPECT_TRUE(holding);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  call.join();

  EXPECT_EQ(error, "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, in.data);
  auto stats = remote.backends();
  EXPECT_FALSE(stats[0].up);
  EXPECT_EQ(stats[0].failures, 1u);
  EXPECT_EQ(stats[1].redispatches, 1u);
  EXPECT_EQ(stats[1].failures, 0u);

  child = spawn_worker(models, port, log);
  ASSERT_GT(child, 0) << "see " << log;
  remote.check_now();
  EXPECT_TRUE(remote.backends()[0].up);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}
#endif  // TESSERA_BINARY

// gRPC: a stopped backend's batch goes to the other one; the stopped one is out of service.
TEST(Fleet, GrpcBackendDownIsReDispatched) {
  ModelsConfig wm;
  wm.models = {zoo("m", "noop", {4})};
  Worker w1(wm), w2(wm);
  w1.start(0, true);
  w2.start(0, true);
  ModelSpec r = remote_spec(
      "m", {4},
      {"127.0.0.1:" + std::to_string(w1.grpc_port), "127.0.0.1:" + std::to_string(w2.grpc_port)});
  r.remote.protocol = RemoteSpec::Protocol::kGrpc;
  r.remote.timeout_ms = 2000;
  RemoteModel remote(r);
  w1.stop();  // the next call's first choice
  FloatTensor in{{4}, {1, 2, 3, 4}};
  const FloatTensor* batch[] = {&in};
  const std::vector<FloatTensor> out = remote.run(batch);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, in.data);
  const auto stats = remote.backends();
  EXPECT_FALSE(stats[0].up);
  EXPECT_EQ(stats[0].failures, 1u);
  EXPECT_EQ(stats[1].redispatches, 1u);
  remote.check_now();
  EXPECT_FALSE(remote.backends()[0].up);
  EXPECT_TRUE(remote.backends()[1].up);
}

// A worker started with keys serves its front end, which sends the key its models file
// names (a file, or an environment variable), over HTTP and gRPC; without the key the
// worker refuses it.
TEST(Fleet, AFrontEndSendsItsWorkersKey) {
  const std::string key_file =
      ::testing::TempDir() + "fleet_worker_" + std::to_string(::getpid()) + ".key";
  std::ofstream(key_file) << "# the workers' key\nworker-key\n";
  ::setenv("TESSERA_TEST_WORKER_KEY", "worker-key", 1);
  ModelsConfig wm;
  wm.models = {zoo("m", "noop", {4})};
  Worker w(wm);
  w.access.inference_keys = {"worker-key"};
  w.start(0, true);
  FloatTensor in{{4}, {1, 2, 3, 4}};
  const FloatTensor* batch[] = {&in};
  for (const bool grpc : {false, true}) {
    ModelSpec r =
        remote_spec("m", {4}, {grpc ? "127.0.0.1:" + std::to_string(w.grpc_port) : w.url()}, 0);
    if (grpc) r.remote.protocol = RemoteSpec::Protocol::kGrpc;
    // Without the key: the model's metadata is refused, and so is every batch.
    EXPECT_THROW(RemoteModel{r}, std::runtime_error) << (grpc ? "grpc" : "http");
    r.remote.output = {4};
    {
      RemoteModel keyless(r);
      EXPECT_THROW(keyless.run(batch), std::runtime_error);
    }
    r.remote.output.clear();
    (grpc ? r.remote.api_key_env : r.remote.api_key_file) =
        grpc ? "TESSERA_TEST_WORKER_KEY" : key_file;
    RemoteModel keyed(r);
    const std::vector<FloatTensor> out = keyed.run(batch);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data, in.data);
  }
  // A key that cannot be read stops the model's load, naming the model and the file.
  ModelSpec r = remote_spec("m", {4}, {w.url()});
  r.remote.api_key_file = key_file + ".missing";
  try {
    RemoteModel missing(r);
    ADD_FAILURE() << "loaded without its key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(".missing"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'m'"), std::string::npos) << e.what();
  }
  ::unsetenv("TESSERA_TEST_WORKER_KEY");
  std::filesystem::remove(key_file);
  w.stop();
}

TEST(Fleet, NoBackendInServiceIsAClearError) {
  ModelsConfig wm;
  wm.models = {zoo("m", "noop", {4})};
  Worker w(wm);
  w.start();
  ModelSpec r = remote_spec("m", {4}, {w.url()});
  RemoteModel remote(r);
  w.stop();
  FloatTensor in{{4}, {1, 2, 3, 4}};
  const FloatTensor* batch[] = {&in};
  try {
    remote.run(batch);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(w.url()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(remote.backends()[0].up);
  try {
    remote.run(batch);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no backend in service"), std::string::npos) << e.what();
  }
  // A missing model (404) is the request's fault: not retried, the backend stays up.
  w.start();
  remote.check_now();
  ModelSpec wrong = remote_spec("m", {4}, {w.url(), w.url() + "/"});
  wrong.remote.model = "nope";
  wrong.remote.output = {4};
  RemoteModel missing(wrong);
  EXPECT_THROW(missing.run(batch), std::runtime_error);
  const auto stats = missing.backends();
  EXPECT_EQ(stats[0].requests + stats[1].requests, 1u);
  EXPECT_TRUE(stats[0].up && stats[1].up);
}

// (c) A hostile backend: every bad reply is an error naming the backend and the field.
TEST(Fleet, HostileBackendRepliesAreClearErrors) {
  httplib::Server fake;
  std::string mode;
  std::mutex mode_mutex;
  fake.Get("/v2/health/ready",
           [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  fake.Post("/v2/models/m/infer", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mode_mutex);
    res.status = 200;
    if (mode == "garbage") {
      res.set_content("{\"outputs\": [ garbage", "application/json");
    } else if (mode == "shape") {
      res.set_content(
          R"({"outputs":[{"name":"o","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]})",
          "application/json");
    } else if (mode == "datatype") {
      res.set_content(
          R"({"outputs":[{"name":"o","datatype":"BYTES","shape":[1,4],"data":["a","b","c","d"]}]})",
          "application/json");
    } else if (mode == "count") {
      res.set_content(R"({"outputs":[{"name":"o","datatype":"FP32","shape":[1,4],"data":[1,2]}]})",
                      "application/json");
    } else if (mode == "binary") {
      const std::string head =
          R"({"outputs":[{"name":"o","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":1000}}]})";
      res.set_header("Inference-Header-Content-Length", std::to_string(head.size()));
      res.set_content(head + "abcd", "application/octet-stream");
    } else if (mode == "huge") {
      res.set_content(std::string(1 << 20, 'x'), "application/json");
    } else if (mode == "500") {
      res.status = 500;
      res.set_content(R"({"error":"boom"})", "application/json");
    } else if (mode == "nooutputs") {
      res.set_content(R"({"model_name":"m"})", "application/json");
    }
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { fake.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  ModelSpec r = remote_spec("m", {4}, {url}, 0);
  r.remote.output = {4};
  r.remote.max_reply_bytes = 64 * 1024;
  RemoteModel remote(r);
  FloatTensor in{{4}, {1, 2, 3, 4}};
  const FloatTensor* batch[] = {&in};
  const std::pair<const char*, const char*> cases[] = {
      {"garbage", "not JSON"},
      {"shape", "outputs[0].shape is [1, 3], expected [1, 4]"},
      {"datatype", "outputs[0].datatype 'BYTES'"},
      {"count", "outputs[0].data has 2 values, expected 4"},
      {"binary", "binary_data_size 1000 runs past the body's end"},
      {"huge", "larger than max_reply_bytes"},
      {"500", "HTTP 500"},
      {"nooutputs", "'outputs' is missing"},
  };
  for (const auto& [m, want] : cases) {
    {
      std::lock_guard lock(mode_mutex);
      mode = m;
    }
    remote.check_now();  // a failure took it out of service; the health check restores it
    ASSERT_TRUE(remote.backends()[0].up);
    try {
      remote.run(batch);
      ADD_FAILURE() << m << ": expected an error";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(url), std::string::npos) << m << ": " << what;
      EXPECT_NE(what.find(want), std::string::npos) << m << ": " << what;
    }
  }
  EXPECT_EQ(remote.backends()[0].failures, std::size(cases));
  fake.stop();
  serving.join();
}

TEST(FleetWire, ReplyDecodingChecksEveryField) {
  RemoteExpect e;
  e.backend = "b";
  e.output_shape = {2};
  e.batch = 2;
  const auto ok = decode_remote_reply(
      R"({"outputs":[{"name":"o","datatype":"INT32","shape":[2,2],"data":[[1,2],[3,4]]}]})",
      std::nullopt, e);
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_EQ(ok[1].data, (std::vector<float>{3, 4}));
  // Binary FP32 data after the JSON.
  const std::string head =
      R"({"outputs":[{"name":"o","datatype":"FP32","shape":[2,2],"parameters":{"binary_data_size":16}}]})";
  std::string body = head;
  const float v[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  body.append(reinterpret_cast<const char*>(v), sizeof v);
  const auto bin = decode_remote_reply(body, head.size(), e);
  EXPECT_EQ(bin[0].data, (std::vector<float>{1.5f, 2.5f}));
  EXPECT_THROW(decode_remote_reply(body, body.size() + 1, e), RemoteReplyError);
  EXPECT_THROW(decode_remote_reply("[1,2]", std::nullopt, e), RemoteReplyError);
  EXPECT_THROW(decode_remote_reply(
                   R"({"outputs":[{"name":"o","datatype":"FP32","shape":[2,-2],"data":[]}]})",
                   std::nullopt, e),
               RemoteReplyError);
  // The request: a leading batch dimension, binary data after the JSON header.
  FloatTensor a{{2}, {1, 2}}, b{{2}, {3, 4}};
  const FloatTensor* rows[] = {&a, &b};
  const RemoteRequestBody req = encode_remote_request(rows, "id1", "", true);
  ASSERT_TRUE(req.header_length);
  const InferRequest parsed = parse_infer_request(req.body, std::to_string(*req.header_length));
  ASSERT_EQ(parsed.inputs.size(), 1u);
  EXPECT_EQ(parsed.inputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(parsed.inputs[0].values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_TRUE(parsed.binary_data_output);
}

}  // namespace
}  // namespace tessera
