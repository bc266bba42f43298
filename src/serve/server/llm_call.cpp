#include "serve/server/llm_call.hpp"

#include <fmt/format.h>

namespace tessera {

LlmCall::LlmCall(Responder respond, std::shared_ptr<const Tokenizer> tokenizer,
                 LlmServeMetrics& metrics, Admission::Ticket ticket, Options options)
    : respond_(std::move(respond)),
      tokenizer_(std::move(tokenizer)),
      metrics_(metrics),
      o_(std::move(options)),
      ticket_(std::move(ticket)) {}

LlmCallbacks LlmCall::add_choice(uint32_t prompt_tokens, std::string echo, bool count_prompt) {
  auto c = std::make_unique<Choice>(o_.stop);
  c->index = static_cast<uint32_t>(choices_.size());
  c->answer.index = c->index;
  c->prompt_tokens = prompt_tokens;
  c->count_prompt = count_prompt;
  c->echo = std::move(echo);
  c->pieces = std::make_unique<TextStream>(*tokenizer_);
  Choice* choice = c.get();
  choices_.push_back(std::move(c));
  LlmCallbacks cb;
  auto self = shared_from_this();
  cb.on_token = [self, choice](const SampledToken& t) { return self->on_token(*choice, t); };
  cb.on_end = [self, choice](const LlmRequestEnd& end) { self->on_end(*choice, end); };
  return cb;
}

bool LlmCall::open_stream() {
  if (sse_) return true;
  HttpResponse head{200, "", "text/event-stream"};
  head.headers.emplace_back("Cache-Control", "no-cache");
  sse_ = respond_.stream(std::move(head));
  return sse_ != nullptr;
}

LlmTokenVerdict LlmCall::on_token(Choice& c, const SampledToken& t) {
  std::lock_guard lock(mutex_);
  if (done_) return LlmTokenVerdict::kGone;
  LlmTokenLogprob lp;
  if (o_.logprobs) {
    lp.token = tokenizer_->decode_token(t.id);
    lp.logprob = t.logprob;
    for (const auto& [id, p] : t.top) lp.top.emplace_back(tokenizer_->decode_token(id), p);
  }
  // A token that ends inside a character carries no text yet; text that may begin a stop
  // string is held back until it is known not to.
  std::string piece = c.stops.push(c.pieces->push(t.id));
  if (!c.started) piece = std::exchange(c.echo, {}) + piece;
  if (o_.logprobs) c.answer.logprobs.push_back(lp);
  c.answer.text += piece;
  const bool hit = c.stops.hit();
  if (o_.stream) {
    if (!open_stream()) return LlmTokenVerdict::kGone;
    if (!c.started && o_.api == LlmApi::kChat) {
      sse_->write(stream_role_event(o_.id, o_.created, o_.model, c.index));
    }
    c.started = true;
    // One event per token (a load generator counts them), with its text so far released.
    if (!sse_->write(stream_event(o_.api, o_.id, o_.created, o_.model, c.index, piece,
                                  o_.logprobs ? &lp : nullptr))) {
      return LlmTokenVerdict::kGone;
    }
  }
  c.started = true;
  return hit ? LlmTokenVerdict::kStop : LlmTokenVerdict::kContinue;
}

void LlmCall::on_end(Choice& c, const LlmRequestEnd& end) {
  std::lock_guard lock(mutex_);
  if (c.ended) return;
  c.ended = true;
  ++ended_;
  if (done_) return;
  const Outcome outcome = end.record.outcome;
  if (outcome != Outcome::kOk && outcome != Outcome::kLate) return fail(end);
  // The text still held back (a character or a possible stop string) ends the choice.
  std::string rest = c.pieces->finish();
  rest = c.stops.push(rest) + c.stops.finish();
  if (!c.started) rest = std::exchange(c.echo, {}) + rest;
  c.answer.text += rest;
  c.answer.stopped = end.stopped;
  usage_.completion_tokens += end.output_tokens;
  if (c.count_prompt) usage_.prompt_tokens += c.prompt_tokens;
  if (o_.stream && open_stream()) {
    if (!c.started && o_.api == LlmApi::kChat) {
      sse_->write(stream_role_event(o_.id, o_.created, o_.model, c.index));
    }
    if (o_.api != LlmApi::kGenerate) {
      sse_->write(
          stream_final_event(o_.api, o_.id, o_.created, o_.model, c.index, end.stopped, rest));
    } else if (!rest.empty()) {
      sse_->write(stream_event(o_.api, o_.id, o_.created, o_.model, c.index, rest));
    }
  }
  c.started = true;
  if (ended_ == choices_.size()) answer();
}

void LlmCall::answer() {
  done_ = true;
  if (o_.stream && sse_) {
    if (o_.api != LlmApi::kGenerate) {
      if (o_.include_usage) {
        sse_->write(stream_usage_event(o_.api, o_.id, o_.created, o_.model, usage_));
      }
      sse_->write(kSseDone);
    }
    sse_->close();
  } else if (o_.api == LlmApi::kGenerate) {
    respond_(HttpResponse{200, generate_answer(o_.model, choices_.front()->answer.text)});
  } else {
    std::vector<LlmChoice> list;
    for (const auto& c : choices_) list.push_back(std::move(c->answer));
    respond_(HttpResponse{
        200, completion_answer(o_.api, o_.id, o_.created, o_.model, list, o_.logprobs, usage_)});
  }
  ticket_.release();  // answered: no longer in flight
}

void LlmCall::fail(const LlmRequestEnd& end) {
  done_ = true;  // the other choices are cancelled at their next token
  std::string message;
  int status = 503;
  if (end.cancelled()) {
    message = "request cancelled: the client went away";
  } else if (end.record.outcome == Outcome::kDropped) {
    message = fmt::format("request dropped: {}", drop_reason_name(end.record.reason));
  } else {
    message = end.error;
    status = end.error == kShuttingDown ? 503 : 500;
  }
  if (sse_) {
    sse_->write(sse_error_event(o_.api, message));
    if (o_.api != LlmApi::kGenerate) sse_->write(kSseDone);
    sse_->close();
  } else {
    metrics_.http_error(status);
    HttpResponse resp{status, o_.api == LlmApi::kGenerate
                                  ? kserve_error(message)
                                  : openai_error(message, "server_error", "")};
    if (status == 503) resp.headers.emplace_back("Retry-After", "1");
    respond_(std::move(resp));
  }
  ticket_.release();
}

}  // namespace tessera
