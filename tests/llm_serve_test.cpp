// Live LLM serving (src/serve, docs/llm-serve.md): request parsing with a clear 400 per
// field, the LLM endpoint (the engine and its LlmInstanceSchedulers driving a tiny random
// decoder in real time, each step one batched forward pass: outputs equal greedy generation,
// also across preemption and recompute; two instances both serve; the ledger ends every
// request once), and the HTTP endpoints on an ephemeral loopback port (OpenAI and KServe,
// streaming, hostile input, client disconnect, metrics).

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "closed_port.hpp"
#include "core/error.hpp"
#include "llm_torch/decoder.hpp"
#include "loadgen/llm_loadgen.hpp"
#include "metrics/report.hpp"
#include "serve/metrics/llm_metrics.hpp"
#include "serve/openai/llm_protocol.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/llm_endpoint.hpp"
#include "serve/runtime/llm_step.hpp"
#include "serve/runtime/step_log.hpp"
#include "serve/server/llm_server.hpp"
#include "spec/run_spec.hpp"
#include "tiny_llm_checkpoint.hpp"
#include "tiny_llm_run.hpp"
#include "tls_test_client.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

using nlohmann::json;

std::filesystem::path temp_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera_llm_serve_test_" + std::to_string(::getpid()) + "_" + tag);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A tiny Llama-shaped random model with a byte-sized vocabulary; written once.
std::filesystem::path tiny_decoder_dir() {
  static const std::filesystem::path written = [] {
    const auto dir = temp_dir("model");
    testing::write_tiny_llm_checkpoint(dir);
    return dir;
  }();
  return written;
}

std::shared_ptr<const Decoder> tiny_decoder() {
  static const std::shared_ptr<const Decoder> decoder(Decoder::load(tiny_decoder_dir()));
  return decoder;
}

// t = 1 ms + 10 us per prefilled token: only the SLO-aware admission reads it.
class FixedCost final : public CostModel {
 public:
  Time step_time(const Worker&, const StepContents& s) const override {
    return 0.001 + 1e-5 * static_cast<double>(s.tokens_in);
  }
};

LlmSchedulerConfig continuous(uint32_t kv_blocks, uint32_t block_tokens = 16) {
  LlmSchedulerConfig c;
  c.policy = LlmPolicy::kContinuous;
  c.max_seqs = 8;
  c.token_budget = 256;
  c.kv_blocks = kv_blocks;
  c.block_tokens = block_tokens;
  return c;
}

// ---- request parsing ----

std::string field_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LlmRequestError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.field().empty() ? std::string("<body>") : e.field();
  }
  return "";
}

TEST(LlmProtocol, HostileRequestsNameTheField) {
  const LlmRequestLimits l;
  auto completion = [&](const std::string& body) {
    return field_of([&] { parse_completion_request(body, l); });
  };
  EXPECT_EQ(completion(""), "<body>");
  EXPECT_EQ(completion("[1]"), "<body>");
  EXPECT_EQ(completion("{\"prompt\": \"a\xff\"}"), "<body>");  // invalid UTF-8
  EXPECT_EQ(completion("{\"max_tokens\": 3}"), "prompt");
  EXPECT_EQ(completion("{\"prompt\": 5}"), "prompt");
  EXPECT_EQ(completion("{\"prompt\": [\"a\", 3]}"), "prompt[1]");
  EXPECT_EQ(completion("{\"prompt\": \"\"}"), "prompt");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"max_tokens\": \"9\"}"), "max_tokens");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"max_tokens\": 0}"), "max_tokens");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"max_tokens\": 100000000}"), "max_tokens");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"stream\": \"yes\"}"), "stream");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"model\": 3}"), "model");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"temperature\": \"hot\"}"), "temperature");
  EXPECT_EQ(completion("{\"prompt\": \"a\", \"n\": 0}"), "n");
  EXPECT_EQ(completion("{\"prompt\": \"" + std::string(l.max_prompt_bytes + 1, 'x') + "\"}"),
            "prompt");
  EXPECT_EQ(completion("{\"prompt\": [\"ok\"], \"max_tokens\": 4}"), "");

  auto chat = [&](const std::string& body) {
    return field_of([&] { parse_chat_request(body, l); });
  };
  EXPECT_EQ(chat("{}"), "messages");
  EXPECT_EQ(chat("{\"messages\": []}"), "messages");
  EXPECT_EQ(chat("{\"messages\": [3]}"), "messages[0]");
  EXPECT_EQ(chat("{\"messages\": [{\"role\": \"user\"}]}"), "messages[0].content");
  EXPECT_EQ(chat("{\"messages\": [{\"role\": \"boss\", \"content\": \"x\"}]}"), "messages[0].role");
  const auto ok = parse_chat_request(
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stream\": true}", l);
  EXPECT_EQ(ok.prompts, std::vector<std::string>{"user: hi\nassistant: "});
  EXPECT_TRUE(ok.stream);

  auto gen = [&](const std::string& body) {
    return field_of([&] { parse_generate_request(body, false, l); });
  };
  EXPECT_EQ(gen("{}"), "text_input");
  EXPECT_EQ(gen("{\"text_input\": [1]}"), "text_input");
  EXPECT_EQ(gen("{\"text_input\": \"a\", \"parameters\": 3}"), "parameters");
  EXPECT_EQ(gen("{\"text_input\": \"a\", \"parameters\": {\"max_tokens\": -1}}"),
            "parameters.max_tokens");
  EXPECT_EQ(parse_generate_request("{\"text_input\": \"a\", \"parameters\": {\"max_tokens\": 7}}",
                                   true, l)
                .max_tokens,
            7u);
}

