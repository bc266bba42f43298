#include "llm/llm_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "engine/policies.hpp"

namespace tessera {
namespace {

constexpr uint32_t kNoLimit = std::numeric_limits<uint32_t>::max();

}  // namespace

LlmInstanceScheduler::LlmInstanceScheduler(const LlmSchedulerConfig& config, SchedulerHost& host,
                                           const CostModel& cost)
    : config_(config),
      host_(host),
      cost_(cost),
      kv_(config.kv_blocks, config.block_tokens, config.prefix_caching) {
  config_.max_seqs = std::max<uint32_t>(1, config_.max_seqs);
  config_.token_budget = std::max<uint32_t>(1, config_.token_budget);
  running_.reserve(config_.max_seqs);
}

uint32_t LlmInstanceScheduler::predicted_output(const Item& item) const {
  if (config_.output_known && item.tokens_out > 0) return item.tokens_out;
  if (finished_count_ > 0) {
    return std::max<uint32_t>(
        1, static_cast<uint32_t>(std::lround(finished_outputs_ / finished_count_)));
  }
  return std::max<uint32_t>(1, config_.default_output_tokens);
}

std::shared_ptr<const std::vector<int64_t>> LlmInstanceScheduler::synthetic_prompt_ids(
    const Item& item, uint64_t serial) {
  if (item.shared_prefix_tokens == 0) return nullptr;
  // Ids no real vocabulary holds, distinct between groups and requests: the group's for its
  // shared prefix (negative), the request's own after it.
  const uint32_t prompt = std::max<uint32_t>(1, item.tokens_in);
  const uint32_t shared = std::min(prompt, item.shared_prefix_tokens);
  auto ids = std::make_shared<std::vector<int64_t>>(prompt);
  for (uint32_t i = 0; i < prompt; ++i) {
    (*ids)[i] = i < shared ? -((int64_t{item.prefix_group} << 32) | i) - 1
                           : static_cast<int64_t>((serial << 32) | i);
  }
  return ids;
}

void LlmInstanceScheduler::step_entries(std::vector<StepEntry>& out) const {
  out.clear();
  for (const Seq& seq : running_) {
    if (seq.padding || (seq.step_prefill == 0 && !seq.step_decode)) continue;
    StepEntry e;
    e.request = seq.item.request;
    e.prefill_from = seq.prefilled;
    e.prefill = seq.step_prefill;
    e.decode = seq.step_decode;
    e.emits = seq.step_decode || seq.prefilled + seq.step_prefill == seq.prompt;
    if (seq.step_prefill > 0 && seq.hit_tokens > 0 && seq.prefilled == seq.hit_tokens &&
        seq.cached == seq.hit_tokens) {
      e.fork_from = seq.cached_blocks[seq.hit_tokens / kv_.block_tokens() - 1];
    }
    out.push_back(e);
  }
}

void LlmInstanceScheduler::on_queue_grew(Worker& worker) {
  if (!worker.alive) return;
  take_queue(worker);
  if (!worker.busy) try_step(worker);
}

void LlmInstanceScheduler::on_timer(Worker& worker) {
  worker.timer_at = -1.0;
  if (worker.alive && !worker.busy) try_step(worker);
}

void LlmInstanceScheduler::on_settings_changed(Worker& worker) {
  if (worker.alive && !worker.busy) try_step(worker);
}

bool LlmInstanceScheduler::cancel(Worker& worker, RequestSlot request) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->item.request != request) continue;
    waiting_tokens_ -= it->prompt;
    waiting_.erase(it);
    update_held(worker);
    return true;
  }
  for (std::size_t i = 0; i < running_.size(); ++i) {
    Seq& seq = running_[i];
    if (seq.item.request != request || seq.padding || seq.cancelled) continue;
    if (seq.done) return false;  // its item ends with the running step
    const bool in_step = worker.busy && (seq.step_prefill > 0 || seq.step_decode);
    if (in_step || config_.policy == LlmPolicy::kStatic) {
      // Static: the batch keeps its slot (as a finished request's) until the batch ends.
      seq.cancelled = true;
      if (!in_step) seq.padding = true;
    } else {
      free_blocks(seq);
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    update_held(worker);
    if (!worker.busy) try_step(worker);
    return true;
  }
  return false;
}

