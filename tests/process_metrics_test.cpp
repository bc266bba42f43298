// Process metrics (server/triton_metrics.hpp, render_process_metrics): Prometheus'
// standard process_* series read from /proc, with values that must hold for this process.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>

#include "serve/server/triton_metrics.hpp"

namespace tessera {
namespace {

// name -> value of the unlabelled sample lines.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

TEST(ProcessMetrics, StandardSeriesWithPlausibleValues) {
  const std::string text = render_process_metrics();
  const auto s = samples(text);
  for (const char* name : {"process_cpu_seconds_total", "process_resident_memory_bytes",
                           "process_virtual_memory_bytes", "process_start_time_seconds",
                           "process_open_fds", "process_max_fds"}) {
    ASSERT_TRUE(s.count(name)) << name << " missing from:\n" << text;
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
  }
  EXPECT_GT(s.at("process_resident_memory_bytes"), 0);
  EXPECT_GE(s.at("process_virtual_memory_bytes"), s.at("process_resident_memory_bytes"));
  EXPECT_GE(s.at("process_open_fds"), 3);  // at least stdin, stdout, stderr
  // This test process started within the last hour, and not in the future (1 s of tick
  // rounding allowed).
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(s.at("process_start_time_seconds"), now + 1.0);
  EXPECT_GT(s.at("process_start_time_seconds"), now - 3600.0);
}

}  // namespace
}  // namespace tessera
