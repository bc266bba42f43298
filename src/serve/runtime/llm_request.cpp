#include "serve/runtime/llm_request.hpp"

#include <algorithm>

namespace tessera {

LlmLiveRequest::LlmLiveRequest(LlmRequest request, LlmCallbacks callbacks)
    : request_(std::move(request)), sampler_(request_.sampling), callbacks_(std::move(callbacks)) {
  tokens_.reserve(request_.prompt.size() + request_.max_tokens);
  tokens_ = request_.prompt;
}

LlmLiveRequest::~LlmLiveRequest() {
  if (ended()) return;
  fail(kShuttingDown);
  RequestRecord record;
  record.id = id;
  record.outcome = Outcome::kFailed;
  finish(end_of(record));
}

std::vector<int64_t> LlmLiveRequest::tokens_between(uint32_t from, uint32_t to) const {
  const std::size_t last = std::min<std::size_t>(to, tokens_.size());
  const std::size_t first = std::min<std::size_t>(from, last);
  return {tokens_.begin() + static_cast<std::ptrdiff_t>(first),
          tokens_.begin() + static_cast<std::ptrdiff_t>(last)};
}

Decoder::Sequence& LlmLiveRequest::fresh_sequence(const Decoder& decoder) {
  seq_ = decoder.start(static_cast<int64_t>(request_.prompt.size() + request_.max_tokens) + 1);
  return *seq_;
}

Decoder::Sequence& LlmLiveRequest::forked_sequence(const Decoder& decoder,
                                                   const Decoder::Sequence& source,
                                                   uint32_t tokens) {
  seq_ = decoder.fork_prefix(
      source, tokens, static_cast<int64_t>(request_.prompt.size() + request_.max_tokens) + 1);
  return *seq_;
}

LlmLiveRequest::TokenFate LlmLiveRequest::take_token(const SampledToken& token) {
  std::lock_guard lock(mutex_);
  tokens_.push_back(token.id);
  if (ended()) return TokenFate::kSent;  // kept only
  if (request_.stop_token >= 0 && token.id == request_.stop_token) {
    stopped_ = true;
    return TokenFate::kStop;
  }
  if (!callbacks_.on_token) return TokenFate::kSent;
  switch (callbacks_.on_token(token)) {
    case LlmTokenVerdict::kContinue:
      return TokenFate::kSent;
    case LlmTokenVerdict::kStop:
      stopped_ = true;
      return TokenFate::kStop;
    case LlmTokenVerdict::kGone:
      break;
  }
  return TokenFate::kClientGone;
}

void LlmLiveRequest::fail(std::string error) {
  std::lock_guard lock(mutex_);
  if (error_.empty()) error_ = std::move(error);
}

LlmRequestEnd LlmLiveRequest::end_of(const RequestRecord& record) const {
  LlmRequestEnd end;
  end.record = record;
  end.prompt_tokens = static_cast<uint32_t>(request_.prompt.size());
  std::lock_guard lock(mutex_);
  end.output_tokens = static_cast<uint32_t>(tokens_.size() - request_.prompt.size());
  end.stopped = stopped_;
  if (record.outcome == Outcome::kFailed) {
    end.error = error_.empty() ? "request failed: no live instance serves it" : error_;
  }
  return end;
}

bool LlmLiveRequest::finish(const LlmRequestEnd& end) {
  LlmCallbacks callbacks;
  {
    std::lock_guard lock(mutex_);
    if (ended()) return false;
    ended_.store(true, std::memory_order_release);
    callbacks = std::move(callbacks_);
    callbacks_ = {};
    // The client's end is told under the lock: no token is handed over after it.
    if (callbacks.on_end) callbacks.on_end(end);
  }
  return true;
}

}  // namespace tessera
