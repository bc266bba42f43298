#pragma once

#include "core/time.hpp"

namespace tessera {

// How the Request Broker estimates the downstream latency L_sub (PARD Eq. 3b and the
// ablations of its Table 1).
enum class DownstreamEstimate {
  kFull,        // PARD: Σ q_i + Σ d_i + F⁻¹(λ) over the slowest downstream path
  kBackward,    // PARD-back / Nexus: L_sub = 0 (only preceding and current modules count)
  kServiceOnly  // PARD-sf (DREAM): Σ d_i at batch size 1, no queueing, no batch wait
};

// Every constant of PARD, with the paper's defaults (digest §2.3–2.6).
struct PardSettings {
  DownstreamEstimate estimate = DownstreamEstimate::kFull;
  double lambda = 0.1;      // quantile of the aggregate downstream batch wait
  Time queue_window = 5.0;  // linearly weighted window of the queueing delay q_i
  int samples = 10000;      // M: samples per batch-wait quantile refresh
  Time sync_period = 1.0;   // state shared between tasks this often (engine time)
  bool hysteresis = true;   // dynamic ε band; false = PARD-instant (switch at μ = 1)
  Time rate_window = 5.0;   // window of the smoothed input rate T_s and of ε
  // q_i is at least the linearly weighted average (same window) of the time the task's
  // workers need to serve their backlog (queued items / throughput at the configured batch
  // size), sampled at each sync: under HBF the served requests are the freshest, and their
  // queueing delay alone hides a congested task (issue 11). Off by default: on its own
  // threshold it makes upstream tasks drop everything for a while, then nothing (see
  // docs/policies.md). false: q_i from served requests only (the paper's text).
  bool backlog_queueing = false;
  // Purge from a queue's least-budget end the requests that can no longer meet their
  // deadline even with no queueing and no batch wait from here on (the digest's reading
  // of the DEPQ popping both ends; DropReason::kStale).
  bool purge_hopeless = true;
  // The load factor's input workload T_in counts the requests the task still holds: μ =
  // (arrivals in the last sync period + items queued now) / (T_m x period). Off: T_in is
  // the arrival rate alone, and μ falls below 1 as soon as a burst's arrivals do, while its
  // backlog is still queued (see docs/policies.md#pard).
  bool backlog_load = false;
  // How often each task re-evaluates its own load factor μ and priority mode from its own
  // arrivals and queue (ε stays the sync's); 0: only at the sync. The paper syncs state
  // across modules once per second (§5.4) but does not say how often a module reads its
  // own load: at 1 s a burst's first second runs in the mode of the calm before it.
  Time mode_period = 0.0;
};

}  // namespace tessera
