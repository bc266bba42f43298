// iServe's GPU-scale side: the analytic GPU model, the configuration map file, intents,
// placement and the layer assignment, and the simulated cluster (src/iserve, docs/iserve.md).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/error.hpp"
#include "experiments/iserve_cluster.hpp"
#include "experiments/iserve_cluster_run.hpp"
#include "iserve/analytic_model.hpp"
#include "llm_arch/config_map.hpp"
#include "plan/iserve/controller.hpp"
#include "plan/iserve/placement.hpp"
#include "workload/azure_llm.hpp"

namespace tessera::iserve {
namespace {

const std::filesystem::path kSource = TESSERA_SOURCE_DIR;

LlmArchitecture model(const std::string& name) {
  return load_llm_architecture(kSource / "data/llm" / name / "config.json");
}

const ConfigMapEntry& find(const ConfigMap& map, const std::string& name) {
  for (const ConfigMapEntry& e : map.entries) {
    if (e.config.name() == name) return e;
  }
  throw std::runtime_error("no " + name);
}

// The files temp_file wrote, removed when the test binary exits.
struct TempFiles {
  std::vector<std::filesystem::path> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const auto& p : paths) std::filesystem::remove(p, ec);
  }
};
TempFiles temp_files;

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  // The process id keeps concurrent test processes (ctest -j, two builds) apart.
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessera_iserve_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  temp_files.paths.push_back(path);
  return path;
}

TEST(IServeAnalytic, Llama70bHas180ModelledConfigurationsWithPlausibleRanges) {
  const ConfigMap map = analytic_config_map(model("llama-2-70b"), 8, gpu_spec("a6000"));
  ASSERT_EQ(map.entries.size(), 180u);
  const ConfigMapEntry& fp16 = find(map, "tp1-pp1-fp16-kv16");
  const ConfigMapEntry& int8 = find(map, "tp1-pp1-int8-kv16");
  const ConfigMapEntry& int4 = find(map, "tp1-pp1-int4-kv16");
  // Weights dominate: INT8 about halves and INT4 about quarters the footprint (iServe §3.2).
  EXPECT_NEAR(fp16.memory_bytes / 1e9, 145.0, 10.0);
  EXPECT_NEAR(int8.memory_bytes / fp16.memory_bytes, 0.5, 0.05);
  EXPECT_NEAR(int4.memory_bytes / fp16.memory_bytes, 0.27, 0.05);
  EXPECT_LT(find(map, "tp1-pp1-fp16-kv8").memory_bytes, fp16.memory_bytes);
  // Every GPU adds its runtime reserve: more GPUs, more total memory; mem_base is TP=PP=1's.
  EXPECT_GT(find(map, "tp1-pp8-fp16-kv16").memory_bytes, fp16.memory_bytes);
  EXPECT_GT(find(map, "tp8-pp1-fp16-kv16").memory_bytes, fp16.memory_bytes);
  EXPECT_DOUBLE_EQ(find(map, "tp8-pp1-fp16-kv16").mem_base_bytes, fp16.memory_bytes);
  // Decode is memory-bound: TP divides the bytes each GPU reads; PP does not.
  EXPECT_LT(find(map, "tp8-pp1-fp16-kv16").tpot_s, 0.3 * find(map, "tp1-pp8-fp16-kv16").tpot_s);
  EXPECT_GT(find(map, "tp1-pp8-fp16-kv16").tpot_s, fp16.tpot_s);  // PP adds send/recv only
  EXPECT_LT(find(map, "tp1-pp8-fp16-kv16").tpot_s, fp16.tpot_s * 1.01);
  // Fewer bytes per token: INT4 decodes faster than FP16 on one GPU.
  EXPECT_LT(int4.tpot_s, fp16.tpot_s);
  // A prompt costs more than one output token.
  EXPECT_GT(fp16.ttft_s, fp16.tpot_s);
  for (const ConfigMapEntry& e : map.entries) EXPECT_EQ(e.source, "modelled");
}

TEST(IServeAnalytic, FasterGpuIsFaster) {
  const auto arch = model("llama-2-7b");
  LlmDeploymentConfig c;
  const auto a6000 = analytic_entry(arch, c, gpu_spec("a6000"));
  const auto h100 = analytic_entry(arch, c, gpu_spec("h100-80g"));
  EXPECT_LT(h100.tpot_s, a6000.tpot_s / 3.0);
  EXPECT_LT(h100.ttft_s, a6000.ttft_s / 3.0);
  EXPECT_THROW(gpu_spec("v100"), std::invalid_argument);
}

