#include "tokenizer/hf_components.hpp"

#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>

#include "tokenizer/unicode_regex.hpp"
#include "tokenizer/unicode_text.hpp"

namespace tessera {
namespace {

using json = nlohmann::json;

const json& field(const json& j, const char* key, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end()) throw TokenizerFileError(path + "." + key, "missing");
  return *it;
}

std::string string_field(const json& j, const char* key, const std::string& path) {
  const json& v = field(j, key, path);
  if (!v.is_string()) throw TokenizerFileError(path + "." + key, "must be a string");
  return v.get<std::string>();
}

std::string type_of(const json& j, const std::string& path) {
  if (!j.is_object()) throw TokenizerFileError(path, "must be an object");
  return string_field(j, "type", path);
}

bool bool_or(const json& j, const char* key, bool fallback, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw TokenizerFileError(path + "." + key, "must be true or false");
  return it->get<bool>();
}

// A pattern: {"String": s} (literal) or {"Regex": r}.
class Pattern {
 public:
  Pattern(const json& j, const std::string& path) {
    if (j.is_object() && j.contains("String") && j["String"].is_string()) {
      literal_ = j["String"].get<std::string>();
      if (literal_.empty()) throw TokenizerFileError(path + ".String", "is empty");
    } else if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
      try {
        regex_ = std::make_shared<UnicodeRegex>(j["Regex"].get<std::string>());
      } catch (const std::invalid_argument& e) {
        throw TokenizerFileError(path + ".Regex", e.what());
      }
    } else {
      throw TokenizerFileError(path, "a pattern is {\"String\": ...} or {\"Regex\": ...}");
    }
  }
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const {
    if (regex_) return regex_->find_all(text);
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (std::size_t at = text.find(literal_); at != std::string_view::npos;
         at = text.find(literal_, at + literal_.size())) {
      out.emplace_back(at, at + literal_.size());
    }
    return out;
  }

 private:
  std::string literal_;
  std::shared_ptr<UnicodeRegex> regex_;
};

std::string replace_all(std::string_view text, const Pattern& pattern, const std::string& content) {
  std::string out;
  std::size_t at = 0;
  for (const auto& [b, e] : pattern.find_all(text)) {
    out.append(text.substr(at, b - at));
    out += content;
    at = e;
  }
  out.append(text.substr(at));
  return out;
}

// ---- normalizers ----

