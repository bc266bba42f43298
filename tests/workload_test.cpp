#include <gtest/gtest.h>

#include "spec_error.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "workload/azure_functions.hpp"
#include "workload/azure_llm.hpp"
#include "workload/civil_time.hpp"
#include "workload/generic_csv.hpp"
#include "workload/merged_source.hpp"
#include "workload/minute_counts_source.hpp"
#include "workload/onoff_source.hpp"
#include "workload/ramp_source.hpp"
#include "workload/rate_scale.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/stream_summary.hpp"
#include "workload/trace_source.hpp"
#include "workload/transforms.hpp"
#include "workload/workload_spec.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

const std::string kRepo = TESSERA_SOURCE_DIR;
const fs::path kLlmTrace = fs::path(kRepo) / "data/traces/azure_llm_code_2023.csv";
const fs::path kFunctionsSample = fs::path(kRepo) / "data/traces/functions_sample.csv";
// A stand-in name for a YAML file in examples/, so that relative paths resolve from there.
const std::string kYamlName = kRepo + "/examples/workload.yaml";

// A file in a fresh temporary folder, removed with the fixture.
class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tessera_workload_" + std::string(info->test_suite_name()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  fs::path dir_;
};

std::vector<Arrival> drain(ArrivalSource& source, std::size_t cap = 10'000'000) {
  std::vector<Arrival> out;
  Arrival a;
  while (out.size() < cap && source.next(a)) out.push_back(a);
  return out;
}

bool sorted(const std::vector<Arrival>& v) {
  return std::is_sorted(v.begin(), v.end(),
                        [](const Arrival& a, const Arrival& b) { return a.time < b.time; });
}

using testing::spec_error;

Workload workload_from(const std::string& yaml, uint64_t seed = 7) {
  SpecNode root = SpecNode::load_string(yaml, kYamlName);
  return build_workload(root.at("workload"), seed);
}

// Squared coefficient of variation of the gaps between consecutive arrivals.
double gap_cv2(const std::vector<Arrival>& v) {
  double sum = 0, sum_sq = 0;
  const double n = static_cast<double>(v.size() - 1);
  for (std::size_t i = 1; i < v.size(); ++i) {
    const double gap = v[i].time - v[i - 1].time;
    sum += gap;
    sum_sq += gap * gap;
  }
  const double mean = sum / n;
  return (sum_sq / n - mean * mean) / (mean * mean);
}

// ---------------------------------------------------------------------------------------
// Calendar arithmetic.

TEST(CivilTime, DaysFromCivil) {
  EXPECT_EQ(days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(days_from_civil(1969, 12, 31), -1);
  EXPECT_EQ(days_from_civil(2000, 3, 1), 11017);
  EXPECT_EQ(days_from_civil(2023, 11, 16), 19677);
  EXPECT_EQ(days_from_civil(2024, 3, 1) - days_from_civil(2024, 2, 28), 2);  // leap year
  EXPECT_EQ(days_from_civil(2023, 3, 1) - days_from_civil(2023, 2, 28), 1);
  EXPECT_EQ(days_from_civil(2100, 3, 1) - days_from_civil(2100, 2, 28), 1);  // not leap
  EXPECT_EQ(days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 28), 2);  // leap
}

TEST(CivilTime, ParsesFractionalSecondsAndRollovers) {
  auto a = parse_civil_timestamp("2023-11-16 18:17:03.9799600");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seconds, 19677LL * 86400 + 18 * 3600 + 17 * 60 + 3);
  EXPECT_NEAR(a->fraction, 0.97996, 1e-12);

  auto before_midnight = parse_civil_timestamp("2023-12-31 23:59:59.5");
  auto after_midnight = parse_civil_timestamp("2024-01-01T00:00:00.25");
  ASSERT_TRUE(before_midnight && after_midnight);
  EXPECT_NEAR(seconds_between(*before_midnight, *after_midnight), 0.75, 1e-12);

  auto leap_eve = parse_civil_timestamp("2024-02-28 23:59:59");
  auto march = parse_civil_timestamp("2024-03-01 00:00:00");
  ASSERT_TRUE(leap_eve && march);
  EXPECT_DOUBLE_EQ(seconds_between(*leap_eve, *march), 86401.0);

  auto utc = parse_civil_timestamp("2024-05-10 00:00:00Z");
  auto plus_two = parse_civil_timestamp("2024-05-10 02:00:00.000+02:00");
  ASSERT_TRUE(utc && plus_two);
  EXPECT_DOUBLE_EQ(seconds_between(*utc, *plus_two), 0.0);
}

TEST(CivilTime, RejectsMalformedTimestamps) {
  for (const char* bad : {"", "2023-11-16", "2023-11-16 18:17", "2023-02-29 00:00:00",
                          "2023-13-01 00:00:00", "2023-11-16 24:00:00", "2023-11-16 18:17:03.",
                          "2023-11-16 18:17:03x", "23-11-16 18:17:03", "2023/11/16 18:17:03"}) {
    EXPECT_FALSE(parse_civil_timestamp(bad)) << bad;
  }
}

// ---------------------------------------------------------------------------------------
// Generic CSV.

using GenericCsv = TempFiles;