bool LlmInstanceScheduler::finish_with_step(Worker& worker, RequestSlot request) {
  if (!worker.busy) return false;
  for (Seq& seq : running_) {
    if (seq.item.request != request || seq.padding || seq.cancelled) continue;
    if (seq.done) return true;  // its last token anyway
    const bool last_prefill =
        seq.step_prefill > 0 && seq.prefilled + seq.step_prefill == seq.prompt;
    if (!seq.step_decode && !last_prefill) return false;
    seq.target = seq.generated + 1;
    seq.done = true;
    worker.running.push_back(seq.item);
    update_held(worker);
    return true;
  }
  return false;
}

void LlmInstanceScheduler::take_queue(Worker& worker) {
  while (!worker.queue->empty()) {
    const Item item = worker.queue->pop();
    const uint32_t prompt = std::max<uint32_t>(1, item.tokens_in);
    const uint32_t target = std::max<uint32_t>(1, item.tokens_out);
    if (kv_.blocks_for(uint64_t{prompt} + target) > kv_.total()) {
      host_.drop_queued(worker, item, DropReason::kKvCapacity);
      continue;
    }
    const DropReason reason = check_on_entry(worker, item, prompt);
    if (reason != DropReason::kNone) {
      host_.drop_queued(worker, item, reason);
      continue;
    }
    Seq seq;
    seq.item = item;
    seq.prompt = prompt;
    seq.target = target;
    if (kv_.prefix_caching()) {
      seq.ids = prompt_ids_ ? prompt_ids_(item) : synthetic_prompt_ids(item, next_serial_++);
    }
    waiting_tokens_ += prompt;
    waiting_.push_back(seq);
  }
  update_held(worker);
}

void LlmInstanceScheduler::try_step(Worker& worker) {
  if (worker.busy || !worker.alive) return;
  switch (config_.policy) {
    case LlmPolicy::kFcfs:
      plan_fcfs(worker);
      break;
    case LlmPolicy::kStatic:
      plan_static(worker);
      break;
    case LlmPolicy::kContinuous:
      plan_continuous(worker);
      break;
    case LlmPolicy::kChunked:
      plan_chunked(worker);
      break;
  }
  update_held(worker);
}

void LlmInstanceScheduler::drop_front(Worker& worker, DropReason reason) {
  const Item item = waiting_.front().item;
  waiting_tokens_ -= waiting_.front().prompt;
  waiting_.pop_front();
  host_.drop_queued(worker, item, reason);
}

LlmInstanceScheduler::Seq* LlmInstanceScheduler::admit_front(Worker& worker, bool reserve_output,
                                                             uint32_t max_prompt) {
  while (!waiting_.empty()) {
    const Seq& front = waiting_.front();
    if (config_.slo_admission && front.first_token < 0 && misses_ttft_now(worker, front)) {
      drop_front(worker, DropReason::kTtftSlo);
      continue;
    }
    if (front.prompt > max_prompt) return nullptr;
    if (config_.slo_admission && slows_decode(worker, front)) return nullptr;
    const uint64_t tokens =
        reserve_output ? uint64_t{front.prompt} + (front.target - front.generated) : front.prompt;
    const uint32_t blocks = kv_.blocks_for(tokens);
    // Prefix cache hits: whole blocks of the prompt, never its last token (it is prefilled
    // for the logits of the first output token).
    hits_.clear();
    if (front.ids != nullptr) {
      const uint32_t known =
          std::min<uint32_t>(front.prompt, static_cast<uint32_t>(front.ids->size()));
      kv_.match(std::span<const int64_t>(front.ids->data(), known),
                (front.prompt - 1) / kv_.block_tokens(), hits_);
    }
    const auto hit_blocks = static_cast<uint32_t>(hits_.size());
    if (!kv_.take_with(hits_, blocks - std::min(blocks, hit_blocks))) return nullptr;
    waiting_tokens_ -= front.prompt;
    running_.push_back(front);
    waiting_.pop_front();
    Seq& seq = running_.back();
    seq.blocks = blocks - std::min(blocks, hit_blocks);
    seq.cached_blocks = hits_;
    seq.commit_stopped = false;
    seq.hit_tokens = hit_blocks * kv_.block_tokens();
    seq.prefilled = seq.hit_tokens;
    seq.cached = seq.hit_tokens;
    if (seq.ids != nullptr) {  // (nothing to share: nothing looked up, nothing counted)
      prefix_queries_ += seq.prompt;
      prefix_hits_ += seq.hit_tokens;
    }
    return &seq;
  }
  return nullptr;
}

