// The loopback cluster test of an exported iServe deployment (docs/deploy.md, "What was
// tested here"): `tessera llm instances` deploys a tiny random-weight model twice, `tessera
// export --to vllm` writes the vLLM Deployments and the LLM gateway in front of them, and the
// exported topology runs on this machine — every vLLM Service a `tessera serve` LLM server of
// the checkpoint (vLLM's OpenAI API, /health and /metrics, the same served model name and
// port) at its own loopback address, the Service's name resolved to it; the gateway is
// `tessera serve` of the exported ConfigMap's run spec, unchanged but for those names. No real
// vLLM: tessera's LLM server speaks the protocol the gateway uses with vLLM.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "export/llm_gateway_export.hpp"
#include "loopback_cluster.hpp"
#include "tiny_llm_checkpoint.hpp"
#include "tiny_llm_run.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

#ifdef TESSERA_BINARY
using testing::LoopbackProcess;
using testing::metric_sum;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string flag_value(const YAML::Node& command, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < command.size(); ++i)
    if (command[i].as<std::string>() == flag) return command[i + 1].as<std::string>();
  return "";
}

// One answer of the gateway, as the client saw it.
struct Answer {
  int status = 0;
  bool stream = false;
  std::string body;
};

// True when `a` is a complete answer: a completion with text and usage, or a stream of
// token events ending in one [DONE] without an error event.
bool complete(const Answer& a) {
  if (a.status != 200) return false;
  if (!a.stream) {
    const auto j = nlohmann::json::parse(a.body, nullptr, false);
    return j.is_object() && j.contains("choices") && j["choices"].size() == 1 &&
           j["choices"][0].contains("text") && j.contains("usage");
  }
  std::size_t done = 0, tokens = 0, at = 0;
  while ((at = a.body.find("data: ", at)) != std::string::npos) {
    at += 6;
    const std::size_t end = a.body.find("\n\n", at);
    if (end == std::string::npos) return false;
    const std::string data = a.body.substr(at, end - at);
    if (data == "[DONE]") {
      ++done;
      continue;
    }
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (!j.is_object() || j.contains("error")) return false;
    tokens += j.contains("choices") && !j["choices"].empty();
  }
  return done == 1 && tokens >= 1 && a.body.rfind("data: [DONE]") != std::string::npos;
}

