// Models and their execution (src/exec): the models file, the fan-out rule, the zoo on
// libtorch (small inputs: these also run under ASan), TorchScript errors, the profiler.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "models/model_factory.hpp"
#include "models/model_spec.hpp"
#include "models/profiler.hpp"

namespace tessera {
namespace {

ModelsConfig parse(const std::string& yaml) {
  return parse_models_config(SpecNode::load_string(yaml, "models.yaml"));
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelsConfig, ParsesModelsAndDefaults) {
  const ModelsConfig c = parse(R"(
input: [3, 32, 32]
torch_threads: 2
models:
  - {variant: det, zoo: resnet18, classes: 5, seed: 3, fanout: {threshold: 0.7, max: 4}}
  - {variant: wait, zoo: sleep, input: [4], latency_ms: 2}
)");
  EXPECT_EQ(c.torch_threads, 2);
  ASSERT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.models[0].arch, "resnet18");
  EXPECT_EQ(c.models[0].input_shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(c.models[0].classes, 5);
  ASSERT_TRUE(c.models[0].fanout);
  EXPECT_DOUBLE_EQ(c.models[0].fanout->threshold, 0.7);
  EXPECT_EQ(c.models[0].fanout->max, 4);
  EXPECT_DOUBLE_EQ(c.models[1].latency_ms, 2.0);
  // A variant not listed resolves to the zoo architecture of that name.
  const ModelSpec r50 = c.spec_for("resnet50");
  EXPECT_EQ(r50.arch, "resnet50");
  EXPECT_EQ(r50.input_shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_THROW(c.spec_for("yolov5s"), std::invalid_argument);
}

TEST(ModelsConfig, ErrorsNameTheField) {
  EXPECT_EQ(error_of("models: [{variant: a, zoo: resnet19}]"),
            "models.yaml: models[0].zoo: unknown architecture 'resnet19' (known: resnet18, "
            "resnet34, resnet50, resnet101, resnet152, wide_resnet50_2, resnext50_32x4d, "
            "mobilenet_v2, small_cnn, noop, sleep, faulty)");
  EXPECT_NE(error_of("models: [{variant: a, torchscript: m.pt}]").find("needs its 'input'"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{variant: a, zoo: noop, inputs: [3]}]").find("unknown field"),
            std::string::npos);
  EXPECT_NE(
      error_of("models: [{variant: a, zoo: noop}, {variant: a, zoo: noop}]").find("listed twice"),
      std::string::npos);
  EXPECT_NE(error_of("models: [{variant: a, zoo: noop, latency_ms: 3}]").find("'sleep'"),
            std::string::npos);
}

TEST(ModelsConfig, EmulateProfileIsAProfileTimedModel) {
  const ModelsConfig c = parse("input: [16]\nmodels: [{variant: yolov5l, emulate: profile}]");
  ASSERT_EQ(c.models.size(), 1u);
  EXPECT_EQ(c.models[0].source, ModelSpec::Source::kProfileTimed);
  EXPECT_EQ(c.models[0].input_shape, (std::vector<int64_t>{16}));
  auto model = load_model(c.models[0]);
  EXPECT_EQ(model->info().kind, kProfileTimedKind);
  // It returns its input at once; the server times the batch (docs/serve.md).
  FloatTensor in{{16}, std::vector<float>(16, 0.25f)};
  const FloatTensor* batch[] = {&in, &in};
  const auto out = model->run(batch);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].data, in.data);
  EXPECT_NE(error_of("models: [{variant: a, emulate: profile, zoo: noop}]").find("exactly one"),
            std::string::npos);
  EXPECT_EQ(error_of("models: [{variant: a, emulate: sleep}]"),
            "models.yaml: models[0].emulate: 'sleep' is not one of: profile");
  EXPECT_NE(error_of("models: [{variant: a, emulate: profile, classes: 3}]")
                .find("models[0].classes: an emulated model does not take it"),
            std::string::npos);
}

TEST(FanoutRule, CountsOutputsAboveTheThresholdUpToMax) {
  const std::vector<float> out{2.0f, -2.0f, 0.5f, 0.0f, 3.0f};
  EXPECT_EQ(apply_fanout_rule(FanoutRule{0.5, 8}, out), 3);  // sigmoid > 0.5: x > 0
  EXPECT_EQ(apply_fanout_rule(FanoutRule{0.9, 8}, out), 1);  // only x = 3 (0.953)
  EXPECT_EQ(apply_fanout_rule(FanoutRule{0.5, 2}, out), 2);  // capped
  EXPECT_EQ(apply_fanout_rule(FanoutRule{0.5, 8}, std::vector<float>{}), 0);
}

TEST(Zoo, ResNetRunsABatchWithTheRightShapesDeterministically) {
  configure_torch_threads(1);
  ModelSpec spec;
  spec.variant = "r18";
  spec.arch = "resnet18";
  spec.input_shape = {3, 32, 32};
  spec.classes = 7;
  auto a = load_model(spec);
  auto b = load_model(spec);
  EXPECT_EQ(a->info().output_shape, (std::vector<int64_t>{7}));
  EXPECT_EQ(a->info().kind, "zoo:resnet18");
  FloatTensor x{{3, 32, 32}, std::vector<float>(3 * 32 * 32, 0.25f)};
  FloatTensor y{{3, 32, 32}, std::vector<float>(3 * 32 * 32, -0.5f)};
  const FloatTensor* both[] = {&x, &y};
  const FloatTensor* one[] = {&y};
  const auto out = a->run(both);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{7}));
  EXPECT_EQ(out[1].data, b->run(one).at(0).data);  // same seed, same weights; batch-independent
  EXPECT_NE(out[0].data, out[1].data);
}

