#include "engine/worker.hpp"

#include "engine/policies.hpp"

namespace tessera {

std::size_t Worker::load() const { return queue->size() + forming.size() + running.size() + held; }

}  // namespace tessera
