#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "profile/profile_table.hpp"

namespace tessera {

// Importers for the profile files of Loki (UMass-LIDS/Loki, HPDC '24); see
// data/profiles/loki/SOURCE.md and docs/profiles.md. CSV problems are SpecErrors naming
// the file, the line and the column.

// simulator_runtimes.csv: `,Model,Accel,batchsize,avg_runtime,50th_pct,90th_pct,95th_pct`
// in milliseconds. Imports the rows whose accelerator is a key of `accel_to_segment`,
// under the mapped segment name (an empty map imports every accelerator under its own
// name); `column` picks the statistic. An accelerator in the map with no rows is an error.
ProfileTable import_loki_runtimes(const std::filesystem::path& csv,
                                  const std::map<std::string, std::string>& accel_to_segment,
                                  const std::string& column = "avg_runtime");

// One detector variant's row of branching.csv.
struct LokiBranch {
  double mult_factor = 1.0;             // detections (child requests) per frame
  std::map<std::string, double> share;  // child task -> fraction of the detections
};

// branching.csv: `,model,mult_factor,<child task>,<child task>...`.
struct LokiBranching {
  std::vector<std::string> children;  // child task names, in header order
  std::map<std::string, LokiBranch> variants;

  // Throws std::out_of_range naming the variant if it has no row.
  const LokiBranch& at(const std::string& variant) const;
};
LokiBranching load_loki_branching(const std::filesystem::path& csv);

// aggregate_profiled.csv: Normalized_Accuracy / 100 per model (1.0 = the most accurate
// variant of its family). A model given two different accuracies is an error.
std::map<std::string, double> load_loki_accuracy(const std::filesystem::path& csv);

}  // namespace tessera
