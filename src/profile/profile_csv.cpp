#include "profile/profile_csv.hpp"

#include <charconv>
#include <cmath>
#include <fstream>

#include "core/error.hpp"

namespace tessera {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line.find(',', start);
    if (comma == std::string::npos) {
      cells.push_back(trim(std::string_view(line).substr(start)));
      return cells;
    }
    cells.push_back(trim(std::string_view(line).substr(start, comma - start)));
    start = comma + 1;
  }
}

}  // namespace

ProfileCsv ProfileCsv::read(const std::filesystem::path& file, bool has_header) {
  ProfileCsv out;
  out.file_ = file.string();
  std::ifstream in(file);
  if (!in) throw SpecError(out.file_, "", "cannot open file");
  std::string line;
  int number = 0;
  bool have_width = false;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    std::vector<std::string> cells = split(line);
    if (!have_width) {
      out.num_columns_ = cells.size();
      have_width = true;
      if (has_header) {
        out.header_ = std::move(cells);
        out.header_line_ = number;
        continue;
      }
    } else if (cells.size() != out.num_columns_) {
      throw SpecError(out.file_, "line " + std::to_string(number),
                      "expected " + std::to_string(out.num_columns_) + " cells, found " +
                          std::to_string(cells.size()));
    }
    out.rows_.push_back(Row{number, std::move(cells)});
  }
  if (!have_width) throw SpecError(out.file_, "", "file is empty");
  return out;
}

std::optional<std::size_t> ProfileCsv::find_column(std::string_view name) const {
  for (std::size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return i;
  }
  return std::nullopt;
}

std::size_t ProfileCsv::column(std::string_view name) const {
  if (auto col = find_column(name)) return *col;
  std::string list;
  for (const std::string& h : header_) list += (list.empty() ? "'" : ", '") + h + "'";
  throw SpecError(file_, "line " + std::to_string(header_line_),
                  "missing column '" + std::string(name) + "' (found: " + list + ")");
}

std::string ProfileCsv::where(int line, std::size_t col) const {
  std::string out = "line " + std::to_string(line) + ", column ";
  if (col < header_.size() && !header_[col].empty()) return out + "'" + header_[col] + "'";
  return out + std::to_string(col + 1);
}

void ProfileCsv::fail(const Row& row, std::size_t col, const std::string& problem) const {
  throw SpecError(file_, where(row.line, col), problem);
}

const std::string& ProfileCsv::text(const Row& row, std::size_t col) const {
  if (col >= row.cells.size()) fail(row, col, "missing cell");
  return row.cells[col];
}

double ProfileCsv::number(const Row& row, std::size_t col) const {
  const std::string& s = text(row, col);
  double value = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) {
    fail(row, col, "expected a number, found '" + s + "'");
  }
  return value;
}

int64_t ProfileCsv::integer(const Row& row, std::size_t col) const {
  const std::string& s = text(row, col);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    fail(row, col, "expected an integer, found '" + s + "'");
  }
  return value;
}

}  // namespace tessera