// EOS stop: the default, as in OpenAI's API; `ignore_eos: true` (OpenAI bodies, KServe
// parameters) turns it off; an answer that stopped there says finish_reason "stop".
TEST(LlmProtocol, EosStopUnlessIgnoreEos) {
  const LlmRequestLimits l;
  EXPECT_TRUE(parse_completion_request("{\"prompt\": \"a\"}", l).stop_at_eos);
  EXPECT_FALSE(
      parse_completion_request("{\"prompt\": \"a\", \"ignore_eos\": true}", l).stop_at_eos);
  EXPECT_TRUE(
      parse_completion_request("{\"prompt\": \"a\", \"ignore_eos\": false}", l).stop_at_eos);
  EXPECT_TRUE(parse_chat_request(
                  "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"ignore_eos\": "
                  "false}",
                  l)
                  .stop_at_eos);
  EXPECT_TRUE(parse_generate_request(
                  "{\"text_input\": \"a\", \"parameters\": {\"ignore_eos\": false}}", false, l)
                  .stop_at_eos);
  EXPECT_EQ(
      field_of([&] { parse_completion_request("{\"prompt\": \"a\", \"ignore_eos\": \"no\"}", l); }),
      "ignore_eos");
  EXPECT_EQ(field_of([&] {
              parse_generate_request("{\"text_input\": \"a\", \"parameters\": {\"ignore_eos\": 0}}",
                                     false, l);
            }),
            "parameters.ignore_eos");
  const LlmUsage usage{3, 2};
  std::vector<LlmChoice> choices(1);
  choices[0].text = "x";
  EXPECT_NE(completion_answer(LlmApi::kCompletion, "c", 0, "m", choices, false, usage)
                .find("\"finish_reason\":\"length\""),
            std::string::npos);
  choices[0].stopped = true;
  EXPECT_NE(completion_answer(LlmApi::kCompletion, "c", 0, "m", choices, false, usage)
                .find("\"finish_reason\":\"stop\""),
            std::string::npos);
  EXPECT_NE(
      stream_final_event(LlmApi::kChat, "c", 0, "m", 0, true).find("\"finish_reason\":\"stop\""),
      std::string::npos);
}

// ---- the endpoint: the engine and its ledger on the decoder, in real time ----

// A run spec of the tiny model served by `instances` instances, read from YAML as `tessera
// serve` reads it; the scheduler is `config`, steps are predicted by FixedCost, and a
// request is ok within 10 minutes (and `ttft_slo_s`, if > 0).
RunSpec llm_run(int instances, const LlmSchedulerConfig& config, double ttft_slo_s = 0.0) {
  RunSpec run = load_run_spec(
      testing::write_tiny_llm_run(temp_dir("run" + std::to_string(instances)), instances));
  run.llm->scheduler = config;
  run.app.ttft_slo = ttft_slo_s;
  run.sim.cost_model = std::make_shared<FixedCost>();
  return run;
}

// An LlmEndpoint on its own loop.
struct LiveLlm {
  explicit LiveLlm(const RunSpec& run, LlmObserver* observer = nullptr,
                   std::vector<std::shared_ptr<const Decoder>> decoders = {tiny_decoder()})
      : endpoint(run, std::move(decoders), clock, loop, observer) {
    loop.start();
  }
  ~LiveLlm() {
    endpoint.shutdown();
    loop.stop();
  }
  SteadyClock clock;
  EventLoop loop{clock};
  LlmEndpoint endpoint;
};

struct Collected {
  std::mutex mutex;
  std::vector<int64_t> tokens;
  std::vector<LlmRequestEnd> ends;
  std::size_t ended() {
    std::lock_guard lock(mutex);
    return ends.size();
  }
};

LlmCallbacks collect(const std::shared_ptr<Collected>& c) {
  LlmCallbacks cb;
  cb.on_token = [c](const SampledToken& t) {
    std::lock_guard lock(c->mutex);
    c->tokens.push_back(t.id);
    return LlmTokenVerdict::kContinue;
  };
  cb.on_end = [c](const LlmRequestEnd& r) {
    std::lock_guard lock(c->mutex);
    c->ends.push_back(r);
  };
  return cb;
}

bool wait_for(const std::function<bool()>& done, double seconds = 60.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

bool all_ended(const std::vector<std::shared_ptr<Collected>>& got) {
  for (const auto& c : got) {
    if (c->ended() == 0) return false;
  }
  return true;
}

std::vector<int64_t> prompt_of(int n, int seed) {
  std::vector<int64_t> p;
  for (int i = 0; i < n; ++i) p.push_back((seed * 31 + i * 7) % 256);
  return p;
}

// Submits `n` requests of 24 tokens; each must end once, ok, with its own greedy tokens
// (continuous batching, chunking and recompute after a preemption change nothing in them).
void expect_greedy(LlmEndpoint& endpoint, int n) {
  const auto decoder = tiny_decoder();
  std::vector<std::shared_ptr<Collected>> got;
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < n; ++i) {
    prompts.push_back(prompt_of(10 + 5 * i, i));
    got.push_back(std::make_shared<Collected>());
    endpoint.submit(LlmRequest{prompts.back(), 24}, collect(got.back()));
  }
  ASSERT_TRUE(wait_for([&] { return all_ended(got); }));
  for (int i = 0; i < n; ++i) {
    std::lock_guard lock(got[i]->mutex);
    ASSERT_EQ(got[i]->ends.size(), 1u) << "request " << i << " must end exactly once";
    const LlmRequestEnd& r = got[i]->ends[0];
    EXPECT_EQ(r.record.outcome, Outcome::kOk) << outcome_name(r.record.outcome) << " " << r.error;
    EXPECT_EQ(r.output_tokens, 24u);
    EXPECT_EQ(r.record.output_tokens, 24u);
    EXPECT_EQ(r.prompt_tokens, prompts[i].size());
    EXPECT_GT(r.record.ttft, 0.0);
    const auto expected = decoder->generate(prompts[i], 24);
    const std::vector<int64_t> tail(expected.end() - 24, expected.end());
    EXPECT_EQ(got[i]->tokens, tail) << "request " << i;
  }
}

void run_and_compare(const LlmSchedulerConfig& config, bool expect_preemption) {
  LiveLlm live(llm_run(1, config));
  expect_greedy(live.endpoint, 6);
  ASSERT_TRUE(wait_for([&] { return live.endpoint.stats().in_flight == 0; }));
  if (expect_preemption) {
    EXPECT_GT(live.endpoint.stats().preemptions, 0u);
  }
  EXPECT_EQ(live.endpoint.stats().kv_used, 0u);
}

TEST(LlmEndpoint, ContinuousBatchingGeneratesEachRequestsGreedyTokens) {
  run_and_compare(continuous(64), false);
}

TEST(LlmEndpoint, PreemptionRecomputesAndKeepsTheTokens) {
  // 8 blocks of 8 tokens: six requests of 10..35 prompt + 24 output tokens cannot all fit.
  run_and_compare(continuous(8, 8), true);
}

TEST(LlmEndpoint, ChunkedPrefillAlsoMatches) {
  LlmSchedulerConfig c = continuous(64);
  c.policy = LlmPolicy::kChunked;
  c.token_budget = 16;
  run_and_compare(c, false);
}

