#pragma once

// UTF-8 helpers for the tokenizers: splitting into characters, validity, lossy repair as
// Rust's String::from_utf8_lossy does it (each maximal invalid subpart becomes U+FFFD),
// Unicode normalization forms (ICU), and GPT-2's byte <-> printable-character map that
// byte-level BPE vocabularies are written in. Free functions and immutable tables; safe
// from any thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// The length of the UTF-8 sequence that starts with `lead` (1 for a stray byte).
std::size_t utf8_length(unsigned char lead);

// `s` split into characters (a malformed byte stands alone).
std::vector<std::string_view> utf8_chars(std::string_view s);

// Whether `s` is valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool valid_utf8(std::string_view s);

// `s` with each maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view s);

// The UTF-8 of code point `cp`.
std::string utf8_encode(uint32_t cp);

enum class NormalForm : uint8_t { kNfc, kNfd, kNfkc, kNfkd };
// `s` (valid UTF-8) in normalization form `form`. std::runtime_error if ICU fails.
std::string unicode_normalize(std::string_view s, NormalForm form);

// `s` (valid UTF-8) in upper or lower case by Unicode's default case mapping (ICU).
std::string unicode_upper(std::string_view s);
std::string unicode_lower(std::string_view s);

// GPT-2's bytes_to_unicode: the printable character (UTF-8) standing for each byte, and
// back (-1 for a character that stands for no byte).
const std::string& byte_to_char(unsigned char byte);
int char_to_byte(std::string_view ch);

}  // namespace tessera
