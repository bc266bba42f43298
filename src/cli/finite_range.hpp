#pragma once

// A CLI11 validator for a numeric option that must be a finite number in [lo, hi].
// CLI::Range compares, and NaN fails every comparison, so it lets "nan" through; this one
// refuses it (and infinities) with the same kind of message naming the option. Header-only,
// stateless, safe from any thread.

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace tessera::cli {

inline CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value)) return "Value " + text + " is not a number";
        if (!std::isfinite(value) || value < lo || value > hi) {
          return fmt::format("Value {} not in range {} to {}", text, lo, hi);
        }
        return {};
      },
      fmt::format("FINITE in [{} - {}]", lo, hi));
}

}  // namespace tessera::cli