TEST_F(GenericCsv, ReadsRequiredOptionalAndExtraColumns) {
  auto path = write("t.csv",
                    "note,arrival_s,output_tokens,input_tokens,slo_ms\r\n"
                    "a,0.5,10,100,250\r\n"
                    "\"b, quoted\",0.5,,7,\n"
                    "\n"
                    "c, 2.25 ,3,0,\n");
  auto v = read_generic_csv(path);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_DOUBLE_EQ(v[0].time, 0.5);
  EXPECT_EQ(v[0].input_tokens, 100u);
  EXPECT_EQ(v[0].output_tokens, 10u);
  EXPECT_DOUBLE_EQ(v[0].slo_s, 0.25);
  EXPECT_EQ(v[1].input_tokens, 7u);
  EXPECT_EQ(v[1].output_tokens, 0u);
  EXPECT_DOUBLE_EQ(v[1].slo_s, 0.0);
  EXPECT_DOUBLE_EQ(v[2].time, 2.25);
  EXPECT_EQ(v[2].output_tokens, 3u);
}

TEST_F(GenericCsv, OnlyArrivalColumn) {
  auto v = read_generic_csv(write("t.csv", "arrival_s\n0\n1e-3\n1.5\n"));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_DOUBLE_EQ(v[1].time, 0.001);
  EXPECT_EQ(v[2].input_tokens, 0u);
}

