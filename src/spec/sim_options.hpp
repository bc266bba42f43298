#pragma once

// SimOptions: the `simulation:` section of a run spec (docs/specs.md#simulation): the seed,
// latency noise, time-series window, scripted worker losses and the cost model. A plain
// value; the simulator copies it. It lives with the specs so that loading a run spec needs
// nothing from the simulator.

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/time.hpp"
#include "engine/cost_model.hpp"
#include "engine/instance_scheduler.hpp"
#include "engine/item.hpp"
#include "engine/policies.hpp"

namespace tessera {

struct SimOptions {
  uint64_t seed = 1;
  double noise_cv = 0.0;  // log-normal noise on batch latencies (0 = exact profiles)
  Time window = 1.0;      // time-series window
  // Closed time-series windows go to a temporary file (MetricsCollector's spill), so the
  // run's memory stays flat in simulated time; the CLI's simulations turn it on.
  bool spill_windows = false;
  bool progress = false;  // log progress to stderr on long runs
  // Workers taken out of service at given times (worker-loss experiments).
  std::vector<std::pair<Time, WorkerId>> worker_losses;
  // The time of a step; the profiled tables when null.
  std::shared_ptr<const CostModel> cost_model;
  // Each instance's scheduler (the run spec's `llm:` section); the batching loop when empty.
  SchedulerFactory make_scheduler;
  // Each task's dispatcher, replacing the policies' (an LLM gateway run: the gateway's
  // routing over its backends, docs/llm-gateway.md#simulation); empty: the policies'.
  std::function<std::unique_ptr<Dispatcher>(TaskId)> make_dispatcher;
  // The LLM's context (llm.model.max_positions; 0: none): an arriving request whose input
  // plus output tokens exceed it is refused at the front door, as the live server answers
  // 400: it ends failed, reason context_length, without reaching an instance.
  uint32_t max_positions = 0;
  // An LLM gateway run (llm.backends): the latency the gateway adds before a request reaches
  // its backend (`gateway_hop_ms`; docs/llm-gateway.md#simulation). The default is an order
  // of magnitude for a loopback HTTP hop; docs/results/llm-gateway.md measures it.
  Time gateway_hop = 0.001;
  // The bytes of prompt text per token the simulated gateway assumes when it estimates a
  // prompt's tokens and hashes its blocks from the text, as the live gateway does
  // (`gateway_bytes_per_token`; 4, the gateway's own rule of thumb, makes its estimate the
  // prompt's tokens; 1 for a byte tokenizer's prompts).
  uint32_t gateway_bytes_per_token = 4;
};

}  // namespace tessera
