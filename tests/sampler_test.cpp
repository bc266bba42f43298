// The sampler (src/sampling): greedy, temperature, top_k, top_p, penalties, seeds, logprobs
// and stop tokens on hand-made logits, with frequencies checked against the softmax.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "sampling/sampler.hpp"

namespace tessera {
namespace {

const std::vector<float> kLogits{1.0f, 3.0f, 2.0f, 3.0f, -1.0f};  // ids 1 and 3 tie

std::vector<double> softmax(const std::vector<float>& x, double t) {
  std::vector<double> p;
  double s = 0;
  for (float v : x) s += std::exp(v / t);
  for (float v : x) p.push_back(std::exp(v / t) / s);
  return p;
}

std::map<int64_t, int> counts(SamplingParams p, int n, const std::vector<float>& logits = kLogits) {
  p.seed = 7;
  Sampler s(p);
  std::map<int64_t, int> c;
  for (int i = 0; i < n; ++i) ++c[s.sample(logits).id];
  return c;
}

TEST(Sampler, GreedyTakesTheLargestLogitLowestIdOnTies) {
  Sampler s(SamplingParams::greedy());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(kLogits).id, 1);
  SamplingParams k1;
  k1.top_k = 1;
  EXPECT_EQ(counts(k1, 200).size(), 1u);  // top_k 1: always one token
}

TEST(Sampler, TemperatureDrawsFollowTheSoftmax) {
  for (double t : {0.5, 1.0, 1.5}) {
    SamplingParams p;
    p.temperature = t;
    const int n = 40000;
    const auto c = counts(p, n);
    const auto expected = softmax(kLogits, t);
    for (std::size_t i = 0; i < kLogits.size(); ++i) {
      const double f = static_cast<double>(
                           c.count(static_cast<int64_t>(i)) ? c.at(static_cast<int64_t>(i)) : 0) /
                       n;
      EXPECT_NEAR(f, expected[i], 4 * std::sqrt(expected[i] * (1 - expected[i]) / n) + 1e-3)
          << "temperature " << t << " id " << i;
    }
  }
}

TEST(Sampler, TopKAndTopPKeepOnlyTheMostLikely) {
  SamplingParams k2;
  k2.top_k = 2;  // ids 1 and 3 only
  for (const auto& [id, n] : counts(k2, 2000)) EXPECT_TRUE(id == 1 || id == 3) << id;
  SamplingParams p;
  p.top_p = 0.5;  // 1 and 3 hold ~0.33 each: the first of them reaches 0.5 only with the second
  const auto c = counts(p, 2000);
  EXPECT_EQ(c.size(), 2u);
  SamplingParams tiny;
  tiny.top_p = 0.01;
  EXPECT_EQ(counts(tiny, 500).size(), 1u);
}

TEST(Sampler, PenaltiesFollowWhatWasGenerated) {
  SamplingParams p = SamplingParams::greedy();
  p.presence_penalty = 1.5;  // after id 1 is chosen, id 3 (tied) wins, then 2 (2.0 > 1.5)
  Sampler s(p);
  EXPECT_EQ(s.sample(kLogits).id, 1);
  EXPECT_EQ(s.sample(kLogits).id, 3);
  EXPECT_EQ(s.sample(kLogits).id, 2);
  SamplingParams f = SamplingParams::greedy();
  f.frequency_penalty = 0.6;  // each repeat costs 0.6 more
  Sampler g(f);
  std::vector<int64_t> seen;
  for (int i = 0; i < 4; ++i) seen.push_back(g.sample(kLogits).id);
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 3, 1, 3}));  // 3 - 0.6 = 2.4 > 2 each time, then...
  EXPECT_EQ(g.sample(kLogits).id, 2);                   // 3 - 1.2 = 1.8 < 2
}

TEST(Sampler, SeedsReproduceAndDiffer) {
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 42;
  Sampler a(p), b(p);
  p.seed = 43;
  Sampler c(p);
  std::vector<int64_t> xa, xb, xc;
  for (int i = 0; i < 64; ++i) {
    xa.push_back(a.sample(kLogits).id);
    xb.push_back(b.sample(kLogits).id);
    xc.push_back(c.sample(kLogits).id);
  }
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa, xc);
}

TEST(Sampler, LogprobsAreTheModelsAndStopTokensStop) {
  SamplingParams p = SamplingParams::greedy();
  p.top_logprobs = 3;
  p.stop_token_ids = {3};
  p.presence_penalty = 2.0;
  Sampler s(p);
  const auto sm = softmax(kLogits, 1.0);
  const SampledToken first = s.sample(kLogits);
  EXPECT_EQ(first.id, 1);
  EXPECT_NEAR(first.logprob, std::log(sm[1]), 1e-9);
  ASSERT_EQ(first.top.size(), 3u);
  EXPECT_EQ(first.top[0].first, 1);
  EXPECT_EQ(first.top[1].first, 3);
  EXPECT_EQ(first.top[2].first, 2);
  EXPECT_NEAR(first.top[2].second, std::log(sm[2]), 1e-9);
  EXPECT_FALSE(first.stop);
  const SampledToken second = s.sample(kLogits);  // id 1 penalised: 3, a stop token
  EXPECT_EQ(second.id, 3);
  EXPECT_TRUE(second.stop);
  EXPECT_NEAR(second.logprob, std::log(sm[3]), 1e-9);  // the model's, not the penalised
  p.ignore_eos = true;
  Sampler ignoring(p);
  ignoring.sample(kLogits);
  EXPECT_FALSE(ignoring.sample(kLogits).stop);
}

TEST(Sampler, BadParametersAndLogitsAreErrors) {
  SamplingParams p;
  p.temperature = -1;
  EXPECT_NE(p.problem().find("temperature"), std::string::npos);
  EXPECT_THROW(Sampler{p}, std::invalid_argument);
  p = {};
  p.top_p = 0;
  EXPECT_NE(p.problem().find("top_p"), std::string::npos);
  p = {};
  p.top_logprobs = 21;
  EXPECT_NE(p.problem().find("top_logprobs"), std::string::npos);
  p = {};
  p.frequency_penalty = 2.5;
  EXPECT_NE(p.problem().find("frequency_penalty"), std::string::npos);
  Sampler s(SamplingParams{});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(s.sample(std::vector<float>{nan, -inf}), std::invalid_argument);
  EXPECT_EQ(s.sample(std::vector<float>{nan, 0.0f, -inf}).id, 1);  // only one finite
}

}  // namespace
}  // namespace tessera