TEST(Zoo, EveryArchitectureBuildsOnASmallInput) {
  configure_torch_threads(1);
  for (const char* arch : {"resnet34", "mobilenet_v2", "small_cnn", "resnext50_32x4d"}) {
    ModelSpec spec;
    spec.variant = arch;
    spec.arch = arch;
    spec.input_shape = {3, 32, 32};
    spec.classes = 3;
    EXPECT_EQ(load_model(spec)->info().output_shape, (std::vector<int64_t>{3})) << arch;
  }
}

TEST(Zoo, WrongInputRankIsAClearError) {
  ModelSpec spec;
  spec.variant = "r18";
  spec.arch = "resnet18";
  spec.input_shape = {12};
  try {
    load_model(spec);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("[channels, height, width]"), std::string::npos)
        << e.what();
  }
}

TEST(TorchScript, MissingFileNamesTheVariantAndFile) {
  ModelSpec spec;
  spec.variant = "mine";
  spec.source = ModelSpec::Source::kTorchScript;
  spec.file = "/nonexistent/model.pt";
  spec.input_shape = {4};
  try {
    load_model(spec);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("variant 'mine'"), std::string::npos) << what;
    EXPECT_NE(what.find("/nonexistent/model.pt"), std::string::npos) << what;
  }
}

TEST(Profiler, MeasuresEveryBatchSizeAndTheFanoutMean) {
  ModelSpec spec;
  spec.variant = "n";
  spec.arch = "noop";
  spec.input_shape = {6};
  spec.fanout = FanoutRule{0.5, 8};
  auto model = load_model(spec);
  ProfileOptions o;
  o.batches = {1, 4};
  o.reps = 3;
  const ModelProfile p = profile_model(*model, spec, o);
  ASSERT_EQ(p.timings.size(), 2u);
  EXPECT_EQ(p.timings[1].batch, 4);
  EXPECT_GE(p.timings[0].median_ms, 0.0);
  ASSERT_TRUE(p.fanout_mean);
  // Standard-normal inputs through the identity: about half of 6 values are > 0.
  EXPECT_GT(*p.fanout_mean, 1.0);
  EXPECT_LT(*p.fanout_mean, 5.0);
  ProfileTable table;
  add_profile(table, spec, "cpu", p, "test");
  EXPECT_TRUE(table.has("n", "cpu"));
  EXPECT_EQ(table.curve("n", "cpu").points.size(), 2u);
}

// Returns its input; each call waits (on a condition, bounded) until `want` calls are in
// progress at once, and records the most it saw: a profiler that does not run `want`
// instances at once sees no more than one.
class RendezvousModel final : public Model {
 public:
  // The first `serial` calls (the profiler's one unmeasured run per batch size, made
  // alone) do not wait.
  RendezvousModel(int want, int serial) : want_(want), serial_(serial) {
    info_ = {"r", "noop", {2}, {2}};
  }
  const ModelInfo& info() const override { return info_; }
  std::vector<FloatTensor> run(std::span<const FloatTensor* const> inputs) override {
    std::unique_lock lock(mutex_);
    ++inside_;
    max_inside_ = std::max(max_inside_, inside_);
    cv_.notify_all();
    if (calls_++ >= serial_) {
      cv_.wait_for(lock, std::chrono::seconds(2), [&] { return inside_ >= want_ || met_; });
    }
    met_ = met_ || inside_ >= want_;
    --inside_;
    std::vector<FloatTensor> out;
    for (const FloatTensor* in : inputs) out.push_back(*in);
    return out;
  }
  int max_inside() const { return max_inside_; }

 private:
  ModelInfo info_;
  int want_;
  int serial_;
  int calls_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  int inside_ = 0;
  int max_inside_ = 0;
  bool met_ = false;
};

TEST(Profiler, ConcurrentRunsNInstancesAtOnce) {
  RendezvousModel model(3, 2);
  ModelSpec spec;
  spec.variant = "r";
  spec.input_shape = {2};
  ProfileOptions o;
  o.batches = {1, 2};
  o.warmup = 1;
  o.reps = 4;
  o.concurrent = 3;
  const ModelProfile p = profile_model(model, spec, o);
  EXPECT_EQ(model.max_inside(), 3);
  EXPECT_EQ(p.max_overlap, 3);
  ASSERT_EQ(p.timings.size(), 2u);
  EXPECT_EQ(p.timings[1].batch, 2);
}

TEST(Profiler, ConcurrentProfilesATinyZooModel) {
  ModelSpec spec;
  spec.variant = "tiny";
  spec.arch = "small_cnn";
  spec.input_shape = {3, 16, 16};
  spec.classes = 4;
  auto model = load_model(spec);
  ProfileOptions o;
  o.batches = {1, 2};
  o.warmup = 1;
  o.reps = 3;
  o.concurrent = 2;
  const ModelProfile p = profile_model(*model, spec, o);
  ASSERT_EQ(p.timings.size(), 2u);
  EXPECT_GT(p.timings[0].median_ms, 0.0);
  EXPECT_GE(p.timings[0].p90_ms, p.timings[0].median_ms);
  EXPECT_GE(p.max_overlap, 1);
  EXPECT_LE(p.max_overlap, 2);
}

}  // namespace
}  // namespace tessera
