#include "workload/azure_functions.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "core/csv_file.hpp"
#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace tessera {
namespace {

constexpr std::size_t kKeyColumns = 4;
constexpr const char* kKeyNames[kKeyColumns] = {"HashOwner", "HashApp", "HashFunction", "Trigger"};

// Checks the header and returns the number of minute columns.
std::size_t read_header(CsvFile& csv) {
  if (!csv.next_row()) throw SpecError(csv.file(), "", "empty file: a header row is required");
  const auto& names = csv.fields();
  for (std::size_t i = 0; i < kKeyColumns; ++i) {
    if (i >= names.size() || names[i] != kKeyNames[i]) {
      csv.fail(std::to_string(i + 1), std::string("expected '") + kKeyNames[i] +
                                          "' (header HashOwner,HashApp,HashFunction,"
                                          "Trigger,1,2,...,1440)");
    }
  }
  if (names.size() == kKeyColumns) csv.fail("the header names no minute columns (1,2,...)");
  for (std::size_t i = kKeyColumns; i < names.size(); ++i) {
    const std::string expected = std::to_string(i - kKeyColumns + 1);
    if (names[i] != expected) {
      csv.fail(std::to_string(i + 1),
               "expected minute '" + expected + "', found '" + printable(names[i]) + "'");
    }
  }
  return names.size() - kKeyColumns;
}

}  // namespace

FunctionCounts read_functions_counts(const std::filesystem::path& path,
                                     const std::optional<std::vector<std::size_t>>& rows) {
  CsvFile csv(path);
  const std::size_t minutes = read_header(csv);
  FunctionCounts out;
  out.per_minute.assign(minutes, 0);
  std::multiset<std::size_t> wanted;
  if (rows) wanted.insert(rows->begin(), rows->end());
  // Sums stay below limits::kMaxArrivals, so they cannot wrap.
  const auto max_count = static_cast<uint64_t>(limits::kMaxArrivals);
  while (csv.next_row()) {
    const std::size_t row = out.rows_in_file++;
    if (csv.fields().size() != kKeyColumns + minutes) {
      csv.fail("expected " + std::to_string(kKeyColumns + minutes) +
               " fields as in the header, found " + std::to_string(csv.fields().size()));
    }
    const std::size_t repeats = rows ? wanted.count(row) : 1;
    if (repeats == 0) continue;
    for (std::size_t m = 0; m < minutes; ++m) {
      const std::string& text = csv.field(kKeyColumns + m);
      auto count = parse_csv_count(text);
      if (!count) {
        csv.fail(std::to_string(m + 1),
                 "expected a non-negative integer count, found '" + printable(text) + "'");
      }
      if (*count > max_count || out.per_minute[m] + *count * repeats > max_count) {
        csv.fail(std::to_string(m + 1),
                 "the minute's count (summed over the selected rows) "
                 "exceeds 1e8 arrivals");
      }
      out.per_minute[m] += *count * repeats;
    }
  }
  return out;
}

}  // namespace tessera
