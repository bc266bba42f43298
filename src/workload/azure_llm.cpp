#include "workload/azure_llm.hpp"

#include <string>

#include "core/csv_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/input_limits.hpp"
#include "workload/civil_time.hpp"

namespace tessera {
namespace {

constexpr const char* kTimestamp = "TIMESTAMP";
constexpr const char* kContext = "ContextTokens";
constexpr const char* kGenerated = "GeneratedTokens";

std::size_t find_column(const CsvFile& csv, const char* name) {
  const auto& names = csv.fields();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  csv.fail(std::string("the header row must name a '") + name +
           "' column (expected TIMESTAMP,ContextTokens,GeneratedTokens)");
}

}  // namespace

std::vector<Arrival> read_azure_llm_csv(const std::filesystem::path& path) {
  CsvFile csv(path);
  if (!csv.next_row()) throw SpecError(csv.file(), "", "empty file: a header row is required");
  const std::size_t width = csv.fields().size();
  const std::size_t time_col = find_column(csv, kTimestamp);
  const std::size_t input_col = find_column(csv, kContext);
  const std::size_t output_col = find_column(csv, kGenerated);

  std::vector<Arrival> out;
  CivilTimestamp first;
  while (csv.next_row()) {
    if (csv.fields().size() != width) {
      csv.fail("expected " + std::to_string(width) + " fields as in the header, found " +
               std::to_string(csv.fields().size()));
    }
    auto stamp = parse_civil_timestamp(csv.field(time_col));
    if (!stamp) {
      csv.fail(kTimestamp, "expected a timestamp like 2023-11-16 18:17:03.9799600, found '" +
                               printable(csv.field(time_col)) + "'");
    }
    if (out.empty()) first = *stamp;
    Arrival a;
    a.time = seconds_between(first, *stamp);
    if (!out.empty() && a.time < out.back().time) {
      csv.fail(kTimestamp, "times must be non-decreasing: " + printable(csv.field(time_col)) +
                               " is earlier than the row before it");
    }
    a.input_tokens = csv.tokens_at(input_col, kContext);
    a.output_tokens = csv.tokens_at(output_col, kGenerated);
    if (static_cast<double>(out.size()) >= limits::kMaxArrivals) {
      csv.fail("more than 1e8 arrivals in one trace");
    }
    charge_trace_row(csv.file(), csv.line());
    out.push_back(a);
  }
  return out;
}

}  // namespace tessera