// Prefix caching, live: requests that share a 40-token system prompt (two whole blocks of
// 16) reuse its KV; each request's tokens (greedy, and seeded sampling at temperature 0.8)
// are the same as with caching off, token for token.
std::vector<std::vector<int64_t>> shared_prefix_tokens(bool caching, uint64_t* hits) {
  LlmSchedulerConfig c = continuous(64);
  c.prefix_caching = caching;
  LiveLlm live(llm_run(1, c));
  const std::vector<int64_t> system = prompt_of(40, 9);
  std::vector<std::shared_ptr<Collected>> got;
  for (int i = 0; i < 6; ++i) {
    std::vector<int64_t> prompt = system;
    const auto own = prompt_of(5 + i, i);
    prompt.insert(prompt.end(), own.begin(), own.end());
    LlmRequest r{prompt, 12};
    if (i % 2 == 1) {
      r.sampling.temperature = 0.8;
      r.sampling.seed = 1234 + i;
    }
    got.push_back(std::make_shared<Collected>());
    live.endpoint.submit(std::move(r), collect(got.back()));
    // One at a time for the first two: the second finds the first's blocks cached; the rest
    // arrive together and share them while running.
    if (i < 2) {
      EXPECT_TRUE(wait_for([&] { return got.back()->ended() == 1; }));
    }
  }
  EXPECT_TRUE(wait_for([&] { return all_ended(got); }));
  EXPECT_TRUE(wait_for([&] { return live.endpoint.stats().in_flight == 0; }));
  EXPECT_EQ(live.endpoint.stats().kv_used, 0u);
  *hits = live.endpoint.stats().prefix_hits;
  std::vector<std::vector<int64_t>> out;
  for (const auto& g : got) {
    std::lock_guard lock(g->mutex);
    EXPECT_EQ(g->ends.size(), 1u);
    if (!g->ends.empty()) {
      EXPECT_EQ(g->ends[0].record.outcome, Outcome::kOk);
    }
    out.push_back(g->tokens);
  }
  return out;
}

TEST(LlmEndpoint, PrefixCachingSkipsSharedBlocksAndChangesNoToken) {
  uint64_t hits_on = 0, hits_off = 0;
  const auto on = shared_prefix_tokens(true, &hits_on);
  const auto off = shared_prefix_tokens(false, &hits_off);
  EXPECT_EQ(on, off);
  EXPECT_EQ(hits_off, 0u);
  // At least the second request hits both whole blocks of the system prompt.
  EXPECT_GE(hits_on, 32u);
  const auto decoder = tiny_decoder();
  std::vector<int64_t> first = prompt_of(40, 9);
  const auto own = prompt_of(5, 0);
  first.insert(first.end(), own.begin(), own.end());
  const auto expected = decoder->generate(first, 12);
  EXPECT_EQ(on[0], std::vector<int64_t>(expected.end() - 12, expected.end()));
}

