#include <gtest/gtest.h>

#include "spec_error.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/spec_node.hpp"
#include "profile/loki_import.hpp"
#include "profile/ppipe_import.hpp"
#include "profile/profile_sources.hpp"
#include "profile/profile_table.hpp"
#include "profile/profile_yaml.hpp"

namespace tessera {
namespace {

const std::filesystem::path kData = std::filesystem::path(TESSERA_SOURCE_DIR) / "data" / "profiles";
const std::filesystem::path kLokiRuntimes = kData / "loki" / "simulator_runtimes.csv";
const std::filesystem::path kPpipeTimings = kData / "ppipe" / "models" / "block-timing-tf32";

// A scratch folder of this test binary; each test writes its own file names in it.
std::filesystem::path scratch(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "tessera_profile_test";
  std::filesystem::create_directories(dir);
  return dir / name;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

using testing::spec_error;

// ---- ProfileTable ----------------------------------------------------------------------

TEST(ProfileTable, InterpolatesBetweenPoints) {
  ProfileTable t;
  t.add("m", "gpu", 1, 10.0);
  t.add("m", "gpu", 4, 40.0);
  t.add("m", "gpu", 8, 60.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 1), 10.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 2), 20.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 4), 40.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 6), 50.0);
  EXPECT_DOUBLE_EQ(t.latency("m", "gpu", 6), 0.050);
  EXPECT_DOUBLE_EQ(t.throughput_rps("m", "gpu", 4), 100.0);
}

TEST(ProfileTable, ExtrapolatesBeyondLastPointNeverBelowIt) {
  ProfileTable t;
  t.add("m", "gpu", 1, 10.0);
  t.add("m", "gpu", 2, 14.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 4), 22.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 10), 46.0);

  ProfileTable noisy;  // falling last segment: clamp at the last measured latency
  noisy.add("m", "gpu", 1, 10.0);
  noisy.add("m", "gpu", 2, 8.0);
  EXPECT_DOUBLE_EQ(noisy.latency_ms("m", "gpu", 5), 8.0);
}

TEST(ProfileTable, EdgesBelowFirstPointAndSinglePoint) {
  ProfileTable t;
  t.add("m", "gpu", 2, 10.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 1), 10.0);  // below: smallest batch's latency
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 4), 20.0);  // one point: proportional
  t.add("m", "gpu", 4, 30.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 1), 10.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "gpu", 3), 20.0);
}

TEST(ProfileTable, BatchBelowOneIsAnError) {
  ProfileTable t;
  t.add("m", "gpu", 1, 10.0);
  EXPECT_THROW(t.latency_ms("m", "gpu", 0), std::invalid_argument);
  EXPECT_THROW(t.latency("m", "gpu", -3), std::invalid_argument);
  EXPECT_THROW(t.add("m", "gpu", 0, 5.0), std::invalid_argument);
  EXPECT_THROW(t.add("m", "gpu", 2, 0.0), std::invalid_argument);
  EXPECT_THROW(t.add("m", "gpu", 2, std::nan("")), std::invalid_argument);
}

