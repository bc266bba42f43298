// Tokenizers (src/tokenizer): golden ids from Hugging Face's tokenizers for six real
// tokenizer families (tests/data/tokenizers, made by scripts/tokenizer-golden.mjs), the
// decoder chains, streamed text that never splits a character, the byte tokenizer, and
// tokenizer files tessera refuses with the JSON field named.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode_text.hpp"

namespace tessera {
namespace {

using json = nlohmann::json;

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/tokenizers/";

json read_json(const std::string& file) {
  std::ifstream in(file);
  return json::parse(in);
}

std::filesystem::path temp_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_tokenizer_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string show(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

class GoldenIds : public ::testing::TestWithParam<std::string> {};

// Every string: the same ids as Hugging Face's tokenizers, without and with the
// post-processor's special tokens; the ids decode to the reference's text; and that text,
// streamed one id at a time, arrives whole and in valid UTF-8 pieces.
TEST_P(GoldenIds, EqualHuggingFaceOnEveryString) {
  const std::string family = GetParam();
  const auto tok = HfTokenizer::load(kData + family + "/tokenizer.json");
  const json golden = read_json(kData + family + "/golden.json");
  ASSERT_GE(golden["cases"].size(), 300u);
  int mismatches = 0;
  for (const json& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    const auto got = tok->encode(text);
    if (got != ids && ++mismatches <= 10) {
      ADD_FAILURE() << family << ": " << json(text).dump() << "\n  want " << show(ids)
                    << "\n  got  " << show(got);
    }
    EXPECT_EQ(tok->encode(text, true), c["ids_with_special_tokens"].get<std::vector<int64_t>>())
        << family << ": " << json(text).dump();
    const std::string decoded = c["decoded"].get<std::string>();
    EXPECT_EQ(tok->decode(ids), decoded) << family << ": " << json(text).dump();
    TextStream stream(*tok);
    std::string streamed;
    for (int64_t id : ids) {
      const std::string piece = stream.push(id);
      EXPECT_TRUE(valid_utf8(piece)) << family << ": " << json(text).dump();
      streamed += piece;
    }
    streamed += stream.finish();
    EXPECT_EQ(streamed, decoded) << family << ": streamed " << json(text).dump();
  }
  EXPECT_EQ(mismatches, 0) << family;
}

INSTANTIATE_TEST_SUITE_P(Families, GoldenIds,
                         ::testing::Values("llama2", "mistral-metaspace", "llama3", "cl100k",
                                           "claude-gpt2-style", "qwen3"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           for (char& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(Tokenizer, SpecialTokensAndIdsByName) {
  const auto llama3 = HfTokenizer::load(kData + "llama3/tokenizer.json");
  const auto eot = llama3->token_id("<|eot_id|>");
  ASSERT_TRUE(eot.has_value());
  EXPECT_TRUE(llama3->is_special(*eot));
  const auto ids = llama3->encode("<|begin_of_text|>Hi<|eot_id|>");
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.back(), *eot);
  EXPECT_EQ(llama3->decode(ids, true), "Hi");
  EXPECT_EQ(llama3->decode(ids), "<|begin_of_text|>Hi<|eot_id|>");
  EXPECT_FALSE(llama3->token_id("no such token").has_value());
}

// Byte fallback: a character outside the vocabulary becomes its bytes, which decode back
// (as a whole, and streamed without a broken character in any piece).
TEST(Tokenizer, ByteFallbackRoundTripsAndStreamsWholeCharacters) {
  const auto llama2 = HfTokenizer::load(kData + "llama2/tokenizer.json");
  const std::string text = "\xF0\x9F\xA6\x80 ok";  // a crab emoji the cut vocabulary lacks
  const auto ids = llama2->encode(text);
  EXPECT_GE(ids.size(), 4u);  // the emoji's four byte tokens, and more
  EXPECT_EQ(llama2->decode(ids), text);
  TextStream stream(*llama2);
  std::vector<std::string> pieces;
  for (int64_t id : ids) pieces.push_back(stream.push(id));
  EXPECT_EQ(pieces[1], "");  // the emoji's first byte alone is not a character yet
  std::string all;
  for (const auto& p : pieces) {
    EXPECT_TRUE(valid_utf8(p));
    all += p;
  }
  EXPECT_EQ(all + stream.finish(), text);
  // Half a character at the end of a finished stream is U+FFFD, never raw bytes.
  TextStream partial(*llama2);
  partial.push(ids[0]);  // the Metaspace prefix
  partial.push(ids[1]);  // the emoji's first byte
  EXPECT_EQ(partial.finish(), "\xEF\xBF\xBD");
}

TEST(Tokenizer, BytesRoundTripAndNeedAByteVocabulary) {
  ByteTokenizer t;
  const std::string text = "h\xC3\xA9llo\n\x01";
  const auto ids = t.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[1], 0xC3);
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_EQ(t.decode_token(300), "");
  const auto dir = temp_dir("bytevocab");
  EXPECT_THROW(load_tokenizer(dir, 100), SpecError);
  EXPECT_EQ(load_tokenizer(dir, 256)->name(), "byte");
  // A checkpoint's tokenizer.json must fit the model's vocabulary.
  std::filesystem::copy_file(kData + "llama2/tokenizer.json", dir / "tokenizer.json");
  EXPECT_THROW(load_tokenizer(dir, 1000), SpecError);
  EXPECT_EQ(load_tokenizer(dir, 32000)->name(), "bpe");
}

TEST(Tokenizer, Utf8RepairReplacesMaximalInvalidParts) {
  EXPECT_TRUE(valid_utf8("h\xC3\xA9"));
  EXPECT_FALSE(valid_utf8("\xC3"));
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));                   // a surrogate
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));                       // overlong
  EXPECT_EQ(utf8_lossy("a\xF0\x9F\x98z"), "a\xEF\xBF\xBDz");  // one U+FFFD for the broken emoji
  EXPECT_EQ(utf8_lossy("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

// A minimal tokenizer.json, with `edit` applied to it.
std::string minimal(const std::function<void(json&)>& edit) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_to_char(static_cast<unsigned char>(b))] = b;
  json doc = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
              {"decoder", {{"type", "ByteLevel"}}}};
  edit(doc);
  return doc.dump();
}