// The deployment's instance count is served: the run's dispatcher spreads the requests
// over both instances (each with its own decoder, their steps at once), and the engine's
// ledger ends every request exactly once.
TEST(LlmEndpoint, TwoInstancesServeOnBothAndTheLedgerEndsEachRequestOnce) {
  struct Ledger final : LlmObserver {
    std::mutex mutex;
    std::vector<RequestRecord> records;
    std::set<WorkerId> stepped;
    void on_llm_step(WorkerId instance, const LlmStepStats&, Time) override {
      std::lock_guard lock(mutex);
      stepped.insert(instance);
    }
    void on_llm_end(const LlmRequestEnd& end) override {
      std::lock_guard lock(mutex);
      records.push_back(end.record);
    }
  } ledger;
  auto second = std::shared_ptr<const Decoder>(Decoder::load(tiny_decoder_dir()));
  LiveLlm live(llm_run(2, continuous(64)), &ledger, {tiny_decoder(), second});
  EXPECT_EQ(live.endpoint.instances(), 2u);
  expect_greedy(live.endpoint, 8);
  ASSERT_TRUE(wait_for([&] { return live.endpoint.stats().in_flight == 0; }));
  const LlmEndpointStats stats = live.endpoint.stats();
  EXPECT_EQ(stats.submitted, 8u);
  ASSERT_EQ(stats.instances.size(), 2u);
  EXPECT_GT(stats.instances[0].finished, 0u);
  EXPECT_GT(stats.instances[1].finished, 0u);
  EXPECT_EQ(stats.instances[0].finished + stats.instances[1].finished, 8u);
  std::lock_guard lock(ledger.mutex);
  EXPECT_EQ(ledger.stepped, (std::set<WorkerId>{0, 1}));
  ASSERT_EQ(ledger.records.size(), 8u);
  std::set<uint64_t> ids;
  for (const RequestRecord& r : ledger.records) {
    ids.insert(r.id);
    EXPECT_EQ(r.outcome, Outcome::kOk);
  }
  EXPECT_EQ(ids, (std::set<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// EOS stop: a request that names a stop token ends (ok, stopped) as soon as the model
// emits it; the token is not handed to the client, and the scheduler frees its blocks.
TEST(LlmEndpoint, StopTokenEndsTheRequestEarly) {
  LiveLlm live(llm_run(1, continuous(16, 8)));
  auto free_run = std::make_shared<Collected>();
  live.endpoint.submit(LlmRequest{prompt_of(5, 4), 6}, collect(free_run));
  ASSERT_TRUE(wait_for([&] { return free_run->ended() == 1; }));
  ASSERT_EQ(free_run->tokens.size(), 6u);
  // Greedy is deterministic: stop at the first token that differs from the first one.
  std::size_t at = 1;
  while (at < free_run->tokens.size() && free_run->tokens[at] == free_run->tokens[0]) ++at;
  ASSERT_LT(at, free_run->tokens.size()) << "the tiny model repeats one token";
  LlmRequest stop_req{prompt_of(5, 4), 6};
  stop_req.stop_token = free_run->tokens[at];
  auto stopped = std::make_shared<Collected>();
  live.endpoint.submit(stop_req, collect(stopped));
  ASSERT_TRUE(wait_for([&] { return stopped->ended() == 1; }));
  const LlmRequestEnd& end = stopped->ends[0];
  EXPECT_EQ(end.record.outcome, Outcome::kOk);
  EXPECT_TRUE(end.stopped);
  EXPECT_EQ(end.output_tokens, at + 1);         // the stop token counts
  EXPECT_EQ(end.record.output_tokens, at + 1);  // in the ledger too
  EXPECT_EQ(stopped->tokens.size(), at);        // but is not sent
  EXPECT_GE(end.record.ttft, 0.0);
  EXPECT_FALSE(free_run->ends[0].stopped);
  ASSERT_TRUE(wait_for([&] {
    const auto s = live.endpoint.stats();
    return s.kv_used == 0 && s.running == 0;
  }));
}

// --llm-step-log: one CSV line per step, the model's and the measured ms; every call is
// forwarded to the next observer.
// One step is one batched forward pass over its requests (a prefill and a decode together
// give greedy generation's tokens); an input the pass refuses (a token outside the
// vocabulary) fails only its own request: the others are run one by one and still get
// theirs.
TEST(LlmStep, OneBatchedPassAndABadInputFailsOnlyItsRequest) {
  const auto decoder = tiny_decoder();
  const SteadyClock clock;
  const std::vector<int64_t> a_prompt{10, 20, 30, 40};
  const std::vector<int64_t> b_prompt{7, 8};
  const auto expected_a = decoder->generate(a_prompt, 2);
  const auto expected_b = decoder->generate(b_prompt, 1);
  auto got = std::make_shared<Collected>();
  auto a = std::make_shared<LlmLiveRequest>(LlmRequest{a_prompt, 2, -1}, collect(got));
  auto b = std::make_shared<LlmLiveRequest>(LlmRequest{b_prompt, 2, -1}, LlmCallbacks{});
  auto bad = std::make_shared<LlmLiveRequest>(LlmRequest{{5, 999}, 2, -1}, LlmCallbacks{});
  a->id = 1;
  b->id = 2;
  bad->id = 3;
  const auto prefill = [](RequestSlot slot, uint32_t n) {
    LlmInstanceScheduler::StepEntry e;
    e.request = slot;
    e.prefill = n;
    e.emits = true;
    return e;
  };
  // Step 1: a's prefill alone. Step 2: a's decode beside b's and bad's prefills.
  const std::vector<LlmStepItem> first{{a, prefill(0, 4), nullptr}};
  EXPECT_TRUE(run_llm_step(*decoder, first, clock).failed.empty());
  LlmInstanceScheduler::StepEntry decode;
  decode.request = 0;
  decode.decode = true;
  decode.emits = true;
  const std::vector<LlmStepItem> second{
      {a, decode, nullptr}, {b, prefill(1, 2), nullptr}, {bad, prefill(2, 2), nullptr}};
  const LlmStepResult result = run_llm_step(*decoder, second, clock);
  EXPECT_EQ(result.failed, std::vector<uint64_t>{3});
  EXPECT_TRUE(result.stopped.empty());
  EXPECT_TRUE(result.left.empty());
  EXPECT_EQ(got->tokens, expected_a);
  EXPECT_EQ(b->last_token(), expected_b.front());
  RequestRecord failed;
  failed.outcome = Outcome::kFailed;
  EXPECT_NE(bad->end_of(failed).error.find("the model failed"), std::string::npos)
      << bad->end_of(failed).error;
}

TEST(LlmStepLog, WritesAStepPerLineAndForwards) {
  struct Counter final : LlmObserver {
    int steps = 0;
    int ends = 0;
    void on_llm_step(WorkerId, const LlmStepStats&, Time) override { ++steps; }
    void on_llm_end(const LlmRequestEnd&) override { ++ends; }
  } next;
  const auto file = temp_dir("steplog") / "steps.csv";
  {
    LlmStepLog log(file.string(), next);
    LlmStepStats s;
    s.prefill_tokens = 100;
    s.decode_tokens = 3;
    s.kv_used_blocks = 9;
    s.duration = 0.0125;
    log.on_llm_step(0, s, 0.015);
    log.on_llm_end(LlmRequestEnd{});
  }
  EXPECT_EQ(next.steps, 1);
  EXPECT_EQ(next.ends, 1);
  std::ifstream in(file);
  std::string header, line;
  std::getline(in, header);
  std::getline(in, line);
  EXPECT_EQ(header, "step,prefill_tokens,decode_tokens,kv_used_blocks,model_ms,live_ms");
  EXPECT_EQ(line, "0,100,3,9,12.5000,15.0000");
  EXPECT_THROW(LlmStepLog((temp_dir("steplog2") / "no" / "such" / "f.csv").string(), next),
               std::runtime_error);
}

TEST(LlmEndpoint, CapacityDropsAndCancelAndStopEndEveryRequestOnce) {
  LiveLlm live(llm_run(1, continuous(4, 8)));
  LlmEndpoint& ep = live.endpoint;
  auto too_big = std::make_shared<Collected>();
  ep.submit(LlmRequest{prompt_of(40, 1), 10}, collect(too_big));  // 50 tokens > 32
  auto cancelled = std::make_shared<Collected>();
  auto cb = collect(cancelled);
  cb.on_token = [cancelled](const SampledToken& t) {
    std::lock_guard lock(cancelled->mutex);
    cancelled->tokens.push_back(t.id);
    return LlmTokenVerdict::kGone;  // the client left after its first token
  };
  ep.submit(LlmRequest{prompt_of(5, 2), 20}, cb);
  ASSERT_TRUE(wait_for([&] { return too_big->ended() == 1 && cancelled->ended() == 1; }));
  EXPECT_EQ(too_big->ends[0].record.outcome, Outcome::kDropped);
  EXPECT_EQ(too_big->ends[0].record.reason, DropReason::kKvCapacity);
  EXPECT_TRUE(cancelled->ends[0].cancelled());
  EXPECT_EQ(cancelled->tokens.size(), 1u);
  // The scheduler let go of it at once: its blocks are back and no step decoded it after
  // its prefill (without the scheduler's cancel, 19 more decode steps would run).
  ASSERT_TRUE(wait_for([&] {
    const auto s = ep.stats();
    return s.steps >= 1 && s.kv_used == 0 && s.running == 0 && s.in_flight == 0;
  }));
  EXPECT_EQ(ep.stats().steps, 1u);
  EXPECT_EQ(ep.stats().submitted, 2u);
  // Stopped: a request submitted now ends once, as failed.
  ep.shutdown();
  auto late = std::make_shared<Collected>();
  ep.submit(LlmRequest{prompt_of(5, 3), 5}, collect(late));
  ASSERT_EQ(late->ended(), 1u);
  EXPECT_EQ(late->ends[0].record.outcome, Outcome::kFailed);
  EXPECT_EQ(late->ends[0].error, kShuttingDown);
}

// ---- the HTTP server ----

class LlmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LlmServeOptions o;
    o.port = 0;
    o.max_inflight = 8;
    o.limits.max_new_tokens = 400;
    server_ =
        std::make_unique<LlmServer>(llm_run(1, continuous(256), 30.0),
                                    std::vector<std::shared_ptr<const Decoder>>{tiny_decoder()},
                                    std::make_shared<ByteTokenizer>(), o);
    port_ = server_->start();
  }
  void TearDown() override { server_->shutdown(); }
  std::unique_ptr<LlmServer> server_;
  int port_ = 0;
};

const char* kJson = "application/json";

// The data lines of a server-sent event stream.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find("\n\n", at);
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

TEST_F(LlmServerTest, OpenAiCompletionsWholeAndStreamed) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  auto res = cli.Post("/v1/completions", R"({"model": "tiny", "prompt": "Hello", "max_tokens": 5})",
                      kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json doc = json::parse(res->body);
  EXPECT_EQ(doc["object"], "text_completion");
  EXPECT_EQ(doc["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(doc["usage"]["completion_tokens"], 5);
  EXPECT_EQ(doc["choices"][0]["finish_reason"], "length");

  res = cli.Post("/v1/completions",
                 R"({"prompt": "Hello", "max_tokens": 4, "stream": true,
                     "stream_options": {"include_usage": true}})",
                 kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  const auto events = sse_data(res->body);
  ASSERT_EQ(events.size(), 7u);  // 4 tokens, the final event, the usage chunk, [DONE]
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[4])["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(json::parse(events[5])["choices"].empty());
  EXPECT_EQ(json::parse(events[5])["usage"]["completion_tokens"], 4);
  EXPECT_TRUE(json::parse(events[0])["choices"][0]["finish_reason"].is_null());

  res = cli.Post("/v1/chat/completions",
                 R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3})", kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  doc = json::parse(res->body);
  EXPECT_EQ(doc["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(doc["usage"]["prompt_tokens"], std::string("user: hi\nassistant: ").size());

  res = cli.Post("/v1/chat/completions",
                 R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                     "stream": true})",
                 kJson);
  ASSERT_TRUE(res);
  const auto chat_events = sse_data(res->body);
  ASSERT_EQ(chat_events.size(), 6u);  // role, 3 tokens, final, [DONE]
  EXPECT_EQ(json::parse(chat_events[0])["choices"][0]["delta"]["role"], "assistant");

  res = cli.Get("/v1/models");
  ASSERT_TRUE(res);
  const json model = json::parse(res->body)["data"][0];
  EXPECT_EQ(model["id"], "tiny");
  // "created": when the server started (Unix seconds), not 0.
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_GT(model["created"].get<int64_t>(), now - 600);
  EXPECT_LE(model["created"].get<int64_t>(), now);
}

// The LLM endpoints are behind the same keys as the app server's (docs/security.md):
// probes open, completions and metrics need an inference key.
TEST(LlmServerAccess, ApiKeysGuardTheOpenAiEndpoints) {
  LlmServeOptions o;
  o.port = 0;
  o.access.inference_keys = {"llm-key"};
  LlmServer server(llm_run(1, continuous(256), 30.0),
                   std::vector<std::shared_ptr<const Decoder>>{tiny_decoder()},
                   std::make_shared<ByteTokenizer>(), o);
  httplib::Client cli("127.0.0.1", server.start());
  cli.set_read_timeout(60, 0);
  const std::string body = R"({"prompt": "Hello", "max_tokens": 2})";
  EXPECT_EQ(cli.Get("/v2/health/ready")->status, 200);
  auto res = cli.Post("/v1/completions", body, kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(cli.Get("/metrics")->status, 401);
  cli.set_bearer_token_auth("llm-key");
  res = cli.Post("/v1/completions", body, kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(cli.Get("/v1/models")->status, 200);
  server.shutdown();
}

// The OpenAI routes over HTTPS (docs/security.md#tls), whole and streamed (server-sent
// events in chunks through the TLS stream), with a key.
TEST(LlmServerAccess, OpenAiEndpointsOverTls) {
  const testing::TestPki pki;
  ASSERT_TRUE(pki.ok) << "openssl could not make the test certificates";
  LlmServeOptions o;
  o.port = 0;
  o.access.inference_keys = {"llm-key"};
  o.http_tls = TlsFiles{pki.pem("server.pem"), pki.pem("server.key"), ""};
  LlmServer server(llm_run(1, continuous(256), 30.0),
                   std::vector<std::shared_ptr<const Decoder>>{tiny_decoder()},
                   std::make_shared<ByteTokenizer>(), o);
  const int port = server.start();
  httplib::Client cli("https://127.0.0.1:" + std::to_string(port));
  cli.set_ca_cert_path(pki.pem("ca.pem").c_str());
  cli.enable_server_certificate_verification(true);
  cli.set_read_timeout(60, 0);
  EXPECT_EQ(cli.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(cli.Post("/v1/completions", R"({"prompt": "Hello", "max_tokens": 2})", kJson)->status,
            401);
  cli.set_bearer_token_auth("llm-key");
  auto whole = cli.Post("/v1/completions", R"({"prompt": "Hello", "max_tokens": 2})", kJson);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->status, 200) << whole->body;
  auto streamed =
      cli.Post("/v1/completions", R"({"prompt": "Hello", "max_tokens": 3, "stream": true})", kJson);
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->status, 200);
  EXPECT_NE(streamed->body.find("data: [DONE]"), std::string::npos) << streamed->body;
  EXPECT_EQ(cli.Get("/metrics")->status, 200);
  // Plain HTTP on the TLS port gets no answer.
  httplib::Client plain("127.0.0.1", port);
  plain.set_read_timeout(5, 0);
  EXPECT_FALSE(plain.Get("/v2/health/ready"));
  server.shutdown();
}

// POST `body` to `path`: the parsed answer (status 200 expected).
json post_ok(httplib::Client& cli, const std::string& path, const std::string& body) {
  auto res = cli.Post(path, body, kJson);
  EXPECT_TRUE(res);
  if (!res) return json();
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body, nullptr, false);
}

// The text a stream carries per choice index.
std::map<int, std::string> streamed_text(const std::string& body, bool chat) {
  std::map<int, std::string> out;
  for (const std::string& e : sse_data(body)) {
    if (e == "[DONE]") continue;
    const json doc = json::parse(e);
    for (const json& c : doc["choices"]) {
      const json& piece = chat ? c["delta"]["content"] : c["text"];
      if (piece.is_string()) out[c["index"].get<int>()] += piece.get<std::string>();
    }
  }
  return out;
}

TEST_F(LlmServerTest, SeededSamplingIsReproducibleAndEachChoiceHasItsOwnStream) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  const std::string body =
      R"({"prompt": "Hello", "max_tokens": 12, "temperature": 1.0, "top_p": 0.95, "seed": 42,
          "n": 3, "logprobs": 2})";
  const json a = post_ok(cli, "/v1/completions", body);
  const json b = post_ok(cli, "/v1/completions", body);
  ASSERT_EQ(a["choices"].size(), 3u);
  std::set<std::string> texts;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a["choices"][i]["index"], i);
    EXPECT_EQ(a["choices"][i]["text"], b["choices"][i]["text"]);  // the same seed, the same text
    texts.insert(a["choices"][i]["text"].get<std::string>());
    const json& lp = a["choices"][i]["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), 12u);
    ASSERT_EQ(lp["token_logprobs"].size(), 12u);
    for (const json& v : lp["token_logprobs"]) EXPECT_LE(v.get<double>(), 0.0);
    for (const json& top : lp["top_logprobs"]) {
      EXPECT_GE(top.size(), 1u);  // two ids may share a text (U+FFFD)
      EXPECT_LE(top.size(), 2u);
    }
  }
  EXPECT_GT(texts.size(), 1u);                // seed + index: the choices differ
  EXPECT_EQ(a["usage"]["prompt_tokens"], 5);  // the prompt counts once
  EXPECT_EQ(a["usage"]["completion_tokens"], 36);
  // Streamed with the same seed: the same texts.
  auto res = cli.Post("/v1/completions",
                      R"({"prompt": "Hello", "max_tokens": 12, "temperature": 1.0,
                          "top_p": 0.95, "seed": 42, "n": 3, "stream": true})",
                      kJson);
  ASSERT_TRUE(res);
  const auto streamed = streamed_text(res->body, false);
  ASSERT_EQ(streamed.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(streamed.at(i), a["choices"][i]["text"]);
}