TEST(ExportLlmLoopback, TheExportedGatewayServesEveryRequestOnceThroughTheVllmServices) {
  const fs::path dir =
      fs::temp_directory_path() / ("tessera_llm_loopback_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "models");
  const fs::path checkpoint = dir / "models/tiny-llama";
  testing::write_tiny_llm_checkpoint(checkpoint);
  // iServe deploys the model twice (two instances), then the export.
  ASSERT_EQ(testing::run_tessera({"llm", "instances", checkpoint.string(), checkpoint.string(),
                                  "--gpu", "a6000", "--gpus", "2", "--out", "iserve"},
                                 dir, dir / "iserve.log"),
            0)
      << read_text(dir / "iserve.log");
  ASSERT_EQ(testing::run_tessera({"export", "iserve", "--to", "vllm", "--llm-models", "models",
                                  "--namespace", "serving", "--out", "export"},
                                 dir, dir / "export.log"),
            0)
      << read_text(dir / "export.log");

  // "Cluster DNS": vLLM Service i at 127.78.B.(i + 2), the gateway at 127.78.B.1.
  const std::string block = testing::loopback_block(78);
  const std::string gateway_address = block + "1";
  std::map<std::string, YAML::Node> vllm;  // Deployment name -> its container
  for (const YAML::Node& d : YAML::LoadAllFromFile((dir / "export/vllm.yaml").string())) {
    if (d["kind"].as<std::string>() == "Deployment")
      vllm[d["metadata"]["name"].as<std::string>()] =
          d["spec"]["template"]["spec"]["containers"][0];
  }
  ASSERT_EQ(vllm.size(), 2u);
  YAML::Node gateway_files;
  for (const YAML::Node& d : YAML::LoadAllFromFile((dir / "export/gateway.yaml").string())) {
    if (d["kind"].as<std::string>() == "ConfigMap" &&
        d["metadata"]["name"].as<std::string>() == exporter::llm_gateway_name("tiny-llama"))
      gateway_files = d["data"];
  }
  ASSERT_TRUE(gateway_files);
  const fs::path etc = dir / "etc";
  fs::create_directories(etc);
  std::string run = gateway_files["run.yaml"].as<std::string>();
  std::vector<LoopbackProcess> backends;
  int i = 0;
  for (const auto& [service, container] : vllm) {
    const std::string address = block + std::to_string(2 + i++);
    const YAML::Node command = container["command"];
    const std::string port = flag_value(command, "--port");
    const std::string from = "http://" + service + ".serving.svc:" + port;
    const auto at = run.find(from);
    ASSERT_NE(at, std::string::npos) << service << " is not a backend of the gateway:\n" << run;
    run.replace(at, from.size(), "http://" + address + ":" + port);
    // The stand-in: tessera's LLM server of the checkpoint, serving the name vLLM serves.
    const fs::path own = dir / service;
    fs::create_directories(own);
    std::string spec = read_text(testing::write_tiny_llm_run(own, 1));
    const std::string shape = "model: {name: tiny,";
    ASSERT_NE(spec.find(shape), std::string::npos);
    spec.replace(spec.find(shape), shape.size(),
                 "model: {name: " + flag_value(command, "--served-model-name") + ",");
    std::ofstream(own / "run.yaml") << spec;
    backends.push_back(
        testing::spawn_tessera({"serve", (own / "run.yaml").string(), "--llm-checkpoint",
                                checkpoint.string(), "--host", address, "--port", port},
                               address, std::stoi(port), own, dir / (service + ".log")));
  }
  for (const char* f : {"app.yaml", "deployment.yaml", "profiles.yaml"})
    std::ofstream(etc / f) << gateway_files[f].as<std::string>();
  std::ofstream(etc / "run.yaml") << run;
  bool backends_ready = true;
  for (const auto& b : backends)
    backends_ready = backends_ready && testing::wait_ready(b, "/health");
  LoopbackProcess gateway;
  bool gateway_ready = false;
  if (backends_ready) {
    gateway = testing::spawn_tessera(
        {"serve", (etc / "run.yaml").string(), "--host", gateway_address, "--port", "8000"},
        gateway_address, 8000, etc, dir / "gateway.log");
    gateway_ready = testing::wait_ready(gateway, "/health");
  }
  // 12 completions from 3 clients, every other one streamed.
  constexpr int kClients = 3, kPerClient = 4;
  std::vector<Answer> answers(kClients * kPerClient);
  std::string gateway_metrics;
  std::vector<std::string> backend_metrics;
  if (gateway_ready) {
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        httplib::Client cli(gateway_address, 8000);
        cli.set_read_timeout(60, 0);
        for (int r = 0; r < kPerClient; ++r) {
          Answer& a = answers[static_cast<std::size_t>(c * kPerClient + r)];
          a.stream = (c + r) % 2 == 0;
          const nlohmann::json body = {{"model", "tiny-llama"},
                                       {"prompt", "def f(x): return " + std::to_string(c * r)},
                                       {"max_tokens", 4},
                                       {"temperature", 0},
                                       {"stream", a.stream}};
          if (auto res = cli.Post("/v1/completions", body.dump(), "application/json")) {
            a.status = res->status;
            a.body = res->body;
          }
        }
      });
    }
    for (auto& t : clients) t.join();
    httplib::Client cli(gateway_address, 8000);
    if (auto res = cli.Get("/metrics")) gateway_metrics = res->body;
    for (const auto& b : backends) {
      httplib::Client one(b.address, b.http_port);
      auto res = one.Get("/metrics");
      backend_metrics.push_back(res ? res->body : "");
    }
  }
  std::vector<LoopbackProcess> all = backends;
  if (gateway.pid > 0) all.push_back(gateway);
  testing::stop_all(all);
  ASSERT_TRUE(backends_ready) << "see " << dir << "/tessera-vllm-*.log";
  ASSERT_TRUE(gateway_ready) << read_text(dir / "gateway.log");
  for (const Answer& a : answers)
    EXPECT_TRUE(complete(a)) << a.status << (a.stream ? " streamed: " : " whole: ") << a.body;
  // Every request ends exactly once in the gateway's ledger, ok (the app's 60 s deadline),
  // none retried; and exactly once on one backend: the two Services shared the work.
  const double n = static_cast<double>(answers.size());
  EXPECT_EQ(metric_sum(gateway_metrics, "tessera_gateway_requests_total{"), n) << gateway_metrics;
  EXPECT_EQ(metric_sum(gateway_metrics, "tessera_gateway_requests_total{outcome=\"ok\"}"), n)
      << gateway_metrics;
  EXPECT_EQ(metric_sum(gateway_metrics, "tessera_gateway_retries_total"), 0.0);
  double served = 0;
  for (const std::string& m : backend_metrics) {
    const double own = metric_sum(m, "tessera_llm_requests_total{");
    EXPECT_GT(own, 0.0) << m;
    served += own;
  }
  EXPECT_EQ(served, n);
  if (!HasFailure()) fs::remove_all(dir);
}
#endif  // TESSERA_BINARY

}  // namespace
}  // namespace tessera
