#pragma once

// The closed sets of runtime policies, one enum per family (docs/policies.md). A run's
// choice of each is a member of PolicyConfig; the registry (policy/registry.hpp) holds one
// row per policy with its spec name, parameters and factory, and gives the names
// (policy_name). Plain values; safe from any thread.

#include <string_view>

namespace tessera {

// Which instance of a task an item goes to.
enum class DispatchKind {
  kRoundRobin,   // round_robin
  kLeastLoaded,  // least_loaded
  kCentral,      // central: one queue per task, served by its idle instances
};

// The order of an instance's queue.
enum class QueueKind {
  kFifo,      // fifo
  kLbf,       // lbf (alias edf): lowest budget first
  kHbf,       // hbf: highest budget first
  kAdaptive,  // adaptive: PARD's HBF/LBF switch (needs the State Planner)
};

// When an instance starts a batch.
enum class BatchingKind {
  kEager,    // eager: at once; the next batch forms while one runs
  kTimeout,  // timeout: full, or the oldest item waited the timeout
  kIdle,     // idle: only on an idle instance
  kJigsaw,   // jigsaw: timeout with the planner's L-hat(t), the next batch at once
};

// What is dropped, where and why.
enum class DroppingKind {
  kNone,           // none
  kExpired,        // expired
  kInfeasible,     // infeasible
  kPard,           // pard: PARD's Request Broker
  kSplit,          // split: per-stage budgets, predictive
  kSplitReactive,  // split_reactive: per-stage budgets, reactive (Clipper++)
  kSplitWindow,    // split_window: per-stage budgets, Nexus's window scan
  kSplitWcl,       // split_wcl: per-stage budgets by worst-case latency
  kJigsaw,         // jigsaw: JigsawServe's early and stale dropping
};

// Which variant and batch size an instance runs.
enum class VariantKind {
  kFixed,        // fixed
  kSlackFit,     // slackfit
  kMaxBatch,     // maxbatch
  kMaxAcc,       // maxacc
  kInfaas,       // infaas
  kClipperPlus,  // clipper+
};

// The spec names ("round_robin", ...), from the registry's rows.
std::string_view policy_name(DispatchKind kind);
std::string_view policy_name(QueueKind kind);
std::string_view policy_name(BatchingKind kind);
std::string_view policy_name(DroppingKind kind);
std::string_view policy_name(VariantKind kind);

}  // namespace tessera
