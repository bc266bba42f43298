#pragma once

// The M/D/c headroom model (docs/plan.md#headroom, `headroom.model: mdc`): the utilisation
// at which one instance kind can run and still queue a request for longer than a wait
// budget with at most a given probability. An instance of a kind with c MPS processes is
// taken as an M/D/c queue of batches: Poisson batch arrivals, every batch served in the
// kind's profiled batch latency D by one of c servers. The waiting-time tail uses the
// Erlang-C probability of waiting and the heavy-traffic exponential decay of a GI/G/c queue
// (rate 2 (c mu - lambda) / (Ca^2 + Cs^2), with Ca^2 = 1 for Poisson and Cs^2 = 0 for a
// deterministic service):
//     P(W > t) ~= C(c, c rho) * exp(-2 c (1 - rho) t / D).
// Pure functions of their arguments; thread-safe.

namespace tessera::plan {

// Erlang C: the probability that an arrival waits in an M/M/c (and, as the approximation
// uses it, M/D/c) queue with c servers at utilisation rho (0 <= rho < 1).
double erlang_c(int servers, double rho);

// P(W > wait_s) of the M/D/c queue above (batch latency service_s, utilisation rho).
double mdc_wait_tail(int servers, double rho, double service_s, double wait_s);

// The largest utilisation in [floor, 1) whose mdc_wait_tail at wait_s is at most epsilon
// (to 1e-6); `floor` when even that misses it.
double mdc_utilisation_cap(int servers, double service_s, double wait_s, double epsilon,
                           double floor = 0.05);

}  // namespace tessera::plan