TEST_F(LlmServerTest, StopStringsEndTheChoiceBeforeThem) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  const json free_run =
      post_ok(cli, "/v1/completions", R"({"prompt": "Hi", "max_tokens": 16, "temperature": 0})");
  const std::string text = free_run["choices"][0]["text"];
  // A stop string from the greedy text (ASCII, so that it is whole characters).
  std::size_t at = 3;
  while (at < text.size() && static_cast<unsigned char>(text[at]) >= 0x80) ++at;
  ASSERT_LT(at, text.size()) << "no ASCII character to stop at in " << text;
  const std::string stop = text.substr(at, 1);
  const std::string expected = text.substr(0, text.find(stop));
  const json req = {{"prompt", "Hi"}, {"max_tokens", 16}, {"temperature", 0}, {"stop", {stop}}};
  const json stopped = post_ok(cli, "/v1/completions", req.dump());
  EXPECT_EQ(stopped["choices"][0]["text"], expected);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(stopped["usage"]["completion_tokens"].get<int>(), 16);
  json streamed_req = req;
  streamed_req["stream"] = true;
  auto res = cli.Post("/v1/completions", streamed_req.dump(), kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(streamed_text(res->body, false).at(0), expected);
  // echo: the prompt before the completion.
  const json echoed = post_ok(cli, "/v1/completions",
                              R"({"prompt": "Hi", "max_tokens": 16, "temperature": 0,
                                  "echo": true})");
  EXPECT_EQ(echoed["choices"][0]["text"], "Hi" + text);
}

