#pragma once

#include <memory>

#include "models/model.hpp"
#include "models/model_spec.hpp"

namespace tessera {

// The zoo's `noop` model: returns each input unchanged and never touches libtorch. It
// measures the serving path alone (docs/benchmarks.md), and its outputs are the client's
// own numbers, so tests can choose a DAG's fan-out exactly. `sleep` is the same model
// that also waits latency_ms + per_item_ms x batch per batch without using the CPU: a
// device of known speed, for overload and shutdown tests and for checking the server
// against the simulator without CPU contention. `faulty` returns its input too, but
// throws on a batch holding an item whose first value is negative (a bad input) and waits
// latency_ms on a batch holding one whose first value is >= 1000 (a stuck call): the
// fault tests' model (docs/reliability.md). A profile-timed emulation
// (ModelSpec::Source::kProfileTimed, kind "profile-timed") is the no-op model too: it
// returns its input at once, and the server delivers its batch when the worker's profiled
// latency for that batch size has passed (docs/serve.md#profile-timed-emulation).
std::unique_ptr<Model> make_noop_model(const ModelSpec& spec);

}  // namespace tessera