TEST(ProfileTable, MissingPairNamesIt) {
  ProfileTable t;
  t.add("yolov5m", "a100", 1, 10.0);
  try {
    t.latency("yolov5m", "t4", 1);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("no profile for variant 'yolov5m' on segment 't4'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.curve("resnet", "a100"), std::out_of_range);
  EXPECT_THROW(t.throughput_rps("resnet", "a100", 1), std::out_of_range);
}

TEST(ProfileTable, AddReplacesMergeOverridesAndListings) {
  ProfileTable t;
  t.add("m", "b", 2, 20.0);
  t.add("m", "b", 1, 10.0);
  t.add("m", "b", 2, 25.0);
  ASSERT_EQ(t.curve("m", "b").points.size(), 2u);
  EXPECT_EQ(t.curve("m", "b").points[0].batch, 1);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "b", 2), 25.0);
  EXPECT_EQ(t.curve("m", "b").origin, ProfileOrigin::kMeasured);
  t.add("m", "b", 4, 40.0, ProfileOrigin::kDerived, "scaled");
  EXPECT_EQ(t.curve("m", "b").origin, ProfileOrigin::kDerived);
  t.add("m", "a", 1, 5.0);
  t.add("n", "a", 1, 7.0);

  ProfileTable other;
  other.add("m", "b", 1, 99.0);
  t.merge(other);
  EXPECT_DOUBLE_EQ(t.latency_ms("m", "b", 1), 99.0);
  EXPECT_EQ(t.curve("m", "b").points.size(), 1u);  // the whole curve is replaced
  EXPECT_EQ(t.segments_of("m"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.variants(), (std::vector<std::string>{"m", "n"}));
  EXPECT_TRUE(t.segments_of("zzz").empty());
}

TEST(ProfileTable, SetCurveSortsAndRejectsDuplicates) {
  ProfileTable t;
  t.set_curve(ProfileCurve{"m", "g", ProfileOrigin::kMeasured, "", {{4, 40.0}, {1, 10.0}}});
  EXPECT_EQ(t.curve("m", "g").points.front().batch, 1);
  EXPECT_THROW(
      t.set_curve(ProfileCurve{"m", "g", ProfileOrigin::kMeasured, "", {{1, 1.0}, {1, 2.0}}}),
      std::invalid_argument);
  EXPECT_THROW(t.set_curve(ProfileCurve{"m", "g", ProfileOrigin::kMeasured, "", {}}),
               std::invalid_argument);
}

// ---- tessera's YAML format -------------------------------------------------------------

TEST(ProfileYaml, Loads) {
  auto node = SpecNode::load_string(R"(
profiles:
  - variant: yolov5m
    segment: a100
    origin: measured
    latency_ms: {1: 12.5, 2: 14.0, 4: 20.1}
  - variant: yolov5m
    segment: a100-3g
    origin: derived
    source: scaled from a100
    latency_ms:
      1: 20
      8: 90
)",
                                    "prof.yaml");
  ProfileTable t = load_profile_yaml(node);
  EXPECT_DOUBLE_EQ(t.latency_ms("yolov5m", "a100", 2), 14.0);
  EXPECT_DOUBLE_EQ(t.latency_ms("yolov5m", "a100", 3), 17.05);
  EXPECT_EQ(t.curve("yolov5m", "a100").origin, ProfileOrigin::kMeasured);
  EXPECT_EQ(t.curve("yolov5m", "a100").source, "prof.yaml");
  EXPECT_EQ(t.curve("yolov5m", "a100-3g").origin, ProfileOrigin::kDerived);
  EXPECT_EQ(t.curve("yolov5m", "a100-3g").source, "scaled from a100");
  EXPECT_DOUBLE_EQ(t.latency_ms("yolov5m", "a100-3g", 8), 90.0);
}

TEST(ProfileYaml, UnknownFieldNamesFileAndField) {
  auto node = SpecNode::load_string(R"(
profiles:
  - variant: yolov5m
    segment: a100
    latncy_ms: {1: 12.5}
)",
                                    "prof.yaml");
  SpecError e = spec_error([&] { load_profile_yaml(node); });
  EXPECT_EQ(e.file(), "prof.yaml");
  EXPECT_EQ(e.field(), "profiles[0].latncy_ms");
  EXPECT_NE(e.problem().find("unknown field"), std::string::npos);

  auto top = SpecNode::load_string("profile: []\n", "top.yaml");
  EXPECT_EQ(spec_error([&] { load_profile_yaml(top); }).field(), "profile");
}

TEST(ProfileYaml, BadValuesAreErrors) {
  auto load = [](const std::string& text) {
    return spec_error([&] { load_profile_yaml(SpecNode::load_string(text, "p.yaml")); });
  };
  EXPECT_EQ(load("profiles:\n  - {variant: m, segment: g, latency_ms: {0: 1}}\n").field(),
            "profiles[0].latency_ms.0");
  EXPECT_EQ(load("profiles:\n  - {variant: m, segment: g, latency_ms: {x: 1}}\n").field(),
            "profiles[0].latency_ms.x");
  EXPECT_EQ(load("profiles:\n  - {variant: m, segment: g, latency_ms: {1: -2}}\n").field(),
            "profiles[0].latency_ms.1");
  EXPECT_EQ(load("profiles:\n  - {variant: m, segment: g, latency_ms: {}}\n").field(),
            "profiles[0].latency_ms");
  EXPECT_EQ(load("profiles:\n  - {variant: m, latency_ms: {1: 1}}\n").field(),
            "profiles[0].segment");
  EXPECT_EQ(load("profiles:\n  - {variant: m, segment: g, origin: guessed, latency_ms: {1: 1}}\n")
                .field(),
            "profiles[0].origin");
  EXPECT_EQ(load("profiles:\n  - {variant: m, segment: g, latency_ms: {1: 1}}\n"
                 "  - {variant: m, segment: g, latency_ms: {2: 1}}\n")
                .field(),
            "profiles[1]");
}

