#include "tokenizer/unicode_regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

#include "tokenizer/unicode_text.hpp"

namespace tessera {

struct UnicodeRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

UnicodeRegex::UnicodeRegex(const std::string& pattern) : code_(std::make_unique<Code>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (code_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw std::invalid_argument("the regular expression does not compile at offset " +
                                std::to_string(offset) + ": " +
                                reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);  // best effort: falls back to the interpreter
}

UnicodeRegex::~UnicodeRegex() = default;

std::vector<std::pair<std::size_t, std::size_t>> UnicodeRegex::find_all(
    std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  if (data == nullptr) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0;
  while (at <= text.size()) {
    const int rc =
        pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      throw std::runtime_error("regular expression match failed (PCRE2 error " +
                               std::to_string(rc) + ")");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    const std::size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      at = end;
    } else {  // an empty match: step over one character
      if (begin >= text.size()) break;
      at = begin + utf8_length(static_cast<unsigned char>(text[begin]));
    }
  }
  pcre2_match_data_free(data);
  return out;
}

}  // namespace tessera
