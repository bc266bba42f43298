#include "tokenizer/hf_tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "tokenizer/unicode_text.hpp"

namespace tessera {
namespace {

using json = nlohmann::json;

// Whitespace as JavaScript's trim() sees it (the reference implementation's rule for an
// added token's lstrip / rstrip).
bool is_space(std::string_view ch) {
  static const std::vector<std::string> spaces = [] {
    std::vector<std::string> s;
    for (uint32_t cp :
         {0x09u,   0x0Au,   0x0Bu,   0x0Cu,   0x0Du,   0x20u,   0xA0u,   0x1680u, 0x2000u,
          0x2001u, 0x2002u, 0x2003u, 0x2004u, 0x2005u, 0x2006u, 0x2007u, 0x2008u, 0x2009u,
          0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) {
      s.push_back(utf8_encode(cp));
    }
    return s;
  }();
  return std::find(spaces.begin(), spaces.end(), ch) != spaces.end();
}

std::string trim_end(const std::string& s) {
  const auto chars = utf8_chars(s);
  std::size_t keep = s.size();
  for (auto it = chars.rbegin(); it != chars.rend() && is_space(*it); ++it) keep -= it->size();
  return s.substr(0, keep);
}

std::string trim_start(const std::string& s) {
  std::size_t skip = 0;
  for (std::string_view ch : utf8_chars(s)) {
    if (!is_space(ch)) break;
    skip += ch.size();
  }
  return s.substr(skip);
}

// One section of the input: plain text, or an added token (index into the added list).
struct Section {
  std::string text;
  int added = -1;
};

template <typename Added>
std::vector<Section> split_added(const std::string& text, const std::vector<Added>& added,
                                 bool normalized) {
  std::vector<Section> out;
  std::size_t start = 0, i = 0;
  while (i < text.size()) {
    int match = -1;
    for (std::size_t k = 0; k < added.size(); ++k) {  // longest first: the first match wins
      const Added& a = added[k];
      if (a.normalized == normalized && text.compare(i, a.content.size(), a.content) == 0) {
        match = static_cast<int>(k);
        break;
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({added[static_cast<std::size_t>(match)].content, match});
    i += added[static_cast<std::size_t>(match)].content.size();
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k].added < 0) continue;
    const Added& a = added[static_cast<std::size_t>(out[k].added)];
    if (a.lstrip && k > 0 && out[k - 1].added < 0) out[k - 1].text = trim_end(out[k - 1].text);
    if (a.rstrip && k + 1 < out.size() && out[k + 1].added < 0) {
      out[k + 1].text = trim_start(out[k + 1].text);
    }
  }
  return out;
}

// `path` by value: a temporary bound to a reference parameter of a function returning a
// reference draws GCC 13's -Wdangling-reference.
const json& member(const json& j, const char* key, std::string_view path) {
  auto it = j.find(key);
  if (it == j.end()) throw TokenizerFileError(std::string(path) + "." + key, "missing");
  return *it;
}

bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SpecError(file.string(), "", "cannot open the tokenizer file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), file.string());
}

std::unique_ptr<HfTokenizer> HfTokenizer::parse(const std::string& text, const std::string& name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    throw SpecError(name, "", std::string("not valid JSON: ") + e.what());
  }
  std::unique_ptr<HfTokenizer> tok(new HfTokenizer());
  try {
    if (!doc.is_object()) throw TokenizerFileError("", "a tokenizer.json is a JSON object");
    const json& model = member(doc, "model", "");
    if (!model.is_object()) throw TokenizerFileError("model", "must be an object");
    const std::string type = model.value("type", std::string("BPE"));
    if (type != "BPE") {
      throw TokenizerFileError("model.type",
                               "'" + type +
                                   "' models are not implemented (tessera "
                                   "implements BPE: byte-level or SentencePiece-style)");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      auto it = model.find(key);
      if (it != model.end() && !it->is_null() &&
          !(it->is_string() && it->get<std::string>().empty())) {
        throw TokenizerFileError(std::string("model.") + key, "is not implemented (must be empty)");
      }
    }
    if (auto it = model.find("dropout"); it != model.end() && !it->is_null()) {
      throw TokenizerFileError("model.dropout", "BPE dropout is not implemented (must be null)");
    }
    tok->normalizer_ = parse_normalizer(doc.value("normalizer", json()), "normalizer");
    tok->pre_tokenizer_ = parse_pre_tokenizer(doc.value("pre_tokenizer", json()), "pre_tokenizer");
    tok->decoder_ = parse_decoder(doc.value("decoder", json()), "decoder");

    const json& vocab_json = member(model, "vocab", "model");
    if (!vocab_json.is_object() || vocab_json.empty()) {
      throw TokenizerFileError("model.vocab", "must be a non-empty object of token -> id");
    }
    std::unordered_map<std::string, int64_t> vocab;
    const auto set_token = [&](const std::string& path, const std::string& token, const json& v) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= (1 << 24)) {
        throw TokenizerFileError(path, "token '" + token + "': an id is an integer in [0, 2^24)");
      }
      const int64_t id = v.get<int64_t>();
      if (static_cast<std::size_t>(id) >= tok->id_to_token_.size()) {
        tok->id_to_token_.resize(static_cast<std::size_t>(id) + 1);
      }
      tok->id_to_token_[static_cast<std::size_t>(id)] = token;
      return id;
    };
    for (auto it = vocab_json.begin(); it != vocab_json.end(); ++it) {
      vocab[it.key()] = set_token("model.vocab", it.key(), it.value());
    }
    std::vector<std::pair<std::string, std::string>> merges;
    if (auto m = model.find("merges"); m != model.end() && !m->is_null()) {
      if (!m->is_array()) throw TokenizerFileError("model.merges", "must be a list");
      for (std::size_t i = 0; i < m->size(); ++i) {
        const json& e = (*m)[i];
        const std::string path = "model.merges[" + std::to_string(i) + "]";
        if (e.is_string()) {
          const std::string s = e.get<std::string>();
          const auto space = s.find(' ', 1);
          if (space == std::string::npos)
            throw TokenizerFileError(path, "'" + s + "' is not 'a b'");
          merges.emplace_back(s.substr(0, space), s.substr(space + 1));
        } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
          merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
        } else {
          throw TokenizerFileError(path, "a merge is 'a b' or [a, b]");
        }
      }
    }
    BpeModel::Options options;
    if (auto u = model.find("unk_token"); u != model.end() && u->is_string()) {
      options.unk_token = u->get<std::string>();
    }
    options.fuse_unk = flag(model, "fuse_unk");
    options.byte_fallback = flag(model, "byte_fallback");
    options.ignore_merges = flag(model, "ignore_merges");
    try {
      tok->model_ = std::make_unique<BpeModel>(vocab, merges, options);
    } catch (const std::invalid_argument& e) {
      throw TokenizerFileError("model", e.what());
    }
    if (tok->pre_tokenizer_ && tok->pre_tokenizer_->byte_level()) {
      for (int b = 0; b < 256; ++b) {
        if (!vocab.count(byte_to_char(static_cast<unsigned char>(b)))) {
          throw TokenizerFileError("model.vocab",
                                   "byte-level BPE needs a token for every byte; "
                                   "byte " +
                                       std::to_string(b) + " has none");
        }
      }
    }