bool LlmInstanceScheduler::plan_fcfs(Worker& worker) {
  step_prefill_planned_ = 0;
  if (running_.empty() && admit_front(worker, true, kNoLimit) == nullptr) return false;
  Seq& seq = running_.front();
  if (seq.prefilled < seq.prompt) {
    seq.step_prefill = seq.prompt - seq.prefilled;
  } else {
    seq.step_decode = true;
  }
  start(worker, 0, false);
  return true;
}

bool LlmInstanceScheduler::plan_static(Worker& worker) {
  step_prefill_planned_ = 0;
  if (running_.empty()) {
    while (running_.size() < config_.max_seqs && admit_front(worker, true, kNoLimit) != nullptr) {
    }
    if (running_.empty()) return false;
  }
  bool prefill = false;
  for (Seq& seq : running_) {
    if (seq.prefilled < seq.prompt) {
      seq.step_prefill = seq.prompt - seq.prefilled;
      prefill = true;
    }
  }
  if (!prefill) {
    for (Seq& seq : running_) seq.step_decode = !seq.padding && seq.generated < seq.target;
  }
  start(worker, 0, !prefill);
  return true;
}

bool LlmInstanceScheduler::plan_continuous(Worker& worker) {
  // Prefill first (vLLM's default before chunking): whole prompts within the token budget,
  // at least one; the requests already decoding wait for this step.
  uint32_t budget = config_.token_budget;
  uint32_t admitted = 0;
  while (running_.size() < config_.max_seqs) {
    step_prefill_planned_ = config_.token_budget - budget;
    Seq* seq = admit_front(worker, false, admitted == 0 ? kNoLimit : budget);
    if (seq == nullptr) break;
    seq->step_prefill = seq->prompt - seq->prefilled;
    budget -= std::min(budget, seq->step_prefill);
    ++admitted;
  }
  if (admitted > 0) {
    start(worker, 0, false);
    return true;
  }
  if (running_.empty()) return false;
  const uint32_t preempted = grow_for_decode();
  for (Seq& seq : running_) seq.step_decode = true;
  start(worker, preempted, false);
  return true;
}

bool LlmInstanceScheduler::plan_chunked(Worker& worker) {
  const uint32_t preempted = grow_for_decode();
  int64_t budget = config_.token_budget;
  bool any = false;
  for (Seq& seq : running_) {
    if (seq.prefilled == seq.prompt) {
      seq.step_decode = true;
      --budget;
      any = true;
    }
  }
  for (Seq& seq : running_) {
    if (budget <= 0) break;
    if (seq.prefilled < seq.prompt) {
      seq.step_prefill =
          static_cast<uint32_t>(std::min<int64_t>(seq.prompt - seq.prefilled, budget));
      budget -= seq.step_prefill;
      any = true;
    }
  }
  while (budget > 0 && running_.size() < config_.max_seqs) {
    step_budget_left_ = static_cast<uint32_t>(budget);
    Seq* seq = admit_front(worker, false, kNoLimit);
    if (seq == nullptr) break;
    seq->step_prefill =
        static_cast<uint32_t>(std::min<int64_t>(seq->prompt - seq->prefilled, budget));
    budget -= seq->step_prefill;
    any = true;
  }
  if (!any) return false;
  start(worker, preempted, false);
  return true;
}

uint32_t LlmInstanceScheduler::grow_for_decode() {
  uint32_t preempted = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].prefilled < running_[i].prompt) continue;  // still prefilling
    const uint32_t need = kv_.blocks_for(uint64_t{running_[i].cached} + 1);
    while (i < running_.size() && need > held_blocks(running_[i])) {
      if (kv_.take(need - held_blocks(running_[i]))) {
        running_[i].blocks = need - static_cast<uint32_t>(running_[i].cached_blocks.size());
        break;
      }
      preempt_newest();  // possibly request i itself, the newest
      ++preempted;
    }
  }
  return preempted;
}

