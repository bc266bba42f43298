#include "serve/server/triton_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

namespace tessera {
namespace {

// The boot time (/proc/stat's btime) plus the process's start in clock ticks after boot
// (/proc/self/stat's 22nd field, counted after the parenthesised command name, which may
// itself hold spaces or parentheses).
std::optional<double> process_start_time_seconds() {
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {  // field 3 (state) up to field 22 (starttime)
    if (!(fields >> field)) return std::nullopt;
  }
  double ticks = 0;
  try {
    ticks = std::stod(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::ifstream system("/proc/stat");
  std::string key;
  double btime = -1;
  while (system >> key) {
    if (key == "btime") {
      system >> btime;
      break;
    }
    system.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long hz = sysconf(_SC_CLK_TCK);
  if (btime < 0 || hz <= 0) return std::nullopt;
  return btime + ticks / static_cast<double>(hz);
}

}  // namespace

std::string render_triton_metrics(const std::vector<TritonModelRow>& rows) {
  std::string out;
  const auto labels = [](const TritonModelRow& r) {
    return "model=\"" + prom_label_escape(r.model) + "\",version=\"" +
           prom_label_escape(r.version) + "\"";
  };
  const auto family = [&](const std::string& name, const char* type, const char* help,
                          const std::function<std::string(const TritonModelRow&)>& value) {
    prom_header(out, name, type, help);
    for (const TritonModelRow& r : rows) out += name + "{" + labels(r) + "} " + value(r) + "\n";
  };
  const auto u = [](uint64_t v) { return std::to_string(v); };
  const auto us = [](const StatDuration& d) { return std::to_string(d.ns / 1000); };
  family("tessera_inference_request_success_total", "counter",
         "Inference requests answered 200 (Triton: nv_inference_request_success).",
         [&](const TritonModelRow& r) { return u(r.stats.success.count); });
  family("tessera_inference_request_failure_total", "counter",
         "Inference requests answered with an error: invalid, dropped, failed, rejected, "
         "shut down (Triton: nv_inference_request_failure).",
         [&](const TritonModelRow& r) { return u(r.stats.fail.count); });
  family("tessera_inference_count_total", "counter",
         "Inferences performed: a request of a batch of N counts N (Triton: nv_inference_count).",
         [&](const TritonModelRow& r) { return u(r.stats.inference_count); });
  family("tessera_inference_exec_count_total", "counter",
         "Batches executed by the model's workers (Triton: nv_inference_exec_count).",
         [&](const TritonModelRow& r) { return u(r.executions); });
  family("tessera_inference_pending_request_count", "gauge",
         "Requests admitted and not yet answered (Triton: nv_inference_pending_request_count).",
         [&](const TritonModelRow& r) { return std::to_string(r.pending); });
  family("tessera_inference_request_duration_us", "counter",
         "Cumulative end-to-end duration of successful requests, microseconds (Triton: "
         "nv_inference_request_duration_us).",
         [&](const TritonModelRow& r) { return us(r.stats.success); });
  family("tessera_inference_queue_duration_us", "counter",
         "Cumulative time successful requests waited before their first batch, microseconds "
         "(Triton: nv_inference_queue_duration_us).",
         [&](const TritonModelRow& r) { return us(r.stats.queue); });
  family("tessera_inference_compute_input_duration_us", "counter",
         "Cumulative time parsing and checking request inputs, microseconds (Triton: "
         "nv_inference_compute_input_duration_us).",
         [&](const TritonModelRow& r) { return us(r.stats.compute_input); });
  family("tessera_inference_compute_infer_duration_us", "counter",
         "Cumulative time from the first batch to the answer, microseconds (Triton: "
         "nv_inference_compute_infer_duration_us).",
         [&](const TritonModelRow& r) { return us(r.stats.compute_infer); });
  family("tessera_inference_compute_output_duration_us", "counter",
         "Cumulative time encoding responses, microseconds (Triton: "
         "nv_inference_compute_output_duration_us).",
         [&](const TritonModelRow& r) { return us(r.stats.compute_output); });
  const auto histogram = [&](const std::string& name, const char* help,
                             PromHistogram ModelStats::*member) {
    prom_header(out, name, "histogram", help);
    for (const TritonModelRow& r : rows)
      render_prom_histogram(out, name, labels(r), r.stats.*member);
  };
  histogram("tessera_inference_queue_duration_seconds",
            "Queue time of successful requests, seconds.", &ModelStats::queue_h);
  histogram("tessera_inference_compute_input_duration_seconds",
            "Input (parse) time of successful requests, seconds.", &ModelStats::compute_input_h);
  histogram("tessera_inference_compute_infer_duration_seconds",
            "Infer time (first batch to answer) of successful requests, seconds.",
            &ModelStats::compute_infer_h);
  histogram("tessera_inference_compute_output_duration_seconds",
            "Output (encode) time of successful requests, seconds.", &ModelStats::compute_output_h);
  return out;
}

std::string render_process_metrics() {
  std::string out;
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    prom_header(out, "process_cpu_seconds_total", "counter", "User and system CPU time, seconds.");
    out += "process_cpu_seconds_total " + std::to_string(cpu) + "\n";
  }
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  if (statm >> pages >> resident) {
    prom_header(out, "process_resident_memory_bytes", "gauge", "Resident memory, bytes.");
    out += "process_resident_memory_bytes " +
           std::to_string(static_cast<long long>(resident) * sysconf(_SC_PAGESIZE)) + "\n";
    prom_header(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size, bytes.");
    out += "process_virtual_memory_bytes " +
           std::to_string(static_cast<long long>(pages) * sysconf(_SC_PAGESIZE)) + "\n";
  }
  if (const std::optional<double> start = process_start_time_seconds()) {
    prom_header(out, "process_start_time_seconds", "gauge",
                "Start time of the process since the Unix epoch, seconds.");
    out += "process_start_time_seconds " + std::to_string(*start) + "\n";
  }
  std::error_code ec;
  std::size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    prom_header(out, "process_open_fds", "gauge", "Open file descriptors.");
    out += "process_open_fds " + std::to_string(fds) + "\n";
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    prom_header(out, "process_max_fds", "gauge", "The open file descriptor limit.");
    out += "process_max_fds " + std::to_string(static_cast<unsigned long long>(rl.rlim_cur)) + "\n";
  }
  return out;
}

}  // namespace tessera
