#include "workload/civil_time.hpp"

namespace tessera {
namespace {

bool is_leap(int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int64_t year, int month) {
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap(year) ? 29 : kDays[month - 1];
}

// Reads exactly `width` decimal digits at `pos`, advancing it.
bool read_digits(std::string_view text, std::size_t& pos, std::size_t width, int64_t& out) {
  if (pos + width > text.size()) return false;
  out = 0;
  for (std::size_t i = 0; i < width; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += width;
  return true;
}

bool expect(std::string_view text, std::size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c) return false;
  ++pos;
  return true;
}

}  // namespace

int64_t days_from_civil(int64_t year, int month, int day) {
  // Count in 400-year eras of 146097 days, with years starting on 1 March so that the
  // leap day falls at the end of the counting year.
  const int64_t y = month <= 2 ? year - 1 : year;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t year_of_era = y - era * 400;                               // [0, 399]
  const int64_t month_from_march = month > 2 ? month - 3 : month + 9;      // [0, 11]
  const int64_t day_of_year = (153 * month_from_march + 2) / 5 + day - 1;  // [0, 365]
  const int64_t day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;  // [0, 146096]
  return era * 146097 + day_of_era - 719468;  // 719468 days from 0000-03-01 to 1970-01-01
}

std::optional<CivilTimestamp> parse_civil_timestamp(std::string_view text) {
  std::size_t pos = 0;
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_digits(text, pos, 4, year) || !expect(text, pos, '-') ||
      !read_digits(text, pos, 2, month) || !expect(text, pos, '-') ||
      !read_digits(text, pos, 2, day)) {
    return std::nullopt;
  }
  if (pos >= text.size() || (text[pos] != ' ' && text[pos] != 'T')) return std::nullopt;
  ++pos;
  if (!read_digits(text, pos, 2, hour) || !expect(text, pos, ':') ||
      !read_digits(text, pos, 2, minute) || !expect(text, pos, ':') ||
      !read_digits(text, pos, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, static_cast<int>(month)) ||
      hour > 23 || minute > 59 || second > 59) {
    return std::nullopt;
  }
  CivilTimestamp out;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    // Up to 15 digits count (far below a nanosecond); further digits are read and dropped.
    int64_t numerator = 0;
    double denominator = 1.0;
    std::size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 15) {
        numerator = numerator * 10 + (text[pos] - '0');
        denominator *= 10.0;
      }
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    out.fraction = static_cast<double>(numerator) / denominator;
  }
  int64_t offset_s = 0;
  if (pos < text.size() && text[pos] == 'Z') {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int64_t sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t off_h = 0, off_m = 0;
    if (!read_digits(text, pos, 2, off_h) || !expect(text, pos, ':') ||
        !read_digits(text, pos, 2, off_m) || off_h > 23 || off_m > 59) {
      return std::nullopt;
    }
    offset_s = sign * (off_h * 3600 + off_m * 60);
  }
  if (pos != text.size()) return std::nullopt;
  // Local time = UTC + offset, so UTC = local - offset.
  out.seconds = days_from_civil(year, static_cast<int>(month), static_cast<int>(day)) * 86400 +
                hour * 3600 + minute * 60 + second - offset_s;
  return out;
}

double seconds_between(const CivilTimestamp& a, const CivilTimestamp& b) {
  return static_cast<double>(b.seconds - a.seconds) + (b.fraction - a.fraction);
}

}  // namespace tessera
