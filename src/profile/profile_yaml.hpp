#pragma once

#include <filesystem>
#include <iosfwd>

#include "core/spec_node.hpp"
#include "profile/profile_table.hpp"

namespace tessera {

// tessera's own profile file (docs/profiles.md):
//
//   profiles:
//     - variant: yolov5m
//       segment: a100
//       origin: measured          # optional, measured | derived
//       source: "where from"      # optional, defaults to the file name
//       latency_ms: {1: 12.5, 2: 14.0, 4: 20.1}   # batch size -> milliseconds
//
// Unknown fields, batch sizes < 1, latencies <= 0 and a (variant, segment) pair given twice
// are SpecErrors naming the file and the field.
ProfileTable load_profile_yaml(const SpecNode& node);
ProfileTable load_profile_yaml_file(const std::filesystem::path& file);

// Writes `table` in the format above, one entry per curve in (variant, segment) order,
// numbers in their shortest exact form so that loading the output gives the same table.
void write_profile_yaml(const ProfileTable& table, std::ostream& out);

}  // namespace tessera