TEST_F(LlmServerTest, ChatContentPartsNLogprobsAndStreamUsage) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  const json parts = post_ok(cli, "/v1/chat/completions",
                             R"({"messages": [{"role": "user", "content":
                                   [{"type": "text", "text": "hi"}]}], "max_tokens": 3,
                                 "temperature": 0, "logprobs": true, "top_logprobs": 2})");
  const json plain = post_ok(cli, "/v1/chat/completions",
                             R"({"messages": [{"role": "user", "content": "hi"}],
                                 "max_tokens": 3, "temperature": 0})");
  EXPECT_EQ(parts["choices"][0]["message"]["content"], plain["choices"][0]["message"]["content"]);
  EXPECT_EQ(parts["usage"]["prompt_tokens"], std::string("user: hi\nassistant: ").size());
  const json& content = parts["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u);
  EXPECT_TRUE(content[0]["bytes"].is_array());
  EXPECT_LE(content[0]["top_logprobs"].size(), 2u);
  // Greedy: the chosen token is the most likely one.
  EXPECT_DOUBLE_EQ(content[0]["logprob"].get<double>(),
                   content[0]["top_logprobs"][0]["logprob"].get<double>());

  auto res = cli.Post("/v1/chat/completions",
                      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                          "n": 2, "stream": true, "stream_options": {"include_usage": true}})",
                      kJson);
  ASSERT_TRUE(res);
  const auto events = sse_data(res->body);
  // Per choice: role, 3 tokens, final; then usage and [DONE].
  ASSERT_EQ(events.size(), 12u);
  std::map<int, int> roles, finals;
  for (std::size_t i = 0; i + 2 < events.size(); ++i) {
    const json c = json::parse(events[i])["choices"][0];
    if (c["delta"].contains("role")) roles[c["index"].get<int>()]++;
    if (!c["finish_reason"].is_null()) finals[c["index"].get<int>()]++;
  }
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(finals, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(json::parse(events[10])["usage"]["completion_tokens"], 6);

  // A list of prompts, each with n choices: index = prompt * n + choice.
  const json batch =
      post_ok(cli, "/v1/completions", R"({"prompt": ["ab", "cde"], "n": 2, "max_tokens": 2})");
  ASSERT_EQ(batch["choices"].size(), 4u);
  EXPECT_EQ(batch["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(batch["usage"]["completion_tokens"], 8);
}

TEST_F(LlmServerTest, RefusalsNameTheFieldOverHttp) {
  httplib::Client cli("127.0.0.1", port_);
  const auto param_of = [&](const std::string& path, const std::string& body) {
    auto res = cli.Post(path, body, kJson);
    EXPECT_TRUE(res);
    if (!res) return std::string();
    EXPECT_EQ(res->status, 400) << res->body;
    return json::parse(res->body)["error"]["param"].get<std::string>();
  };
  EXPECT_EQ(param_of("/v1/chat/completions",
                     R"({"messages": [{"role": "user", "content": "x"}], "tools": []})"),
            "tools");
  EXPECT_EQ(param_of("/v1/completions", R"({"prompt": "a", "prompt": "b"})"), "prompt");
  EXPECT_EQ(param_of("/v1/completions", R"({"prompt": "a", "max_tokens": 9223372036854775808})"),
            "max_tokens");
  EXPECT_EQ(param_of("/v1/completions", R"({"prompt": "a", "best_of": 2})"), "best_of");
  EXPECT_EQ(param_of("/v1/completions", R"({"prompt": "a", "max_tokens": 401})"), "max_tokens");
}

TEST_F(LlmServerTest, TokenizeAndDetokenizeAsVllm) {
  httplib::Client cli("127.0.0.1", port_);
  const json t = post_ok(cli, "/tokenize", R"({"model": "tiny", "prompt": "abc"})");
  EXPECT_EQ(t["tokens"], json::array({97, 98, 99}));
  EXPECT_EQ(t["count"], 3);
  EXPECT_EQ(t["max_model_len"], 512);
  EXPECT_TRUE(t["token_strs"].is_null());
  const json s = post_ok(cli, "/tokenize", R"({"prompt": "ab", "return_token_strs": true})");
  EXPECT_EQ(s["token_strs"], json::array({"a", "b"}));
  const json m = post_ok(cli, "/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(m["count"], std::string("user: hi\nassistant: ").size());
  EXPECT_EQ(post_ok(cli, "/detokenize", R"({"tokens": [104, 105]})")["prompt"], "hi");
  auto res = cli.Post("/detokenize", R"({"tokens": [1000000]})", kJson);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "tokens[0]");
}

TEST_F(LlmServerTest, KServeServerModelsReadinessAndVersions) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  auto res = cli.Get("/v2");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["name"], "tessera");
  EXPECT_EQ(json::parse(cli.Get("/v2/models")->body)["models"], json::array({"tiny"}));
  res = cli.Get("/v2/models/tiny/ready");
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body), (json{{"name", "tiny"}, {"ready", true}}));
  EXPECT_EQ(cli.Get("/v2/models/tiny/versions/1/ready")->status, 200);
  res = cli.Get("/v2/models/tiny/versions/1");
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["name"], "tiny");
  EXPECT_EQ(cli.Get("/v2/models/tiny/versions/2")->status, 404);
  EXPECT_EQ(cli.Get("/v2/models/other/ready")->status, 404);
  res = cli.Post("/v2/models/tiny/versions/1/generate",
                 R"({"text_input": "abc", "parameters": {"max_tokens": 2}})", kJson);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(
      cli.Post("/v2/models/tiny/versions/3/generate", R"({"text_input": "a"})", kJson)->status,
      404);
}

