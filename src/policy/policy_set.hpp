#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/time.hpp"
#include "policy/batching.hpp"
#include "policy/dispatch.hpp"
#include "policy/dropping.hpp"
#include "policy/variant_choice.hpp"
#include "policy/work_queue.hpp"

namespace tessera {

class SpecNode;

// The runtime policy of a run: one choice per policy family. Families combine freely.
struct PolicyConfig {
  std::string dispatch = "round_robin";  // round_robin | least_loaded
  std::string queue = "fifo";            // fifo | edf
  std::string batching = "eager";        // eager | timeout
  Time batch_timeout = 0.010;            // timeout batching's bound on the oldest wait
  std::string dropping = "none";         // none | expired
  std::string variant = "fixed";         // fixed
  std::size_t max_queue = 0;             // per-worker queue bound; 0 = unbounded

  // One line such as "dispatch=round_robin queue=fifo batching=eager dropping=none".
  std::string describe() const;
};

// Reads the `policies:` section of a run spec. Unknown names are spec errors.
PolicyConfig parse_policy_config(const SpecNode& node);

// Builds fresh policy objects for a config. Per-worker objects (queues) are made once
// per worker; the others once per task (dispatchers) or once per engine.
class PolicySet {
 public:
  explicit PolicySet(PolicyConfig config);
  const PolicyConfig& config() const { return config_; }

  std::unique_ptr<WorkQueue> make_queue() const;
  std::unique_ptr<Dispatcher> make_dispatcher() const;
  std::unique_ptr<BatchingPolicy> make_batching() const;
  std::unique_ptr<DropPolicy> make_dropping() const;
  std::unique_ptr<VariantPolicy> make_variant() const;

 private:
  PolicyConfig config_;
};

}  // namespace tessera
