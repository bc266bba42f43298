#include "policy/policy_set.hpp"

#include <stdexcept>

#include "policy/edf_queue.hpp"
#include "policy/fifo_queue.hpp"
#include "spec/spec_node.hpp"

namespace tessera {

std::string PolicyConfig::describe() const {
  std::string out = "dispatch=" + dispatch + " queue=" + queue + " batching=" + batching;
  if (batching == "timeout") out += "(" + std::to_string(to_ms(batch_timeout)) + "ms)";
  out += " dropping=" + dropping + " variant=" + variant;
  if (max_queue > 0) out += " max_queue=" + std::to_string(max_queue);
  return out;
}

PolicyConfig parse_policy_config(const SpecNode& node) {
  PolicyConfig config;
  node.allow_only({"dispatch", "queue", "batching", "dropping", "variant", "max_queue"});
  if (auto n = node.get("dispatch"))
    config.dispatch = n->as_choice({"round_robin", "least_loaded"});
  if (auto n = node.get("queue")) config.queue = n->as_choice({"fifo", "edf"});
  if (auto n = node.get("dropping")) config.dropping = n->as_choice({"none", "expired"});
  if (auto n = node.get("variant")) config.variant = n->as_choice({"fixed"});
  if (auto n = node.get("max_queue")) {
    auto v = n->as_integer();
    if (v < 0) n->fail("must not be negative");
    config.max_queue = static_cast<std::size_t>(v);
  }
  if (auto n = node.get("batching")) {
    if (n->is_scalar()) {
      config.batching = n->as_choice({"eager", "timeout"});
    } else {
      n->allow_only({"kind", "timeout_ms"});
      config.batching = n->at("kind").as_choice({"eager", "timeout"});
      if (auto t = n->get("timeout_ms")) {
        if (config.batching != "timeout") t->fail("only timeout batching takes a timeout");
        config.batch_timeout = from_ms(t->as_non_negative());
      }
    }
  }
  return config;
}

PolicySet::PolicySet(PolicyConfig config) : config_(std::move(config)) {}

std::unique_ptr<WorkQueue> PolicySet::make_queue() const {
  if (config_.queue == "edf") return std::make_unique<EdfQueue>();
  if (config_.queue == "fifo") return std::make_unique<FifoQueue>();
  throw std::invalid_argument("unknown queue policy: " + config_.queue);
}

std::unique_ptr<Dispatcher> PolicySet::make_dispatcher() const {
  if (config_.dispatch == "least_loaded") return std::make_unique<LeastLoadedDispatcher>();
  if (config_.dispatch == "round_robin") return std::make_unique<RoundRobinDispatcher>();
  throw std::invalid_argument("unknown dispatch policy: " + config_.dispatch);
}

std::unique_ptr<BatchingPolicy> PolicySet::make_batching() const {
  if (config_.batching == "timeout")
    return std::make_unique<TimeoutBatching>(config_.batch_timeout);
  if (config_.batching == "eager") return std::make_unique<EagerBatching>();
  throw std::invalid_argument("unknown batching policy: " + config_.batching);
}

std::unique_ptr<DropPolicy> PolicySet::make_dropping() const {
  if (config_.dropping == "expired") return std::make_unique<DropExpired>();
  if (config_.dropping == "none") return std::make_unique<NoDropping>();
  throw std::invalid_argument("unknown dropping policy: " + config_.dropping);
}

std::unique_ptr<VariantPolicy> PolicySet::make_variant() const {
  if (config_.variant == "fixed") return std::make_unique<FixedVariant>();
  throw std::invalid_argument("unknown variant policy: " + config_.variant);
}

}  // namespace tessera