TEST(ProfileYaml, WriteThenLoadRoundTrips) {
  ProfileTable t;
  t.add("yolov5m", "a100", 1, 12.5);
  t.add("yolov5m", "a100", 4, 68.81516456604001);
  t.add("convnext_large[0:4]", "T4/mps2", 2, 1.0 / 3.0, ProfileOrigin::kDerived,
        "a \"quoted\" source: with colon");
  t.add("null", "~", 3, 1e-7);
  std::ostringstream out;
  write_profile_yaml(t, out);
  ProfileTable back = load_profile_yaml(SpecNode::load_string(out.str(), "rt.yaml"));
  ASSERT_EQ(back.curves().size(), t.curves().size()) << out.str();
  for (const auto& [key, c] : t.curves()) {
    const ProfileCurve& b = back.curve(key.first, key.second);
    EXPECT_EQ(b.origin, c.origin);
    EXPECT_EQ(b.source, c.source.empty() ? "rt.yaml" : c.source);
    ASSERT_EQ(b.points.size(), c.points.size());
    for (std::size_t i = 0; i < c.points.size(); ++i) {
      EXPECT_EQ(b.points[i].batch, c.points[i].batch);
      EXPECT_EQ(b.points[i].latency_ms, c.points[i].latency_ms);  // exact
    }
  }

  std::ostringstream empty;
  write_profile_yaml(ProfileTable(), empty);
  EXPECT_TRUE(load_profile_yaml(SpecNode::load_string(empty.str())).empty());
}

// ---- Loki ------------------------------------------------------------------------------

TEST(LokiImport, BundledRuntimes) {
  ProfileTable t = import_loki_runtimes(kLokiRuntimes, {{"onnxruntime_gpu_ampere", "ampere"}});
  EXPECT_NEAR(t.latency_ms("yolov5m", "ampere", 1), 68.815, 1e-3);
  EXPECT_EQ(t.segments_of("yolov5m"), (std::vector<std::string>{"ampere"}));
  EXPECT_EQ(t.curve("yolov5m", "ampere").points.size(), 64u);
  EXPECT_EQ(t.curve("yolov5m", "ampere").origin, ProfileOrigin::kMeasured);
  EXPECT_TRUE(t.has("efficientnet-b6", "ampere"));
  EXPECT_TRUE(t.has("genderNet_19", "ampere"));

  ProfileTable p50 =
      import_loki_runtimes(kLokiRuntimes, {{"onnxruntime_gpu_ampere", "ampere"}}, "50th_pct");
  EXPECT_NEAR(p50.latency_ms("yolov5m", "ampere", 1), 17.373, 1e-3);

  ProfileTable all = import_loki_runtimes(kLokiRuntimes, {});
  EXPECT_EQ(all.segments_of("yolov5x"),
            (std::vector<std::string>{"onnxruntime_cpu", "onnxruntime_gpu_ampere",
                                      "onnxruntime_gpu_pascal"}));
}