std::string refusal(const std::function<void(json&)>& edit) {
  try {
    HfTokenizer::parse(minimal(edit), "tokenizer.json");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(Tokenizer, WhatIsNotImplementedIsRefusedNamingTheField) {
  EXPECT_EQ(refusal([](json&) {}), "");
  EXPECT_NE(refusal([](json& d) { d["model"]["type"] = "WordPiece"; }).find("model.type"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) {
              d["normalizer"] = {{"type", "BertNormalizer"}};
            }).find("normalizer.type"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) {
              d["pre_tokenizer"] = {{"type", "Sequence"},
                                    {"pretokenizers", json::array({{{"type", "Whitespace"}}})}};
            }).find("pre_tokenizer.pretokenizers[0].type"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) {
              d["pre_tokenizer"] = {{"type", "Split"},
                                    {"pattern", {{"Regex", "(unclosed"}}},
                                    {"behavior", "Isolated"}};
            }).find("pre_tokenizer.pattern.Regex"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) {
              d["model"]["merges"] = json::array({"nospace"});
            }).find("model.merges[0]"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) { d["model"]["merges"] = json::array({"x y"}); }).find("model"),
            std::string::npos);  // a merge of tokens the vocabulary lacks
  EXPECT_NE(refusal([](json& d) {
              d["model"]["continuing_subword_prefix"] = "##";
            }).find("continuing_subword_prefix"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) {
              d["post_processor"] = {{"type", "BertProcessing"}};
            }).find("post_processor.type"),
            std::string::npos);
  EXPECT_NE(refusal([](json& d) { d["model"]["vocab"].erase("a"); }).find("byte 97"),
            std::string::npos);
  try {
    HfTokenizer::parse("{not json", "bad.json");
    ADD_FAILURE();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

// Hostile input: a long run of one character (one pre-token, many merges) and invalid
// UTF-8 are handled in bounded time and never crash.
TEST(Tokenizer, LongAndInvalidInputs) {
  const auto llama2 = HfTokenizer::load(kData + "llama2/tokenizer.json");
  const std::string long_text(200000, 'a');
  EXPECT_FALSE(llama2->encode(long_text).empty());
  const auto cl100k = HfTokenizer::load(kData + "cl100k/tokenizer.json");
  const auto ids = cl100k->encode("ok\xFF\xFE end");
  EXPECT_TRUE(valid_utf8(cl100k->decode(ids)));
}

}  // namespace
}  // namespace tessera
