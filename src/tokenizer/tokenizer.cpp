#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <climits>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"

namespace tessera {
namespace {

// GPT-2's byte <-> printable unicode mapping (bytes_to_unicode): printable Latin-1 bytes
// map to themselves, the others to U+0100 onwards in byte order.
struct ByteMap {
  std::string to_unicode[256];  // UTF-8 of each byte's character
  std::unordered_map<std::string, uint8_t> from_unicode;
  ByteMap() {
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int cp = printable ? b : next++;
      std::string u;
      if (cp < 0x80) {
        u.push_back(static_cast<char>(cp));
      } else {
        u.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        u.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
      to_unicode[b] = u;
      from_unicode[u] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

// Splits a byte-level token string into its UTF-8 characters.
std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

enum class CharClass { kSpace, kLetter, kDigit, kOther };
CharClass classify(unsigned char c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
    return CharClass::kSpace;
  }
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kDigit;
  return CharClass::kOther;
}

// GPT-2-like pre-tokenisation on ASCII classes: " ?letters", " ?digits", " ?others",
// whitespace runs (a run followed by a word leaves its last space to the word).
std::vector<std::string> pre_tokenize(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t start = i;
    if (classify(c) == CharClass::kSpace) {
      std::size_t j = i;
      while (j < text.size() && classify(static_cast<unsigned char>(text[j])) == CharClass::kSpace)
        ++j;
      if (j < text.size() && j - i >= 1 && text[j - 1] == ' ') {
        if (j - 1 > i) out.push_back(text.substr(i, j - 1 - i));
        start = j - 1;
        i = j;
      } else {
        out.push_back(text.substr(i, j - i));
        i = j;
        continue;
      }
    }
    const CharClass cls = classify(static_cast<unsigned char>(text[i]));
    while (i < text.size() && classify(static_cast<unsigned char>(text[i])) == cls) ++i;
    out.push_back(text.substr(start, i - start));
  }
  return out;
}

[[noreturn]] void refuse(const std::filesystem::path& file, const std::string& field,
                         const std::string& problem) {
  throw SpecError(file.string(), field, problem);
}

}  // namespace

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) out += decode_token(id);
  return out;
}

std::vector<int64_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode_token(int64_t id) const {
  if (id < 0 || id > 255) return {};
  return std::string(1, static_cast<char>(id));
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) refuse(file, "", "cannot open the tokenizer file");
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    refuse(file, "", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) refuse(file, "", "a tokenizer.json is a JSON object");
  auto model_it = doc.find("model");
  if (model_it == doc.end() || !model_it->is_object()) refuse(file, "model", "missing");
  const nlohmann::json& model = *model_it;
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    refuse(
        file, "model.type",
        "'" + type + "' tokenizers are not supported; only byte-level BPE (GPT-2, Llama-3 style)");
  }
  auto is_byte_level = [&](const char* key) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_object()) return false;
    if (it->value("type", std::string()) == "ByteLevel") return true;
    for (const char* list : {"pretokenizers", "decoders"}) {
      auto l = it->find(list);
      if (l == it->end() || !l->is_array()) continue;
      for (const auto& p : *l) {
        if (p.is_object() && p.value("type", std::string()) == "ByteLevel") return true;
      }
    }
    return false;
  };
  if (!is_byte_level("pre_tokenizer") && !is_byte_level("decoder")) {
    refuse(file, "pre_tokenizer",
           "BPE without a ByteLevel pre-tokenizer or decoder (SentencePiece / Metaspace style) is "
           "not supported; only byte-level BPE");
  }
  auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object() || vocab_it->empty()) {
    refuse(file, "model.vocab", "missing or empty (an object of token -> id)");
  }
  auto tok = std::make_unique<BpeTokenizer>();
  const ByteMap& bm = byte_map();
  auto add_id = [&](const std::string& field, const std::string& token, const nlohmann::json& v,
                    bool byte_level) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= (1 << 24)) {
      refuse(file, field, "token '" + token + "': id must be an integer in [0, 16777216)");
    }
    const int64_t id = v.get<int64_t>();
    if (static_cast<std::size_t>(id) >= tok->id_to_token_.size()) {
      tok->id_to_token_.resize(static_cast<std::size_t>(id) + 1);
    }
    std::string raw;
    if (byte_level) {
      for (const std::string& ch : utf8_chars(token)) {
        auto it = bm.from_unicode.find(ch);
        if (it == bm.from_unicode.end()) {
          raw += ch;  // not a byte-level character: kept as it is
        } else {
          raw.push_back(static_cast<char>(it->second));
        }
      }
      tok->token_to_id_[token] = id;
    } else {
      raw = token;
    }
    tok->id_to_token_[static_cast<std::size_t>(id)] = raw;
    return id;
  };
  for (auto it = vocab_it->begin(); it != vocab_it->end(); ++it) {
    add_id("model.vocab", it.key(), it.value(), true);
  }
  if (auto merges = model.find("merges"); merges != model.end()) {
    if (!merges->is_array()) refuse(file, "model.merges", "must be a list");
    int rank = 0;
    for (const auto& m : *merges) {
      std::string left, right;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const auto space = s.find(' ');
        if (space == std::string::npos) {
          refuse(file, "model.merges[" + std::to_string(rank) + "]", "'" + s + "' is not 'a b'");
        }
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        left = m[0].get<std::string>();
        right = m[1].get<std::string>();
      } else {
        refuse(file, "model.merges[" + std::to_string(rank) + "]", "a merge is 'a b' or [a, b]");
      }
      tok->merge_rank_.emplace(left + '\x01' + right, rank++);
    }
  }
  if (auto added = doc.find("added_tokens"); added != doc.end() && added->is_array()) {
    for (const auto& a : *added) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string() ||
          !a.contains("id")) {
        refuse(file, "added_tokens", "each needs a string 'content' and an integer 'id'");
      }
      const std::string content = a["content"].get<std::string>();
      if (content.empty()) refuse(file, "added_tokens", "an added token's content is empty");
      const int64_t id = add_id("added_tokens", content, a["id"], false);
      tok->added_.emplace_back(content, id);
    }
  }
  // Every byte must have a token, or some text could not be encoded.
  for (int b = 0; b < 256; ++b) {
    if (!tok->token_to_id_.count(bm.to_unicode[b])) {
      refuse(file, "model.vocab",
             "byte-level BPE needs a token for every byte; byte " + std::to_string(b) + " ('" +
                 bm.to_unicode[b] + "') has none");
    }
  }
  // Longest added tokens first, so that a longer one wins over its prefix.
  std::sort(tok->added_.begin(), tok->added_.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return tok;
}

