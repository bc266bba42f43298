#pragma once

// One live LLM request beside the engine's ledger (docs/llm-serve.md#runtime): what the
// client asked for, its tokens, its decoder Sequence and its client's callbacks. The ledger
// (Engine) decides how it ends; this holds what the ledger does not: the payload.
//
// Ownership and threads: shared by the endpoint's side table (loop thread) and the step
// that runs it (its instance's thread); a request is in one step at a time, so `tokens`
// grow and `seq` is used by one thread at a time. The client's callbacks and `ended` are
// guarded by the request's mutex: a token is never handed over after the end. Destroyed
// without an end (the endpoint stopped first), it ends itself as failed.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/driver.hpp"
#include "llm_torch/decoder.hpp"
#include "sampling/sampler.hpp"

namespace tessera {

struct LlmRequest {
  std::vector<int64_t> prompt;  // token ids, at least one
  uint32_t max_tokens = 16;     // tokens generated at most
  // EOS stop, when the request asks for it: the request ends (ok or late, finish reason
  // "stop") as soon as the model emits this id, which is counted but not handed to
  // on_token. < 0: no stop, max_tokens are generated.
  int64_t stop_token = -1;
  // How each token is chosen from the logits (greedy unless the request says otherwise);
  // its stop_token_ids are not used (stop_token is the request's stop).
  SamplingParams sampling = SamplingParams::greedy();
};

// What the client makes of a token handed to it.
enum class LlmTokenVerdict : uint8_t {
  kContinue,  // go on generating
  kStop,      // the request is complete (e.g. a stop string): it ends as stopped
  kGone,      // the client went away: cancel the request
};

// How a request ended: the engine's record, and what the ledger does not hold.
struct LlmRequestEnd {
  RequestRecord record;  // outcome, reason, TTFT, TPOT, preemptions
  uint32_t prompt_tokens = 0;
  uint32_t output_tokens = 0;  // tokens generated (an EOS stop token included)
  bool stopped = false;        // ended at its stop token before max_tokens
  std::string error;           // failed: a decoder error, or the server shutting down
  // The client went away (the record says dropped, DropReason::kCancelled).
  bool cancelled() const {
    return record.outcome == Outcome::kDropped && record.reason == DropReason::kCancelled;
  }
};

struct LlmCallbacks {
  // A token was generated (its id, log-probability and alternatives).
  std::function<LlmTokenVerdict(const SampledToken& token)> on_token;
  // The request ended (exactly once).
  std::function<void(const LlmRequestEnd&)> on_end;
};

// The message of a request that ended because the server stopped.
inline constexpr const char* kShuttingDown = "the server is shutting down";

class LlmLiveRequest {
 public:
  LlmLiveRequest(LlmRequest request, LlmCallbacks callbacks);
  ~LlmLiveRequest();
  LlmLiveRequest(const LlmLiveRequest&) = delete;
  LlmLiveRequest& operator=(const LlmLiveRequest&) = delete;

  uint64_t id = 0;  // the engine's, once admitted
  uint32_t prompt_tokens() const { return static_cast<uint32_t>(request_.prompt.size()); }
  uint32_t max_tokens() const { return request_.max_tokens; }

  // The instance's thread, during a step.
  // The tokens to prefill [from, to) of its prompt and output so far (a recompute after a
  // preemption prefills both), clamped to what it holds.
  std::vector<int64_t> tokens_between(uint32_t from, uint32_t to) const;
  int64_t last_token() const { return tokens_.back(); }
  // A fresh KV cache for the whole request (a new request, or a recompute).
  Decoder::Sequence& fresh_sequence(const Decoder& decoder);
  // A KV cache for the whole request that starts as a copy of the first `tokens` of
  // `source` (a prefix cache hit: the cached prompt blocks it shares).
  Decoder::Sequence& forked_sequence(const Decoder& decoder, const Decoder::Sequence& source,
                                     uint32_t tokens);
  Decoder::Sequence* sequence() { return seq_.get(); }
  // The cache shared, for the prefix cache to keep the KV of the blocks it committed.
  std::shared_ptr<const Decoder::Sequence> shared_sequence() const { return seq_; }
  const std::vector<int64_t>& prompt() const { return request_.prompt; }
  enum class TokenFate : uint8_t { kSent, kStop, kClientGone };
  // The next token from the logits of the request's last position, by its sampler
  // (std::invalid_argument when no logit is finite).
  SampledToken sample(std::span<const float> logits) { return sampler_.sample(logits); }
  // Appends a generated token and hands it to the client (unless it is the stop token, or
  // the request has ended: then it is only kept). kStop also when the client says its
  // answer is complete.
  TokenFate take_token(const SampledToken& token);
  void fail(std::string error);

  // Any thread.
  bool ended() const { return ended_.load(std::memory_order_acquire); }
  // What the ledger's `record` means for this request's client.
  LlmRequestEnd end_of(const RequestRecord& record) const;
  // Tells the client, once; later calls do nothing. False if it had ended already.
  bool finish(const LlmRequestEnd& end);

 private:
  const LlmRequest request_;
  std::vector<int64_t> tokens_;  // the prompt, then every token generated
  std::shared_ptr<Decoder::Sequence> seq_;
  Sampler sampler_;           // the instance's thread, during a step
  mutable std::mutex mutex_;  // guards callbacks_, stopped_, error_ and the growth of tokens_
  LlmCallbacks callbacks_;
  bool stopped_ = false;
  std::string error_;
  std::atomic<bool> ended_{false};
};

}  // namespace tessera