class NormalizerSequence final : public Normalizer {
 public:
  explicit NormalizerSequence(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  std::string apply(std::string text) const override {
    for (const auto& p : parts_) text = p->apply(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  std::string apply(std::string text) const override { return unicode_normalize(text, form_); }

 private:
  NormalForm form_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string apply(std::string text) const override {
    return text.empty() ? text : prefix_ + text;
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string apply(std::string text) const override {
    return replace_all(text, pattern_, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// ---- pre-tokenizers ----

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// `piece` cut at the matches of `pattern` as transformers' SplitDelimiterBehavior says.
void split_piece(const Piece& piece, const Pattern& pattern, SplitBehavior behavior, bool invert,
                 std::vector<Piece>& out) {
  struct Segment {
    std::size_t begin, end;
    bool match;
  };
  std::vector<Segment> segs;
  std::size_t at = 0;
  for (const auto& [b, e] : pattern.find_all(piece.text)) {
    if (b > at) segs.push_back({at, b, invert});
    segs.push_back({b, e, !invert});
    at = e;
  }
  if (at < piece.text.size()) segs.push_back({at, piece.text.size(), invert});
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  bool pending_next = false;  // MergedWithNext: the last span waits for the next one
  for (const Segment& s : segs) {
    switch (behavior) {
      case SplitBehavior::kRemoved:
        if (!s.match) spans.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kIsolated:
        spans.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (s.match && !spans.empty() && spans.back().second == s.begin) {
          spans.back().second = s.end;
        } else {
          spans.emplace_back(s.begin, s.end);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (pending_next && spans.back().second == s.begin) {
          spans.back().second = s.end;
        } else {
          spans.emplace_back(s.begin, s.end);
        }
        pending_next = s.match;
        break;
      case SplitBehavior::kContiguous:
        if (s.match && !spans.empty() && spans.back().second == s.begin && pending_next) {
          spans.back().second = s.end;
        } else {
          spans.emplace_back(s.begin, s.end);
        }
        pending_next = s.match;
        break;
    }
  }
  for (const auto& [b, e] : spans) {
    if (e > b) out.push_back({piece.text.substr(b, e - b), piece.first && b == 0});
  }
}

class PreTokenizerSequence final : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  std::vector<Piece> apply(std::vector<Piece> pieces) const override {
    for (const auto& p : parts_) pieces = p->apply(std::move(pieces));
    return pieces;
  }
  bool byte_level() const override {
    for (const auto& p : parts_) {
      if (p->byte_level()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  std::vector<Piece> apply(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    for (const Piece& p : pieces) split_piece(p, pattern_, behavior_, invert_, out);
    return out;
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        pattern_(use_regex ? std::make_optional<Pattern>(json{{"Regex", kGpt2Pattern}}, "")
                           : std::nullopt) {}
  std::vector<Piece> apply(std::vector<Piece> pieces) const override {
    std::vector<Piece> split;
    for (Piece& p : pieces) {
      if (add_prefix_space_ && (p.text.empty() || p.text.front() != ' ')) p.text = " " + p.text;
      if (pattern_) {
        split_piece(p, *pattern_, SplitBehavior::kIsolated, false, split);
      } else {
        split.push_back(std::move(p));
      }
    }
    for (Piece& p : split) {
      std::string mapped;
      for (char c : p.text) mapped += byte_to_char(static_cast<unsigned char>(c));
      p.text = std::move(mapped);
    }
    return split;
  }
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  std::optional<Pattern> pattern_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

PrependScheme prepend_scheme(const json& j, const std::string& path) {
  auto it = j.find("prepend_scheme");
  if (it != j.end() && !it->is_null()) {
    const std::string s = it->is_string() ? it->get<std::string>() : "";
    if (s == "always") return PrependScheme::kAlways;
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    throw TokenizerFileError(path + ".prepend_scheme", "must be always, first or never");
  }
  return bool_or(j, "add_prefix_space", true, path) ? PrependScheme::kAlways
                                                    : PrependScheme::kNever;
}

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)),
        scheme_(scheme),
        split_(split),
        pattern_(json{{"String", replacement_}}, "") {}
  std::vector<Piece> apply(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    for (Piece& p : pieces) {
      std::string text = replace_all(p.text, Pattern(json{{"String", " "}}, ""), replacement_);
      const bool prepend =
          scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.first);
      if (prepend && text.compare(0, replacement_.size(), replacement_) != 0) {
        text = replacement_ + text;
      }
      Piece q{std::move(text), p.first};
      if (split_) {
        split_piece(q, pattern_, SplitBehavior::kMergedWithNext, false, out);
      } else {
        out.push_back(std::move(q));
      }
    }
    return out;
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Pattern pattern_;
};

// ---- decoders ----

class DecoderSequence final : public TokenDecoder {
 public:
  explicit DecoderSequence(std::vector<std::unique_ptr<TokenDecoder>> parts)
      : parts_(std::move(parts)) {}
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    for (const auto& p : parts_) tokens = p->apply(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<TokenDecoder>> parts_;
};

// Byte-level characters back to bytes, as one (repaired) UTF-8 string; a token with a
// character outside the byte alphabet (an added token's text) is kept as it is.
class ByteLevelDecoder final : public TokenDecoder {
 public:
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mapped;
      bool all = true;
      for (std::string_view ch : utf8_chars(t)) {
        const int b = char_to_byte(ch);
        if (b < 0) {
          all = false;
          break;
        }
        mapped.push_back(static_cast<char>(b));
      }
      bytes += all ? mapped : t;
    }
    return {utf8_lossy(bytes)};
  }
};

class MetaspaceDecoder final : public TokenDecoder {
 public:
  MetaspaceDecoder(std::string replacement, PrependScheme scheme)
      : replacement_(std::move(replacement)), scheme_(scheme) {}
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    const Pattern pattern(json{{"String", replacement_}}, "");
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], pattern, " ");
      if (i == 0 && scheme_ != PrependScheme::kNever && !tokens[i].empty() &&
          tokens[i].front() == ' ') {
        tokens[i].erase(0, 1);
      }
    }
    return tokens;
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
};

class ReplaceDecoder final : public TokenDecoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) t = replace_all(t, pattern_, content_);
    return tokens;
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// Runs of <0xXX> tokens become the text of their bytes (repaired UTF-8).
class ByteFallbackDecoder final : public TokenDecoder {
 public:
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    const auto flush = [&] {
      if (!bytes.empty()) out.push_back(utf8_lossy(bytes));
      bytes.clear();
    };
    for (std::string& t : tokens) {
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
          std::isxdigit(static_cast<unsigned char>(t[3])) &&
          std::isxdigit(static_cast<unsigned char>(t[4]))) {
        bytes.push_back(static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }
};

class FuseDecoder final : public TokenDecoder {
 public:
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    return {all};
  }
};

class StripDecoder final : public TokenDecoder {
 public:
  StripDecoder(std::string content, std::size_t start, std::size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  std::vector<std::string> apply(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) {
      for (std::size_t i = 0; i < start_ && t.compare(0, content_.size(), content_) == 0; ++i) {
        t.erase(0, content_.size());
      }
      for (std::size_t i = 0; i < stop_ && t.size() >= content_.size() &&
                              t.compare(t.size() - content_.size(), content_.size(), content_) == 0;
           ++i) {
        t.erase(t.size() - content_.size());
      }
    }
    return tokens;
  }

 private:
  std::string content_;
  std::size_t start_, stop_;
};

template <typename T, typename Parse>
std::vector<std::unique_ptr<T>> parse_list(const json& j, const char* key, const std::string& path,
                                           Parse parse) {
  const json& list = field(j, key, path);
  if (!list.is_array()) throw TokenizerFileError(path + "." + key, "must be a list");
  std::vector<std::unique_ptr<T>> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto p = parse(list[i], path + "." + key + "[" + std::to_string(i) + "]");
    if (p) out.push_back(std::move(p));
  }
  return out;
}

std::size_t count_field(const json& j, const char* key, const std::string& path) {
  const json& v = field(j, key, path);
  if (!v.is_number_unsigned() || v.get<uint64_t>() > 1024) {
    throw TokenizerFileError(path + "." + key, "must be an integer in [0, 1024]");
  }
  return v.get<std::size_t>();
}

[[noreturn]] void unsupported(const std::string& what, const std::string& type,
                              const std::string& path, const std::string& supported) {
  throw TokenizerFileError(
      path + ".type",
      "the " + what + " '" + type + "' is not implemented (tessera implements: " + supported + ")");
}

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path);
  if (type == "Sequence") {
    return std::make_unique<NormalizerSequence>(
        parse_list<Normalizer>(j, "normalizers", path, parse_normalizer));
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkd);
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(string_field(j, "prepend", path));
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(
        Pattern(field(j, "pattern", path), path + ".pattern"), string_field(j, "content", path));
  }
  unsupported("normalizer", type, path, "Sequence, NFC, NFD, NFKC, NFKD, Prepend, Replace");
}

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path);
  if (type == "Sequence") {
    return std::make_unique<PreTokenizerSequence>(
        parse_list<PreTokenizer>(j, "pretokenizers", path, parse_pre_tokenizer));
  }
  if (type == "Split") {
    const std::string b = string_field(j, "behavior", path);
    SplitBehavior behavior;
    if (b == "Removed") {
      behavior = SplitBehavior::kRemoved;
    } else if (b == "Isolated") {
      behavior = SplitBehavior::kIsolated;
    } else if (b == "MergedWithPrevious") {
      behavior = SplitBehavior::kMergedWithPrevious;
    } else if (b == "MergedWithNext") {
      behavior = SplitBehavior::kMergedWithNext;
    } else if (b == "Contiguous") {
      behavior = SplitBehavior::kContiguous;
    } else {
      throw TokenizerFileError(path + ".behavior", "'" + b + "' is not a split behavior");
    }
    return std::make_unique<SplitPreTokenizer>(
        Pattern(field(j, "pattern", path), path + ".pattern"), behavior,
        bool_or(j, "invert", false, path));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(bool_or(j, "add_prefix_space", true, path),
                                                   bool_or(j, "use_regex", true, path));
  }
  if (type == "Metaspace") {
    return std::make_unique<MetaspacePreTokenizer>(string_field(j, "replacement", path),
                                                   prepend_scheme(j, path),
                                                   bool_or(j, "split", true, path));
  }
  unsupported("pre-tokenizer", type, path, "Sequence, Split, ByteLevel, Metaspace");
}

std::unique_ptr<TokenDecoder> parse_decoder(const json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, path);
  if (type == "Sequence") {
    return std::make_unique<DecoderSequence>(
        parse_list<TokenDecoder>(j, "decoders", path, parse_decoder));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    return std::make_unique<MetaspaceDecoder>(string_field(j, "replacement", path),
                                              prepend_scheme(j, path));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(Pattern(field(j, "pattern", path), path + ".pattern"),
                                            string_field(j, "content", path));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(string_field(j, "content", path),
                                          count_field(j, "start", path),
                                          count_field(j, "stop", path));
  }
  unsupported("decoder", type, path,
              "Sequence, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip");
}

}  // namespace tessera
