#pragma once

#include <random>
#include <span>
#include <vector>

#include "core/time.hpp"

namespace tessera {

// The λ-quantile F⁻¹(λ) of the aggregate batch wait over a downstream path (PARD §4.2).
//
// A request reaching module i joins a forming batch that starts when the running one
// ends, so it waits a fraction of the batch cycle d_i. Following the digest's model-based
// reading, each of `samples` draws gives every module an independent uniform phase in
// its cycle, W_i ~ U[0, d_i), and sums over the path; the result is the empirical
// λ-quantile of the sums. With equal cycles this is the Irwin–Hall quantile (n = 1..4,
// λ = 0.1: 0.100, 0.447, 0.844, 1.249 × d). λ = 0 gives 0 and λ = 1 gives Σ d_i.
// `scratch` is reused between calls to avoid allocation.
Time batch_wait_quantile(std::span<const Time> cycles, double lambda, int samples,
                         std::mt19937_64& rng, std::vector<Time>& scratch);

}  // namespace tessera
