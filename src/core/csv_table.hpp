#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/input_limits.hpp"

namespace tessera {

// A whole comma-separated file with a header, read through CsvFile (so quoting and error
// positions follow the same rules), for the profile importers. Every error is a SpecError
// naming the file, the line and the column.
class CsvTable {
 public:
  struct Row {
    int line = 0;  // 1-based line number in the file
    std::vector<std::string> cells;
  };

  // Reads `file`. With `has_header` the first non-blank line names the columns. Blank
  // lines are skipped, cells are trimmed, and every row must have as many cells as the
  // header (or, without a header, as the first row). The file must be a regular file of at
  // most `max_bytes`.
  static CsvTable read(const std::filesystem::path& file, bool has_header,
                       std::uint64_t max_bytes = limits::kMaxTableFileBytes);

  const std::string& file() const { return file_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<Row>& rows() const { return rows_; }
  std::size_t num_columns() const { return num_columns_; }

  std::optional<std::size_t> find_column(std::string_view name) const;
  std::size_t column(std::string_view name) const;  // error naming the file if absent

  const std::string& text(const Row& row, std::size_t col) const;
  double number(const Row& row, std::size_t col) const;  // finite
  int64_t integer(const Row& row, std::size_t col) const;

  // "line 12, column 'avg_runtime'" (or "column 3" for files without a header).
  std::string where(int line, std::size_t col) const;
  [[noreturn]] void fail(const Row& row, std::size_t col, const std::string& problem) const;

 private:
  std::string file_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
  std::size_t num_columns_ = 0;
  int header_line_ = 0;
};

}  // namespace tessera
