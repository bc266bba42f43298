#pragma once

// Bounded, safe opening of the files a spec names. A spec may name any path, so before a
// reader opens one it must be a regular file (not a device such as /dev/zero, a FIFO that
// would block, a socket or a directory) no larger than the reader's limit. Reads stop at
// the limit too, for files whose size stat() does not tell (/proc).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tessera {

// Why `path` cannot be read as an input of at most `max_bytes`, or nothing if it can.
std::optional<std::string> input_file_problem(const std::filesystem::path& path,
                                              std::uint64_t max_bytes);

// Reads a whole file of at most `max_bytes`; any problem is a SpecError naming the file.
std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes);

// The reads of one top-level load share a budget (limits::kMaxLoadBytes bytes read,
// limits::kMaxLoadTraceRows trace rows held), so a spec cannot name the same large file a
// million times. The first LoadBudget alive on a thread opens the budget; nested ones
// (a re-plan spec loading its plan spec) join it. Without one, reads are not counted.
class LoadBudget {
 public:
  LoadBudget();
  ~LoadBudget();
  LoadBudget(const LoadBudget&) = delete;
  LoadBudget& operator=(const LoadBudget&) = delete;

 private:
  bool owner_ = false;
};

// Counts `bytes` read from `file` (SpecError naming the file when over budget).
void charge_read_bytes(const std::string& file, std::uint64_t bytes);
// Counts one trace row held in memory, read at `line` of `file`.
void charge_trace_row(const std::string& file, std::size_t line);

// "16 MiB", "1 GiB", "1000 bytes": a byte limit for messages.
std::string bytes_text(std::uint64_t bytes);

}  // namespace tessera