TEST(LokiImport, ErrorsNameFileLineAndColumn) {
  SpecError unknown = spec_error([] {
    import_loki_runtimes(kLokiRuntimes, {{"onnxruntime_gpu_volta", "v100"}});
  });
  EXPECT_EQ(unknown.file(), kLokiRuntimes.string());
  EXPECT_NE(unknown.problem().find("onnxruntime_gpu_volta"), std::string::npos);

  EXPECT_NE(spec_error([] { import_loki_runtimes(kLokiRuntimes, {}, "p99"); })
                .problem()
                .find("missing column 'p99'"),
            std::string::npos);

  std::filesystem::path bad = scratch("bad_runtimes.csv");
  write_file(bad,
             ",Model,Accel,batchsize,avg_runtime\n"
             "0,m,gpu,1,3.5\n"
             "1,m,gpu,2,abc\n");
  SpecError e = spec_error([&] { import_loki_runtimes(bad, {}); });
  EXPECT_EQ(e.file(), bad.string());
  EXPECT_EQ(e.field(), "line 3, column 'avg_runtime'");
  EXPECT_NE(e.problem().find("abc"), std::string::npos);

  write_file(bad, ",Model,Accel,batchsize,avg_runtime\n0,m,gpu,1\n");
  EXPECT_EQ(spec_error([&] { import_loki_runtimes(bad, {}); }).field(), "line 2");

  write_file(bad, ",Model,Accel,batchsize,avg_runtime\n0,m,gpu,1,2\n1,m,gpu,1,3\n");
  EXPECT_EQ(spec_error([&] { import_loki_runtimes(bad, {}); }).field(),
            "line 3, column 'batchsize'");

  EXPECT_THROW(import_loki_runtimes(scratch("does_not_exist.csv"), {}), SpecError);
}

TEST(LokiImport, Branching) {
  LokiBranching b = load_loki_branching(kData / "loki" / "branching.csv");
  EXPECT_EQ(b.children, (std::vector<std::string>{"car_classification", "facial_recognition"}));
  EXPECT_EQ(b.variants.size(), 5u);
  EXPECT_NEAR(b.at("yolov5x").mult_factor, 18.894, 1e-3);
  EXPECT_NEAR(b.at("yolov5n").share.at("car_classification"), 0.76809, 1e-5);
  for (const auto& [variant, branch] : b.variants) {
    double sum = 0.0;
    for (const auto& [child, share] : branch.share) sum += share;
    EXPECT_NEAR(sum, 1.0, 1e-9) << variant;
  }
  EXPECT_THROW(b.at("yolov7"), std::out_of_range);
}

TEST(LokiImport, Accuracy) {
  auto acc = load_loki_accuracy(kData / "loki" / "aggregate_profiled.csv");
  EXPECT_DOUBLE_EQ(acc.at("yolov5x"), 1.0);
  EXPECT_NEAR(acc.at("yolov5m"), 0.73767, 1e-5);
  EXPECT_NEAR(acc.at("efficientnet-b0"), 0.91459, 1e-5);
  EXPECT_EQ(acc.count("efficientnet-b2"), 0u);
}

// ---- PPipe -----------------------------------------------------------------------------

TEST(PpipeImport, LoadsBlocksSharesAndTransferSizes) {
  auto profiles = load_ppipe_model(kPpipeTimings, "convnext_large");
  std::set<std::string> segments;
  for (const PpipeBlockProfile& p : profiles) {
    segments.insert(p.segment());
    EXPECT_EQ(p.num_blocks(), 10);
    EXPECT_EQ(p.max_batch(), p.mps_share == 1 ? 8 : p.mps_share == 2 ? 4 : 2) << p.segment();
    ASSERT_EQ(p.transfer_bytes.size(), 9u);
    EXPECT_EQ(p.transfer_bytes.front(), 1376256);
  }
  EXPECT_EQ(segments, (std::set<std::string>{"L4", "L4/mps2", "L4/mps3", "L4/mps4", "P4", "T4",
                                             "T4/mps2", "T4/mps3", "T4/mps4", "V100", "V100/mps2",
                                             "V100/mps3", "V100/mps4"}));
  const PpipeBlockProfile& t4 = *std::find_if(
      profiles.begin(), profiles.end(), [](auto& p) { return p.gpu == "T4" && p.mps_share == 1; });
  EXPECT_DOUBLE_EQ(t4.block_latency_us[0][0], 1088.0);
  EXPECT_DOUBLE_EQ(t4.block_latency_us[9][7], 35661.0);
  EXPECT_EQ(ppipe_segment_name("T4", 2), "T4/mps2");
  EXPECT_EQ(ppipe_segment_name("T4", 1), "T4");
}