std::vector<int64_t> BpeTokenizer::encode_chunk(const std::string& bytes) const {
  const ByteMap& bm = byte_map();
  std::vector<std::string> parts;
  parts.reserve(bytes.size());
  for (char c : bytes) parts.push_back(bm.to_unicode[static_cast<unsigned char>(c)]);
  // Repeatedly merge the adjacent pair of lowest rank.
  while (parts.size() > 1) {
    int best = std::numeric_limits<int>::max();
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = merge_rank_.find(parts[i] + '\x01' + parts[i + 1]);
      if (it != merge_rank_.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == std::numeric_limits<int>::max()) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  std::vector<int64_t> ids;
  for (const std::string& p : parts) {
    auto it = token_to_id_.find(p);
    if (it != token_to_id_.end()) {
      ids.push_back(it->second);
      continue;
    }
    for (const std::string& ch : utf8_chars(p)) ids.push_back(token_to_id_.at(ch));
  }
  return ids;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  std::size_t plain_start = 0;
  auto flush = [&](std::size_t end) {
    for (const std::string& chunk : pre_tokenize(text.substr(plain_start, end - plain_start))) {
      const auto part = encode_chunk(chunk);
      ids.insert(ids.end(), part.begin(), part.end());
    }
  };
  for (std::size_t i = 0; i < text.size();) {
    bool matched = false;
    for (const auto& [content, id] : added_) {
      if (text.compare(i, content.size(), content) == 0) {
        flush(i);
        ids.push_back(id);
        i += content.size();
        plain_start = i;
        matched = true;
        break;
      }
    }
    if (!matched) ++i;
  }
  flush(text.size());
  return ids;
}

std::string BpeTokenizer::decode_token(int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size()) return {};
  return id_to_token_[static_cast<std::size_t>(id)];
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir, int64_t vocab) {
  const auto file = dir / "tokenizer.json";
  if (std::filesystem::exists(file)) {
    auto bpe = BpeTokenizer::load(file);
    if (static_cast<int64_t>(bpe->vocab_size()) > vocab) {
      refuse(file, "model.vocab",
             "ids up to " + std::to_string(bpe->vocab_size() - 1) +
                 " but the model's vocabulary has " + std::to_string(vocab));
    }
    return bpe;
  }
  if (vocab < 256) {
    refuse(dir / "config.json", "vocab_size",
           "the byte tokenizer (no tokenizer.json here) needs a vocabulary of at least 256, not " +
               std::to_string(vocab));
  }
  return std::make_unique<ByteTokenizer>();
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace tessera
