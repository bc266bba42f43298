#include "core/input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace tessera {

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
    if (text.size() > max_bytes) {
      throw SpecError(path.string(), "", "file too large (at most " + bytes_text(max_bytes) + ")");
    }
  }
  if (in.bad()) throw SpecError(path.string(), "", "read error");
  return text;
}

}  // namespace tessera
