#pragma once

// The tests' run spec of the tiny LLM (test-only): one task `llm` with variant `tiny` on
// `instances` CPU workers, ok within 10 minutes (and within `ttft_slo_ms` when > 0), and an
// `llm:` section with the tiny model and a CPU "GPU" followed by `llm_extra` (YAML lines
// indented two spaces). Written into `dir` (app, deployment, profiles and run files).

#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::testing {

inline std::filesystem::path write_tiny_llm_run(const std::filesystem::path& dir, int instances,
                                                double ttft_slo_ms = 0.0,
                                                const std::string& llm_extra = "") {
  std::ofstream(dir / "app.yaml") << "name: tiny\nslo_ms: 600000\n"
                                  << (ttft_slo_ms > 0
                                          ? "ttft_slo_ms: " + std::to_string(ttft_slo_ms) + "\n"
                                          : "")
                                  << "tasks:\n  - name: llm\n    variants:\n      - {name: tiny}\n";
  std::ofstream(dir / "deployment.yaml")
      << "workers:\n  - {task: llm, variant: tiny, segment: cpu, count: " << instances << "}\n";
  std::ofstream(dir / "profiles.yaml")
      << "profiles:\n  - {variant: tiny, segment: cpu, latency_ms: {1: 1.0}}\n";
  std::ofstream(dir / "run.yaml")
      << "app: app.yaml\ndeployment: deployment.yaml\nprofiles: [{file: profiles.yaml}]\n"
      << "workload:\n  source: {kind: poisson, rate_rps: 1, duration_s: 1}\n"
      << "policies: {dispatch: round_robin}\n"
      << "llm:\n  model: {name: tiny, layers: 2, kv_heads: 2, head_dim: 8, params_b: 0.0001}\n"
      << "  gpu: {name: cpu, memory_gb: 1, bandwidth_gbs: 10, tflops: 0.1}\n"
      << llm_extra;
  return dir / "run.yaml";
}

}  // namespace tessera::testing
