// The OpenAI / KServe request bodies of the LLM server and stop strings (no model needed):
// every field the server implements is read with its range, every other field is refused by
// name, duplicate keys and out-of-range numbers are refused with a clear message.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "serve/openai/llm_protocol.hpp"
#include "serve/openai/stop_strings.hpp"
#include "tokenizer/chat_template.hpp"

namespace tessera {
namespace {

using nlohmann::json;

// The field a bad body is refused for ("" when accepted), and its message.
std::pair<std::string, std::string> refusal(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const LlmRequestError& e) {
    EXPECT_EQ(e.status(), 400);
    return {e.field().empty() ? "<body>" : e.field(), e.what()};
  }
  return {"", ""};
}

const LlmRequestLimits kLimits;

std::pair<std::string, std::string> completion(const std::string& body) {
  return refusal([&] { parse_completion_request(body, kLimits); });
}
std::pair<std::string, std::string> chat(const std::string& body) {
  return refusal([&] { parse_chat_request(body, kLimits); });
}

TEST(LlmOpenAiRequest, SamplingFieldsAreReadWithOpenAisMeaning) {
  const auto r = parse_completion_request(
      R"({"prompt": "a", "temperature": 0.5, "top_p": 0.9, "top_k": 40, "seed": 7,
          "presence_penalty": 0.5, "frequency_penalty": -1, "logprobs": 3, "n": 2,
          "best_of": 2, "stop": ["\n", "END"], "stream": true,
          "stream_options": {"include_usage": true}, "ignore_eos": true, "user": "u1"})",
      kLimits);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_EQ(r.sampling.seed, 7u);
  EXPECT_DOUBLE_EQ(r.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.frequency_penalty, -1.0);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 3);
  EXPECT_EQ(r.n, 2u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(parse_completion_request(R"({"prompt": "a", "echo": true})", kLimits).echo);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(r.stop_at_eos);
  EXPECT_FALSE(r.max_tokens.has_value());  // the endpoint's default (16)
  // Defaults: OpenAI's temperature 1, EOS stop, one choice.
  const auto d = parse_completion_request(R"({"prompt": "a"})", kLimits);
  EXPECT_DOUBLE_EQ(d.sampling.temperature, 1.0);
  EXPECT_TRUE(d.stop_at_eos);
  EXPECT_EQ(d.n, 1u);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "stop": "x"})", kLimits).stop,
            std::vector<std::string>{"x"});
  // vLLM's top_k -1: no limit.
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "top_k": -1})", kLimits).sampling.top_k, 0);
}

TEST(LlmOpenAiRequest, BatchedPromptsAndChatContentParts) {
  const auto r = parse_completion_request(R"({"prompt": ["ab", "cd", "ef"], "n": 2})", kLimits);
  EXPECT_EQ(r.prompts, (std::vector<std::string>{"ab", "cd", "ef"}));
  const auto c = parse_chat_request(
      R"({"messages": [{"role": "system", "content": "be brief"},
                       {"role": "user", "content": [{"type": "text", "text": "hi"},
                                                    {"type": "text", "text": "there"}]}],
          "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 9})",
      kLimits);
  EXPECT_EQ(c.prompts.front(), "system: be brief\nuser: hi\nthere\nassistant: ");
  EXPECT_TRUE(c.logprobs);
  EXPECT_EQ(c.sampling.top_logprobs, 2);
  EXPECT_EQ(c.max_tokens, 9u);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": [{"type": "image_url",
                     "image_url": {"url": "x"}}]}]})")
                .first,
            "messages[0].content[0].type");
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})").first,
            "messages[0].content[0].text");
}

TEST(LlmOpenAiRequest, ChatUsesTheCheckpointsTemplate) {
  const ChatTemplate chatml(
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      JinjaValue(JinjaValue::Dict{}));
  const std::string body =
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})";
  const auto r = parse_chat_request(body, kLimits, &chatml);
  EXPECT_EQ(r.prompts.front(), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_FALSE(r.add_special_tokens);  // the template writes them
  EXPECT_TRUE(parse_chat_request(body, kLimits).add_special_tokens);
  EXPECT_FALSE(r.max_tokens.has_value());  // chat's default: the rest of the context
  // /tokenize with messages renders the same prompt.
  const auto t = parse_tokenize_request(body, kLimits, &chatml);
  EXPECT_EQ(t.text, r.prompts.front());
  EXPECT_FALSE(t.add_special_tokens);
  EXPECT_TRUE(parse_tokenize_request(R"({"prompt": "x"})", kLimits, nullptr).add_special_tokens);
  EXPECT_EQ(refusal([] { parse_detokenize_request(R"({"tokens": [1, -1]})", 10); }).first,
            "tokens[1]");
  EXPECT_EQ(parse_detokenize_request(R"({"tokens": [1, 9]})", 10).tokens,
            (std::vector<int64_t>{1, 9}));
}

TEST(LlmOpenAiRequest, UnimplementedFieldsAreRefusedByName) {
  EXPECT_EQ(completion(R"({"prompt": "a", "suffix": "b"})").first, "suffix");
  EXPECT_EQ(completion(R"({"prompt": "a", "logit_bias": {"1": 2}})").first, "logit_bias");
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "tools": []})").first,
            "tools");
  EXPECT_EQ(
      chat(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {}})").first,
      "response_format");
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})").first,
            "messages[0].tool_calls");
  EXPECT_EQ(completion(R"({"prompt": "a", "stream": true, "stream_options": {"x": 1}})").first,
            "stream_options.x");
  const auto best_of = completion(R"({"prompt": "a", "best_of": 3})");
  EXPECT_EQ(best_of.first, "best_of");
  EXPECT_NE(best_of.second.find("not supported"), std::string::npos);
  EXPECT_EQ(completion(R"({"prompt": "a", "echo": true, "logprobs": 1})").first, "echo");
  EXPECT_EQ(refusal([] {
              parse_generate_request(R"({"text_input": "a", "parameters": {"beam_width": 2}})",
                                     false, kLimits);
            }).first,
            "parameters.beam_width");
  // Chat's top_logprobs needs logprobs.
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})").first,
            "top_logprobs");
}

