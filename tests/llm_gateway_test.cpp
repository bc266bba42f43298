// The LLM gateway (docs/llm-gateway.md): the `llm.backends` schema and its hostile values;
// the streaming proxy against a scripted misbehaving backend (tests/fake_llm_backend.hpp)
// and against tessera's own LLM servers (tiny random-weight checkpoints): events relayed
// as sent, usage kept, retries before the first token only, error events after it, client
// disconnects cancelling upstream, health checks, and every request ending once.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "engine/worker.hpp"
#include "fake_llm_backend.hpp"
#include "llm_torch/decoder.hpp"
#include "serve/fleet/engine_load.hpp"
#include "serve/server/llm_gateway.hpp"
#include "serve/server/llm_route_request.hpp"
#include "serve/server/llm_server.hpp"
#include "spec/llm_backend_spec.hpp"
#include "spec/run_spec.hpp"
#include "tiny_llm_checkpoint.hpp"
#include "tiny_llm_run.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using testing::FakeLlmBackend;
using Script = FakeLlmBackend::Script;

std::filesystem::path temp_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_llm_gateway_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A run spec whose llm: section has `llm_extra` (YAML lines, indented two spaces) after the
// model and GPU; app, deployment and profiles of one task.
std::filesystem::path write_run(const std::string& tag, const std::string& llm_extra,
                                double ttft_slo_ms = 0.0) {
  return testing::write_tiny_llm_run(temp_dir(tag), 1, ttft_slo_ms, llm_extra);
}

std::string backends_yaml(const std::vector<std::string>& urls, const std::string& gateway) {
  std::string y = "  backends:\n";
  for (const auto& u : urls) y += "    - {url: " + u + "}\n";
  return y + "  gateway: {" + gateway + "}\n";
}