TEST_F(GenericCsv, ErrorsNameFileLineAndColumn) {
  auto unsorted = write("unsorted.csv", "arrival_s,input_tokens\n1,5\n2,5\n1.5,5\n");
  auto e = spec_error([&] { read_generic_csv(unsorted); });
  EXPECT_EQ(e.file(), unsorted.string());
  EXPECT_EQ(e.field(), "line 4, column arrival_s");
  EXPECT_NE(e.problem().find("non-decreasing"), std::string::npos);

  auto bad_tokens = write("tokens.csv", "arrival_s,input_tokens\n1,5\n2,-3\n");
  e = spec_error([&] { read_generic_csv(bad_tokens); });
  EXPECT_EQ(e.field(), "line 3, column input_tokens");
  EXPECT_NE(std::string(e.what()).find("tokens.csv"), std::string::npos);

  e = spec_error([&] { read_generic_csv(write("num.csv", "arrival_s\n1\nsoon\n")); });
  EXPECT_EQ(e.field(), "line 3, column arrival_s");

  e = spec_error([&] { read_generic_csv(write("neg.csv", "arrival_s\n-1\n")); });
  EXPECT_EQ(e.field(), "line 2, column arrival_s");

  e = spec_error([&] { read_generic_csv(write("slo.csv", "arrival_s,slo_ms\n1,0\n")); });
  EXPECT_EQ(e.field(), "line 2, column slo_ms");

  e = spec_error([&] { read_generic_csv(write("width.csv", "arrival_s,x\n1,2\n3\n")); });
  EXPECT_EQ(e.field(), "line 3");

  e = spec_error([&] { read_generic_csv(write("hdr.csv", "time,input_tokens\n1,2\n")); });
  EXPECT_EQ(e.field(), "line 1");
  EXPECT_NE(e.problem().find("arrival_s"), std::string::npos);

  e = spec_error([&] { read_generic_csv(write("empty.csv", "")); });
  EXPECT_NE(e.problem().find("header"), std::string::npos);

  e = spec_error([&] { read_generic_csv(dir_ / "missing.csv"); });
  EXPECT_NE(e.problem().find("file not found"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Azure LLM 2023.

using AzureLlm = TempFiles;

TEST_F(AzureLlm, TimesAreRelativeToTheFirstRowAcrossMidnight) {
  auto path = write("llm.csv",
                    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-12-31 23:59:58.5000000,100,7\n"
                    "2023-12-31 23:59:59.9999999,200,8\n"
                    "2024-01-01 00:00:01.2500000,300,9\n");
  auto v = read_azure_llm_csv(path);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_DOUBLE_EQ(v[0].time, 0.0);
  EXPECT_NEAR(v[1].time, 1.4999999, 1e-9);
  EXPECT_NEAR(v[2].time, 2.75, 1e-9);
  EXPECT_EQ(v[2].input_tokens, 300u);
  EXPECT_EQ(v[2].output_tokens, 9u);
}

TEST_F(AzureLlm, ErrorsNameFileLineAndColumn) {
  auto path = write("llm.csv",
                    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:17:03.9799600,4808,10\n"
                    "2023-11-16 18:17:0x.0319600,3180,8\n");
  auto e = spec_error([&] { read_azure_llm_csv(path); });
  EXPECT_EQ(e.file(), path.string());
  EXPECT_EQ(e.field(), "line 3, column TIMESTAMP");

  e = spec_error([&] {
    read_azure_llm_csv(write("tok.csv",
                             "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                             "2023-11-16 18:17:03,4808,many\n"));
  });
  EXPECT_EQ(e.field(), "line 2, column GeneratedTokens");

  e = spec_error([&] {
    read_azure_llm_csv(write("order.csv",
                             "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                             "2023-11-16 18:17:03,1,1\n"
                             "2023-11-16 18:17:02,1,1\n"));
  });
  EXPECT_EQ(e.field(), "line 3, column TIMESTAMP");

  e = spec_error([&] { read_azure_llm_csv(write("hdr.csv", "TIMESTAMP,Context\n")); });
  EXPECT_EQ(e.field(), "line 1");
  EXPECT_NE(e.problem().find("ContextTokens"), std::string::npos);
}

TEST(AzureLlmBundled, ReadsTheWholeTrace) {
  auto v = read_azure_llm_csv(kLlmTrace);
  ASSERT_EQ(v.size(), 8819u);
  EXPECT_TRUE(sorted(v));
  EXPECT_DOUBLE_EQ(v.front().time, 0.0);
  EXPECT_EQ(v.front().input_tokens, 4808u);
  EXPECT_EQ(v.front().output_tokens, 10u);
  // 2023-11-16 19:14:19.9280160 - 18:17:03.9799600
  EXPECT_NEAR(v.back().time, 3435.948056, 1e-6);
  EXPECT_EQ(v.back().input_tokens, 549u);
  EXPECT_EQ(v.back().output_tokens, 173u);
}

// ---------------------------------------------------------------------------------------
// Azure Functions per-minute counts.

using AzureFunctions = TempFiles;

const char* kSmallFunctions =
    "HashOwner,HashApp,HashFunction,Trigger,1,2,3\n"
    "o1,a1,f1,http,3,0,5\n"
    "o1,a1,f2,timer,1,1,1\n"
    "o2,a2,f3,queue,0,10,0\n";

TEST_F(AzureFunctions, SelectsAndSumsRows) {
  auto path = write("f.csv", kSmallFunctions);
  auto all = read_functions_counts(path, std::nullopt);
  EXPECT_EQ(all.rows_in_file, 3u);
  EXPECT_EQ(all.per_minute, (std::vector<uint64_t>{4, 11, 6}));
  auto some = read_functions_counts(path, std::vector<std::size_t>{2, 0});
  EXPECT_EQ(some.per_minute, (std::vector<uint64_t>{3, 10, 5}));
  auto past_end = read_functions_counts(path, std::vector<std::size_t>{7});
  EXPECT_EQ(past_end.per_minute, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(past_end.rows_in_file, 3u);
}

TEST_F(AzureFunctions, ErrorsNameFileLineAndColumn) {
  auto e = spec_error([&] {
    read_functions_counts(write("hdr.csv", "HashOwner,HashApp,Function,Trigger,1\n"), std::nullopt);
  });
  EXPECT_EQ(e.field(), "line 1, column 3");
  e = spec_error([&] {
    read_functions_counts(write("min.csv", "HashOwner,HashApp,HashFunction,Trigger,1,3\n"),
                          std::nullopt);
  });
  EXPECT_EQ(e.field(), "line 1, column 6");
  auto bad = write("bad.csv", "HashOwner,HashApp,HashFunction,Trigger,1,2\no,a,f,http,1,x\n");
  e = spec_error([&] { read_functions_counts(bad, std::nullopt); });
  EXPECT_EQ(e.file(), bad.string());
  EXPECT_EQ(e.field(), "line 2, column 2");
}

std::vector<uint64_t> counts_per_minute(const std::vector<Arrival>& v, double seconds_per_minute,
                                        std::size_t minutes) {
  std::vector<uint64_t> out(minutes, 0);
  std::size_t m = 0;
  for (const auto& a : v) {
    while (m < minutes && !(a.time < static_cast<double>(m + 1) * seconds_per_minute)) ++m;
    if (m < minutes) ++out[m];
  }
  return out;
}

TEST(AzureFunctionsBundled, CompressionPreservesPerMinuteCounts) {
  auto counts = read_functions_counts(kFunctionsSample, std::nullopt);
  ASSERT_EQ(counts.rows_in_file, 3u);
  ASSERT_EQ(counts.per_minute.size(), 1440u);
  const uint64_t total =
      std::accumulate(counts.per_minute.begin(), counts.per_minute.end(), uint64_t{0});
  EXPECT_EQ(total, 28625u + 288u + 3152u);
  for (auto within : {WithinMinute::kUniform, WithinMinute::kEven}) {
    MinuteCountsSource source(counts.per_minute, 6.0, within, 42, "sample");
    auto v = drain(source);
    ASSERT_EQ(v.size(), total);
    EXPECT_TRUE(sorted(v));
    EXPECT_GE(v.front().time, 0.0);
    EXPECT_LT(v.back().time, 1440 * 6.0);
    EXPECT_EQ(counts_per_minute(v, 6.0, 1440), counts.per_minute);
  }
}

TEST(MinuteCounts, EvenSpacingAndUniformSpread) {
  MinuteCountsSource even({4, 0, 2}, 10.0, WithinMinute::kEven, 1, "x");
  auto v = drain(even);
  std::vector<double> times;
  for (const auto& a : v) times.push_back(a.time);
  EXPECT_EQ(times, (std::vector<double>{1.25, 3.75, 6.25, 8.75, 22.5, 27.5}));

  // Uniform placement: positions within a minute look uniform (mean 1/2, variance 1/12).
  MinuteCountsSource uniform({200000}, 1.0, WithinMinute::kUniform, 9, "x");
  auto u = drain(uniform);
  ASSERT_EQ(u.size(), 200000u);
  EXPECT_TRUE(sorted(u));
  double sum = 0, sum_sq = 0;
  for (const auto& a : u) {
    sum += a.time;
    sum_sq += a.time * a.time;
  }
  const double mean = sum / 200000.0;
  EXPECT_NEAR(mean, 0.5, 0.005);
  EXPECT_NEAR(sum_sq / 200000.0 - mean * mean, 1.0 / 12, 0.002);
}

// ---------------------------------------------------------------------------------------
// Synthetic sources.

TEST(Synthetic, PoissonMeanRateAndExponentialGaps) {
  PoissonSource source(250.0, 1);
  auto v = drain(source, 100'000);
  ASSERT_EQ(v.size(), 100'000u);
  EXPECT_TRUE(sorted(v));
  EXPECT_NEAR(100'000 / v.back().time, 250.0, 250.0 * 0.02);
  EXPECT_NEAR(gap_cv2(v), 1.0, 0.05);
}

TEST(Synthetic, GammaRateAndCv2) {
  for (double cv2 : {0.25, 1.0, 4.0}) {
    GammaSource source(100.0, cv2, 3);
    auto v = drain(source, 100'000);
    EXPECT_TRUE(sorted(v));
    EXPECT_NEAR(100'000 / v.back().time, 100.0, 100.0 * 0.03) << cv2;
    EXPECT_NEAR(gap_cv2(v), cv2, cv2 * 0.1) << cv2;
  }
}

TEST(Synthetic, DeterministicIsEvenlySpaced) {
  DeterministicSource source(4.0);
  auto v = drain(source, 9);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_DOUBLE_EQ(v[i].time, static_cast<double>(i) * 0.25);
  }
  Bounded bounded(std::make_unique<DeterministicSource>(10.0), 3.0, std::nullopt);
  EXPECT_EQ(drain(bounded).size(), 30u);
}

TEST(Synthetic, RampFollowsItsRateProfile) {
  const RampShape shape{10.0, 1000.0, 100.0, 20.0};
  EXPECT_DOUBLE_EQ(shape.rate_at(5), 10.0);
  EXPECT_DOUBLE_EQ(shape.rate_at(70), 505.0);
  EXPECT_DOUBLE_EQ(shape.rate_at(500), 1000.0);
  EXPECT_DOUBLE_EQ(shape.expected_count(20), 200.0);
  EXPECT_DOUBLE_EQ(shape.expected_count(120), 200.0 + 50500.0);

  Bounded source(std::make_unique<RampSource>(shape, 5), 150.0, std::nullopt);
  auto v = drain(source);
  EXPECT_TRUE(sorted(v));
  // Counts in windows match the integral of the rate within 4 standard deviations.
  const double edges[][2] = {{0, 20}, {20, 30}, {60, 70}, {110, 120}, {120, 150}};
  for (const auto& w : edges) {
    const auto n = std::count_if(v.begin(), v.end(),
                                 [&](const Arrival& a) { return a.time >= w[0] && a.time < w[1]; });
    const double expected = shape.expected_count(w[1]) - shape.expected_count(w[0]);
    EXPECT_NEAR(static_cast<double>(n), expected, 4 * std::sqrt(expected))
        << "[" << w[0] << ", " << w[1] << ")";
  }
  // The rate at the start (hold) and at the end (after the ramp).
  const auto start =
      std::count_if(v.begin(), v.end(), [](const Arrival& a) { return a.time < 20; });
  const auto end =
      std::count_if(v.begin(), v.end(), [](const Arrival& a) { return a.time >= 120; });
  EXPECT_NEAR(static_cast<double>(start) / 20.0, 10.0, 3.0);
  EXPECT_NEAR(static_cast<double>(end) / 30.0, 1000.0, 25.0);
}

TEST(Synthetic, RampDownToZeroEnds) {
  RampSource source(RampShape{100.0, 0.0, 10.0, 0.0}, 2);
  auto v = drain(source);
  EXPECT_TRUE(sorted(v));
  EXPECT_LE(v.back().time, 10.0);
  EXPECT_NEAR(static_cast<double>(v.size()), 500.0, 4 * std::sqrt(500.0));
}

TEST(Synthetic, SumMergesInTimeOrder) {
  std::vector<std::unique_ptr<ArrivalSource>> streams;
  streams.push_back(
      std::make_unique<Bounded>(std::make_unique<PoissonSource>(100.0, 1), 50.0, std::nullopt));
  streams.push_back(std::make_unique<Overridden>(
      std::make_unique<Bounded>(std::make_unique<DeterministicSource>(10.0), 50.0, std::nullopt),
      ArrivalOverrides{std::nullopt, std::nullopt, 0.5}));
  MergedSource merged(std::move(streams));
  EXPECT_EQ(merged.describe(),
            "sum(poisson(rate=100/s) | bounded(50 s) + deterministic(rate=10/s) | bounded(50 s) "
            "| set(slo=500 ms))");
  auto v = drain(merged);
  EXPECT_TRUE(sorted(v));
  Bounded poisson(std::make_unique<PoissonSource>(100.0, 1), 50.0, std::nullopt);
  const auto from_poisson = drain(poisson).size();
  EXPECT_EQ(v.size(), from_poisson + 500);
  EXPECT_EQ(std::count_if(v.begin(), v.end(), [](const Arrival& a) { return a.slo_s == 0.5; }),
            500);
  // Ties go to the earlier stream.
  std::vector<std::unique_ptr<ArrivalSource>> tied;
  tied.push_back(
      std::make_unique<TraceSource>(std::vector<Arrival>{{1.0, 1, 0, 0}, {2.0, 1, 0, 0}}, "first"));
  tied.push_back(std::make_unique<TraceSource>(std::vector<Arrival>{{1.0, 2, 0, 0}, {1.5, 2, 0, 0}},
                                               "second"));
  MergedSource ties(std::move(tied));
  auto t = drain(ties);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].input_tokens, 1u);
  EXPECT_EQ(t[1].input_tokens, 2u);
  EXPECT_DOUBLE_EQ(t[2].time, 1.5);
  EXPECT_DOUBLE_EQ(t[3].time, 2.0);
}

TEST(Synthetic, SameSeedSameStream) {
  for (uint64_t seed : {1u, 2u}) {
    GammaSource a(50.0, 3.0, seed), b(50.0, 3.0, seed);
    auto va = drain(a, 1000), vb = drain(b, 1000);
    for (std::size_t i = 0; i < va.size(); ++i) ASSERT_EQ(va[i].time, vb[i].time);
  }
  PoissonSource a(50.0, 1), b(50.0, 2);
  EXPECT_NE(drain(a, 10)[9].time, drain(b, 10)[9].time);
}

// ---------------------------------------------------------------------------------------
// Transforms.

std::unique_ptr<ArrivalSource> poisson(double rate, double duration, uint64_t seed) {
  return std::make_unique<Bounded>(std::make_unique<PoissonSource>(rate, seed), duration,
                                   std::nullopt);
}

TEST(Transforms, TimeScaleMultipliesTimes) {
  auto original = drain(*poisson(10.0, 100.0, 4));
  TimeScaled scaled(poisson(10.0, 100.0, 4), 0.1);
  auto v = drain(scaled);
  ASSERT_EQ(v.size(), original.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_DOUBLE_EQ(v[i].time, original[i].time * 0.1);
}

TEST(Transforms, BoundedByDurationAndLimit) {
  Bounded by_limit(std::make_unique<DeterministicSource>(1.0), std::nullopt, 5);
  EXPECT_EQ(drain(by_limit).size(), 5u);
  Bounded both(std::make_unique<DeterministicSource>(1.0), 3.0, 5);
  EXPECT_EQ(drain(both).size(), 3u);
}

TEST(Transforms, WindowDropsAndShifts) {
  Windowed window(std::make_unique<DeterministicSource>(1.0), 10.0, 5.0);
  auto v = drain(window);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_DOUBLE_EQ(v.front().time, 0.0);
  EXPECT_DOUBLE_EQ(v.back().time, 4.0);
  Windowed open_end(poisson(10.0, 100.0, 1), 90.0, std::nullopt);
  auto w = drain(open_end);
  EXPECT_GT(w.size(), 50u);
  EXPECT_LT(w.back().time, 10.0);
}

TEST(Transforms, RateScaleThinsAndKeepsDuration) {
  const auto original = drain(*poisson(100.0, 100.0, 8));
  RateScaled thinned(poisson(100.0, 100.0, 8), 0.3, 11);
  auto v = drain(thinned);
  EXPECT_TRUE(sorted(v));
  EXPECT_NEAR(static_cast<double>(v.size()), 0.3 * static_cast<double>(original.size()),
              0.05 * 0.3 * static_cast<double>(original.size()));
}

TEST(Transforms, RateScaleCopiesWithinTheGap) {
  const auto original = drain(*poisson(100.0, 100.0, 8));
  RateScaled scaled(poisson(100.0, 100.0, 8), 2.5, 11);
  auto v = drain(scaled);
  EXPECT_TRUE(sorted(v));
  EXPECT_NEAR(static_cast<double>(v.size()), 2.5 * static_cast<double>(original.size()),
              0.01 * 2.5 * static_cast<double>(original.size()));
  EXPECT_DOUBLE_EQ(v.front().time, original.front().time);
  EXPECT_DOUBLE_EQ(v.back().time, original.back().time);  // the span is unchanged
  // Every original arrival is still there.
  std::size_t j = 0;
  for (const auto& a : v) {
    if (j < original.size() && a.time == original[j].time) ++j;
  }
  EXPECT_EQ(j, original.size());

  RateScaled doubled(std::make_unique<TraceSource>(
                         std::vector<Arrival>{{0.0, 5, 6, 0.1}, {1.0, 7, 8, 0.2}}, "two"),
                     2.0, 3);
  auto d = drain(doubled);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_DOUBLE_EQ(d[0].time, 0.0);
  EXPECT_GT(d[1].time, 0.0);
  EXPECT_LT(d[1].time, 1.0);
  EXPECT_EQ(d[1].input_tokens, 5u);
  EXPECT_DOUBLE_EQ(d[2].time, 1.0);
  EXPECT_DOUBLE_EQ(d[3].time, 1.0);  // the last arrival's copy shares its time
  EXPECT_EQ(d[3].output_tokens, 8u);
}

TEST(Transforms, OverridesSetFields) {
  Overridden o(std::make_unique<TraceSource>(std::vector<Arrival>{{1.0, 5, 6, 0.1}}, "one"),
               ArrivalOverrides{9u, std::nullopt, 0.3});
  auto v = drain(o);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].input_tokens, 9u);
  EXPECT_EQ(v[0].output_tokens, 6u);
  EXPECT_DOUBLE_EQ(v[0].slo_s, 0.3);
}

TEST(Transforms, SummaryMeanRate) {
  DeterministicSource d(8.0);
  Bounded b(std::make_unique<DeterministicSource>(8.0), 10.0, std::nullopt);
  auto s = summarize(b);
  EXPECT_EQ(s.count, 80u);
  EXPECT_DOUBLE_EQ(s.mean_rate(), 8.0);
}

// ---------------------------------------------------------------------------------------
// The YAML factory.

TEST(WorkloadSpec, AzureLlmTraceWithTimeScale) {
  auto w = workload_from(R"(
workload:
  source:
    kind: trace
    format: azure-llm
    path: ../data/traces/azure_llm_code_2023.csv
  time_scale: 0.1
)");
  EXPECT_TRUE(w.finite);
  auto v = drain(*w.source);
  ASSERT_EQ(v.size(), 8819u);
  EXPECT_NEAR(v.back().time, 343.5948056, 1e-6);
  EXPECT_EQ(v.front().input_tokens, 4808u);
}

TEST(WorkloadSpec, TargetRateSetsTheMeanRate) {
  auto w = workload_from(R"(
workload:
  source: {kind: trace, format: azure-llm, path: ../data/traces/azure_llm_code_2023.csv}
  target_rate_rps: 40
)");
  auto s = summarize(*w.source);
  EXPECT_EQ(s.count, 8819u);
  EXPECT_NEAR(s.mean_rate(), 40.0, 40.0 * 1e-9);

  // Synthetic sources need a bound to have a mean rate.
  auto g = workload_from(R"(
workload:
  source: {kind: gamma, rate_rps: 10, cv2: 2, duration_s: 1000}
  target_rate_rps: 100
)");
  EXPECT_NEAR(summarize(*g.source).mean_rate(), 100.0, 1e-6);
}

TEST(WorkloadSpec, RateScaleWindowLimitAndSlo) {
  auto w = workload_from(R"(
workload:
  source: {kind: trace, format: azure-llm, path: ../data/traces/azure_llm_code_2023.csv}
  rate_scale: 2
  start_s: 600
  duration_s: 1200
  limit: 1000000
  slo_ms: 250
)");
  auto v = drain(*w.source);
  EXPECT_TRUE(sorted(v));
  EXPECT_GE(v.front().time, 0.0);
  EXPECT_LT(v.back().time, 1200.0);
  auto raw = read_azure_llm_csv(kLlmTrace);
  const auto in_window = std::count_if(
      raw.begin(), raw.end(), [](const Arrival& a) { return a.time >= 600.0 && a.time < 1800.0; });
  EXPECT_NEAR(static_cast<double>(v.size()), 2.0 * static_cast<double>(in_window), 2.0);
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](const Arrival& a) { return a.slo_s == 0.25; }));

  auto limited = workload_from(R"(
workload:
  source: {kind: poisson, rate_rps: 1000}
  limit: 1234
)");
  EXPECT_TRUE(limited.finite);
  EXPECT_EQ(drain(*limited.source).size(), 1234u);
}

TEST(WorkloadSpec, SyntheticKinds) {
  auto p = workload_from(R"(
workload:
  source: {kind: poisson, rate_rps: 200, input_tokens: 512, output_tokens: 64, slo_ms: 100}
)");
  EXPECT_FALSE(p.finite);
  Bounded bounded(std::move(p.source), 100.0, std::nullopt);
  auto v = drain(bounded);
  EXPECT_NEAR(static_cast<double>(v.size()), 20000.0, 4 * std::sqrt(20000.0));
  EXPECT_EQ(v.front().input_tokens, 512u);
  EXPECT_EQ(v.front().output_tokens, 64u);
  EXPECT_DOUBLE_EQ(v.front().slo_s, 0.1);

  auto d = workload_from("workload: {source: {kind: deterministic, interval_s: 0.5, limit: 4}}");
  EXPECT_TRUE(d.finite);
  auto dv = drain(*d.source);
  ASSERT_EQ(dv.size(), 4u);
  EXPECT_DOUBLE_EQ(dv[3].time, 1.5);

  auto r = workload_from(R"(
workload:
  source: {kind: ramp, from_rps: 0, to_rps: 100, ramp_s: 10, hold_s: 5}
  duration_s: 20
)");
  EXPECT_TRUE(r.finite);
  auto rv = drain(*r.source);
  EXPECT_GE(rv.front().time, 5.0);
  EXPECT_NEAR(static_cast<double>(rv.size()), 1000.0, 4 * std::sqrt(1000.0));
}

TEST(WorkloadSpec, SumOfStreams) {
  auto w = workload_from(R"(
workload:
  source:
    kind: sum
    streams:
      - {kind: poisson, rate_rps: 50, slo_ms: 100}
      - {kind: gamma, rate_rps: 20, cv2: 4, slo_ms: 300}
      - {kind: deterministic, rate_rps: 1, duration_s: 10}
  duration_s: 100
)");
  EXPECT_TRUE(w.finite);
  auto v = drain(*w.source);
  EXPECT_TRUE(sorted(v));
  const auto fast =
      std::count_if(v.begin(), v.end(), [](const Arrival& a) { return a.slo_s == 0.1; });
  const auto slow =
      std::count_if(v.begin(), v.end(), [](const Arrival& a) { return a.slo_s == 0.3; });
  const auto fixed =
      std::count_if(v.begin(), v.end(), [](const Arrival& a) { return a.slo_s == 0; });
  EXPECT_NEAR(static_cast<double>(fast), 5000.0, 4 * std::sqrt(5000.0));
  EXPECT_NEAR(static_cast<double>(slow), 2000.0, 400.0);
  EXPECT_EQ(fixed, 10);
  // Streams of a sum are not finite unless all of them are.
  auto open = workload_from(
      "workload: {source: {kind: sum, streams: [{kind: poisson, rate_rps: 1, limit: 3}, "
      "{kind: poisson, rate_rps: 1}]}}");
  EXPECT_FALSE(open.finite);
}

TEST(WorkloadSpec, FunctionsTraceCompression) {
  auto w = workload_from(R"(
workload:
  source:
    kind: trace
    format: azure-functions
    path: ../data/traces/functions_sample.csv
    rows: [0, 2]
    seconds_per_minute: 3
    within_minute: even
)");
  auto v = drain(*w.source);
  auto row0 = read_functions_counts(kFunctionsSample, std::vector<std::size_t>{0, 2});
  EXPECT_EQ(counts_per_minute(v, 3.0, 1440), row0.per_minute);
  EXPECT_EQ(v.size(), 28625u + 3152u);

  auto one = workload_from(
      "workload: {source: {kind: trace, format: azure-functions, rows: 1, "
      "path: ../data/traces/functions_sample.csv}}");
  auto ov = drain(*one.source);
  EXPECT_EQ(ov.size(), 288u);
  EXPECT_LT(ov.back().time, 1440 * 60.0);
}

TEST(WorkloadSpec, SameSeedSameStream) {
  const std::string yaml = R"(
workload:
  source:
    kind: sum
    streams:
      - {kind: gamma, rate_rps: 30, cv2: 3}
      - {kind: ramp, from_rps: 1, to_rps: 50, ramp_s: 20}
      - {kind: trace, format: azure-functions, path: ../data/traces/functions_sample.csv}
  rate_scale: 1.7
  duration_s: 120
)";
  auto a = drain(*workload_from(yaml, 5).source);
  auto b = drain(*workload_from(yaml, 5).source);
  auto c = drain(*workload_from(yaml, 6).source);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].time, b[i].time);
  EXPECT_TRUE(a.size() != c.size() || a[10].time != c[10].time);
}

TEST(WorkloadSpec, DescribeNamesEveryStage) {
  auto w = workload_from(R"(
workload:
  source: {kind: gamma, rate_rps: 100, cv2: 4}
  time_scale: 0.5
  duration_s: 60
)");
  EXPECT_EQ(w.source->describe(), "gamma(rate=100/s, cv2=4) | time_scale(0.5) | bounded(60 s)");
}

TEST(WorkloadSpec, ErrorsNameFileAndField) {
  struct Case {
    const char* yaml;
    const char* field;
    const char* problem;  // a fragment of the problem
  };
  const Case cases[] = {
      {"workload: {source: {kind: poisson, rate: 5}}", "workload.source.rate", "unknown field"},
      {"workload: {source: {kind: poisson}}", "workload.source.rate_rps", "missing"},
      {"workload: {source: {kind: poisson, rate_rps: -1}}", "workload.source.rate_rps",
       "greater than 0"},
      {"workload: {source: {kind: bursty}}", "workload.source.kind", "not one of"},
      {"workload: {source: {kind: poisson, rate_rps: 1}, speed: 2}", "workload.speed",
       "unknown field"},
      {"workload: {source: {kind: poisson, rate_rps: 1}, time_scale: 2, target_rate_rps: 3}",
       "workload.target_rate_rps", "not both"},
      {"workload: {source: {kind: poisson, rate_rps: 1}, target_rate_rps: 3}",
       "workload.target_rate_rps", "finite"},
      {"workload: {source: {kind: gamma, rate_rps: 1, cv2: 0}}", "workload.source.cv2",
       "greater than 0"},
      {"workload: {source: {kind: deterministic, rate_rps: 1, interval_s: 1}}",
       "workload.source.interval_s", "not both"},
      {"workload: {source: {kind: deterministic}}", "workload.source", "rate_rps or interval_s"},
      {"workload: {source: {kind: ramp, from_rps: 0, to_rps: 0, ramp_s: 1}}", "workload.source",
       "no arrivals"},
      {"workload: {source: {kind: sum, streams: [{kind: poisson, rate_rps: 1}, {kind: gamma}]}}",
       "workload.source.streams[1].rate_rps", "missing"},
      {"workload: {source: {kind: poisson, rate_rps: 1, limit: 0}}", "workload.source.limit",
       "at least 1"},
      {"workload: {source: {kind: poisson, rate_rps: 1, input_tokens: 1.5}}",
       "workload.source.input_tokens", "integer"},
      {"workload: {source: {kind: trace, path: nowhere.csv}}", "workload.source.path", "not found"},
      {"workload: {source: {kind: trace, format: azure-llm, "
       "path: ../data/traces/azure_llm_code_2023.csv, rows: 1}}",
       "workload.source.rows", "unknown field"},
      {"workload: {source: {kind: trace, format: azure-functions, "
       "path: ../data/traces/functions_sample.csv, rows: [0, 3]}}",
       "workload.source.rows[1]", "does not exist"},
      {"workload: {source: {kind: trace, format: azure-functions, "
       "path: ../data/traces/functions_sample.csv, rows: [1, 1]}}",
       "workload.source.rows[1]", "twice"},
      {"workload: {source: {kind: trace, format: azure-functions, "
       "path: ../data/traces/functions_sample.csv, within_minute: random}}",
       "workload.source.within_minute", "not one of"},
      {"workload: {source: {kind: trace, format: csv, path: x.csv}}", "workload.source.format",
       "not one of"},
      {"workload: {source: {kind: poisson, rate_rps: 1}, rate_scale: 0}", "workload.rate_scale",
       "greater than 0"},
      {"workload: {source: {kind: poisson, rate_rps: 1}, start_s: -1}", "workload.start_s",
       "negative"},
  };
  for (const auto& c : cases) {
    auto e = spec_error([&] { workload_from(c.yaml); });
    EXPECT_EQ(e.file(), kYamlName) << c.yaml;
    EXPECT_EQ(e.field(), c.field) << c.yaml;
    EXPECT_NE(e.problem().find(c.problem), std::string::npos) << c.yaml << " -> " << e.what();
  }
}

TEST_F(TempFiles, TraceFileErrorsNameTheTraceFile) {
  write("bad.csv", "arrival_s\n1\n0\n");
  const std::string yaml_file = (dir_ / "run.yaml").string();
  SpecNode root = SpecNode::load_string(
      "workload: {source: {kind: trace, format: generic, path: bad.csv}}", yaml_file);
  auto e = spec_error([&] { build_workload(root.at("workload"), 1); });
  EXPECT_EQ(e.file(), (dir_ / "bad.csv").string());
  EXPECT_EQ(e.field(), "line 3, column arrival_s");

  write("good.csv", "arrival_s,input_tokens,slo_ms\n0,10,\n1,20,500\n3,30,\n");
  SpecNode good = SpecNode::load_string(
      "workload: {source: {kind: trace, path: good.csv, slo_ms: 100}}", yaml_file);
  auto v = drain(*build_workload(good.at("workload"), 1).source);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2].input_tokens, 30u);
  EXPECT_DOUBLE_EQ(v[1].slo_s, 0.1);
}