TEST(LlmOpenAiRequest, DuplicateKeysAndOutOfRangeNumbersAreRefused) {
  const auto dup = completion(R"({"prompt": "a", "max_tokens": 2, "max_tokens": 3})");
  EXPECT_EQ(dup.first, "max_tokens");
  EXPECT_NE(dup.second.find("repeats the key 'max_tokens'"), std::string::npos);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "role": "system", "content": "x"}]})").first,
            "role");
  // 2^63 and 2^64 do not wrap around to something in range.
  const auto huge = completion(R"({"prompt": "a", "max_tokens": 9223372036854775808})");
  EXPECT_EQ(huge.first, "max_tokens");
  EXPECT_NE(huge.second.find("9223372036854775808"), std::string::npos) << huge.second;
  EXPECT_EQ(completion(R"({"prompt": "a", "max_tokens": 18446744073709551616})").first,
            "max_tokens");
  EXPECT_EQ(completion(R"({"prompt": "a", "max_tokens": 2.5})").first, "max_tokens");
  EXPECT_EQ(completion(R"({"prompt": "a", "n": 1000})").first, "n");
  EXPECT_EQ(completion(R"({"prompt": "a", "temperature": 3})").first, "temperature");
  EXPECT_EQ(completion(R"({"prompt": "a", "top_p": 0})").first, "top_p");
  EXPECT_EQ(completion(R"({"prompt": "a", "presence_penalty": -2.5})").first, "presence_penalty");
  EXPECT_EQ(completion(R"({"prompt": "a", "logprobs": 21})").first, "logprobs");
  EXPECT_EQ(completion(R"({"prompt": "a", "seed": "x"})").first, "seed");
  EXPECT_EQ(completion(R"({"prompt": "a", "stop": ["a", "b", "c", "d", "e"]})").first, "stop");
  EXPECT_EQ(completion(R"({"prompt": "a", "stop": [""]})").first, "stop");
  EXPECT_EQ(completion(R"({"prompt": "a", "stream_options": {"include_usage": true}})").first,
            "stream_options");
  // A server cap on max_tokens.
  LlmRequestLimits capped;
  capped.max_new_tokens = 8;
  EXPECT_THROW(parse_completion_request(R"({"prompt": "a", "max_tokens": 9})", capped),
               LlmRequestError);
  EXPECT_EQ(*parse_completion_request(R"({"prompt": "a", "max_tokens": 8})", capped).max_tokens,
            8u);
}

TEST(LlmOpenAiAnswer, LogprobsInCompletionAndChatShapes) {
  std::vector<LlmChoice> choices(1);
  choices[0].text = "hi";
  choices[0].logprobs = {{"h", -0.5, {{"h", -0.5}, {"x", -1.5}}}, {"i", -0.25, {{"i", -0.25}}}};
  const json c = json::parse(
      completion_answer(LlmApi::kCompletion, "c", 1, "m", choices, true, LlmUsage{2, 2}));
  const json& lp = c["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json::array({"h", "i"}));
  EXPECT_EQ(lp["token_logprobs"], json::array({-0.5, -0.25}));
  EXPECT_EQ(lp["top_logprobs"][0]["x"], -1.5);
  EXPECT_EQ(lp["text_offset"], json::array({0, 1}));
  EXPECT_EQ(c["usage"]["total_tokens"], 4);
  const json h =
      json::parse(completion_answer(LlmApi::kChat, "c", 1, "m", choices, true, LlmUsage{2, 2}));
  const json& content = h["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(content[0]["token"], "h");
  EXPECT_EQ(content[0]["bytes"], json::array({104}));
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "x");
  EXPECT_EQ(content[1]["logprob"], -0.25);
  // The usage chunk of stream_options.include_usage: no choices.
  const std::string usage = stream_usage_event(LlmApi::kChat, "c", 1, "m", LlmUsage{2, 3});
  const json u = json::parse(usage.substr(6));
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["completion_tokens"], 3);
}

TEST(StopStrings, HoldsBackAPossibleStopAndCutsBeforeIt) {
  StopStrings s({"END", "\n\n"});
  std::string out = s.push("hello E");
  EXPECT_EQ(out, "hello ");  // "E" may begin "END"
  out += s.push("N");
  EXPECT_EQ(out, "hello ");
  out += s.push("Dless");
  EXPECT_TRUE(s.hit());
  EXPECT_EQ(out, "hello ");
  EXPECT_EQ(s.push("more"), "");
  EXPECT_EQ(s.finish(), "");

  StopStrings t({"END"});
  EXPECT_EQ(t.push("EN"), "");
  EXPECT_EQ(t.push("x"), "ENx");  // not a stop after all
  EXPECT_EQ(t.push("E"), "");
  EXPECT_EQ(t.finish(), "E");
  EXPECT_FALSE(t.hit());

  StopStrings none({});
  EXPECT_EQ(none.push("abc"), "abc");
}

}  // namespace
}  // namespace tessera