// The field a spec error names ("" when it loads).
std::string spec_error(const std::string& llm_extra) {
  try {
    load_run_spec(write_run("bad", llm_extra));
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(LlmGatewaySpec, HostileBackendValuesAreErrorsNamingFileAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  backends: []\n", "llm.backends"},
      {"  backends: {url: http://a:1}\n", "llm.backends"},
      {"  backends:\n    - {url: https://a:1}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: a:1}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://:1'}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://a:70000'}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://a:0'}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://a:x'}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://u:p@a:1'}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://a:1/v1?x=1'}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: \"http://a:1/\\nx\"}\n", "llm.backends[0].url"},
      {"  backends:\n    - {url: 'http://a:1'}\n    - {url: 'http://a:1/'}\n",
       "llm.backends[1].url"},
      {"  backends:\n    - {url: 'http://a:1', colour: red}\n", "colour"},
      {"  backends:\n    - {model: m}\n", "url"},
      {"  backends:\n    - {url: 'http://a:1', weights: fp8}\n", "llm.backends[0].weights"},
      {"  backends:\n    - {url: 'http://a:1', gpu: {memory_gb: -1, bandwidth_gbs: 1, tflops: "
       "1}}\n",
       "llm.backends[0].gpu.memory_gb"},
      {"  backends:\n    - {url: 'http://a:1', gpu: {memory_gb: .nan, bandwidth_gbs: 1, tflops: "
       "1}}\n",
       "llm.backends[0].gpu.memory_gb"},
      {"  backends:\n    - {url: 'http://a:1', parallel: {tp: 0}}\n",
       "llm.backends[0].parallel.tp"},
      {"  backends:\n    - {url: 'http://a:1', api_key_env: 'A B'}\n",
       "llm.backends[0].api_key_env"},
      {"  backends:\n    - {url: 'http://a:1', model: ''}\n", "llm.backends[0].model"},
      {backends_yaml({"http://a:1"}, "routing: random"), "llm.gateway.routing"},
      {backends_yaml({"http://a:1"}, "retries: -1"), "llm.gateway.retries"},
      {backends_yaml({"http://a:1"}, "timeout_ms: 0"), "llm.gateway.timeout_ms"},
      {backends_yaml({"http://a:1"}, "health_path: health"), "llm.gateway.health_path"},
      {backends_yaml({"http://a:1"}, "metrics_path: \"/m?x\""), "llm.gateway.metrics_path"},
      {backends_yaml({"http://a:1"}, "speed: 2"), "speed"},
      {backends_yaml({"http://a:1"}, "affinity_blocks: 0"), "llm.gateway.affinity_blocks"},
      {backends_yaml({"http://a:1"}, "affinity_load_factor: 0.5"),
       "llm.gateway.affinity_load_factor"},
      {backends_yaml({"http://a:1"}, "default_priority: urgent"), "llm.gateway.default_priority"},
      {"  gateway: {retries: 1}\n", "llm.gateway"},
  };
  for (const auto& [yaml, field] : cases) {
    const std::string error = spec_error(yaml);
    EXPECT_NE(error.find(field), std::string::npos) << yaml << " -> " << error;
    EXPECT_NE(error.find("run.yaml"), std::string::npos) << yaml << " -> " << error;
  }
}

TEST(LlmGatewaySpec, EachBackendHasItsDeploymentsOwnCostModel) {
  const RunSpec run = load_run_spec(
      write_run("hetero",
                "  backends:\n"
                "    - {url: 'http://10.0.0.1:8000', model: tiny-a}\n"
                "    - url: 'http://10.0.0.2:8000/engine/'\n"
                "      weights: int4\n"
                "      gpu: {name: slow, memory_gb: 1, bandwidth_gbs: 1, tflops: 0.01}\n"
                "    - url: 'http://[::1]:9000'\n"
                "      parallel: {tp: 2, tp_link: {bus_gbs: 50}}\n"
                "  gateway: {routing: round_robin, retries: 2, health_interval_ms: 0}\n"));
  const std::optional<LlmGatewaySpec> loaded = load_llm_gateway(run);
  ASSERT_TRUE(loaded);
  const LlmGatewaySpec& g = *loaded;
  ASSERT_EQ(g.backends.size(), 3u);
  EXPECT_EQ(g.routing, "round_robin");
  EXPECT_EQ(g.retries, 2);
  EXPECT_EQ(g.backends[0].model, "tiny-a");
  EXPECT_EQ(g.backends[1].model, "tiny");  // the llm: model's name by default
  EXPECT_EQ(g.backends[1].host, "10.0.0.2");
  EXPECT_EQ(g.backends[1].prefix, "/engine");
  EXPECT_EQ(g.backends[2].host, "::1");
  EXPECT_EQ(g.backends[2].port, 9000);
  EXPECT_DOUBLE_EQ(g.backends[1].shape.weight_bytes, 0.5);
  EXPECT_EQ(g.backends[2].parallel.tp, 2u);
  // The same step costs each backend its own time: the slow GPU's the longest.
  Worker w;
  StepContents step;
  step.tokens_in = 512;
  step.context_tokens = 512;
  const Time t0 = g.backends[0].cost->step_time(w, step);
  const Time t1 = g.backends[1].cost->step_time(w, step);
  const Time t2 = g.backends[2].cost->step_time(w, step);
  EXPECT_GT(t1, t0);
  EXPECT_NE(t2, t0);
  EXPECT_GT(g.backends[1].kv_blocks, 0u);
  // The routers' inputs: each backend's step cost, sampled from its own model (exactly,
  // for the analytic one).
  const LlmRouterSetup setup = llm_router_setup(g);
  ASSERT_EQ(setup.step_costs.size(), 3u);
  const LlmStepCost& c0 = setup.step_costs[0];
  EXPECT_NEAR(c0.step + 512 * c0.prefill_token + 512 * c0.context_token, t0, 1e-9 + 1e-6 * t0);
  EXPECT_GT(setup.step_costs[1].step, c0.step);
}

// ---- the proxy against scripted backends ----

struct Answer {
  int status = 0;
  std::string body;
  bool error = false;  // no answer at all
};

Answer post(int port, const std::string& path, const std::string& body) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(30, 0);
  auto res = cli.Post(path, body, "application/json");
  if (!res) return Answer{0, "", true};
  return Answer{res->status, res->body, false};
}

const std::string kStreamBody = R"({"prompt":"hi","max_tokens":3,"stream":true})";
const std::string kWholeBody = R"({"prompt":"hi","max_tokens":3})";

struct Gateway {
  Gateway(const std::vector<std::string>& urls, const std::string& gateway_yaml,
          int max_inflight = 16) {
    const RunSpec run = load_run_spec(write_run("gw", backends_yaml(urls, gateway_yaml)));
    LlmGatewayOptions o;
    o.port = 0;
    o.max_inflight = max_inflight;
    o.drain_timeout_s = 2.0;
    gateway = std::make_unique<LlmGateway>(run, o);
    port = gateway->start();
  }
  ~Gateway() {
    gateway->shutdown();
    const LlmGatewayLedger l = gateway->ledger();
    EXPECT_EQ(l.admitted, l.ended()) << "every admitted request ends exactly once";
  }
  std::unique_ptr<LlmGateway> gateway;
  int port = 0;
};

bool wait_for(const std::function<bool()>& done, double seconds = 20.0) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

const std::string kNoChecks = "routing: round_robin, health_interval_ms: 0, timeout_ms: 500";

