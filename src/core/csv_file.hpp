#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/input_limits.hpp"

namespace tessera {

// Reads a comma-separated file one row at a time and remembers where it is, so that the
// trace readers can report errors as "<file>: line 12, column arrival_s: <problem>".
// Blank lines are skipped, a trailing '\r' is dropped, fields may be double-quoted (with ""
// for a literal quote) and are trimmed of surrounding spaces. Quoted fields may not span
// lines. The file must be a regular file of at most `max_bytes` (checked when it is opened
// and again while it is read) and a row may hold at most limits::kMaxCsvFields fields.
class CsvFile {
 public:
  // Throws SpecError naming the file if it cannot be opened, is not a regular file or is
  // larger than `max_bytes`.
  explicit CsvFile(const std::filesystem::path& path,
                   std::uint64_t max_bytes = limits::kMaxTraceFileBytes);

  // Reads the next non-blank row; returns false at the end of the file.
  bool next_row();

  const std::vector<std::string>& fields() const { return fields_; }
  const std::string& field(std::size_t index) const { return fields_[index]; }
  std::size_t line() const { return line_; }  // 1-based line of the current row
  const std::string& file() const { return file_; }

  // The token count in field `col` of the current row (column named `column` in errors).
  uint32_t tokens_at(std::size_t col, std::string_view column) const;

  // Errors about the current row, or about one named column of it.
  [[noreturn]] void fail(const std::string& problem) const;
  [[noreturn]] void fail(std::string_view column, const std::string& problem) const;

 private:
  void split(std::string_view text);

  std::string file_;
  std::ifstream in_;
  std::string buffer_;
  std::vector<std::string> fields_;
  std::size_t line_ = 0;
  std::uint64_t max_bytes_ = 0;
  std::uint64_t bytes_read_ = 0;
};

// Field parsers: the whole (trimmed) text must be the value, or they return nothing.
std::optional<double> parse_csv_number(std::string_view text);    // finite decimal number
std::optional<uint64_t> parse_csv_count(std::string_view text);   // non-negative integer
std::optional<uint32_t> parse_csv_tokens(std::string_view text);  // integer in [0, 2^32)

}  // namespace tessera
