#include "metrics/chart_style.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace tessera {
namespace {

// Okabe & Ito (2008): blue, orange, bluish green, vermillion, reddish purple, sky blue,
// black, and a darkened yellow that stays visible on white.
constexpr std::array<const char*, 8> kOkabeIto = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                                  "#CC79A7", "#56B4E9", "#000000", "#B8A000"};
// The colours of arrivals/measured (black), goodput (green), late (orange), dropped
// (vermillion): other keys get them last.
constexpr std::array<bool, 8> kOwned = {false, true, true, true, false, false, true, false};
constexpr std::array<std::size_t, 8> kPreference = {0, 4, 7, 5, 1, 2, 3, 6};
constexpr std::array<const char*, 4> kDashes = {"", "7 3", "2 2", "9 3 2 3"};

// Series whose colour must not depend on what else a panel shows (indexes into kOkabeIto).
std::optional<std::size_t> fixed_color(const std::string& key) {
  static const std::map<std::string, std::size_t> fixed = {
      {"arrivals", 6}, {"measured", 6}, {"goodput", 2}, {"ok", 2},  {"late", 1},
      {"dropped", 3},  {"failed", 4},   {"A+S+T", 0},   {"A+S", 1}, {"A+T", 2},
      {"S+T", 3},      {"Unopt", 6},    {"A", 5},       {"S", 4},   {"T", 7}};
  const auto it = fixed.find(key);
  if (it == fixed.end()) return std::nullopt;
  return it->second;
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// The first `n` code points of `s`.
std::string prefix_points(const std::string& s, std::size_t n) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == n) return s.substr(0, i);
      ++seen;
    }
  }
  return s;
}

}  // namespace

std::string Palette::color_for(const std::string& key) {
  auto it = assigned_.find(key);
  if (it == assigned_.end()) {
    Entry e;
    if (const auto fixed = fixed_color(key)) {
      e.color = *fixed;
    } else {
      // Least used first; among equals, colours the outcome series do not own first.
      // (kPreference keeps blue and sky blue apart, as they are the closest pair.)
      auto score = [&](std::size_t c) { return 2 * uses_[c] + (kOwned[c] ? 1 : 0); };
      e.color = kPreference[0];
      for (std::size_t c : kPreference) {
        if (score(c) < score(e.color)) e.color = c;
      }
      e.cycle = uses_[e.color];
    }
    ++uses_[e.color];
    it = assigned_.emplace(key, e).first;
  }
  return kOkabeIto[it->second.color];
}

std::string Palette::dash_for(const std::string& key) {
  color_for(key);
  return kDashes[assigned_[key].cycle % kDashes.size()];
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1.0;
  const double raw = (hi - lo) / std::max(target, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10.0 * p;
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * p * (1 + 1e-9)) {
      step = m * p;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double t = first;; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi > lo)) return {1.0, 10.0};
  const int k0 = static_cast<int>(std::floor(std::log10(lo)));
  const int k1 = static_cast<int>(std::ceil(std::log10(hi)));
  const bool dense = k1 - k0 <= 3;
  for (int k = k0; k <= k1; ++k) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (!dense && m != 1.0) continue;
      const double t = m * std::pow(10.0, k);
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) ticks.push_back(t);
    }
  }
  if (ticks.size() < 2) ticks = {std::pow(10.0, k0), std::pow(10.0, k1)};
  return ticks;
}

std::string format_tick(double value, double step) {
  if (std::abs(value) >= 10000 && std::fmod(std::abs(value), 1000.0) < 1e-9)
    return fmt::format("{:g}k", value / 1000.0);
  const int decimals =
      step > 0 ? std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9))) : 0;
  return fmt::format("{:.{}f}", value, decimals);
}

std::string format_value(double value) {
  if (value != 0 && std::abs(value) < 0.001) return fmt::format("{:.2g}", value);
  if (std::abs(value) >= 1000) return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

ShortLabels shorten_labels(const std::vector<std::string>& labels, std::size_t max_chars) {
  ShortLabels out;
  int next = 1;
  for (const std::string& l : labels) {
    if (code_points(l) <= max_chars) {
      out.shown.push_back(l);
      continue;
    }
    const std::string mark = fmt::format("[{}]", next++);
    const std::size_t keep = max_chars > mark.size() + 1 ? max_chars - mark.size() - 1 : 1;
    out.shown.push_back(prefix_points(l, keep) + "…" + mark);
    out.key.push_back(mark + " " + l);
  }
  return out;
}

double text_width(const std::string& text, double font_size) {
  return 0.6 * font_size * static_cast<double>(code_points(text));
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace tessera