// ---------------------------------------------------------------------------------------
// The on/off (Markov-modulated Poisson) source.

TEST(OnOffSource, FitHitsTheStatedMeanAndRateCv) {
  for (const auto& [cv, peak] : {std::pair{1.0, 2.5}, std::pair{1.3, 3.0}, std::pair{0.8, 0.0}}) {
    const auto f = fit_on_off(100.0, cv, 10.0, peak > 0 ? std::optional(peak) : std::nullopt);
    const double p = f.on_fraction;
    const double mean = p * f.on_rps + (1 - p) * f.off_rps;
    const double sd = (f.on_rps - f.off_rps) * std::sqrt(p * (1 - p));
    EXPECT_NEAR(mean, 100.0, 1e-9) << cv;
    EXPECT_NEAR(sd / mean, cv, 1e-9) << cv;
    EXPECT_GE(f.off_rps, 0.0);
    EXPECT_NEAR(f.on_s / (f.on_s + f.off_s), p, 1e-12);
  }
  EXPECT_DOUBLE_EQ(fit_on_off(100.0, 1.0, 10.0, std::nullopt).off_rps, 0.0);
  EXPECT_THROW(fit_on_off(100.0, 1.0, 10.0, 1.5), std::invalid_argument);  // needs >= 2
}

TEST(OnOffSource, PerSecondCountsHaveTheStatedCvAndBurstLength) {
  const double cv = 1.0;
  const auto fit = fit_on_off(200.0, cv, 10.0, 2.5);
  Bounded bounded(std::make_unique<OnOffSource>(fit, cv, 5), 6000.0, std::nullopt);
  const auto v = drain(bounded);
  ASSERT_TRUE(sorted(v));
  std::vector<double> per_second(6000, 0.0);
  for (const Arrival& a : v) per_second[static_cast<std::size_t>(a.time)] += 1;
  const double mean = std::accumulate(per_second.begin(), per_second.end(), 0.0) / 6000.0;
  double var = 0;
  for (double c : per_second) var += (c - mean) * (c - mean);
  const double measured_cv = std::sqrt(var / 6000.0) / mean;
  EXPECT_NEAR(mean, 200.0, 30.0);  // ~180 bursts: the mean is known to ~10 %
  EXPECT_NEAR(measured_cv, cv, 0.15);
  // Bursts: runs of seconds at well above the mean last about burst_s on average.
  int runs = 0, burst_seconds = 0;
  bool in = false;
  for (double c : per_second) {
    const bool hot = c > 1.75 * mean;  // between the quiet (0.33×) and burst (2.5×) levels
    burst_seconds += hot;
    runs += hot && !in;
    in = hot;
  }
  ASSERT_GT(runs, 20);
  EXPECT_NEAR(static_cast<double>(burst_seconds) / runs, 10.0, 3.0);
  // Seeded: the same seed gives the same stream.
  Bounded again(std::make_unique<OnOffSource>(fit, cv, 5), 6000.0, std::nullopt);
  const auto w = drain(again);
  ASSERT_EQ(w.size(), v.size());
  EXPECT_EQ(w.back().time, v.back().time);
}

