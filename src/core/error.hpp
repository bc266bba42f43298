#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

// An error in a user-supplied file: names the file, the field (a dotted path such as
// `tasks[1].variants[0].accuracy`) and what is wrong with it.
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
    std::string out = file.empty() ? std::string("<inline>") : file;
    if (!field.empty()) out += ": " + field;
    return out + ": " + problem;
  }

  std::string file_;
  std::string field_;
  std::string problem_;
};

}  // namespace tessera