void LlmInstanceScheduler::preempt_newest() {
  Seq seq = running_.back();
  running_.pop_back();
  free_blocks(seq);
  // Recompute: its prompt and the tokens it produced are prefilled again on readmission
  // (its blocks still cached are hits then).
  seq.prompt = std::max<uint32_t>(1, seq.item.tokens_in) + seq.generated;
  seq.prefilled = 0;
  seq.cached = 0;
  seq.step_prefill = 0;
  seq.step_decode = false;
  ++seq.preemptions;
  ++preemptions_;
  waiting_tokens_ += seq.prompt;
  waiting_.push_front(seq);
}

void LlmInstanceScheduler::start(Worker& worker, uint32_t preempted, bool padded) {
  StepContents contents;
  contents.variant_slot = 0;
  contents.batch = 0;
  LlmStepStats stats;
  parts_.clear();
  for (Seq& seq : running_) {
    const bool in_step = seq.step_prefill > 0 || seq.step_decode;
    if (!in_step && !padded) continue;
    if (in_step) {
      StepPart part;
      part.prefill_from = seq.prefilled;
      part.prefill = seq.step_prefill;
      part.decode = seq.step_decode;
      part.context = uint64_t{seq.cached} + seq.step_prefill + (seq.step_decode ? 1 : 0);
      parts_.push_back(part);
    }
    ++contents.batch;
    contents.tokens_in += seq.step_prefill;
    contents.tokens_out += seq.step_decode ? 1 : 0;
    contents.context_tokens += uint64_t{seq.cached} + seq.step_prefill + (seq.step_decode ? 1 : 0);
    const bool last_prefill =
        seq.step_prefill > 0 && seq.prefilled + seq.step_prefill == seq.prompt;
    if ((seq.step_decode || last_prefill) && seq.generated + 1 == seq.target) {
      seq.done = true;
      worker.running.push_back(seq.item);
    }
  }
  stats.kv_used_blocks = kv_.used();
  stats.prefix_queries = prefix_queries_ - reported_queries_;
  stats.prefix_hits = prefix_hits_ - reported_hits_;
  reported_queries_ = prefix_queries_;
  reported_hits_ = prefix_hits_;
  stats.kv_total_blocks = kv_.total();
  stats.prefill_tokens = static_cast<uint32_t>(contents.tokens_in);
  stats.decode_tokens = static_cast<uint32_t>(contents.tokens_out);
  stats.preemptions = preempted;
  contents.parts = parts_;
  worker.running_variant = 0;
  host_.start_step(worker, contents);
  stats.duration = worker.running_duration;
  host_.report_llm_step(worker, stats);
}

void LlmInstanceScheduler::emit_token(Seq& seq, Time now) {
  ++seq.generated;
  if (seq.first_token < 0) seq.first_token = now;
  seq.last_token = now;
}

void LlmInstanceScheduler::finish(const Seq& seq) {
  TokenTimes times;
  times.ttft = seq.first_token - seq.item.origin;
  times.tokens = seq.generated;
  times.tpot = seq.generated > 1 ? (seq.last_token - seq.first_token) / (seq.generated - 1.0) : 0.0;
  times.preemptions = seq.preemptions;
  host_.record_tokens(seq.item, times);
  finished_outputs_ += seq.generated;
  finished_count_ += 1.0;
}

void LlmInstanceScheduler::on_step_done(Worker& worker) {
  if (!worker.alive) return;
  const Time now = host_.now();
  for (Seq& seq : running_) {
    if (seq.cancelled) {  // its client left during the step: nothing to emit
      seq.step_prefill = 0;
      seq.step_decode = false;
      continue;
    }
    if (seq.step_prefill > 0) {
      seq.prefilled += seq.step_prefill;
      seq.cached += seq.step_prefill;
      seq.step_prefill = 0;
      commit_prefilled(seq);
      if (seq.prefilled == seq.prompt) emit_token(seq, now);
    }
    if (seq.step_decode) {
      seq.cached += 1;
      seq.step_decode = false;
      emit_token(seq, now);
    }
    if (seq.done) finish(seq);  // before the engine finishes its item
  }
  if (config_.policy == LlmPolicy::kStatic) {
    bool all_ended = true;
    for (Seq& seq : running_) {
      if (seq.done || seq.cancelled) {
        seq.done = false;
        seq.padding = true;
      }
      all_ended = all_ended && seq.padding;
    }
    if (all_ended) {
      for (Seq& seq : running_) free_blocks(seq);
      running_.clear();
    }
  } else {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < running_.size(); ++i) {
      if (running_[i].done || running_[i].cancelled) {
        free_blocks(running_[i]);
        continue;
      }
      if (kept != i) running_[kept] = running_[i];
      ++kept;
    }
    running_.resize(kept);
  }
  take_queue(worker);
  try_step(worker);
}

