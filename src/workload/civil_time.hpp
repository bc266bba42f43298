#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (negative
// before 1970). `month` is 1..12 and `day` 1..31; the date is not validated here.
int64_t days_from_civil(int64_t year, int month, int day);

// A point in time as whole seconds since 1970-01-01 00:00:00 UTC plus a fraction in
// [0, 1), kept apart so that differences of nearby timestamps stay exact to well under a
// microsecond.
struct CivilTimestamp {
  int64_t seconds = 0;
  double fraction = 0.0;
};

// Parses "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" (a 'T' may replace the space,
// the fraction may have any number of digits). Returns nothing if the text is malformed
// or the date or time does not exist.
std::optional<CivilTimestamp> parse_civil_timestamp(std::string_view text);

// b - a, in seconds.
double seconds_between(const CivilTimestamp& a, const CivilTimestamp& b);

}  // namespace tessera