TEST(LlmGatewayProxy, RelaysTheStreamAsSentWithUsageAndTheWholeAnswer) {
  FakeLlmBackend good(Script::kGood);
  Gateway g({good.url()}, kNoChecks);
  const Answer s = post(g.port, "/v1/completions", kStreamBody);
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.body, FakeLlmBackend::good_stream());  // byte for byte, usage included
  const Answer w = post(g.port, "/v1/completions", kWholeBody);
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(json::parse(w.body)["usage"]["completion_tokens"], 3);
  // The backend's model name went upstream.
  EXPECT_EQ(json::parse(good.last_body)["model"], "tiny");
  const LlmGatewayLedger l = g.gateway->ledger();
  EXPECT_EQ(l.ok, 2u);
  EXPECT_EQ(l.retried, 0u);
}

TEST(LlmGatewayProxy, EventsAreRelayedAsTheyArriveNotBuffered) {
  FakeLlmBackend gated(Script::kGoodAfterGate);
  Gateway g({gated.url()}, kNoChecks);
  // The client opens the gate when it has the first event: a gateway that buffered the
  // stream would hold it back and the backend would wait out its 10 s gate.
  httplib::Client cli("127.0.0.1", g.port);
  std::string got;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = kStreamBody;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, std::size_t n, uint64_t, uint64_t) {
    got.append(data, n);
    if (got.find("\n\n") != std::string::npos) gated.open_gate();
    return true;
  };
  auto res = cli.send(req);
  ASSERT_TRUE(res);
  EXPECT_FALSE(gated.gate_timed_out);
  EXPECT_EQ(got, FakeLlmBackend::good_stream());
}

TEST(LlmGatewayProxy, AFailureBeforeTheFirstTokenIsRetriedOnceElsewhere) {
  for (Script bad : {Script::kStatus500, Script::kGarbage, Script::kStallBeforeFirst}) {
    FakeLlmBackend failing(bad);
    FakeLlmBackend good(Script::kGood);
    Gateway g({failing.url(), good.url()}, kNoChecks);
    const Answer s = post(g.port, "/v1/completions", kStreamBody);
    EXPECT_EQ(s.status, 200);
    EXPECT_EQ(s.body, FakeLlmBackend::good_stream());
    EXPECT_EQ(failing.requests, 1);
    EXPECT_EQ(good.requests, 1);
    const auto b = g.gateway->backends();
    EXPECT_FALSE(b[0].up) << "a failed backend is out of service";
    EXPECT_TRUE(b[1].up);
    const LlmGatewayLedger l = g.gateway->ledger();
    EXPECT_EQ(l.retried, 1u);
    EXPECT_EQ(l.ok, 1u);
    failing.release();
  }
}

TEST(LlmGatewayProxy, OnlyOneRetryThenAnErrorAnswer) {
  FakeLlmBackend a(Script::kStatus500), b(Script::kStatus500), c(Script::kGood);
  Gateway g({a.url(), b.url(), c.url()}, kNoChecks);
  const Answer s = post(g.port, "/v1/completions", kStreamBody);
  EXPECT_EQ(s.status, 502);
  EXPECT_NE(s.body.find("500"), std::string::npos) << s.body;
  EXPECT_EQ(a.requests + b.requests, 2);
  EXPECT_EQ(c.requests, 0);
  EXPECT_EQ(g.gateway->ledger().failed, 1u);
}

TEST(LlmGatewayProxy, AFailureAfterTheFirstTokenEndsTheStreamWithAnErrorEvent) {
  for (Script bad : {Script::kDisconnectAfterFirst, Script::kStallAfterFirst}) {
    FakeLlmBackend failing(bad);
    FakeLlmBackend good(Script::kGood);
    Gateway g({failing.url(), good.url()}, kNoChecks);
    const Answer s = post(g.port, "/v1/completions", kStreamBody);
    EXPECT_EQ(s.status, 200);
    // The first token as sent, then an error event and [DONE]: never a second answer.
    ASSERT_EQ(s.body.rfind(FakeLlmBackend::first_event(), 0), 0u) << s.body;
    EXPECT_NE(s.body.find("data: {\"error\""), std::string::npos) << s.body;
    EXPECT_EQ(s.body.substr(s.body.size() - 14), "data: [DONE]\n\n");
    EXPECT_EQ(good.requests, 0) << "no retry after the first token";
    const LlmGatewayLedger l = g.gateway->ledger();
    EXPECT_EQ(l.failed, 1u);
    EXPECT_EQ(l.retried, 0u);
    failing.release();
  }
}

TEST(LlmGatewayProxy, AClientThatGoesAwayCancelsUpstream) {
  FakeLlmBackend slow(Script::kLongStream);
  Gateway g({slow.url()}, kNoChecks);
  {
    httplib::Client cli("127.0.0.1", g.port);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = kStreamBody;
    req.set_header("Content-Type", "application/json");
    int events = 0;
    req.content_receiver = [&](const char*, std::size_t, uint64_t, uint64_t) {
      return ++events < 3;  // hang up after a few chunks
    };
    cli.send(req);
  }
  ASSERT_TRUE(wait_for([&] { return g.gateway->ledger().cancelled == 1; }));
  // The backend saw its connection close long before its 2000 events.
  ASSERT_TRUE(wait_for([&] { return slow.saw_client_gone.load(); }));
  EXPECT_EQ(g.gateway->ledger().ok, 0u);
}

