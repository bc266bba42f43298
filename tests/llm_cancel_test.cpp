// LlmInstanceScheduler::cancel (a live client that left): a waiting request leaves the
// line, an admitted one frees its KV blocks when its running step is done, and the
// request it blocked is admitted at once. Engine::stop_request ends such a request once in
// the ledger; LlmInstanceScheduler::finish_with_step ends one at its end-of-sequence token.

#include <gtest/gtest.h>

#include "llm_harness.hpp"

namespace tessera {
namespace {

using testing::llm_arrival;
using testing::LlmHarness;
using testing::SimpleLlmCost;

constexpr double kEps = 1e-9;

LlmSchedulerConfig small_kv() {
  LlmSchedulerConfig c;
  c.policy = LlmPolicy::kContinuous;
  c.kv_blocks = 10;  // 160 tokens: A (100-token prompt) leaves no room for B
  c.block_tokens = 16;
  return c;
}

TEST(LlmCancel, AdmittedRequestFreesItsBlocksAfterTheRunningStep) {
  // Steps: 10 ms + 1 ms per prompt token.
  LlmHarness h(small_kv(), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  Worker& worker = *h.engine().workers()[0];
  bool cancelled = false;
  uint32_t used_at_cancel = 0;
  h.at(0.195, [&] {  // A decodes (its step 0.190..0.200 runs); B waits for blocks
    std::vector<LlmInstanceScheduler::StepEntry> entries;
    h.scheduler().step_entries(entries);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(h.scheduler().waiting(), 1u);
    used_at_cancel = h.scheduler().kv().used();
    cancelled = h.scheduler().cancel(worker, entries[0].request);
    EXPECT_EQ(h.scheduler().kv().used(), used_at_cancel);  // held until the step ends
  });
  h.run({llm_arrival(0.0, 100, 50), llm_arrival(0.001, 100, 2)});
  EXPECT_TRUE(cancelled);
  EXPECT_GE(used_at_cancel, 7u);
  // B: admitted when A's step ends at 0.200, prefill 0.200..0.310, one decode to 0.320.
  ASSERT_EQ(h.records.size(), 1u);  // A is the runtime's to end (as cancelled)
  EXPECT_NEAR(h.records[0].ttft, 0.310 - 0.001, kEps);
  EXPECT_NEAR(h.records[0].finish, 0.320, kEps);
  EXPECT_EQ(h.scheduler().admitted(), 0u);
  EXPECT_EQ(h.scheduler().kv().used(), 0u);
  // A emitted no token after the cancel: steps after 0.200 decode B alone.
  EXPECT_EQ(h.steps.back().decode_tokens, 1u);
}

TEST(LlmCancel, WaitingRequestLeavesTheLineAndUnknownIsRefused) {
  LlmHarness h(small_kv(), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  Worker& worker = *h.engine().workers()[0];
  RequestSlot a = 0;
  bool waiting_cancelled = false;
  bool unknown_cancelled = true;
  h.at(0.050, [&] {  // A prefills (0..0.110); B waits for blocks
    std::vector<LlmInstanceScheduler::StepEntry> entries;
    h.scheduler().step_entries(entries);
    ASSERT_EQ(entries.size(), 1u);
    a = entries[0].request;
    ASSERT_EQ(h.scheduler().waiting(), 1u);
    // B's slot is not A's; try the neighbours of A's and keep the one that was waiting.
    for (RequestSlot s : {a + 1, a == 0 ? a + 2 : a - 1}) {
      if (h.scheduler().waiting() == 1 && h.scheduler().cancel(worker, s)) {
        waiting_cancelled = true;
      }
    }
    EXPECT_EQ(h.scheduler().waiting(), 0u);
    unknown_cancelled = h.scheduler().cancel(worker, a + 1000);
  });
  h.run({llm_arrival(0.0, 100, 3), llm_arrival(0.001, 100, 2)});
  EXPECT_TRUE(waiting_cancelled);
  EXPECT_FALSE(unknown_cancelled);
  ASSERT_EQ(h.records.size(), 1u);  // A ran to its end; B is the runtime's to end
  EXPECT_EQ(h.scheduler().kv().used(), 0u);
}

// The live server's client left: Engine::stop_request ends the request once in the ledger
// (dropped, cancelled, at once), and its instance frees its blocks when the step ends.
TEST(LlmCancel, StopRequestEndsItOnceInTheLedger) {
  LlmHarness h(small_kv(), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  bool stopped = false;
  bool unknown = true;
  h.at(0.195, [&] {  // A decodes (its step 0.190..0.200 runs); B waits for blocks
    stopped = h.engine().stop_request(0, Outcome::kDropped, DropReason::kCancelled);
    unknown = h.engine().stop_request(99, Outcome::kDropped, DropReason::kCancelled);
  });
  h.run({llm_arrival(0.0, 100, 50), llm_arrival(0.001, 100, 2)});
  EXPECT_TRUE(stopped);
  EXPECT_FALSE(unknown);
  ASSERT_EQ(h.records.size(), 2u);
  const RequestRecord* a = h.record(0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->outcome, Outcome::kDropped);
  EXPECT_EQ(a->reason, DropReason::kCancelled);
  EXPECT_NEAR(a->finish, 0.195, kEps);
  const RequestRecord* b = h.record(1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->outcome, Outcome::kOk);
  EXPECT_NEAR(b->ttft, 0.310 - 0.001, kEps);  // admitted when A's step ended at 0.200
  EXPECT_EQ(h.scheduler().kv().used(), 0u);
  EXPECT_EQ(h.engine().requests_in_flight(), 0u);
}

// A live request that emits its end-of-sequence token ends with that step, ok, with the
// tokens it produced (LlmInstanceScheduler::finish_with_step).
TEST(LlmCancel, FinishWithStepEndsTheRequestAtThatToken) {
  LlmHarness h(small_kv(), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  Worker& worker = *h.engine().workers()[0];
  bool finished = false;
  h.at(0.125, [&] {  // prefill 0..0.110 (token 1), decodes to 0.120 (2) and 0.130 (3)
    std::vector<LlmInstanceScheduler::StepEntry> entries;
    h.scheduler().step_entries(entries);
    ASSERT_EQ(entries.size(), 1u);
    finished = h.scheduler().finish_with_step(worker, entries[0].request);
  });
  h.run({llm_arrival(0.0, 100, 50)});
  EXPECT_TRUE(finished);
  ASSERT_EQ(h.records.size(), 1u);
  EXPECT_EQ(h.records[0].outcome, Outcome::kOk);
  EXPECT_EQ(h.records[0].output_tokens, 3u);
  EXPECT_NEAR(h.records[0].finish, 0.130, kEps);
  EXPECT_EQ(h.scheduler().kv().used(), 0u);
  EXPECT_EQ(h.scheduler().admitted(), 0u);
}

}  // namespace
}  // namespace tessera
