#pragma once

// Output folders of each report kind, written the way the commands write them, for the
// report tests: a simulation and a comparison of the bundled traffic example, a plan of
// examples/plan/traffic.yaml, a synthetic re-planned day, a load generator's output built
// from a small fixture of request records, and charts whose labels would crowd.

#include <filesystem>
#include <string>

namespace tessera::testing_fixtures {

std::filesystem::path scratch_dir(const std::string& name);

void write_simulate_output(const std::filesystem::path& dir);
void write_compare_output(const std::filesystem::path& dir);
void write_plan_output(const std::filesystem::path& dir);
void write_replan_output(const std::filesystem::path& dir);
void write_loadgen_output(const std::filesystem::path& dir);
// Charts whose labels crowd: README's comparison (a bar's value label at the baseline's
// line: jigsawserve's 71.5 % beside naive's 75.8 %) and a run whose p99 (614 ms) sits
// next to its SLO (650 ms) at the right end of the latency CDF.
void write_crowded_labels_output(const std::filesystem::path& dir);

}  // namespace tessera::testing_fixtures
