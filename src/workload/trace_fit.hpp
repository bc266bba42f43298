#pragma once

// fit_trace_to_rate: a recorded trace turned into an arrival stream with a chosen mean
// rate and length, keeping the trace's shape (its bursts and lulls). The trace is read as
// a periodic sequence (it repeats after its last arrival plus one mean gap); the first
// k = ceil(rate x duration_s) of its arrivals are kept and their times scaled by one factor
// so that arrival k (the first one left out) would fall exactly at duration_s. So the
// point gets exactly k arrivals (its mean rate is the target) and the sequence of gaps is
// the trace's own, compressed or stretched. This is how `tessera ppipe-simulate --trace`
// builds PPipe's "bursty" workload from a real trace (docs/results/ppipe.md): the paper's
// MAF 2021 trace is not available here.
//
// Pure function of its inputs (no randomness); the result is owned by the caller.

#include <string>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// `trace` must hold at least two arrivals in non-decreasing time order spanning a positive
// time; `rate` > 0 (requests per second); `duration_s` > 0. Arrivals keep their token
// counts and SLOs; the result starts at time 0 and ends before `duration_s`. Throws
// std::invalid_argument naming `what` (e.g. the file) when the trace is unusable, an
// argument is out of range, or k would exceed `max_arrivals`.
std::vector<Arrival> fit_trace_to_rate(const std::vector<Arrival>& trace, double rate,
                                       double duration_s, const std::string& what,
                                       std::size_t max_arrivals = 50'000'000);

// fold_trace_to_rate: the PPipe authors' scaling of the MAF 2021 trace (digest §5.2, from
// their simulator): with s = rate / trace rate (trace rate = (n - 1) / span), every time
// (from the first arrival) is folded modulo span / s and the result sorted, which overlays
// s segments of the trace (bursts of nearby requests survive; slow swings average out);
// that period repeats back to back until `duration_s`. Same preconditions and errors as
// fit_trace_to_rate; the result holds about rate x duration_s arrivals.
std::vector<Arrival> fold_trace_to_rate(const std::vector<Arrival>& trace, double rate,
                                        double duration_s, const std::string& what,
                                        std::size_t max_arrivals = 50'000'000);

}  // namespace tessera
