#include "spec/llm_spec.hpp"

#include <fmt/format.h>

#include <memory>

#include "llm/llm_cost_model.hpp"
#include "llm/llm_scheduler.hpp"
#include "spec/llm_backend_spec.hpp"

namespace tessera {
namespace {

double bytes_per_value(const SpecNode& node) {
  const std::string dtype = node.as_choice({"fp16", "bf16", "int8", "fp8", "int4"});
  if (dtype == "int8" || dtype == "fp8") return 1.0;
  if (dtype == "int4") return 0.5;
  return 2.0;
}

LlmModel parse_model(const SpecNode& node) {
  node.allow_only({"name", "layers", "kv_heads", "head_dim", "params_b", "weights", "weight_bytes",
                   "max_positions"});
  LlmModel m;
  m.name = node.string_or("name", "llm");
  m.layers = static_cast<uint32_t>(node.at("layers").as_integer_in(1, 1024));
  m.kv_heads = static_cast<uint32_t>(node.at("kv_heads").as_integer_in(1, 1024));
  m.head_dim = static_cast<uint32_t>(node.at("head_dim").as_integer_in(1, 4096));
  m.params = node.at("params_b").as_positive(10000.0) * 1e9;
  if (auto p = node.get("max_positions")) {
    m.max_positions = static_cast<uint32_t>(p->as_integer_in(2, 1 << 24));
  }
  if (auto w = node.get("weights")) {
    m.weight_bytes = bytes_per_value(*w);
    if (w->as_string() == "fp8") w->fail("weights: fp16, bf16, int8 or int4");
  }
  if (auto b = node.get("weight_bytes")) {
    if (node.has("weights")) b->fail("give weights (a dtype) or weight_bytes, not both");
    m.weight_bytes = b->as_number_in(0.01, 8.0);
  }
  return m;
}

}  // namespace

LlmGpu parse_llm_gpu(const SpecNode& node) {
  node.allow_only({"name", "memory_gb", "memory_utilization", "bandwidth_gbs", "tflops", "mfu",
                   "mbu", "step_overhead_ms"});
  LlmGpu g;
  g.name = node.string_or("name", "gpu");
  g.memory_bytes = node.at("memory_gb").as_positive(1e5) * 1e9;
  if (auto u = node.get("memory_utilization")) g.memory_utilization = u->as_number_in(0.01, 1.0);
  g.bandwidth = node.at("bandwidth_gbs").as_positive(1e6) * 1e9;
  g.flops = node.at("tflops").as_positive(1e6) * 1e12;
  if (auto m = node.get("mfu")) g.mfu = m->as_number_in(0.01, 1.0);
  if (auto m = node.get("mbu")) g.mbu = m->as_number_in(0.01, 1.0);
  if (auto o = node.get("step_overhead_ms")) g.step_overhead = from_ms(o->as_number_in(0.0, 1e4));
  return g;
}

LlmLink parse_link(const SpecNode& node) {
  node.allow_only({"latency_us", "bus_gbs"});
  LlmLink l;
  if (auto a = node.get("latency_us")) l.latency = a->as_number_in(0.0, 1e6) * 1e-6;
  l.bus_bandwidth = node.at("bus_gbs").as_positive(1e6) * 1e9;
  return l;
}

namespace {

LlmParallelism parse_parallel(const SpecNode& node) {
  node.allow_only(
      {"tp", "pp", "hidden", "reduces_per_layer", "reserved_gb_per_gpu", "tp_link", "pp_link"});
  LlmParallelism p;
  if (auto t = node.get("tp")) p.tp = static_cast<uint32_t>(t->as_integer_in(1, 64));
  if (auto t = node.get("pp")) p.pp = static_cast<uint32_t>(t->as_integer_in(1, 64));
  if (auto h = node.get("hidden")) p.hidden = static_cast<uint32_t>(h->as_integer_in(1, 1 << 20));
  if (auto r = node.get("reduces_per_layer")) {
    p.reduces_per_layer = static_cast<uint32_t>(r->as_integer_in(0, 8));
  }
  if (auto r = node.get("reserved_gb_per_gpu")) {
    p.reserved_bytes_per_gpu = r->as_number_in(0.0, 1e5) * 1e9;
  }
  if (auto l = node.get("tp_link")) p.tp_link = parse_link(*l);
  if (auto l = node.get("pp_link")) p.pp_link = parse_link(*l);
  if (p.tp > 1 && !node.has("tp_link"))
    node.at("tp").fail("tp > 1 needs tp_link (latency_us, bus_gbs)");
  if (p.pp > 1 && !node.has("pp_link"))
    node.at("pp").fail("pp > 1 needs pp_link (latency_us, bus_gbs)");
  return p;
}

}  // namespace

LlmParallelism parse_llm_parallel(const SpecNode& node) { return parse_parallel(node); }

double parse_llm_weight_bytes(const SpecNode& node) {
  if (node.as_string() == "fp8") node.fail("weights: fp16, bf16, int8 or int4");
  return bytes_per_value(node);
}

LlmSpec parse_llm_spec(const SpecNode& node, const App& app) {
  node.allow_only({"model", "gpu", "kv_cache", "scheduler", "parallel", "backends", "gateway"});
  if (app.tasks.size() != 1) {
    node.fail("an LLM run serves an app of one task (the app has " +
              std::to_string(app.tasks.size()) + ")");
  }
  LlmSpec spec;
  spec.model = parse_model(node.at("model"));
  spec.gpu = parse_llm_gpu(node.at("gpu"));
  if (auto p = node.get("parallel")) spec.parallel = parse_parallel(*p);
  LlmSchedulerConfig& c = spec.scheduler;
  if (auto kv = node.get("kv_cache")) {
    kv->allow_only({"dtype", "block_tokens"});
    if (auto d = kv->get("dtype")) {
      const std::string dtype = d->as_choice({"fp16", "bf16", "int8", "fp8"});
      spec.model.kv_bytes = dtype == "int8" || dtype == "fp8" ? 1.0 : 2.0;
    }
    if (auto b = kv->get("block_tokens")) {
      c.block_tokens = static_cast<uint32_t>(b->as_integer_in(1, 4096));
    }
  }
  c.kv_blocks = kv_blocks_for(spec.model, spec.gpu, spec.parallel, c.block_tokens);
  if (c.kv_blocks == 0) {
    node.at("gpu").fail(fmt::format(
        "the model's weights ({:.1f} GB) leave no room for one KV block of {} tokens in "
        "{} GPU(s) x {:.1f} GB ({:.1f} GB x memory_utilization, less {:.1f} GB reserved each)",
        spec.model.weight_bytes_total() / 1e9, c.block_tokens, spec.parallel.gpus(),
        spec.gpu.memory_bytes * spec.gpu.memory_utilization / 1e9 -
            spec.parallel.reserved_bytes_per_gpu / 1e9,
        spec.gpu.memory_bytes / 1e9, spec.parallel.reserved_bytes_per_gpu / 1e9));
  }
  if (auto s = node.get("scheduler")) {
    s->allow_only({"policy", "max_seqs", "token_budget", "slo_admission", "output_length",
                   "default_output_tokens", "prefix_caching"});
    if (auto p = s->get("policy")) {
      const std::string policy = p->as_choice({"fcfs", "static", "continuous", "chunked"});
      c.policy = policy == "fcfs"         ? LlmPolicy::kFcfs
                 : policy == "static"     ? LlmPolicy::kStatic
                 : policy == "continuous" ? LlmPolicy::kContinuous
                                          : LlmPolicy::kChunked;
    }
    if (auto m = s->get("max_seqs")) c.max_seqs = static_cast<uint32_t>(m->as_integer_in(1, 65536));
    if (auto b = s->get("token_budget")) {
      c.token_budget = static_cast<uint32_t>(b->as_integer_in(1, 1 << 24));
    }
    if (auto a = s->get("slo_admission")) {
      c.slo_admission = a->as_bool();
      if (c.slo_admission && (c.policy == LlmPolicy::kFcfs || c.policy == LlmPolicy::kStatic)) {
        a->fail("SLO-aware admission needs the continuous or chunked policy (scheduler.policy is " +
                std::string(llm_policy_name(c.policy)) + ")");
      }
    }
    if (auto p = s->get("prefix_caching")) c.prefix_caching = p->as_bool();
    if (auto o = s->get("output_length"))
      c.output_known = o->as_choice({"known", "mean"}) == "known";
    if (auto d = s->get("default_output_tokens")) {
      c.default_output_tokens = static_cast<uint32_t>(d->as_integer_in(1, 1 << 20));
    }
  }
  c.ttft_slo = app.ttft_slo;
  c.tpot_slo = app.tpot_slo;
  if (node.has("gateway") && !node.has("backends")) {
    node.at("gateway").fail("a gateway needs llm.backends (a list of backends with url:)");
  }
  // Checked here, so that a bad backend fails at load; the gateway reads it again
  // (load_llm_gateway).
  if (auto b = node.get("backends")) parse_llm_gateway(*b, node.get("gateway"), spec);
  return spec;
}

std::shared_ptr<const CostModel> llm_cost_model(const LlmSpec& spec) {
  if (spec.parallel.gpus() == 1)
    return std::make_shared<LlmAnalyticCostModel>(spec.model, spec.gpu);
  return std::make_shared<LlmParallelCostModel>(spec.model, spec.gpu, spec.parallel);
}

SchedulerFactory llm_scheduler_factory(const LlmSchedulerConfig& config) {
  return [config](const Worker& /*worker*/, SchedulerHost& host, const CostModel& cost) {
    return std::make_unique<LlmInstanceScheduler>(config, host, cost);
  };
}

}  // namespace tessera