TEST(PpipeImport, WholeModelIsSumOfBlocks) {
  ProfileTable t = import_ppipe_model(kPpipeTimings, "convnext_large");
  EXPECT_EQ(t.segments_of("convnext_large").size(), 13u);
  for (const PpipeBlockProfile& p : load_ppipe_model(kPpipeTimings, "convnext_large")) {
    const ProfileCurve& c = t.curve("convnext_large", p.segment());
    EXPECT_EQ(c.origin, ProfileOrigin::kMeasured);
    ASSERT_EQ(static_cast<int>(c.points.size()), p.max_batch());
    for (int batch = 1; batch <= p.max_batch(); ++batch) {
      double sum_us = 0.0;
      for (const auto& block : p.block_latency_us) sum_us += block[batch - 1];
      EXPECT_NEAR(t.latency_ms("convnext_large", p.segment(), batch), sum_us / 1000.0, 1e-9);
    }
  }
  // T4 alone, batch 1: 1088+1253+1939+1935+4931+5589+5921+4939+5340+4923 us.
  EXPECT_NEAR(t.latency_ms("convnext_large", "T4", 1), 37.858, 1e-9);
}

TEST(PpipeImport, BlockRanges) {
  auto profiles = load_ppipe_model(kPpipeTimings, "repvgg-b3");
  const PpipeBlockProfile& p = profiles.front();
  ProfileCurve head = ppipe_range_curve(p, 0, 4);
  ProfileCurve tail = ppipe_range_curve(p, 5, 9);
  ProfileCurve whole = ppipe_model_curve(p);
  EXPECT_EQ(head.variant, "repvgg-b3[0:4]");
  EXPECT_EQ(whole.variant, "repvgg-b3");
  EXPECT_EQ(head.segment, p.segment());
  for (std::size_t i = 0; i < whole.points.size(); ++i) {
    EXPECT_NEAR(head.points[i].latency_ms + tail.points[i].latency_ms, whole.points[i].latency_ms,
                1e-9);
  }
  EXPECT_DOUBLE_EQ(p.range_latency_us(3, 3, 2), p.block_latency_us[3][1]);
  EXPECT_THROW(p.range_latency_us(5, 4, 1), std::out_of_range);
  EXPECT_THROW(p.range_latency_us(0, 10, 1), std::out_of_range);
  EXPECT_THROW(p.range_latency_us(0, 9, 0), std::out_of_range);
  EXPECT_THROW(p.range_latency_us(0, 9, p.max_batch() + 1), std::out_of_range);
}

TEST(PpipeImport, BundledModelsAreConsistent) {
  auto models = list_ppipe_models(kPpipeTimings);
  // The paper's 18 models (its groups G1-G6, data/profiles/ppipe/SOURCE.md).
  EXPECT_EQ(models, (std::vector<std::string>{
                        "apcnet_r101-d8_4xb2-40k_cityscapes-512x1024",
                        "atss_r101_fpn_1x_coco",
                        "centernet-update_r50-caffe_fpn_ms-1x_coco",
                        "colorization-v2",
                        "convnext_large",
                        "dnl_r101-d8_4xb2-40k_cityscapes-512x1024",
                        "efficientnet-b8_3rdparty_8xb32-aa-advprop_in1k",
                        "encnet_r101-d8_4xb2-40k_cityscapes-512x1024",
                        "fcn-d6_r101-d16_4xb2-40k_cityscapes-512x1024",
                        "fsaf_r101_fpn_1x_coco",
                        "gcnet_r101-d8_4xb2-40k_cityscapes-512x1024",
                        "gfl_x101-32x4d_fpn_ms-2x_coco",
                        "googlenet-v3-pytorch",
                        "nonlocal_r101-d8_4xb2-40k_cityscapes-512x1024",
                        "repvgg-b3",
                        "rtmdet_x_8xb32-300e_coco",
                        "tf_efficientdet_d1",
                        "wide_resnet101_2",
                    }));
  for (const std::string& m : models) {
    for (const PpipeBlockProfile& p : load_ppipe_model(kPpipeTimings, m)) {
      EXPECT_EQ(static_cast<int>(p.transfer_bytes.size()), p.num_blocks() - 1) << m;
    }
  }
  EXPECT_EQ(load_ppipe_model(kPpipeTimings, "atss_r101_fpn_1x_coco").front().num_blocks(), 9);
  EXPECT_EQ(load_ppipe_model(kPpipeTimings, "fsaf_r101_fpn_1x_coco").front().num_blocks(), 9);
  EXPECT_THROW(load_ppipe_model(kPpipeTimings, "convnext"), SpecError);
}