TEST(LlmGatewayProxy, ABackendOutOfServiceStaysOutUntilItsHealthCheckPasses) {
  FakeLlmBackend a(Script::kGood);
  a.healthy = false;
  Gateway g({a.url()}, kNoChecks);
  EXPECT_FALSE(g.gateway->backends()[0].up);
  httplib::Client cli("127.0.0.1", g.port);
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503) << "no backend in service";
  const Answer refused = post(g.port, "/v1/completions", kWholeBody);
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.body.find(a.url() + "/health answered 503"), std::string::npos) << refused.body;
  EXPECT_EQ(a.requests, 0);
  a.healthy = true;
  g.gateway->check_now();
  EXPECT_TRUE(g.gateway->backends()[0].up);
  EXPECT_EQ(post(g.port, "/v1/completions", kWholeBody).status, 200);
  const LlmGatewayLedger l = g.gateway->ledger();
  EXPECT_EQ(l.failed, 1u);
  EXPECT_EQ(l.ok, 1u);
}

TEST(LlmGatewayProxy, PeriodicHealthChecksBringABackendBack) {
  FakeLlmBackend a(Script::kStatus500);
  Gateway g({a.url()}, "health_interval_ms: 20, timeout_ms: 500");
  EXPECT_EQ(post(g.port, "/v1/completions", kWholeBody).status, 502);
  EXPECT_FALSE(g.gateway->backends()[0].up);
  ASSERT_TRUE(wait_for([&] { return g.gateway->backends()[0].up; }));
}

// ---- kv_load routing: vLLM's scheduler and KV-cache gauges ----

std::string vllm_metrics(double running, double waiting, double kv) {
  return fmt::format(
      "# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{{model_name=\"tiny\"}} {}\n"
      "vllm:num_requests_waiting{{model_name=\"tiny\"}} {}\n"
      "vllm:kv_cache_usage_perc{{model_name=\"tiny\"}} {}\n",
      running, waiting, kv);
}

