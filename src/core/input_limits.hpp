#pragma once

// The documented upper bounds on what a spec, trace or profile may ask for
// (docs/reliability-specs.md#limits). Every reader enforces them at load time, so that
// `tessera validate` and `tessera simulate` finish in bounded time and memory on any input;
// a value past a bound is a SpecError naming the file, the field and the bound.

#include <cstddef>
#include <cstdint>

namespace tessera::limits {

// Files.
inline constexpr std::uint64_t kMaxSpecFileBytes = 16ull << 20;   // one YAML file: 16 MiB
inline constexpr std::uint64_t kMaxTraceFileBytes = 1ull << 30;   // one trace CSV: 1 GiB
inline constexpr std::uint64_t kMaxTableFileBytes = 64ull << 20;  // one profile CSV: 64 MiB
inline constexpr std::size_t kMaxCsvFields = 100'000;             // fields in one CSV row
// One top-level load (a run, plan or re-plan spec and every file it names, each time it
// names it) reads at most this many bytes and holds at most this many trace rows.
inline constexpr std::uint64_t kMaxLoadBytes = 2ull << 30;  // 2 GiB
inline constexpr std::uint64_t kMaxLoadTraceRows = 100'000'000;

// YAML documents.
inline constexpr int kMaxYamlDepth = 64;                   // nested maps and lists
inline constexpr std::uint64_t kMaxYamlNodes = 1'000'000;  // nodes, aliases expanded

// Times.
inline constexpr double kMaxMs = 86'400'000.0;  // any one delay, SLO or timeout: one day
inline constexpr double kMaxSpanS = 1e7;        // any one time span in seconds: ~116 days
inline constexpr double kMinPeriodS = 1e-3;     // the shortest periodic tick (windows, syncs)

// Work.
inline constexpr std::size_t kMaxTasks = 1024;      // tasks in one application
inline constexpr double kMaxRateRps = 1e9;          // any one rate
inline constexpr double kMaxArrivals = 1e8;         // expected requests in a workload
inline constexpr std::size_t kMaxStreams = 1000;    // sources in one workload's sums
inline constexpr double kMaxWindows = 1e6;          // time-series windows of a run
inline constexpr double kMaxFanoutMean = 1000.0;    // one variant's mean fan-out
inline constexpr double kMaxItemsPerRequest = 1e6;  // expected items of one request
inline constexpr double kMaxItems = 1e9;            // expected items of a whole run
inline constexpr double kMaxPlannerDraws = 1e11;    // PARD State Planner draws in a run
inline constexpr std::int64_t kMaxWorkersPerGroup = 10'000;
inline constexpr std::int64_t kMaxWorkers = 100'000;         // in one deployment
inline constexpr std::int64_t kMaxBatch = 4096;              // a worker's max_batch
inline constexpr std::int64_t kMaxProfileBatch = 1'000'000;  // a batch size in a profile
inline constexpr std::int64_t kMaxSegmentCount = 1'000'000;  // one cluster segment's count

}  // namespace tessera::limits
