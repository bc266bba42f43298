// The M/D/c headroom model (plan/jigsawserve/queueing_headroom.hpp): Erlang C against values
// worked by hand, the cap meets its tail bound and moves the way queueing says it must, and a
// plan input with the model plans every instance kind below its profiled throughput.

#include <gtest/gtest.h>

#include <cmath>

#include "plan/jigsawserve/problem.hpp"
#include "plan/jigsawserve/queueing_headroom.hpp"
#include "plan_fixture.hpp"

namespace tessera::plan {
namespace {

TEST(QueueingHeadroom, ErlangCMatchesWorkedValues) {
  EXPECT_DOUBLE_EQ(erlang_c(1, 0.7), 0.7);                // M/M/1: P(wait) = rho
  EXPECT_NEAR(erlang_c(2, 0.5), 1.0 / 3.0, 1e-12);        // a = 1: (1/2 / 0.5) / (2 + 1)
  EXPECT_NEAR(erlang_c(3, 2.0 / 3.0), 4.0 / 9.0, 1e-12);  // a = 2: 4 / (5 + 4)
  EXPECT_EQ(erlang_c(4, 0.0), 0.0);
  EXPECT_EQ(erlang_c(4, 1.0), 1.0);
}

TEST(QueueingHeadroom, TheCapMeetsItsTailAndTightensWithSlowerBatchesAndShorterBudgets) {
  const double cap = mdc_utilisation_cap(1, 0.02, 0.3, 0.01);
  EXPECT_GT(cap, 0.5);
  EXPECT_LT(cap, 1.0);
  EXPECT_LE(mdc_wait_tail(1, cap, 0.02, 0.3), 0.01 + 1e-9);
  EXPECT_GT(mdc_wait_tail(1, cap + 0.01, 0.02, 0.3), 0.01);
  // A slower batch (longer D) or a shorter wait budget leaves less headroom to use.
  EXPECT_LT(mdc_utilisation_cap(1, 0.1, 0.3, 0.01), cap);
  EXPECT_LT(mdc_utilisation_cap(1, 0.02, 0.1, 0.01), cap);
  // More servers share the queue: a higher utilisation keeps the same tail.
  EXPECT_GT(mdc_utilisation_cap(4, 0.02, 0.3, 0.01), cap);
  // A looser tail allows more.
  EXPECT_GT(mdc_utilisation_cap(1, 0.02, 0.3, 0.1), cap);
  // Nothing meets an impossible bound: the floor.
  EXPECT_DOUBLE_EQ(mdc_utilisation_cap(1, 10.0, 0.001, 1e-9), 0.05);
}

TEST(QueueingHeadroom, APlanInputWithTheModelPlansEveryKindBelowItsProfiledThroughput) {
  PlanInput plain = tessera::testing::tiny_plan_input();
  PlanInput mdc = plain;
  mdc.mdc_wait_s = 0.05;
  mdc.mdc_epsilon = 0.01;
  const SearchSpace space = parse_search_space("A+S+T");
  const auto a = enumerate_candidates(plain, space);
  const auto b = enumerate_candidates(mdc, space);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double expected =
        mdc_utilisation_cap(mdc.catalogue.segments[static_cast<std::size_t>(a[i].segment)].mps,
                            a[i].latency_ms / 1000.0, 0.05, 0.01);
    EXPECT_NEAR(b[i].throughput_rps, a[i].throughput_rps * expected, 1e-9 * a[i].throughput_rps);
    EXPECT_LT(b[i].throughput_rps, a[i].throughput_rps);
  }
}

}  // namespace
}  // namespace tessera::plan