TEST(OnOffSource, SpecErrorsNameTheField) {
  auto e = spec_error([] {
    workload_from(
        "workload: {source: {kind: onoff, rate_rps: 100, cv: 1, burst_s: 10, peak_x: 1.5}}");
  });
  EXPECT_EQ(e.field(), "workload.source.peak_x");
  EXPECT_NE(e.problem().find("at least 1 + cv² = 2"), std::string::npos) << e.what();
  auto missing =
      spec_error([] { workload_from("workload: {source: {kind: onoff, rate_rps: 100, cv: 1}}"); });
  EXPECT_NE(std::string(missing.what()).find("burst_s"), std::string::npos) << missing.what();
  auto w = workload_from(
      "workload: {source: {kind: onoff, rate_rps: 100, cv: 1, burst_s: 5, duration_s: 100}}");
  const auto v = drain(*w.source);
  EXPECT_NEAR(static_cast<double>(v.size()), 10000.0, 5000.0);
}

TEST(SharedPrefixSpec, HostileFieldsAreSpecErrorsNamingTheField) {
  const std::string source = "source: {kind: poisson, rate_rps: 10, limit: 4, input_tokens: 64}";
  const std::pair<const char*, const char*> cases[] = {
      {"{tokens: 0}", "workload.shared_prefix.tokens"},
      {"{tokens: -5}", "workload.shared_prefix.tokens"},
      {"{tokens: .nan}", "workload.shared_prefix.tokens"},
      {"{tokens: 99999999999}", "workload.shared_prefix.tokens"},
      {"{tokens: 16, groups: 0}", "workload.shared_prefix.groups"},
      {"{tokens: 16, size: 3}", "workload.shared_prefix.size"},
      {"{groups: 2}", "workload.shared_prefix.tokens"},
  };
  for (const auto& [value, field] : cases) {
    auto e = spec_error([&] {
      workload_from("workload: {" + source + ", shared_prefix: " + std::string(value) + "}");
    });
    EXPECT_EQ(e.field(), field) << value << ": " << e.what();
  }
  auto w = workload_from("workload: {" + source + ", shared_prefix: {tokens: 100, groups: 2}}");
  const auto v = drain(*w.source);
  ASSERT_EQ(v.size(), 4u);
  for (const Arrival& a : v) EXPECT_EQ(a.shared_prefix_tokens, 64u);  // at most the prompt
}

}  // namespace
}  // namespace tessera
