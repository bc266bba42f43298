#include "tokenizer/tokenizer.hpp"

#include "core/error.hpp"
#include "tokenizer/hf_tokenizer.hpp"

namespace tessera {

std::vector<int64_t> ByteTokenizer::encode(const std::string& text,
                                           bool /*add_special_tokens*/) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids,
                                  bool /*skip_special_tokens*/) const {
  std::string bytes;
  for (int64_t id : ids) {
    if (id >= 0 && id <= 255) bytes.push_back(static_cast<char>(id));
  }
  return utf8_lossy(bytes);
}

std::optional<int64_t> ByteTokenizer::token_id(const std::string& token) const {
  if (token.size() == 1) return static_cast<unsigned char>(token[0]);
  return std::nullopt;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir, int64_t vocab) {
  const auto file = dir / "tokenizer.json";
  if (std::filesystem::exists(file)) {
    auto hf = HfTokenizer::load(file);
    if (hf->vocab_size() > vocab) {
      throw SpecError(file.string(), "model.vocab",
                      "ids up to " + std::to_string(hf->vocab_size() - 1) +
                          " but the model's vocabulary has " + std::to_string(vocab));
    }
    return hf;
  }
  if (vocab < 256) {
    throw SpecError((dir / "config.json").string(), "vocab_size",
                    "the byte tokenizer (no tokenizer.json here) needs a vocabulary of at least "
                    "256, not " +
                        std::to_string(vocab));
  }
  return std::make_unique<ByteTokenizer>();
}

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// Ids kept before the unsent ones, so decoders that look at their neighbours (a leading
// space stripped from the first token only) decode the new text as in the whole.
constexpr std::size_t kContext = 4;
}  // namespace

std::string TextStream::push(int64_t id) {
  ids_.push_back(id);
  const std::vector<int64_t> sent(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(read_));
  const std::string before = tokenizer_.decode(sent, skip_special_);
  const std::string now = tokenizer_.decode(ids_, skip_special_);
  // Wait while the newest character is incomplete, or nothing new is there yet.
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0 ||
      (now.size() >= kReplacement.size() &&
       now.compare(now.size() - kReplacement.size(), kReplacement.size(), kReplacement) == 0)) {
    return {};
  }
  std::string out = now.substr(before.size());
  read_ = ids_.size();
  if (read_ > kContext) {  // keep a few sent ids as context
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(read_ - kContext));
    read_ = kContext;
  }
  return out;
}

std::string TextStream::finish() {
  const std::vector<int64_t> sent(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(read_));
  const std::string before = tokenizer_.decode(sent, skip_special_);
  const std::string now = tokenizer_.decode(ids_, skip_special_);
  read_ = ids_.size();
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0) return {};
  return now.substr(before.size());
}

}  // namespace tessera