void LlmInstanceScheduler::release(Worker& worker, std::vector<Item>& out) {
  for (const Seq& seq : waiting_) out.push_back(seq.item);
  waiting_.clear();
  waiting_tokens_ = 0;
  for (Seq& seq : running_) {
    free_blocks(seq);
    if (seq.padding || seq.cancelled) continue;
    if (seq.done) {
      // Its item ends with the running step, which still finishes: report its tokens now,
      // at the step's expected end.
      if (seq.step_prefill > 0 || seq.step_decode) emit_token(seq, worker.running_expected_end);
      finish(seq);
      continue;
    }
    out.push_back(seq.item);
  }
  running_.clear();
  worker.held = 0;
}

void LlmInstanceScheduler::free_blocks(Seq& seq) {
  kv_.give_back(seq.blocks);
  seq.blocks = 0;
  // Last block first: the blocks deepest in a prompt are evicted before its first ones.
  std::reverse(seq.cached_blocks.begin(), seq.cached_blocks.end());
  kv_.release(seq.cached_blocks);
  seq.cached_blocks.clear();
}

void LlmInstanceScheduler::commit_prefilled(Seq& seq) {
  if (seq.ids == nullptr || seq.commit_stopped) return;
  const uint32_t b = kv_.block_tokens();
  const uint64_t known = std::min<uint64_t>(seq.ids->size(), seq.prefilled);
  const auto whole = static_cast<std::size_t>(known / b);
  while (seq.cached_blocks.size() < whole && seq.blocks > 0) {
    const std::size_t i = seq.cached_blocks.size();
    const uint64_t parent = i == 0 ? 0 : seq.cached_blocks.back();
    const uint64_t serial =
        kv_.commit(std::span<const int64_t>(seq.ids->data() + i * b, b), parent);
    if (serial == 0) {
      seq.commit_stopped = true;
      return;
    }
    --seq.blocks;
    seq.cached_blocks.push_back(serial);
    if (on_commit_) on_commit_(seq.item.request, serial);
  }
}

uint64_t LlmInstanceScheduler::context_tokens() const {
  uint64_t n = 0;
  for (const Seq& seq : running_) n += seq.cached;
  return n;
}

uint32_t LlmInstanceScheduler::decoding() const {
  uint32_t n = 0;
  for (const Seq& seq : running_) n += seq.prefilled == seq.prompt && !seq.padding ? 1 : 0;
  return n;
}

void LlmInstanceScheduler::update_held(Worker& worker) const {
  std::size_t active = 0;
  for (const Seq& seq : running_) active += seq.done || seq.padding || seq.cancelled ? 0 : 1;
  worker.held = waiting_.size() + active;
}