TEST_F(LlmServerTest, KServeGenerateAndGenerateStream) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  auto res = cli.Post("/v2/models/tiny/generate",
                      R"({"text_input": "abc", "parameters": {"max_tokens": 6, "temperature": 0}})",
                      kJson);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["model_name"], "tiny");
  const std::string whole = json::parse(res->body)["text_output"];
  res = cli.Post("/v2/models/tiny/generate_stream",
                 R"({"text_input": "abc", "parameters": {"max_tokens": 6, "temperature": 0}})",
                 kJson);
  ASSERT_TRUE(res);
  std::string streamed;
  for (const std::string& e : sse_data(res->body)) streamed += json::parse(e)["text_output"];
  EXPECT_EQ(streamed, whole);
  // An event per token, and one more for a character still incomplete at the end.
  const auto events = sse_data(res->body);
  EXPECT_GE(events.size(), 6u);
  EXPECT_LE(events.size(), 7u);
  EXPECT_EQ(cli.Post("/v2/models/other/generate", R"({"text_input": "a"})", kJson)->status, 404);
  EXPECT_EQ(cli.Get("/v2/models/tiny")->status, 200);
  const std::string metrics = cli.Get("/metrics")->body;
  EXPECT_NE(metrics.find("tessera_llm_ttft_seconds_count{model=\"tiny\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tessera_llm_generated_tokens_total{model=\"tiny\"} 12"),
            std::string::npos);
  EXPECT_NE(metrics.find("tessera_llm_kv_blocks_total{model=\"tiny\"} 256"), std::string::npos);
}

