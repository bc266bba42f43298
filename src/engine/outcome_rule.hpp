#pragma once

// The one rule that judges a request that completed (docs/architecture.md#accounting-per-
// request-and-per-sub-request): ok when it finished by its deadline and, for an LLM request,
// its time to first token and time per output token meet the app's SLOs; otherwise late.
// The engine's ledger applies it to every request it finishes (simulated and live); the load
// generator applies it to what a client measured. Pure functions.

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/app.hpp"

namespace tessera {

// Latencies within this of their bound meet it (floating-point sums of step times).
inline constexpr Time kSloTolerance = 1e-12;

// Whether `value` (a TTFT, a TPOT) meets `slo`; an SLO <= 0 is no bound, and a value < 0
// (not measured: no token was produced) meets any.
constexpr bool within_slo(Time value, Time slo) { return slo <= 0 || value <= slo + kSloTolerance; }

// How a completed request ends, against the TTFT and TPOT SLOs given (a request's own;
// <= 0: none). `ttft` and `tpot` < 0: not an LLM request (or no token times reported),
// judged on its deadline alone.
constexpr Outcome completion_outcome(Time finish, Time deadline, Time ttft, Time tpot,
                                     Time ttft_slo, Time tpot_slo) {
  if (finish > deadline + kSloTolerance) return Outcome::kLate;
  if (!within_slo(ttft, ttft_slo) || !within_slo(tpot, tpot_slo)) return Outcome::kLate;
  return Outcome::kOk;
}
// The same against the app's SLOs.
constexpr Outcome completion_outcome(const App& app, Time finish, Time deadline, Time ttft,
                                     Time tpot) {
  return completion_outcome(finish, deadline, ttft, tpot, app.ttft_slo, app.tpot_slo);
}

}  // namespace tessera