TEST(EngineLoad, ReadsVllmsGaugesAndRefusesHostileText) {
  std::string why;
  auto load = parse_engine_load(vllm_metrics(3, 2, 0.25) +
                                    "vllm:num_requests_waiting{model_name=\"b\",x=\"}{ \\\" \"} "
                                    "1 1700000000\r\nother_metric NaN\n",
                                why);
  ASSERT_TRUE(load) << why;
  EXPECT_EQ(load->running, 3);
  EXPECT_EQ(load->waiting, 3);  // summed over the label sets
  EXPECT_EQ(load->kv_usage, 0.25);
  EXPECT_EQ(parse_engine_load("vllm:gpu_cache_usage_perc 0.5\nvllm:num_requests_waiting 0\n", why)
                ->kv_usage,
            0.5);                                                            // the pre-V1 name
  for (const char* bad : {"vllm:num_requests_waiting{model_name=\"a\" 1\n",  // open labels
                          "vllm:num_requests_waiting -1\n", "vllm:num_requests_waiting NaN\n",
                          "vllm:num_requests_waiting 1e999\n", "vllm:num_requests_waiting\n",
                          "vllm:num_requests_waiting 2x\n", "vllm:num_requests_running 1\n", "",
                          "\x01\xff garbage"}) {
    why.clear();
    EXPECT_FALSE(parse_engine_load(bad, why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

TEST(LlmGatewayRouting, KvLoadPicksTheEngineWithTheShortestQueueThenTheEmptierCache) {
  FakeLlmBackend busy(Script::kGood), idle(Script::kGood);
  busy.set_metrics(vllm_metrics(8, 5, 0.9));
  idle.set_metrics(vllm_metrics(1, 0, 0.2));
  {
    // Checked at start only: the loads read then decide.
    Gateway g({busy.url(), idle.url()}, "routing: kv_load, health_interval_ms: 0");
    for (int i = 0; i < 4; ++i) EXPECT_EQ(post(g.port, "/v1/completions", kWholeBody).status, 200);
    EXPECT_EQ(busy.requests, 0);
    EXPECT_EQ(idle.requests, 4);
    const std::string metrics = httplib::Client("127.0.0.1", g.port).Get("/metrics")->body;
    EXPECT_NE(metrics.find("tessera_gateway_backend_waiting{backend=\"" + busy.url() + "\"} 5"),
              std::string::npos)
        << metrics;
  }
  // Equal queues: the emptier KV cache; an engine without the metrics counts as full.
  FakeLlmBackend no_metrics(Script::kGood);
  busy.set_metrics(vllm_metrics(8, 0, 0.9));
  idle.set_metrics(vllm_metrics(1, 0, 0.2));
  Gateway g({no_metrics.url(), busy.url(), idle.url()}, "routing: kv_load, health_interval_ms: 0");
  EXPECT_EQ(post(g.port, "/v1/completions", kWholeBody).status, 200);
  EXPECT_EQ(idle.requests, 5);
  EXPECT_EQ(busy.requests, 0);
  EXPECT_EQ(no_metrics.requests, 0);
}

// ---- what a request carries for routing: prompt, prefix, session, priority, SLOs ----

TEST(LlmRouteRequest, ReadsThePromptSessionPriorityAndSlosHeadersFirst) {
  LlmRequestDefaults defaults;
  defaults.ttft_slo = 0.5;
  defaults.tpot_slo = 0.05;
  defaults.block_bytes = 8;
  defaults.max_blocks = 2;
  json body = json::parse(R"({"prompt":"0123456789abcdefXYZ","tessera":{"priority":"critical",
      "ttft_slo_ms":200,"session":"s1"}})");
  LlmRequestRouting r;
  ASSERT_FALSE(read_llm_routing(body, {{"x-tessera-ttft-slo-ms", "250.5"}}, false, defaults, r));
  EXPECT_FALSE(body.contains("tessera"));  // not sent upstream
  EXPECT_EQ(r.request.prompt_tokens, 5u);  // 19 bytes at 4 a token
  EXPECT_EQ(r.prefix_hashes.size(), 2u);
  EXPECT_EQ(r.request.priority, LlmPriority::kCritical);
  EXPECT_DOUBLE_EQ(r.request.ttft_slo, 0.2505);  // the header over the body
  EXPECT_DOUBLE_EQ(r.request.tpot_slo, 0.05);    // the run spec's
  EXPECT_EQ(r.request.session_key, llm_hash("s1"));
  EXPECT_EQ(r.route().prefix_hashes.size(), 2u);
  // A chat's messages: the same system prompt gives the same leading blocks.
  json chat1 = json::parse(R"({"messages":[{"role":"system","content":"You are terse."},
      {"role":"user","content":[{"type":"text","text":"one"}]}]})");
  json chat2 = json::parse(R"({"messages":[{"role":"system","content":"You are terse."},
      {"role":"user","content":"two"}]})");
  LlmRequestRouting c1, c2;
  ASSERT_FALSE(read_llm_routing(chat1, {}, true, defaults, c1));
  ASSERT_FALSE(read_llm_routing(chat2, {}, true, defaults, c2));
  EXPECT_EQ(c1.prefix_hashes, c2.prefix_hashes);
  EXPECT_EQ(c1.request.priority, LlmPriority::kSheddable);
  EXPECT_EQ(c1.request.session_key, 0u);
  // Token ids count one token each; a list of prompts counts all of them.
  json ids = json::parse(R"({"prompt":[1,2,3,4,5]})");
  json list = json::parse(R"({"prompt":["abcd","efgh"]})");
  LlmRequestRouting i, l;
  ASSERT_FALSE(read_llm_routing(ids, {}, false, defaults, i));
  ASSERT_FALSE(read_llm_routing(list, {}, false, defaults, l));
  EXPECT_EQ(i.request.prompt_tokens, 5u);
  EXPECT_EQ(i.prefix_hashes.size(), 2u);  // 20 bytes, blocks of 8
  EXPECT_EQ(l.request.prompt_tokens, 2u);
}