// The server's state under vLLM's metric names and label, for routers that read vLLM.
TEST(LlmServeMetrics, ExportsVllmsSchedulerAndKvCacheGauges) {
  LlmServeMetrics metrics("tiny");
  LlmServeMetrics::Gauges g;
  g.running = 3;
  g.waiting = 2;
  g.kv_used = 64;
  g.kv_total = 256;
  const std::string text = metrics.render(g);
  for (const char* line : {"# TYPE vllm:num_requests_running "
                           "gauge\nvllm:num_requests_running{model_name=\"tiny\"} 3\n",
                           "vllm:num_requests_waiting{model_name=\"tiny\"} 2\n",
                           "vllm:kv_cache_usage_perc{model_name=\"tiny\"} 0.25\n",
                           "vllm:gpu_cache_usage_perc{model_name=\"tiny\"} 0.25\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  g.kv_total = 0;  // no cache: usage 0, not a division by zero
  EXPECT_NE(metrics.render(g).find("vllm:kv_cache_usage_perc{model_name=\"tiny\"} 0\n"),
            std::string::npos);
}

TEST_F(LlmServerTest, HostileRequestsGetClear4xx) {
  httplib::Client cli("127.0.0.1", port_);
  auto expect = [&](const char* path, const std::string& body, int status,
                    const std::string& mention) {
    auto res = cli.Post(path, body, kJson);
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, status) << body << " -> " << res->body;
    EXPECT_NE(res->body.find(mention), std::string::npos) << res->body;
  };
  expect("/v1/completions", "{\"prompt\": \"\xff\xfe\"}", 400, "UTF-8");
  expect("/v1/completions", R"({"prompt": 3})", 400, "\"param\":\"prompt\"");
  expect("/v1/completions", R"({"prompt": "a", "max_tokens": 401})", 400, "max_tokens");
  expect("/v1/completions", R"({"prompt": "a", "max_tokens": 1.5})", 400, "max_tokens");
  // 500 prompt tokens + 100 exceed the model's 512 positions.
  expect("/v1/completions", "{\"prompt\": \"" + std::string(500, 'x') + "\", \"max_tokens\": 100}",
         400, "positions");
  expect("/v1/completions", R"({"prompt": "a", "model": "gpt-9"})", 404, "gpt-9");
  expect("/v1/chat/completions", R"({"messages": "hi"})", 400, "messages");
  expect("/v2/models/tiny/generate", R"({"text_input": {"a": 1}})", 400, "text_input");
  expect("/v2/models/tiny/generate", "not json", 400, "JSON");
  // A badly typed ignore_eos.
  expect("/v1/completions", R"({"prompt": "a", "ignore_eos": "no"})", 400, "ignore_eos");
  expect("/v2/models/tiny/generate", R"({"text_input": "a", "parameters": {"ignore_eos": 0}})", 400,
         "parameters.ignore_eos");
  EXPECT_EQ(cli.Get("/v1/completions")->status, 405);
  EXPECT_EQ(cli.Get("/v1/nothing")->status, 404);
  EXPECT_EQ(server_->in_flight(), 0u);
}

TEST_F(LlmServerTest, AClientLeavingAStreamCancelsItsRequest) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(60, 0);
  std::size_t chunks = 0;
  // 400 tokens take far longer than noticing the closed connection.
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", kJson);
  req.body = R"({"prompt": "Hello", "max_tokens": 400, "stream": true})";
  req.content_receiver = [&](const char*, std::size_t, uint64_t, uint64_t) { return ++chunks < 2; };
  auto res = cli.send(req);
  EXPECT_FALSE(res);  // the client cancelled
  ASSERT_TRUE(wait_for([&] { return server_->in_flight() == 0; }));
  const std::string metrics = httplib::Client("127.0.0.1", port_).Get("/metrics")->body;
  EXPECT_NE(metrics.find("outcome=\"cancelled\"} 1"), std::string::npos) << metrics;
  // The scheduler holds the cancelled request's blocks until its planned last token
  // (steps that do no decoder work for it), then frees them.
  EXPECT_TRUE(wait_for([&] { return server_->stats().kv_used == 0; }));
}

TEST_F(LlmServerTest, LoadgenReplaysAnLlmTraceIntoTheSimulatorsSummary) {
  App app;
  app.name = "llm";
  app.slo = 60.0;
  app.ttft_slo = 30.0;
  app.tpot_slo = 10.0;
  Task task;
  task.name = "llm";
  task.variants.push_back(Variant{"tiny", 1.0, 1.0});
  app.tasks.push_back(task);
  app.finalize();
  std::vector<Arrival> arrivals;
  for (int i = 0; i < 4; ++i) {
    Arrival a;
    a.time = 0.01 * i;
    a.input_tokens = 20 + 10 * static_cast<uint32_t>(i);
    a.output_tokens = 3 + static_cast<uint32_t>(i);
    arrivals.push_back(a);
  }
  arrivals.push_back(arrivals.back());
  arrivals.back().input_tokens = 600;  // 600 + 6 > 512 positions: a 400, failed
  LoadgenOptions o;
  o.port = port_;
  o.connections = 4;
  const LoadgenResult result = run_llm_loadgen(app, arrivals, o);
  const json summary = summarize(result.metrics, app, result.unmeasured);
  EXPECT_EQ(summary["submitted"], 5);
  EXPECT_EQ(summary["failed"], 1);
  ASSERT_TRUE(summary.contains("llm"));
  EXPECT_EQ(summary["llm"]["requests"], 4);
  EXPECT_EQ(summary["llm"]["output_tokens"], 3 + 4 + 5 + 6);
  EXPECT_GT(summary["llm"]["ttft_ms"]["p50"].get<double>(), 0.0);
  EXPECT_EQ(summary["llm"]["ttft_attainment"], 0.8);
  // Only what a client measured has a value: accuracy, GPU time, sub-requests and the
  // server's steps and KV cache are null, each with its reason, and absent from the table.
  for (const char* key :
       {"mean_accuracy", "gpu_seconds", "wasted_gpu_seconds", "invalid_rate", "subrequests"}) {
    EXPECT_TRUE(summary[key].is_null()) << key << ": " << summary[key];
    EXPECT_TRUE(summary["not_measured"].contains(key)) << key;
  }
  for (const char* key : {"steps", "prefill_tokens", "decode_tokens", "preemptions",
                          "kv_utilization", "kv_peak_utilization", "kv_blocks_per_instance"}) {
    EXPECT_TRUE(summary["llm"][key].is_null()) << key;
    EXPECT_TRUE(summary["not_measured"].contains(std::string("llm.") + key)) << key;
  }
  EXPECT_TRUE(summary["tasks"]["llm"]["batches"].is_null());
  EXPECT_EQ(summary["tasks"]["llm"]["failed"], 1);
  const std::string table = format_summary(summary);
  for (const char* row : {"mean accuracy", "sub-request violations", "invalid (wasted) GPU",
                          "GPU time", "LLM steps", "KV cache used", "preemptions", "stage"}) {
    EXPECT_EQ(table.find(std::string("\n  ") + row + " "), std::string::npos) << row << " in\n"
                                                                              << table;
  }
  EXPECT_NE(table.find("\n  TTFT p50/p99 "), std::string::npos) << table;
  EXPECT_NE(table.find("\n  not measured: LLM steps, tokens per step, preemptions, KV cache"),
            std::string::npos)
      << table;
}

TEST(LlmLoadgen, AClosedPortIsReportedWithTheWholeReason) {
  const testing::ClosedPort closed;
  ASSERT_GT(closed.port(), 0);
  const int port = closed.port();
  App app;
  app.name = "llm";
  Task task;
  task.name = "llm";
  task.variants.push_back(Variant{"tiny", 1.0, 1.0});
  app.tasks.push_back(task);
  app.finalize();
  LoadgenOptions o;
  o.port = port;
  try {
    run_llm_loadgen(app, {Arrival{}}, o);
    FAIL() << "no error for a closed port";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("could not connect to 127.0.0.1:" + std::to_string(port)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("Connection refused"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tessera