TEST(IServeConfigMap, JsonRoundTripAndErrorsNameTheField) {
  const ConfigMap map = analytic_config_map(model("falcon-7b"), 2, gpu_spec("a100-80g"));
  const auto path = temp_file("map.json", config_map_to_json(map));
  const ConfigMap back = load_config_map(path);
  ASSERT_EQ(back.entries.size(), map.entries.size());
  EXPECT_EQ(back.gpu, "a100-80g");
  for (size_t i = 0; i < map.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].config.name(), map.entries[i].config.name());
    EXPECT_NEAR(back.entries[i].tpot_s, map.entries[i].tpot_s, 1e-12);
    EXPECT_NEAR(back.entries[i].memory_bytes, map.entries[i].memory_bytes, 1.0);
  }
  std::string text = config_map_to_json(map);
  text.replace(text.find("\"tpot_s\": "), 10, "\"tpot_s\": -");
  try {
    load_config_map(temp_file("bad.json", text));
    FAIL() << "negative TPOT accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("entries[0].tpot_s"), std::string::npos) << e.what();
  }
}

// An estimated map's optional fields (latency_clock, not_estimated) round-trip, and hostile
// values in them are errors naming the field.
TEST(IServeConfigMap, EstimatedMapFieldsRoundTripAndHostileValuesNameTheField) {
  ConfigMap map = analytic_config_map(model("llama-2-7b"), 1, gpu_spec("a6000"));
  map.latency_clock = "cpu";
  map.not_estimated = {{"tp1-pp1-gptq4-kv16", "no gptq4 fingerprints"}};
  const std::string text = config_map_to_json(map);
  const ConfigMap back = load_config_map(temp_file("estimated.json", text));
  EXPECT_EQ(back.latency_clock, "cpu");
  ASSERT_EQ(back.not_estimated.size(), 1u);
  EXPECT_EQ(back.not_estimated[0].first, "tp1-pp1-gptq4-kv16");
  EXPECT_EQ(back.not_estimated[0].second, "no gptq4 fingerprints");

  const auto rejects = [&](const std::string& from, const std::string& to, const char* field) {
    std::string bad = text;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    try {
      load_config_map(temp_file("bad-estimated.json", bad));
      ADD_FAILURE() << "accepted: " << to;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  rejects("\"latency_clock\": \"cpu\"", "\"latency_clock\": \"sundial\"", "latency_clock");
  rejects("\"latency_clock\": \"cpu\"", "\"latency_clock\": 7", "latency_clock");
  rejects("\"reason\": \"no gptq4 fingerprints\"", "\"why\": 1", "not_estimated[0]");
  rejects("\"not_estimated\": [", "\"not_estimated\": [3, ", "not_estimated[0]");
}

ConfigMapEntry entry(int tp, int pp, double mem_gb, double ttft, double tpot) {
  ConfigMapEntry e;
  e.model = "m";
  e.layers = 32;
  e.config.parallelism = {tp, pp};
  e.memory_bytes = mem_gb * 1e9;
  e.mem_base_bytes = mem_gb * 1e9;
  e.ttft_s = ttft;
  e.tpot_s = tpot;
  return e;
}

TEST(IServeIntent, EachIntentRanksByItsKey) {
  // latency at 100 tokens: a 1 s, b 2 s, c 4 s, d 0.5 s
  std::vector<ConfigMapEntry> es{entry(1, 1, 10, 0, 0.01), entry(1, 2, 4, 0, 0.02),
                                 entry(2, 1, 1.5, 0, 0.04), entry(8, 1, 40, 0, 0.005)};
  auto top = [&](IntentKind k, double target = 0) {
    Intent i;
    i.kind = k;
    i.target = target;
    return rank_configurations(es, i).front();
  };
  EXPECT_EQ(top(IntentKind::kMinLatency), 3);
  EXPECT_EQ(top(IntentKind::kMinCost), 2);  // GB·s: 10, 8, 6, 20
  EXPECT_EQ(top(IntentKind::kMinMemory), 2);
  EXPECT_EQ(top(IntentKind::kMinGpuHours), 0);      // 1, 4, 8, 4 GPU-s
  EXPECT_EQ(top(IntentKind::kLatencySlo, 1.5), 0);  // meets 1.5 s: a (10 GB·s), d (20)
  EXPECT_EQ(top(IntentKind::kLatencySlo, 0.1), 3);  // none meets: fastest, best effort
  EXPECT_EQ(top(IntentKind::kCostSlo, 9.0), 1);     // within 9 GB·s: b (2 s), c (4 s): the fastest
  EXPECT_EQ(top(IntentKind::kCostSlo, 1.0), 2);     // none within: cheapest
  EXPECT_EQ(intent_kind_from_string("gpu-hours"), IntentKind::kMinGpuHours);
  EXPECT_THROW(intent_kind_from_string("speed"), std::invalid_argument);
}

TEST(IServePlacement, UnevenLayersFollowFreeMemoryAsInThePaper) {
  EXPECT_EQ(assign_layers(32, {10, 9, 7, 6}), (std::vector<int>{10, 9, 7, 6}));
  EXPECT_EQ(assign_layers(32, {12, 9, 7, 6}), (std::vector<int>{10, 9, 7, 6}));
  EXPECT_EQ(assign_layers(32, {40, 40, 40, 40}), (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(assign_layers(30, {40, 40, 40, 40}), (std::vector<int>{8, 8, 7, 7}));
  EXPECT_TRUE(assign_layers(32, {10, 9, 7, 5}).empty());

  // The last Falcon-7B of iServe §8.5: PP = 4 over fragments of 10, 9, 7 and 6 blocks.
  const double block = 1e9;
  std::vector<GpuState> gpus(4);
  const double blocks[] = {10.5, 9.2, 7.9, 6.0};
  for (int g = 0; g < 4; ++g) {
    gpus[g].memory_bytes = 48e9;
    gpus[g].used_bytes = 48e9 - blocks[g] * block;
  }
  const StagePlacement p = place(gpus, 1, 4, 32, block, PlacementPolicy::kPacking, 0.5, 0.0);
  ASSERT_EQ(p.gpus.size(), 4u);
  EXPECT_EQ(p.layers_per_stage, (std::vector<int>{10, 9, 7, 6}));
  // One block less and it no longer fits.
  gpus[3].used_bytes += block;
  EXPECT_TRUE(place(gpus, 1, 4, 32, block, PlacementPolicy::kPacking, 0.5, 0.0).gpus.empty());
}

TEST(IServePlacement, LoadWindowIsBusySecondsOverTheLast120sSampledEachSecond) {
  GpuLoad load;
  load.add_busy(0.0, 60.0);
  EXPECT_DOUBLE_EQ(load.load(120.0), 0.5);
  EXPECT_DOUBLE_EQ(load.load(120.9), 0.5);  // the sample is taken at whole seconds
  EXPECT_DOUBLE_EQ(load.load(150.0), 30.0 / 120.0);
  EXPECT_DOUBLE_EQ(load.load(200.0), 0.0);
  load.add_busy(190.0, 400.0);  // running past the sample counts up to the sample
  EXPECT_DOUBLE_EQ(load.load(200.0), 10.0 / 120.0);
}

TEST(IServePlacement, PoliciesOrderGpusByLoad) {
  const std::vector<double> loads{0.0, 0.9, 0.3, 0.6, 0.0};
  EXPECT_EQ(placement_order(loads, PlacementPolicy::kLeastLoaded, 0.5),
            (std::vector<int>{0, 4, 2, 3, 1}));
  EXPECT_EQ(placement_order(loads, PlacementPolicy::kPacking, 0.5),
            (std::vector<int>{1, 3, 2, 0, 4}));
  // hybrid(0.5): packable (< 0.5) by packing, then the busy ones least-loaded first.
  EXPECT_EQ(placement_order(loads, PlacementPolicy::kHybrid, 0.5),
            (std::vector<int>{2, 0, 4, 3, 1}));

  // A 2-GPU model under each policy, GPUs 1 and 3 busy.
  std::vector<GpuState> gpus(4);
  for (GpuState& g : gpus) g.memory_bytes = 48e9;
  gpus[1].load.add_busy(0, 100);  // load 100/120
  gpus[3].load.add_busy(0, 30);   // load 0.25
  auto chosen = [&](PlacementPolicy p) { return place(gpus, 2, 1, 32, 1e8, p, 0.5, 120.0).gpus; };
  EXPECT_EQ(chosen(PlacementPolicy::kLeastLoaded), (std::vector<int>{0, 2}));
  EXPECT_EQ(chosen(PlacementPolicy::kPacking), (std::vector<int>{1, 3}));
  EXPECT_EQ(chosen(PlacementPolicy::kHybrid), (std::vector<int>{3, 0}));
}

TEST(IServeController, WalksTheRankingToTheFirstConfigurationThatFits) {
  std::vector<GpuState> gpus(2);
  for (GpuState& g : gpus) g.memory_bytes = 48e9;
  // Fastest needs 2 × 60 GB; next 2 × 40 GB fits.
  std::vector<ConfigMapEntry> es{entry(2, 1, 120, 0, 0.01), entry(2, 1, 80, 0, 0.02),
                                 entry(1, 1, 30, 0, 0.04)};
  Intent fastest;
  fastest.kind = IntentKind::kMinLatency;
  auto d = choose_deployment(es, fastest, gpus, PlacementPolicy::kHybrid, 0.5, 0.0);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->entry, 1);
  EXPECT_EQ(d->rank, 1);
  apply_deployment(gpus, *d, 2);
  EXPECT_NEAR(gpus[0].used_bytes, 40e9, 1.0);
  EXPECT_NEAR(gpus[1].used_bytes, 40e9, 1.0);
  // Now 8 GB free per GPU: nothing fits.
  EXPECT_FALSE(choose_deployment(es, fastest, gpus, PlacementPolicy::kHybrid, 0.5, 0.0));
}

TEST(IServeCluster, SmallRunIsDeterministicAndComparesSystems) {
  const std::string trace =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:00:00.0,100,20\n2023-11-16 18:00:10.5,200,40\n"
      "2023-11-16 18:01:00.0,100,10\n2023-11-16 18:02:30.0,300,30\n"
      "2023-11-16 18:03:00.0,50,5\n2023-11-16 18:03:00.5,60,50\n";
  const std::string trace_name = temp_file("trace_small.csv", trace).filename().string();
  const std::string spec =
      "gpu: a6000\ngpus: 4\ntrace: " + trace_name +
      "\ndeploy_interval_s: 60\n"
      "models: [" +
      (kSource / "data/llm/llama-2-7b").string() + ", " +
      (kSource / "data/llm/llama-2-13b").string() +
      "]\n"
      "systems:\n"
      "  - {name: iserve-latency, kind: iserve, intent: latency}\n"
      "  - {name: iserve-memory, kind: iserve, intent: memory, placement: packing}\n"
      "  - {kind: max-pp}\n  - {kind: max-tp}\n  - {name: alpaserve, kind: alpaserve}\n";
  const ClusterSpec s = load_cluster_spec(temp_file("cluster.yaml", spec));
  const auto a = run_cluster(s);
  const auto b = run_cluster(s);
  ASSERT_EQ(a.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].queries, 6) << a[i].name;
    EXPECT_EQ(a[i].p99_s, b[i].p99_s) << a[i].name;
    EXPECT_EQ(a[i].models_deployed, 2) << a[i].name;
  }
  EXPECT_EQ(a[0].models[0].label, "llama-2-7b#1");
  // min-memory quantises to 4 bits and runs each model on one GPU.
  EXPECT_NE(a[1].models[0].config.find("tp1-pp1-"), std::string::npos);
  EXPECT_NE(a[1].models[0].config.find("4"), std::string::npos) << a[1].models[0].config;
  EXPECT_LT(a[1].memory_gb, a[2].memory_gb);
  // max-PP spreads each model over all four GPUs.
  EXPECT_EQ(a[2].models[0].config, "tp1-pp4-fp16-kv16");
  EXPECT_EQ(a[2].gpus_used, 4);
  EXPECT_FALSE(cluster_report_markdown(s, a).empty());
}

// The cluster run on the engine, by hand: two models whose endpoints share GPU 0 queue
// behind each other FCFS, each query holding its endpoint's GPUs for TTFT + out x TPOT.
TEST(IServeCluster, CoLocatedEndpointsQueueFcfsOnTheEngine) {
  ClusterSpec spec;
  spec.gpus = 2;
  spec.deploy_interval_s = 0;  // both deployed before the first query
  spec.slo_scales = {2.0};
  ConfigMapEntry e;
  e.layers = 10;
  e.memory_bytes = 1e9;
  e.ttft_s = 0.5;
  e.tpot_s = 0.05;  // 10 tokens: 1 s
  for (const char* label : {"a#1", "b#1"}) {
    ClusterModel m;
    m.label = label;
    m.entries = {e};
    spec.models.push_back(m);
  }
  const std::vector<Query> queries = {{0.0, 10, 0}, {0.2, 10, 1}, {0.4, 10, 0}};
  const Decide decide = [](int m, std::vector<GpuState>&, double) -> std::vector<Endpoint> {
    if (m == 0) return {{0, {0}, {10}, 1}};
    return {{0, {0, 1}, {5, 5}, 1}};  // b spans GPUs 0 and 1
  };
  const SystemOutcome out = simulate_on_engine(spec, queries, "hand", decide, {1, 1});
  // a: [0, 1); b waits for GPU 0: [1, 2), latency 1.8; a again: [2, 3), latency 2.6.
  EXPECT_EQ(out.queries, 3);
  EXPECT_EQ(out.served, 3);
  EXPECT_DOUBLE_EQ(out.p50_s, 1.8);
  EXPECT_DOUBLE_EQ(out.p99_s, 2.6);
  EXPECT_DOUBLE_EQ(out.gpu_hours, 4.0 / 3600.0);  // 1 + 2 + 1 GPU-seconds
  ASSERT_EQ(out.slo_attainment.size(), 1u);
  EXPECT_DOUBLE_EQ(out.slo_attainment[0], 2.0 / 3.0);  // 2.6 > 2 x 1 s
  EXPECT_EQ(out.gpus_used, 2);
  // A model with two replicas sends each query to the one that starts it first.
  const Decide replicas = [](int m, std::vector<GpuState>&, double) -> std::vector<Endpoint> {
    if (m == 0) return {{0, {0}, {10}, 1}, {0, {1}, {10}, 1}};
    return {};  // b is not deployed: its query is served by no one
  };
  const SystemOutcome two = simulate_on_engine(spec, queries, "replicas", replicas, {2, 1});
  EXPECT_EQ(two.served, 2);
  EXPECT_DOUBLE_EQ(two.p99_s, 1.0);  // the second query of a starts at once on GPU 1
  EXPECT_EQ(two.models_deployed, 1);
}

TEST(IServeCluster, SloIntentAndPerSystemThetaAreRead) {
  const auto trace_path =
      temp_file("trace_midnight.csv",
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 23:59:59.0,10,10\n"
                "2023-11-17 00:00:01.0,10,10\n");  // past midnight: 2 s apart
  const auto trace = read_azure_llm_csv(trace_path);
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_NEAR(trace[1].time, 2.0, 1e-9);
  const ClusterSpec s = load_cluster_spec(temp_file(
      "slo.yaml",
      "trace: " + trace_path.filename().string() + "\nmodels: [" +
          (kSource / "data/llm/llama-2-7b").string() +
          "]\nsystems:\n  - {kind: iserve, intent: latency-slo, slo_s: 2.5, theta: 0.1}\n"));
  ASSERT_EQ(s.systems.size(), 1u);
  EXPECT_EQ(s.systems[0].intent.kind, IntentKind::kLatencySlo);
  EXPECT_DOUBLE_EQ(s.systems[0].intent.target, 2.5);
  EXPECT_DOUBLE_EQ(s.systems[0].theta, 0.1);
  const auto out = run_cluster(s);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].served, 2);
}

TEST(IServeCluster, TraceAndSpecErrorsNameTheLineAndField) {
  const auto bad = temp_file(
      "bad_trace.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0,x,1\n");
  try {
    read_azure_llm_csv(bad);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_azure_llm_csv(temp_file("empty.csv", "")), SpecError);
  const std::string one =
      temp_file("trace_one.csv",
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0,1,1\n")
          .filename()
          .string();
  try {
    load_cluster_spec(temp_file("bad.yaml", "trace: " + one + "\nmodels: [" +
                                                (kSource / "data/llm/llama-2-7b").string() +
                                                "]\nsystems: [{kind: magic}]\n"));
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("systems[0].kind"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::iserve