TEST(LlmRouteRequest, HostileValuesAreRefusedNamingTheField) {
  const std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>>
      headers = {
          {{{"x-tessera-priority", "urgent"}}, "x-tessera-priority"},
          {{{"x-tessera-ttft-slo-ms", "-1"}}, "x-tessera-ttft-slo-ms"},
          {{{"x-tessera-ttft-slo-ms", "0"}}, "x-tessera-ttft-slo-ms"},
          {{{"x-tessera-ttft-slo-ms", "abc"}}, "x-tessera-ttft-slo-ms"},
          {{{"x-tessera-ttft-slo-ms", "nan"}}, "x-tessera-ttft-slo-ms"},
          {{{"x-tessera-ttft-slo-ms", "1e300"}}, "x-tessera-ttft-slo-ms"},
          {{{"x-tessera-tpot-slo-ms", "10ms"}}, "x-tessera-tpot-slo-ms"},
          {{{"x-tessera-session", ""}}, "x-tessera-session"},
          {{{"x-tessera-session", std::string(300, 'a')}}, "x-tessera-session"},
          {{{"x-tessera-priority", "critical"}, {"x-tessera-priority", "critical"}},
           "x-tessera-priority"},
          {{{"x-tessera-colour", "red"}}, "x-tessera-colour"},
      };
  for (const auto& [h, field] : headers) {
    json body = json::parse(R"({"prompt":"x"})");
    LlmRequestRouting r;
    const auto e = read_llm_routing(body, h, false, {}, r);
    ASSERT_TRUE(e) << field;
    EXPECT_EQ(e->field, field);
    EXPECT_NE(e->message.find(field), std::string::npos) << e->message;
  }
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {R"({"tessera":5})", "tessera"},
      {R"({"tessera":{"priority":1}})", "tessera.priority"},
      {R"({"tessera":{"priority":"low"}})", "tessera.priority"},
      {R"({"tessera":{"ttft_slo_ms":"100"}})", "tessera.ttft_slo_ms"},
      {R"({"tessera":{"tpot_slo_ms":-5}})", "tessera.tpot_slo_ms"},
      {R"({"tessera":{"tpot_slo_ms":1e12}})", "tessera.tpot_slo_ms"},
      {R"({"tessera":{"session":7}})", "tessera.session"},
      {R"({"tessera":{"colour":"red"}})", "tessera.colour"},
  };
  for (const auto& [text, field] : bodies) {
    json body = json::parse(text);
    LlmRequestRouting r;
    const auto e = read_llm_routing(body, {}, false, {}, r);
    ASSERT_TRUE(e) << text;
    EXPECT_EQ(e->field, field) << text;
  }
}

struct Posted {
  int status = 0;
  std::string body;
  std::string retry_after;
};

Posted post_with(int port, const std::string& body, const httplib::Headers& headers) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(30, 0);
  auto res = cli.Post("/v1/completions", headers, body, "application/json");
  if (!res) return {};
  return {res->status, res->body, res->get_header_value("Retry-After")};
}

TEST(LlmGatewayRouting, PrefixAffinitySendsASharedPrefixAndASessionToOneBackend) {
  FakeLlmBackend a(Script::kGood), b(Script::kGood), c(Script::kGood);
  Gateway g({a.url(), b.url(), c.url()}, "routing: prefix_affinity, health_interval_ms: 0");
  const auto counts = [&] { return std::vector<int>{a.requests, b.requests, c.requests}; };
  // Four blocks of 16 tokens (64 bytes each) make the key: the tails differ.
  const std::string system(300, 's');
  for (int k = 0; k < 6; ++k) {
    const json body = {{"prompt", system + std::to_string(k)}, {"max_tokens", 3}};
    ASSERT_EQ(post(g.port, "/v1/completions", body.dump()).status, 200);
  }
  std::vector<int> n = counts();
  EXPECT_EQ(*std::max_element(n.begin(), n.end()), 6) << n[0] << " " << n[1] << " " << n[2];
  // A session: every prompt of it to one backend.
  for (int k = 0; k < 6; ++k) {
    const json body = {{"prompt", "question " + std::to_string(k)}, {"max_tokens", 3}};
    ASSERT_EQ(post_with(g.port, body.dump(), {{"X-Tessera-Session", "user-7"}}).status, 200);
  }
  const std::vector<int> m = counts();
  int grew = 0;
  for (std::size_t i = 0; i < 3; ++i) grew += m[i] != n[i] ? 1 : 0;
  EXPECT_EQ(grew, 1);
}

TEST(LlmGatewayRouting, SloAwareShedsAtOnceWithAReasonAndRetryAfterButNeverACriticalRequest) {
  FakeLlmBackend busy(Script::kGood), idle(Script::kGood);
  // The engines' own queues (other clients): one long, one very long.
  busy.set_metrics(vllm_metrics(8, 100000, 0.9));
  idle.set_metrics(vllm_metrics(1, 2000, 0.2));
  Gateway g({busy.url(), idle.url()}, "routing: slo_aware, health_interval_ms: 0");
  // No SLO: routed, to the shorter queue.
  EXPECT_EQ(post(g.port, "/v1/completions", kWholeBody).status, 200);
  EXPECT_EQ(idle.requests, 1);
  // A TTFT SLO of 1 ms no backend can meet behind thousands of requests: shed at once.
  const Posted shed = post_with(g.port, kStreamBody, {{"x-tessera-ttft-slo-ms", "1"}});
  EXPECT_EQ(shed.status, 429);
  EXPECT_NE(shed.body.find("TTFT SLO of 1 ms"), std::string::npos) << shed.body;
  EXPECT_EQ(json::parse(shed.body)["error"]["type"], "rate_limit_error");
  ASSERT_FALSE(shed.retry_after.empty());
  EXPECT_GE(std::stoi(shed.retry_after), 1);
  EXPECT_EQ(busy.requests + idle.requests, 1);  // never sent upstream
  // The same request marked critical (in the body) is served.
  const json critical = {{"prompt", "hi"},
                         {"max_tokens", 3},
                         {"tessera", {{"priority", "critical"}, {"ttft_slo_ms", 1}}}};
  EXPECT_EQ(post(g.port, "/v1/completions", critical.dump()).status, 200);
  EXPECT_EQ(idle.requests, 2);
  EXPECT_FALSE(json::parse(idle.last_body).contains("tessera"));
  // A hostile value: 400 naming the header, not admitted.
  const Posted hostile = post_with(g.port, kWholeBody, {{"x-tessera-priority", "urgent"}});
  EXPECT_EQ(hostile.status, 400);
  EXPECT_EQ(json::parse(hostile.body)["error"]["param"], "x-tessera-priority");
  const LlmGatewayLedger l = g.gateway->ledger();
  EXPECT_EQ(l.shed, 1u);
  EXPECT_EQ(l.shed_ttft_slo, 1u);
  EXPECT_EQ(l.admitted, 3u);
  const std::string metrics = httplib::Client("127.0.0.1", g.port).Get("/metrics")->body;
  EXPECT_NE(metrics.find("tessera_gateway_shed_total{reason=\"ttft_slo\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tessera_gateway_requests_total{outcome=\"shed\"} 1"), std::string::npos);
}

