#include "core/input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace tessera {
namespace {

struct BudgetState {
  bool active = false;
  std::uint64_t bytes = 0;
  std::uint64_t rows = 0;
};

thread_local BudgetState budget;

}  // namespace

LoadBudget::LoadBudget() {
  if (!budget.active) {
    budget = BudgetState{true, 0, 0};
    owner_ = true;
  }
}

LoadBudget::~LoadBudget() {
  if (owner_) budget = BudgetState{};
}

void charge_read_bytes(const std::string& file, std::uint64_t bytes) {
  if (!budget.active) return;
  budget.bytes += bytes;
  if (budget.bytes > limits::kMaxLoadBytes) {
    throw SpecError(file, "",
                    "the spec reads more than " + bytes_text(limits::kMaxLoadBytes) +
                        " of files in all (counting each file each time it is named)");
  }
}

void charge_trace_row(const std::string& file, std::size_t line) {
  if (!budget.active) return;
  if (++budget.rows > limits::kMaxLoadTraceRows) {
    throw SpecError(file, "line " + std::to_string(line),
                    "the spec's traces hold more than " +
                        std::to_string(limits::kMaxLoadTraceRows) + " rows in all");
  }
}

std::string bytes_text(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes) + " bytes";
}

std::optional<std::string> input_file_problem(const std::filesystem::path& path,
                                              std::uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return "file not found: " + path.string();
    return "cannot read " + path.string() + ": " + std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) return "not a file but a directory: " + path.string();
  if (!S_ISREG(st.st_mode)) {
    return "not a regular file (a device, FIFO or socket): " + path.string();
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return "file too large: " + path.string() + " has " + std::to_string(st.st_size) +
           " bytes (at most " + bytes_text(max_bytes) + ")";
  }
  return std::nullopt;
}

std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  if (auto problem = input_file_problem(path, max_bytes)) {
    throw SpecError(path.string(), "", *problem);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path.string(), "", "cannot open file");
  std::string text;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    charge_read_bytes(path.string(), static_cast<std::uint64_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw SpecError(path.string(), "", "file too large (at most " + bytes_text(max_bytes) + ")");
    }
  }
  if (in.bad()) throw SpecError(path.string(), "", "read error");
  return text;
}

}  // namespace tessera
