#include "workload/generic_csv.hpp"

#include <optional>
#include <string>

#include "core/csv_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/input_limits.hpp"

namespace tessera {
namespace {

constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

struct Columns {
  std::size_t arrival = kAbsent;
  std::size_t input = kAbsent;
  std::size_t output = kAbsent;
  std::size_t slo = kAbsent;
};

Columns read_header(CsvFile& csv) {
  if (!csv.next_row()) throw SpecError(csv.file(), "", "empty file: a header row is required");
  Columns cols;
  const auto& names = csv.fields();
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (names[j] == names[i] && !names[i].empty()) {
        csv.fail(printable(names[i]), "column appears twice in the header");
      }
    }
    if (names[i] == "arrival_s") cols.arrival = i;
    if (names[i] == "input_tokens") cols.input = i;
    if (names[i] == "output_tokens") cols.output = i;
    if (names[i] == "slo_ms") cols.slo = i;
  }
  if (cols.arrival == kAbsent) {
    std::string found;
    for (const auto& name : names) found += (found.empty() ? "" : ", ") + printable(name);
    if (found.size() > 300) found = found.substr(0, 300) + "...";
    csv.fail("the header row must name an 'arrival_s' column (found: " + found + ")");
  }
  return cols;
}

uint32_t read_tokens(const CsvFile& csv, std::size_t col, const char* name) {
  if (col == kAbsent || csv.field(col).empty()) return 0;
  return csv.tokens_at(col, name);
}

}  // namespace

std::vector<Arrival> read_generic_csv(const std::filesystem::path& path) {
  CsvFile csv(path);
  const Columns cols = read_header(csv);
  const std::size_t width = csv.fields().size();
  std::vector<Arrival> out;
  while (csv.next_row()) {
    if (csv.fields().size() != width) {
      csv.fail("expected " + std::to_string(width) + " fields as in the header, found " +
               std::to_string(csv.fields().size()));
    }
    Arrival a;
    auto time = parse_csv_number(csv.field(cols.arrival));
    if (!time) {
      csv.fail("arrival_s",
               "expected a finite number, found '" + printable(csv.field(cols.arrival)) + "'");
    }
    if (*time < 0) {
      csv.fail("arrival_s", "must not be negative, found " + printable(csv.field(cols.arrival)));
    }
    if (!out.empty() && *time < out.back().time) {
      csv.fail("arrival_s", "times must be non-decreasing: " + printable(csv.field(cols.arrival)) +
                                " comes after " + std::to_string(out.back().time));
    }
    a.time = *time;
    a.input_tokens = read_tokens(csv, cols.input, "input_tokens");
    a.output_tokens = read_tokens(csv, cols.output, "output_tokens");
    if (cols.slo != kAbsent && !csv.field(cols.slo).empty()) {
      auto slo = parse_csv_number(csv.field(cols.slo));
      if (!slo || *slo <= 0 || *slo > limits::kMaxMs) {
        csv.fail("slo_ms", "expected a number in (0, 86400000], found '" +
                               printable(csv.field(cols.slo)) + "'");
      }
      a.slo_s = *slo * 1e-3;
    }
    if (static_cast<double>(out.size()) >= limits::kMaxArrivals) {
      csv.fail("more than 1e8 arrivals in one trace");
    }
    charge_trace_row(csv.file(), csv.line());
    out.push_back(a);
  }
  return out;
}

}  // namespace tessera
