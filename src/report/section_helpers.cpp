#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "report/sections.hpp"

namespace tessera::report {

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": not valid JSON: " + e.what());
  }
}

std::string num(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

std::string pct(double fraction, int decimals) {
  return fmt::format("{:.{}f} %", 100.0 * fraction, decimals);
}

std::string shown_path(const std::filesystem::path& p) { return p.lexically_normal().string(); }

}  // namespace tessera::report