// ---- run-spec entry point --------------------------------------------------------------

// A spec "file" that sits in data/profiles/, so relative paths resolve against it.
SpecNode profiles_spec(const std::string& text) {
  return SpecNode::load_string(text, (kData / "inline.yaml").string()).at("profiles");
}

TEST(LoadProfiles, MixesSourcesAndLaterOverridesEarlier) {
  std::filesystem::path own = scratch("own_profile.yaml");
  write_file(own,
             "profiles:\n"
             "  - {variant: yolov5m, segment: ampere, latency_ms: {1: 5.0}}\n"
             "  - {variant: custom, segment: ampere, latency_ms: {1: 1.0}}\n");
  const std::string spec = R"(
profiles:
  - format: loki
    runtimes: loki/simulator_runtimes.csv
    segments: {onnxruntime_gpu_ampere: ampere, onnxruntime_gpu_pascal: pascal}
  - file: )" + own.string() +
                           R"(
  - format: loki
    runtimes: loki/simulator_runtimes.csv
    segments: {onnxruntime_gpu_pascal: pascal}
    column: 95th_pct
  - format: ppipe
    dir: ppipe
    models: [convnext_large, wide_resnet101_2]
)";
  ProfileTable t = load_profiles(profiles_spec(spec));
  EXPECT_DOUBLE_EQ(t.latency_ms("yolov5m", "ampere", 1), 5.0);  // the file overrides Loki
  EXPECT_DOUBLE_EQ(t.latency_ms("custom", "ampere", 1), 1.0);
  EXPECT_NEAR(t.latency_ms("yolov5x", "ampere", 2),
              import_loki_runtimes(kLokiRuntimes, {{"onnxruntime_gpu_ampere", "ampere"}})
                  .latency_ms("yolov5x", "ampere", 2),
              1e-12);
  ProfileTable p95 =
      import_loki_runtimes(kLokiRuntimes, {{"onnxruntime_gpu_pascal", "pascal"}}, "95th_pct");
  EXPECT_DOUBLE_EQ(t.latency_ms("yolov5m", "pascal", 8), p95.latency_ms("yolov5m", "pascal", 8));
  EXPECT_TRUE(t.has("convnext_large", "V100/mps4"));
  EXPECT_TRUE(t.has("wide_resnet101_2", "P4"));
  EXPECT_NEAR(t.latency_ms("convnext_large", "T4", 1), 37.858, 1e-9);
}

TEST(LoadProfiles, ErrorsNameTheField) {
  auto field_of = [](const std::string& text) {
    return spec_error([&] { load_profiles(profiles_spec(text)); }).field();
  };
  EXPECT_EQ(field_of("profiles:\n  - {format: loki, runtimes: loki/simulator_runtimes.csv, "
                     "colum: avg_runtime}\n"),
            "profiles[0].colum");
  EXPECT_EQ(field_of("profiles:\n  - {format: loki, runtimes: loki/nope.csv}\n"),
            "profiles[0].runtimes");
  EXPECT_EQ(field_of("profiles:\n  - {format: loki, runtimes: loki/simulator_runtimes.csv, "
                     "column: p99}\n"),
            "profiles[0].column");
  EXPECT_EQ(field_of("profiles:\n  - {format: ppipe, dir: ppipe, models: [convnext_large, "
                     "resnet]}\n"),
            "profiles[0].models[1]");
  EXPECT_EQ(field_of("profiles:\n  - {format: onnx, dir: ppipe}\n"), "profiles[0].format");
  EXPECT_EQ(field_of("profiles:\n  - {dir: ppipe}\n"), "profiles[0]");
  EXPECT_EQ(field_of("profiles:\n  - {file: loki/branching.csv, format: loki}\n"),
            "profiles[0].format");
  EXPECT_EQ(field_of("profiles: {file: x}\n"), "profiles");
}

}  // namespace
}  // namespace tessera