TEST(LlmGatewayRouting, SloAwareCalibratesFromNonStreamedAnswers) {
  // An engine reporting a huge queue: slo_aware predicts a TTFT far above what the fake's
  // instant answers take. Whole (non-streamed) answers must teach it so.
  FakeLlmBackend a(Script::kGood);
  a.set_metrics(vllm_metrics(1, 1e5, 0.2));
  Gateway g({a.url()}, "routing: slo_aware, health_interval_ms: 0");
  const Posted shed = post_with(g.port, kWholeBody, {{"x-tessera-ttft-slo-ms", "1"}});
  ASSERT_EQ(shed.status, 429);
  const std::string mark = "the best predicted TTFT is ";
  const std::size_t at = shed.body.find(mark);
  ASSERT_NE(at, std::string::npos) << shed.body;
  const double predicted_ms = std::stod(shed.body.substr(at + mark.size()));
  // Far above any real answer's time here: each observation's ratio is at the clamp, 1/64.
  ASSERT_GT(predicted_ms, 60000.0);
  ASSERT_LT(predicted_ms, 7.2e6);  // half of it is a valid SLO header (at most an hour)
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(post_with(g.port, kWholeBody, {{"x-tessera-priority", "critical"}}).status, 200);
  }
  // After three: 64^-(1 - 0.9^3) = 0.32 of the prediction, within an SLO of half of it.
  const std::string half = std::to_string(predicted_ms / 2);
  EXPECT_EQ(post_with(g.port, kWholeBody, {{"x-tessera-ttft-slo-ms", half}}).status, 200);
  EXPECT_EQ(a.requests, 4);
  EXPECT_EQ(g.gateway->ledger().shed, 1u);
}

TEST(LlmGatewayRouting, SloAwareRoutesAwayFromTheRequestsWaitingForTheirFirstToken) {
  // Backend a holds its streams before their first token: the gateway counts them as
  // waiting there, so the next requests go to b although neither engine reports a queue.
  FakeLlmBackend a(Script::kStallBeforeFirst), b(Script::kGood);
  Gateway g({a.url(), b.url()}, "routing: slo_aware, health_interval_ms: 0, timeout_ms: 20000");
  std::thread stalled([&] { post(g.port, "/v1/completions", kStreamBody); });
  // An empty fleet of equal backends: the tie goes to the first.
  ASSERT_TRUE(wait_for([&] { return a.requests == 1; }));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(post(g.port, "/v1/completions", kStreamBody).status, 200);
  EXPECT_EQ(b.requests, 3);
  EXPECT_EQ(a.requests, 1);
  a.release();
  stalled.join();
}

TEST(LlmGatewayRouting, EachRequestIsJudgedOnItsOwnSlos) {
  FakeLlmBackend a(Script::kGood);
  Gateway g({a.url()}, kNoChecks);
  EXPECT_EQ(post(g.port, "/v1/completions", kStreamBody).status, 200);
  // A TTFT SLO of a nanosecond cannot be met: served (round_robin does not shed), late.
  EXPECT_EQ(post_with(g.port, kStreamBody, {{"x-tessera-ttft-slo-ms", "0.000001"}}).status, 200);
  const LlmGatewayLedger l = g.gateway->ledger();
  EXPECT_EQ(l.ok, 1u);
  EXPECT_EQ(l.late, 1u);
}

