#pragma once

#include <cstdint>
#include <string_view>

namespace tessera {

// How a request ends. Every submitted request ends exactly once in one of these.
enum class Outcome : uint8_t {
  kOk,       // completed within its SLO
  kLate,     // completed after its deadline
  kDropped,  // rejected by a policy at some stage (the stage and reason are recorded)
  kFailed,   // could not be served: no live worker, executor error
};

// Why a request was dropped. Policies added later extend this list.
enum class DropReason : uint8_t {
  kNone = 0,
  kExpired,        // already past its deadline when it would join a batch
  kPredictedLate,  // a proactive estimate says it cannot meet its deadline
  kStageBudget,    // exceeded a per-stage latency budget (split-SLO policies)
  kQueueFull,      // bounded queue overflow / admission control
  kOverload,       // upstream admission throttling
  kStale,          // waited past its task's batching timeout without being picked up
  kKvCapacity,     // an LLM request whose KV cache can never fit its instance's blocks
  kTtftSlo,        // an LLM request predicted to miss its time-to-first-token SLO
  kCancelled,      // a live server's client went away before its answer
  kGatewayShed,    // an LLM gateway's routing shed it: no backend could serve it within its SLO
  kCount,
};

inline constexpr std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kLate:
      return "late";
    case Outcome::kDropped:
      return "dropped";
    case Outcome::kFailed:
      return "failed";
  }
  return "?";
}

inline constexpr std::string_view drop_reason_name(DropReason r) {
  switch (r) {
    case DropReason::kNone:
      return "none";
    case DropReason::kExpired:
      return "expired";
    case DropReason::kPredictedLate:
      return "predicted_late";
    case DropReason::kStageBudget:
      return "stage_budget";
    case DropReason::kQueueFull:
      return "queue_full";
    case DropReason::kOverload:
      return "overload";
    case DropReason::kStale:
      return "stale";
    case DropReason::kKvCapacity:
      return "kv_capacity";
    case DropReason::kTtftSlo:
      return "ttft_slo";
    case DropReason::kCancelled:
      return "cancelled";
    case DropReason::kGatewayShed:
      return "gateway_shed";
    case DropReason::kCount:
      break;
  }
  return "?";
}

}  // namespace tessera
