#pragma once

#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "models/tensor.hpp"
#include "serve/metrics/server_metrics.hpp"

namespace tessera {

// One named output of an answered request: every result of one leaf task, stacked.
struct NamedOutput {
  std::string name;    // the task
  FloatTensor tensor;  // [results, output_shape...]
};

// What an endpoint tells the HTTP thread waiting for a request, exactly once.
struct Answer {
  AnswerKind kind = AnswerKind::kOk;
  std::string stage;  // kDropped / kFailed: the task where it happened
  DropReason reason = DropReason::kNone;
  std::string message;  // kError / kShutdown: why
  std::vector<NamedOutput> outputs;
  Time latency = 0.0;     // server-side, submit to answer
  Time queue = 0.0;       // of latency: waiting before its first batch started
  double accuracy = 0.0;  // kOk / kLate: the engine's accuracy of the request
};

}  // namespace tessera