    if (auto added = doc.find("added_tokens"); added != doc.end() && !added->is_null()) {
      if (!added->is_array()) throw TokenizerFileError("added_tokens", "must be a list");
      for (std::size_t i = 0; i < added->size(); ++i) {
        const json& a = (*added)[i];
        const std::string path = "added_tokens[" + std::to_string(i) + "]";
        if (!a.is_object() || !a.contains("content") || !a["content"].is_string() ||
            a["content"].get<std::string>().empty() || !a.contains("id")) {
          throw TokenizerFileError(path, "needs a non-empty string 'content' and an integer 'id'");
        }
        AddedToken t{a["content"].get<std::string>(),
                     0,
                     flag(a, "special"),
                     flag(a, "lstrip"),
                     flag(a, "rstrip"),
                     flag(a, "single_word"),
                     flag(a, "normalized")};
        t.id = set_token(path + ".id", t.content, a["id"]);
        tok->added_ids_[t.content] = t.id;
        tok->added_id_set_.insert(t.id);
        if (t.special) tok->special_ids_.insert(t.id);
        tok->added_.push_back(std::move(t));
      }
      std::stable_sort(tok->added_.begin(), tok->added_.end(), [](const auto& x, const auto& y) {
        return x.content.size() > y.content.size();
      });
    }

