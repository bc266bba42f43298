#include "core/csv_file.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace tessera {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool is_blank(std::string_view text) { return trim(text).empty(); }

}  // namespace

CsvFile::CsvFile(const std::filesystem::path& path, std::uint64_t max_bytes)
    : file_(path.string()), max_bytes_(max_bytes) {
  // Checked before opening: opening a FIFO would block, and a device never ends.
  if (auto problem = input_file_problem(path, max_bytes)) throw SpecError(file_, "", *problem);
  in_.open(path, std::ios::binary);
  if (!in_) throw SpecError(file_, "", "cannot open file");
}

bool CsvFile::next_row() {
  while (std::getline(in_, buffer_)) {
    ++line_;
    bytes_read_ += buffer_.size() + 1;
    charge_read_bytes(file_, buffer_.size() + 1);
    if (bytes_read_ > max_bytes_ + 1) {
      throw SpecError(file_, "line " + std::to_string(line_),
                      "file too large (at most " + bytes_text(max_bytes_) + ")");
    }
    if (!buffer_.empty() && buffer_.back() == '\r') buffer_.pop_back();
    if (is_blank(buffer_)) continue;
    split(buffer_);
    return true;
  }
  return false;
}

void CsvFile::split(std::string_view text) {
  std::size_t count = 0;
  std::size_t pos = 0;
  while (true) {
    if (count >= limits::kMaxCsvFields) {
      fail("more than " + std::to_string(limits::kMaxCsvFields) + " fields in one row");
    }
    if (fields_.size() <= count) fields_.emplace_back();
    std::string& out = fields_[count++];
    out.clear();
    // Skip leading spaces to see whether the field is quoted.
    std::size_t start = pos;
    while (start < text.size() && (text[start] == ' ' || text[start] == '\t')) ++start;
    if (start < text.size() && text[start] == '"') {
      std::size_t i = start + 1;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            out.push_back('"');
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        out.push_back(text[i++]);
      }
      if (!closed) fail("unterminated quoted field");
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      if (i < text.size() && text[i] != ',') fail("unexpected text after a quoted field");
      pos = i;
    } else {
      std::size_t end = text.find(',', pos);
      if (end == std::string_view::npos) end = text.size();
      out.assign(trim(text.substr(pos, end - pos)));
      pos = end;
    }
    if (pos >= text.size()) break;
    ++pos;  // the comma
  }
  fields_.resize(count);
}

uint32_t CsvFile::tokens_at(std::size_t col, std::string_view column) const {
  auto value = parse_csv_tokens(field(col));
  if (!value) {
    fail(column,
         "expected a non-negative integer below 2^32, found '" + printable(field(col)) + "'");
  }
  return *value;
}

void CsvFile::fail(const std::string& problem) const {
  throw SpecError(file_, "line " + std::to_string(line_), problem);
}

void CsvFile::fail(std::string_view column, const std::string& problem) const {
  throw SpecError(file_, "line " + std::to_string(line_) + ", column " + std::string(column),
                  problem);
}

std::optional<double> parse_csv_number(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<uint64_t> parse_csv_count(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint32_t> parse_csv_tokens(std::string_view text) {
  auto value = parse_csv_count(text);
  if (!value || *value > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

}  // namespace tessera
