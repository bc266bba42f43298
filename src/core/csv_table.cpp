#include "core/csv_table.hpp"

#include <charconv>
#include <cmath>
#include <fstream>

#include "core/csv_file.hpp"
#include "core/error.hpp"

namespace tessera {
CsvTable CsvTable::read(const std::filesystem::path& file, bool has_header,
                        std::uint64_t max_bytes) {
  CsvTable out;
  out.file_ = file.string();
  CsvFile csv(file, max_bytes);
  bool have_width = false;
  while (csv.next_row()) {
    const int number = static_cast<int>(csv.line());
    std::vector<std::string> cells = csv.fields();
    if (!have_width) {
      out.num_columns_ = cells.size();
      have_width = true;
      if (has_header) {
        out.header_ = std::move(cells);
        out.header_line_ = number;
        continue;
      }
    } else if (cells.size() != out.num_columns_) {
      csv.fail("expected " + std::to_string(out.num_columns_) + " cells, found " +
               std::to_string(cells.size()));
    }
    out.rows_.push_back(Row{number, std::move(cells)});
  }
  if (!have_width) throw SpecError(out.file_, "", "file is empty");
  return out;
}

std::optional<std::size_t> CsvTable::find_column(std::string_view name) const {
  for (std::size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return i;
  }
  return std::nullopt;
}

std::size_t CsvTable::column(std::string_view name) const {
  if (auto col = find_column(name)) return *col;
  std::string list;
  for (const std::string& h : header_) list += (list.empty() ? "'" : ", '") + printable(h) + "'";
  if (list.size() > 300) list = list.substr(0, 300) + "...";
  throw SpecError(file_, "line " + std::to_string(header_line_),
                  "missing column '" + std::string(name) + "' (found: " + list + ")");
}

std::string CsvTable::where(int line, std::size_t col) const {
  std::string out = "line " + std::to_string(line) + ", column ";
  if (col < header_.size() && !header_[col].empty())
    return out + "'" + printable(header_[col]) + "'";
  return out + std::to_string(col + 1);
}

void CsvTable::fail(const Row& row, std::size_t col, const std::string& problem) const {
  throw SpecError(file_, where(row.line, col), problem);
}

const std::string& CsvTable::text(const Row& row, std::size_t col) const {
  if (col >= row.cells.size()) fail(row, col, "missing cell");
  return row.cells[col];
}

double CsvTable::number(const Row& row, std::size_t col) const {
  const std::string& s = text(row, col);
  double value = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) {
    fail(row, col, "expected a finite number, found '" + printable(s) + "'");
  }
  return value;
}

int64_t CsvTable::integer(const Row& row, std::size_t col) const {
  const std::string& s = text(row, col);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    fail(row, col, "expected a 64-bit integer, found '" + printable(s) + "'");
  }
  return value;
}

}  // namespace tessera