    const json post = doc.value("post_processor", json());
    const auto parse_post = [&](const json& p, const std::string& path, auto& self) -> void {
      if (p.is_null()) return;
      const std::string ptype = p.value("type", std::string());
      if (ptype == "Sequence") {
        const json& list = member(p, "processors", path);
        for (std::size_t i = 0; i < list.size(); ++i) {
          self(list[i], path + ".processors[" + std::to_string(i) + "]", self);
        }
      } else if (ptype == "ByteLevel") {
        // Offsets only: the ids are unchanged.
      } else if (ptype == "TemplateProcessing") {
        const json& single = member(p, "single", path);
        const json& specials = p.value("special_tokens", json::object());
        for (std::size_t i = 0; i < single.size(); ++i) {
          const json& item = single[i];
          const std::string ipath = path + ".single[" + std::to_string(i) + "]";
          if (item.contains("Sequence")) {
            tok->template_.push_back({true, {}});
          } else if (item.contains("SpecialToken")) {
            const std::string id = item["SpecialToken"].value("id", std::string());
            auto s = specials.find(id);
            if (s == specials.end() || !s->contains("ids")) {
              throw TokenizerFileError(ipath,
                                       "special token '" + id + "' is not in special_tokens");
            }
            tok->template_.push_back({false, (*s)["ids"].get<std::vector<int64_t>>()});
          } else {
            throw TokenizerFileError(ipath, "a template item is a Sequence or a SpecialToken");
          }
        }
      } else {
        throw TokenizerFileError(path + ".type", "the post-processor '" + ptype +
                                                     "' is not implemented (tessera implements: "
                                                     "Sequence, ByteLevel, TemplateProcessing)");
      }
    };
    parse_post(post, "post_processor", parse_post);
  } catch (const TokenizerFileError& e) {
    throw SpecError(name, e.path(), e.what());
  } catch (const json::exception& e) {
    throw SpecError(name, "", std::string("unexpected JSON: ") + e.what());
  }
  return tok;
}

void HfTokenizer::encode_section(std::string text, bool first, std::vector<int64_t>& out) const {
  if (text.empty()) return;
  if (normalizer_) text = normalizer_->apply(std::move(text));
  if (text.empty()) return;
  for (const Section& s : split_added(text, added_, true)) {
    if (s.added >= 0) {
      out.push_back(added_[static_cast<std::size_t>(s.added)].id);
      continue;
    }
    if (s.text.empty()) continue;
    std::vector<Piece> pieces{{s.text, first}};
    if (pre_tokenizer_) pieces = pre_tokenizer_->apply(std::move(pieces));
    for (const Piece& p : pieces) model_->tokenize(p.text, out);
  }
}

std::vector<int64_t> HfTokenizer::encode(const std::string& raw, bool add_special_tokens) const {
  const std::string text = valid_utf8(raw) ? raw : utf8_lossy(raw);
  std::vector<int64_t> ids;
  const std::vector<Section> sections = split_added(text, added_, false);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].added >= 0) {
      ids.push_back(added_[static_cast<std::size_t>(sections[i].added)].id);
    } else {
      encode_section(sections[i].text, i == 0, ids);
    }
  }
  if (!add_special_tokens || template_.empty()) return ids;
  std::vector<int64_t> out;
  for (const TemplateItem& item : template_) {
    const auto& part = item.sequence ? ids : item.ids;
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (skip_special_tokens && special_ids_.count(id)) continue;
    tokens.push_back(id_to_token_[static_cast<std::size_t>(id)]);
  }
  if (decoder_) tokens = decoder_->apply(std::move(tokens));
  std::string text;
  for (const std::string& t : tokens) text += t;
  return utf8_lossy(text);
}

std::optional<int64_t> HfTokenizer::token_id(const std::string& token) const {
  if (auto it = added_ids_.find(token); it != added_ids_.end()) return it->second;
  const auto& vocab = model_->vocab();
  if (auto it = vocab.find(token); it != vocab.end()) return it->second;
  return std::nullopt;
}

}  // namespace tessera