TEST(LlmGatewayProxy, HostileRequestsAndTheBoundAreAnsweredOnce) {
  FakeLlmBackend a(Script::kGood);
  Gateway g({a.url()}, kNoChecks);
  EXPECT_EQ(post(g.port, "/v1/completions", "[1]").status, 400);
  EXPECT_EQ(post(g.port, "/v1/completions", "{").status, 400);
  EXPECT_EQ(post(g.port, "/v1/completions", R"({"model":"other"})").status, 404);
  EXPECT_EQ(post(g.port, "/v1/completions", R"({"stream":"yes"})").status, 400);
  EXPECT_EQ(a.requests, 0);
  // A backend's 4xx (the request's fault) is relayed as is, not retried, the backend kept.
  const Answer refused = post(g.port, "/v1/completions", R"({"prompt":"refuse_me"})");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("refused by the fake"), std::string::npos);
  EXPECT_EQ(a.requests, 1);
  EXPECT_TRUE(g.gateway->backends()[0].up);
  EXPECT_EQ(g.gateway->ledger().failed, 1u);
  const Answer models = post(g.port, "/v1/models", "");
  EXPECT_EQ(models.status, 405);
  httplib::Client cli("127.0.0.1", g.port);
  auto m = cli.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "tiny");
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tessera_gateway_backend_up{backend=\"" + a.url() + "\"} 1"),
            std::string::npos);
}

// ---- against tessera's own LLM servers ----

std::filesystem::path tiny_checkpoint() {
  static const std::filesystem::path written = [] {
    const auto dir = temp_dir("model");
    testing::write_tiny_llm_checkpoint(dir);
    return dir;
  }();
  return written;
}

TEST(LlmGatewayWorkers, TesseraLlmServersBehindTheGatewayAnswerAsDirectly) {
  std::vector<std::unique_ptr<LlmServer>> workers;
  std::vector<std::string> urls;
  const RunSpec worker_run = load_run_spec(write_run("worker", ""));
  for (int i = 0; i < 2; ++i) {
    LlmServeOptions o;
    o.port = 0;
    o.max_inflight = 8;
    workers.push_back(LlmServer::from_run(worker_run, tiny_checkpoint(), o));
    urls.push_back("http://127.0.0.1:" + std::to_string(workers.back()->start()));
  }
  const int direct = std::stoi(urls[0].substr(urls[0].rfind(':') + 1));
  {
    Gateway g(urls, "routing: least_outstanding, health_interval_ms: 0");
    EXPECT_TRUE(g.gateway->backends()[0].up) << "tessera's LLM server answers GET /health";
    const std::string body =
        R"({"prompt":"def f(x):","max_tokens":6,"temperature":0,"ignore_eos":true)";
    const Answer d = post(direct, "/v1/completions", body + "}");
    const Answer w = post(g.port, "/v1/completions", body + "}");
    ASSERT_EQ(d.status, 200) << d.body;
    ASSERT_EQ(w.status, 200) << w.body;
    EXPECT_EQ(json::parse(w.body)["choices"][0]["text"], json::parse(d.body)["choices"][0]["text"]);
    EXPECT_EQ(json::parse(w.body)["usage"], json::parse(d.body)["usage"]);
    // Streamed, chat too: usage kept, [DONE] last, text the same as whole.
    const Answer s = post(g.port, "/v1/completions",
                          body + R"(,"stream":true,"stream_options":{"include_usage":true}})");
    ASSERT_EQ(s.status, 200);
    EXPECT_NE(s.body.find("\"completion_tokens\":6"), std::string::npos) << s.body;
    EXPECT_EQ(s.body.substr(s.body.size() - 14), "data: [DONE]\n\n");
    std::string text;
    for (std::size_t at = 0; (at = s.body.find("data: {", at)) != std::string::npos;) {
      const json e = json::parse(s.body.substr(at + 6, s.body.find("\n\n", at) - at - 6));
      if (!e["choices"].empty()) text += e["choices"][0]["text"].get<std::string>();
      at += 6;
    }
    EXPECT_EQ(text, json::parse(d.body)["choices"][0]["text"]);
    const Answer c = post(g.port, "/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,)"
                          R"("stream":true,"ignore_eos":true})");
    EXPECT_EQ(c.status, 200);
    EXPECT_NE(c.body.find("\"role\":\"assistant\""), std::string::npos) << c.body;
    // Both workers served (least outstanding spreads, ties in turn).
    for (int i = 0; i < 4; ++i) EXPECT_EQ(post(g.port, "/v1/completions", body + "}").status, 200);
    const auto b = g.gateway->backends();
    EXPECT_GT(b[0].requests, 0u);
    EXPECT_GT(b[1].requests, 0u);
    EXPECT_EQ(g.gateway->ledger().ok, 7u);
  }
  for (auto& w : workers) w->shutdown();
}

}  // namespace
}  // namespace tessera
