// Chat templates (src/tokenizer/jinja.hpp, chat_template.hpp): real templates (Llama-2,
// Mistral, Llama-3, ChatML, Qwen3) rendered on conversations equal @huggingface/jinja's
// output (tests/data/chat_templates, made by scripts/chat-template-golden.mjs), including
// the conversations they refuse; the interpreter's constructs one by one; constructs outside
// the subset are errors naming the line and column; hostile templates stay bounded.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/jinja.hpp"

namespace tessera {
namespace {

using json = nlohmann::json;

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/chat_templates/";

class GoldenChat : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenChat, RendersAsHuggingFaceJinja) {
  std::ifstream in(kData + GetParam() + ".json");
  const json g = json::parse(in);
  JinjaValue::Dict specials;
  specials.set("bos_token", JinjaValue(g["bos_token"].get<std::string>()));
  specials.set("eos_token", JinjaValue(g["eos_token"].get<std::string>()));
  const ChatTemplate t(g["template"].get<std::string>(), JinjaValue(std::move(specials)));
  for (const json& c : g["cases"]) {
    const JinjaValue messages = jinja_from_json(c["messages"].dump());
    const bool gen = c["add_generation_prompt"].get<bool>();
    if (c.contains("error")) {
      EXPECT_THROW(t.render(messages, gen), JinjaError)
          << GetParam() << ": " << c["messages"].dump();
      continue;
    }
    try {
      EXPECT_EQ(t.render(messages, gen), c["output"].get<std::string>())
          << GetParam() << ": " << c["messages"].dump() << " generation prompt " << gen;
    } catch (const JinjaError& e) {
      ADD_FAILURE() << GetParam() << ": " << e.what() << " on " << c["messages"].dump();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Templates, GoldenChat,
                         ::testing::Values("llama2-chat", "mistral-instruct", "llama3-instruct",
                                           "chatml", "qwen3"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           for (char& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

std::string render(const std::string& source, const std::string& context_json = "{}") {
  return JinjaTemplate(source).render(jinja_from_json(context_json));
}

std::string error_of(const std::string& source, const std::string& context_json = "{}") {
  try {
    render(source, context_json);
  } catch (const JinjaError& e) {
    return e.what();
  }
  return "";
}

TEST(Jinja, ExpressionsFiltersAndTests) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 2 ** 3 }} {{ 1 / 2 }}"),
            "7 3 2 8.0 0.5");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }} {{ 'x' if false else 'y' }} {{ not true or 1 == 1.0 }}"),
            "a1None y True");
  EXPECT_EQ(render("{{ s | trim | upper }}|{{ s | length }}|{{ xs | join(',') }}|{{ xs | first }}",
                   R"({"s": " hé ", "xs": [1, 2, 3]})"),
            "HÉ|4|1,2,3|1");
  EXPECT_EQ(
      render("{{ xs[1:] }} {{ xs[::-1] }} {{ xs[-1] }} {{ 'abc'[1:] }}", R"({"xs": [1, 2, 3]})"),
      "[2, 3] [3, 2, 1] 3 bc");
  EXPECT_EQ(render("{{ d.a }}{{ d['b'] }}{{ d.missing }}|{{ d.get('c', 'z') }}|{{ d | tojson }}",
                   R"({"d": {"a": 1, "b": "two"}})"),
            R"(1two|z|{"a": 1, "b": "two"})");
  EXPECT_EQ(render("{{ x is defined }} {{ y is not defined }} {{ n is none }} {{ s is string }} "
                   "{{ 'b' in 'abc' }} {{ 4 not in [1, 2] }}",
                   R"({"x": 1, "n": null, "s": "q"})"),
            "True True True True True True");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ 'xxhixx'.strip('x') }} {{ 'Ab'.lower() }} "
                   "{{ 'hi'.startswith('h') }}"),
            "['a', 'b', '', 'c'] hi ab True");
  EXPECT_EQ(
      render(
          "{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | join }}",
          R"({"ms": [{"role": "user", "c": "a"}, {"role": "x", "c": "b"}, {"role": "user", "c": "c"}]})"),
      "ac");
}

TEST(Jinja, StatementsScopesAndWhitespace) {
  EXPECT_EQ(
      render("{% for x in xs %}{{ loop.index }}{{ x }}{% if loop.last %}.{% else %},{% endif %}"
             "{% endfor %}",
             R"({"xs": ["a", "b"]})"),
      "1a,2b.");
  // A set inside a loop does not leak out; a namespace carries values out.
  EXPECT_EQ(render("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in [1, 2, 3] %}"
                   "{% set n = n + x %}{% set ns.n = ns.n + x %}{% endfor %}{{ n }} {{ ns.n }}"),
            "0 6");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   R"({"d": {"a": 1, "b": 2}})"),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
  EXPECT_EQ(render("{% for x in [1, 2, 3] if x > 1 %}{{ x }}{% endfor %}"), "23");
  // trim_blocks and lstrip_blocks (as transformers renders), '-' whitespace control, comments.
  EXPECT_EQ(render("a\n  {% if true %}\nb\n  {% endif %}\nc"), "a\nb\nc");
  EXPECT_EQ(render("a   {{- ' b ' -}}   c{# note #}\n"), "a b c");
  EXPECT_EQ(render("{% if a %}1{% elif b %}2{% else %}3{% endif %}", R"({"b": true})"), "2");
}

TEST(Jinja, UnsupportedConstructsAndErrorsNameTheLine) {
  EXPECT_NE(error_of("x\n{% macro f() %}{% endmacro %}").find("line 2"), std::string::npos);
  EXPECT_NE(error_of("{% macro f() %}{% endmacro %}").find("macro"), std::string::npos);
  EXPECT_NE(error_of("{% include 'x' %}").find("include"), std::string::npos);
  EXPECT_NE(error_of("{{ x | frobnicate }}").find("frobnicate"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a'.zap() }}").find("zap"), std::string::npos);
  EXPECT_NE(error_of("{% if x %}no end").find("endif"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 + }}").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("{{ 'unclosed }}").find("never closed"), std::string::npos);
  EXPECT_NE(error_of("{{ raise_exception('roles must alternate') }}").find("roles must alternate"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a' - 1 }}").find("cannot apply"), std::string::npos);
}

TEST(Jinja, HostileTemplatesStayBounded) {
  EXPECT_NE(error_of("{% for i in range(100000000) %}{% endfor %}").find("too long"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(10) %}"
                     "{% endfor %}{% endfor %}{% endfor %}")
                .find("too long"),
            std::string::npos);
  EXPECT_NE(error_of("{% set s = 'x' * 20000000 %}{{ s }}{{ s }}").find("16 MiB"),
            std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}")
                .find("deeply"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(300, '{') + "% if 1 %}").size(), 0u);  // garbage, no crash
}

TEST(ChatTemplate, LoadsFromTokenizerConfig) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tessera_chat_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>",
             "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{{ eos_token }}{% endfor %}"})";
  const auto t = ChatTemplate::load(dir / "tokenizer_config.json");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->apply({{"user", "hi"}}, false), "<s>user:hi</s>");
  EXPECT_EQ(t->special_token("eos_token"), "</s>");
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": "{% macro x() %}{% endmacro %}"})";
  try {
    ChatTemplate::load(dir / "tokenizer_config.json");
    ADD_FAILURE();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("chat_template"), std::string::npos);
  }
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "</s>"})";
  EXPECT_FALSE(ChatTemplate::load(dir / "tokenizer_config.json").has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