// tessera's SLO-aware admission. On entry: the waiting prompts ahead and this one are
// prefilled at the token budget per iteration (chunked: what the decoders leave of it),
// each iteration timed by the cost model; TTFT = time waited so far + the rest of the
// running step + those iterations. Completion = TTFT + (output - 1) decode iterations
// with this request added. KV waits are not predicted (the admission check catches them).
DropReason LlmInstanceScheduler::check_on_entry(const Worker& worker, const Item& item,
                                                uint32_t prompt) const {
  if (!config_.slo_admission) return DropReason::kNone;
  const Time now = host_.now();
  const Time start = worker.busy ? std::max(now, worker.running_expected_end) : now;
  const uint32_t decoders = decoding();
  const uint64_t context = context_tokens();
  const bool chunked = config_.policy == LlmPolicy::kChunked;
  const uint64_t per_iteration =
      chunked ? std::max<int64_t>(1, int64_t{config_.token_budget} - decoders)
              : config_.token_budget;
  const uint64_t tokens = waiting_tokens_ + prompt;
  const uint64_t iterations = (tokens + per_iteration - 1) / per_iteration;
  StepContents prefill;
  prefill.batch = 1;
  prefill.tokens_in = std::min(tokens, per_iteration);
  prefill.context_tokens = prefill.tokens_in + (chunked ? context : 0);
  prefill.tokens_out = chunked ? decoders : 0;
  const Time ttft =
      (start - item.origin) + static_cast<double>(iterations) * cost_.step_time(worker, prefill);
  if (config_.ttft_slo > 0 && ttft > config_.ttft_slo) return DropReason::kTtftSlo;
  const uint32_t output = predicted_output(item);
  StepContents decode;
  decode.batch = static_cast<int>(decoders) + 1;
  decode.tokens_out = decoders + 1;
  decode.context_tokens = context + prompt + output / 2;
  const Time finish = item.origin + ttft + (output - 1.0) * cost_.step_time(worker, decode);
  if (finish > item.deadline) return DropReason::kPredictedLate;
  return DropReason::kNone;
}

bool LlmInstanceScheduler::misses_ttft_now(const Worker& worker, const Seq& seq) const {
  if (config_.ttft_slo <= 0) return false;
  const uint32_t remaining = seq.prompt - seq.prefilled;
  StepContents step;
  Time prefill_time = 0.0;
  if (config_.policy == LlmPolicy::kChunked) {
    // Its first chunk in what is left of this iteration's budget, the rest in later
    // iterations that also decode every running request.
    const uint32_t decoders = decoding();
    const uint64_t per_iteration =
        std::max<int64_t>(1, int64_t{config_.token_budget} - int64_t{decoders});
    const uint64_t first = std::min<uint64_t>(remaining, step_budget_left_);
    const uint64_t iterations = 1 + (remaining - first + per_iteration - 1) / per_iteration;
    step.batch = static_cast<int>(decoders) + 1;
    step.tokens_in = std::min<uint64_t>(remaining, per_iteration);
    step.tokens_out = decoders;
    step.context_tokens = context_tokens() + seq.prompt;
    prefill_time = static_cast<double>(iterations) * cost_.step_time(worker, step);
  } else {
    // One prefill step, with the prompts already planned into it.
    step.batch = 1;
    step.tokens_in = step_prefill_planned_ + remaining;
    step.context_tokens = step_prefill_planned_ + seq.prompt;
    prefill_time = cost_.step_time(worker, step);
  }
  return host_.now() - seq.item.origin + prefill_time > config_.ttft_slo;
}

bool LlmInstanceScheduler::slows_decode(const Worker& worker, const Seq& seq) const {
  if (config_.tpot_slo <= 0) return false;
  // Every admitted request decodes soon, those still prefilling over their whole prompt.
  uint32_t decoders = 0;
  uint64_t context = 0;
  for (const Seq& s : running_) {
    if (s.padding) continue;
    ++decoders;
    context += std::max(s.cached, s.prompt);
  }
  if (decoders == 0) return false;
  StepContents decode;
  decode.batch = static_cast<int>(decoders) + 1;
  decode.tokens_out = decoders + 1;
  decode.context_tokens = context + seq.prompt;
  // The new request's prefill stalls the running decoders once; spread over as many
  // tokens as its own output.
  StepContents prefill;
  prefill.batch = 1;
  prefill.tokens_in = seq.prompt - seq.prefilled;
  prefill.context_tokens = seq.prompt;
  const Time stall =
      cost_.step_time(worker, prefill) / static_cast<double>(predicted_output(seq.item));
  return cost_.step_time(worker, decode) + stall > config_.tpot_slo;
}

LlmInstanceScheduler::AwaitingFirst LlmInstanceScheduler::awaiting_first_token() const {
  AwaitingFirst a;
  const auto count = [&a](const Seq& seq) {
    if (seq.first_token >= 0 || seq.done) return;
    ++a.requests;
    a.prompt_tokens += seq.item.tokens_in;
  };
  for (const Seq& seq : waiting_) count(seq);
  for (const Seq& seq : running_) count(seq);
  return a;
}

}  // namespace tessera
