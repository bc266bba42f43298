#include "dataplane/ppipe/forwarding.hpp"

#include "policy/batching.hpp"
#include "policy/dropping.hpp"
#include "policy/fifo_queue.hpp"
#include "policy/variant_choice.hpp"

namespace tessera::reservation {

EnginePolicies central_plane_policies() {
  EnginePolicies out;
  out.batching = std::make_unique<EagerBatching>();
  out.dropping = std::make_unique<NoDropping>();
  out.variant = std::make_unique<FixedVariant>();
  out.make_queue = [](TaskId) { return std::make_unique<FifoQueue>(); };
  return out;
}

}  // namespace tessera::reservation
