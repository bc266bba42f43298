#pragma once

// A compiled regular expression over UTF-8 text with Unicode classes (\p{L}, \p{N}, \s as
// Unicode whitespace), as tokenizer.json's pre-tokenizer patterns use them: PCRE2 in UTF
// and UCP mode. Immutable after construction; match() is safe from any thread (each call
// has its own match data).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

class UnicodeRegex {
 public:
  // std::invalid_argument with PCRE2's message and offset when `pattern` does not compile.
  explicit UnicodeRegex(const std::string& pattern);
  ~UnicodeRegex();
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  // Every non-overlapping match in `text` (valid UTF-8), left to right, as [begin, end)
  // byte offsets; an empty match advances by one character.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace tessera
