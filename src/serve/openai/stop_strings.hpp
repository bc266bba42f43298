#pragma once

// Stop strings (OpenAI's `stop`) over streamed text: the text of a choice arrives piece by
// piece; StopStrings passes on what is certainly before any stop string, holds back a tail
// that may be the start of one, and at the first stop string found ends: the text before
// it is the choice's whole text (the stop string itself is not returned, as in OpenAI's
// API). One per choice; one owner at a time.

#include <string>
#include <vector>

namespace tessera {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // The text `piece` releases (possibly empty). After a stop string is found, nothing.
  std::string push(const std::string& piece);
  // The text still held back (none once a stop string was found).
  std::string finish();
  // A stop string has been found.
  bool hit() const { return hit_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // a tail that may begin a stop string
  bool hit_ = false;
};

}  // namespace tessera
