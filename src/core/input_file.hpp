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

// "16 MiB", "1 GiB", "1000 bytes": a byte limit for messages.
std::string bytes_text(std::uint64_t bytes);

}  // namespace tessera
