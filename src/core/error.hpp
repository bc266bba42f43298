#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera {

// Text from an input file made safe to quote in a message: at most `max_bytes` bytes of
// it (then "...(N bytes)"), with control bytes, bytes >= 0x80 and backslashes (unless
// `escape_backslash` is false, for text that is already escaped) written as \xNN, so a
// message is short, printable ASCII and valid UTF-8 whatever the input held.
inline std::string printable(std::string_view text, std::size_t max_bytes = 60,
                             bool escape_backslash = true) {
  std::string out;
  const std::size_t n = text.size() < max_bytes ? text.size() : max_bytes;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f || (escape_backslash && c == '\\')) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (n < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

// An error in a user-supplied file: names the file, the field (a dotted path such as
// `tasks[1].variants[0].accuracy`) and what is wrong with it. what() is always short,
// printable ASCII (parts capped, other bytes as \xNN), whatever text the parts quote;
// file(), field() and problem() return the parts as given.
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string file, std::string field, std::string problem)
      : std::runtime_error(format(file, field, problem)),
        file_(std::move(file)),
        field_(std::move(field)),
        problem_(std::move(problem)) {}

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }

 private:
  static std::string format(const std::string& file, const std::string& field,
                            const std::string& problem) {
    std::string out = file.empty() ? std::string("<inline>") : printable(file, 300, false);
    if (!field.empty()) out += ": " + printable(field, 300, false);
    return out + ": " + printable(problem, 1000, false);
  }

  std::string file_;
  std::string field_;
  std::string problem_;
};

}  // namespace tessera
