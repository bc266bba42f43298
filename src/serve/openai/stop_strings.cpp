#include "serve/openai/stop_strings.hpp"

#include <algorithm>
#include <utility>

namespace tessera {

std::string StopStrings::push(const std::string& piece) {
  if (hit_) return {};
  held_ += piece;
  if (stops_.empty()) return std::exchange(held_, {});
  // The earliest stop string ends the text there.
  std::size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    hit_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  std::size_t keep = 0;
  for (const std::string& s : stops_) {
    for (std::size_t len = std::min(s.size() - 1, held_.size()); len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::finish() { return hit_ ? std::string() : std::exchange(held_, {}); }

}  // namespace tessera
