#include "tokenizer/unicode_text.hpp"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <array>
#include <stdexcept>
#include <unordered_map>

namespace tessera {
namespace {

// The code point of the valid sequence of `n` bytes at s[i], or -1 when it is not one.
int64_t decode_at(std::string_view s, std::size_t i, std::size_t n) {
  if (i + n > s.size()) return -1;
  const auto c = static_cast<unsigned char>(s[i]);
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (std::size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (d & 0x3Fu);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return -1;
  }
  return cp;
}

// How many bytes at s[i] belong to a maximal prefix of a valid sequence (at least 1):
// the bytes U+FFFD replaces when the sequence is broken.
std::size_t invalid_prefix(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = utf8_length(c);
  if (n == 1) return 1;
  std::size_t k = 1;
  for (; k < n && i + k < s.size(); ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    // The second byte's range depends on the lead (no overlongs, surrogates, > U+10FFFF).
    unsigned char lo = 0x80, hi = 0xBF;
    if (k == 1) {
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    if (d < lo || d > hi) break;
  }
  return k;
}

struct ByteChars {
  std::array<std::string, 256> to_char;
  std::unordered_map<std::string, int> to_byte;
  ByteChars() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      to_char[static_cast<std::size_t>(b)] = utf8_encode(cp);
      to_byte[to_char[static_cast<std::size_t>(b)]] = b;
    }
  }
};

const ByteChars& byte_chars() {
  static const ByteChars table;
  return table;
}

}  // namespace

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 1;
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_length(static_cast<unsigned char>(s[i]));
    if (decode_at(s, i, n) < 0) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_length(c);
    if ((n == 1 && c >= 0x80) || decode_at(s, i, n) < 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_length(c);
    if (!(n == 1 && c >= 0x80) && decode_at(s, i, n) >= 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += invalid_prefix(s, i);
    }
  }
  return out;
}

std::string utf8_encode(uint32_t cp) {
  std::string u;
  if (cp < 0x80) {
    u.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    u.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    u.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    u.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    u.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    u.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    u.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    u.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    u.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    u.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return u;
}

namespace {

std::u16string to_utf16(std::string_view s) {
  int32_t n16 = 0;
  UErrorCode status = U_ZERO_ERROR;
  u_strFromUTF8(nullptr, 0, &n16, s.data(), static_cast<int32_t>(s.size()), &status);
  std::u16string out(static_cast<std::size_t>(n16), u'\0');
  status = U_ZERO_ERROR;
  u_strFromUTF8(reinterpret_cast<UChar*>(out.data()), n16, nullptr, s.data(),
                static_cast<int32_t>(s.size()), &status);
  if (U_FAILURE(status)) throw std::runtime_error("text is not valid UTF-8");
  return out;
}

std::string to_utf8(const std::u16string& s) {
  int32_t n8 = 0;
  UErrorCode status = U_ZERO_ERROR;
  const auto* data = reinterpret_cast<const UChar*>(s.data());
  const auto n = static_cast<int32_t>(s.size());
  u_strToUTF8(nullptr, 0, &n8, data, n, &status);
  std::string out(static_cast<std::size_t>(n8), '\0');
  status = U_ZERO_ERROR;
  u_strToUTF8(out.data(), n8, nullptr, data, n, &status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU could not encode the text");
  return out;
}

std::string change_case(std::string_view s, bool upper) {
  const std::u16string in = to_utf16(utf8_lossy(s));
  const auto* data = reinterpret_cast<const UChar*>(in.data());
  const auto n = static_cast<int32_t>(in.size());
  UErrorCode status = U_ZERO_ERROR;
  const int32_t len = upper ? u_strToUpper(nullptr, 0, data, n, "", &status)
                            : u_strToLower(nullptr, 0, data, n, "", &status);
  std::u16string out(static_cast<std::size_t>(len), u'\0');
  status = U_ZERO_ERROR;
  auto* dest = reinterpret_cast<UChar*>(out.data());
  if (upper) {
    u_strToUpper(dest, len, data, n, "", &status);
  } else {
    u_strToLower(dest, len, data, n, "", &status);
  }
  if (U_FAILURE(status)) throw std::runtime_error("ICU could not change the case");
  return to_utf8(out);
}

}  // namespace

std::string unicode_normalize(std::string_view s, NormalForm form) {
  if (s.empty()) return {};
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* norm = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      norm = unorm2_getNFCInstance(&status);
      break;
    case NormalForm::kNfd:
      norm = unorm2_getNFDInstance(&status);
      break;
    case NormalForm::kNfkc:
      norm = unorm2_getNFKCInstance(&status);
      break;
    case NormalForm::kNfkd:
      norm = unorm2_getNFKDInstance(&status);
      break;
  }
  if (U_FAILURE(status)) throw std::runtime_error("ICU normalizer unavailable");
  const std::u16string in = to_utf16(s);
  const auto* data = reinterpret_cast<const UChar*>(in.data());
  const auto n = static_cast<int32_t>(in.size());
  status = U_ZERO_ERROR;
  const int32_t len = unorm2_normalize(norm, data, n, nullptr, 0, &status);
  std::u16string out(static_cast<std::size_t>(len), u'\0');
  status = U_ZERO_ERROR;
  unorm2_normalize(norm, data, n, reinterpret_cast<UChar*>(out.data()), len, &status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU could not normalize the text");
  return to_utf8(out);
}

std::string unicode_upper(std::string_view s) { return change_case(s, true); }
std::string unicode_lower(std::string_view s) { return change_case(s, false); }

const std::string& byte_to_char(unsigned char byte) { return byte_chars().to_char[byte]; }

int char_to_byte(std::string_view ch) {
  const auto& map = byte_chars().to_byte;
  auto it = map.find(std::string(ch));
  return it == map.end() ? -1 : it->second;
}

}  // namespace tessera
