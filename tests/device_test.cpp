// Devices (docs/serve.md#serving-on-gpus): parsing `device`, resolving it against what the
// process sees (CUDA_VISIBLE_DEVICES semantics, with fake environments), the models file's
// `device` fields and `--device`, and the clear error a CPU-only build gives for cuda.
// Runs on CPU only: the CUDA path itself is not tested here.

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "llm_torch/decoder.hpp"
#include "models/llm_calibration.hpp"
#include "models/model_factory.hpp"
#include "models/model_spec.hpp"

namespace tessera {
namespace {

std::string resolve_error(const std::string& device, const DeviceEnvironment& env) {
  try {
    resolve_device(parse_device(device), env);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

DeviceEnvironment gpus(int n, std::optional<std::string> cvd = std::nullopt) {
  return DeviceEnvironment{true, n, std::move(cvd)};
}

TEST(Device, ParsesEveryForm) {
  EXPECT_TRUE(parse_device("cpu").is_cpu());
  EXPECT_EQ(parse_device("cuda"), (DeviceSpec{DeviceSpec::Kind::kCuda, 0, ""}));
  EXPECT_EQ(parse_device("cuda:3"), (DeviceSpec{DeviceSpec::Kind::kCuda, 3, ""}));
  EXPECT_EQ(parse_device("cuda:1023").index, 1023);
  const DeviceSpec gpu = parse_device("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
  EXPECT_EQ(gpu.kind, DeviceSpec::Kind::kUuid);
  EXPECT_EQ(gpu.text(), "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
  EXPECT_EQ(parse_device("MIG-GPU-8932f937/1/0").kind, DeviceSpec::Kind::kUuid);
  EXPECT_EQ(parse_device("cuda:2").text(), "cuda:2");
  EXPECT_EQ(parse_device("cpu").text(), "cpu");
}

TEST(Device, RejectsMalformedDevicesNamingTheForms) {
  for (const char* bad : {"", "CPU", "gpu", "cuda:", "cuda:-1", "cuda:1024", "cuda:01x",
                          "cuda:99999", "cuda 0", "GPU-", "GPU-ab cd", "MIG-\x01", "tpu:0"}) {
    try {
      parse_device(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("expected 'cpu', 'cuda', 'cuda:N'"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(parse_device("GPU-" + std::string(200, 'a')), std::invalid_argument);
}

TEST(Device, CpuResolvesWithoutCuda) {
  EXPECT_EQ(resolve_device(parse_device("cpu"), DeviceEnvironment{}), -1);
}

TEST(Device, CudaOnACpuOnlyBuildSaysSo) {
  EXPECT_EQ(resolve_error("cuda", DeviceEnvironment{false, 0, std::nullopt}),
            "device 'cuda:0': this tessera was built against a CPU-only libtorch (build with a "
            "CUDA libtorch: docs/serve.md#serving-on-gpus)");
  EXPECT_NE(resolve_error("GPU-abc", DeviceEnvironment{false, 4, "GPU-abc"}).find("CPU-only"),
            std::string::npos);
}

TEST(Device, NoVisibleDeviceAndOrdinalsBeyondTheVisibleOnes) {
  EXPECT_EQ(resolve_error("cuda:0", gpus(0, "")),
            "device 'cuda:0': no CUDA device visible (CUDA_VISIBLE_DEVICES='')");
  EXPECT_EQ(resolve_device(parse_device("cuda:1"), gpus(2)), 1);
  EXPECT_EQ(resolve_error("cuda:2", gpus(2)),
            "device 'cuda:2': CUDA ordinal 2 but only 2 CUDA device(s) visible "
            "(CUDA_VISIBLE_DEVICES unset)");
}

TEST(Device, UuidIsItsPositionInCudaVisibleDevices) {
  const std::string cvd = "GPU-aaaa1111, MIG-bbbb2222-0000,GPU-cccc3333-4444";
  EXPECT_EQ(resolve_device(parse_device("GPU-aaaa1111"), gpus(3, cvd)), 0);
  // A UUID longer than the listed prefix (CUDA accepts unique prefixes) and the reverse.
  EXPECT_EQ(resolve_device(parse_device("MIG-bbbb2222-0000-1111"), gpus(3, cvd)), 1);
  EXPECT_EQ(resolve_device(parse_device("GPU-cccc"), gpus(3, cvd)), 2);
  EXPECT_NE(resolve_error("GPU-dddd", gpus(3, cvd)).find("is not listed in CUDA_VISIBLE_DEVICES"),
            std::string::npos);
  EXPECT_NE(resolve_error("GPU-aaaa1111", gpus(2)).find("CUDA_VISIBLE_DEVICES, which is unset"),
            std::string::npos);
  EXPECT_NE(resolve_error("GPU-aa", gpus(2, "GPU-aaaa1111,GPU-aabb")).find("two entries"),
            std::string::npos);
  // Index entries count for positions; the UUID's position must be a visible ordinal.
  EXPECT_EQ(resolve_device(parse_device("GPU-cccc3333"), gpus(2, "0,GPU-cccc3333")), 1);
  EXPECT_NE(resolve_error("GPU-cccc3333", gpus(1, "0,GPU-cccc3333")).find("only 1 CUDA device"),
            std::string::npos);
}

ModelsConfig parse(const std::string& yaml) {
  return parse_models_config(SpecNode::load_string(yaml, "models.yaml"));
}

TEST(ModelsDevice, PerModelFieldTopLevelDefaultAndFlag) {
  ModelsConfig c = parse(R"(
device: cuda:1
models:
  - {variant: a, zoo: noop, input: [4], device: cpu}
  - {variant: b, zoo: noop, input: [4]}
)");
  ASSERT_TRUE(c.models[0].device);
  EXPECT_TRUE(c.models[0].device->device.is_cpu());
  EXPECT_EQ(c.models[0].device->file, "models.yaml");
  EXPECT_EQ(c.models[0].device->field, "models[0].device");
  EXPECT_FALSE(c.models[1].device);  // the default is filled in by spec_for
  EXPECT_EQ(c.spec_for("b").device->device.text(), "cuda:1");
  EXPECT_EQ(c.spec_for("b").device->field, "device");
  EXPECT_EQ(c.spec_for("resnet18").device->device.text(), "cuda:1");
  // --device replaces the file's default; a model's own field still wins.
  c.set_default_device("cpu");
  EXPECT_TRUE(c.spec_for("b").device->device.is_cpu());
  EXPECT_EQ(c.spec_for("b").device->field, "--device");
  c.set_default_device("cuda:2");
  EXPECT_EQ(c.spec_for("b").device->device.text(), "cuda:2");
  EXPECT_TRUE(c.spec_for("a").device->device.is_cpu());
  // No device anywhere: the CPU.
  EXPECT_TRUE(parse("models: []").spec_for("small_cnn").device->device.is_cpu());
}

TEST(ModelsDevice, MalformedDeviceErrorsNameTheFieldOrFlag) {
  try {
    parse("models: [{variant: a, zoo: noop, device: gpu0}]");
    ADD_FAILURE();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "models.yaml");
    EXPECT_EQ(e.field(), "models[0].device");
    EXPECT_NE(e.problem().find("bad device 'gpu0'"), std::string::npos);
  }
  EXPECT_THROW(parse("device: [cuda]"), SpecError);
  ModelsConfig c;
  try {
    c.set_default_device("cuda:x");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--device: bad device 'cuda:x'", 0), 0u) << e.what();
  }
}

TEST(ModelsDevice, ExplicitCpuRunsTheModelOnTheCpu) {
  const ModelsConfig c =
      parse("models: [{variant: s, zoo: small_cnn, input: [3, 16, 16], classes: 4, device: cpu}]");
  const auto model = load_model(c.spec_for("s"));
  EXPECT_EQ(model->info().device, "cpu");
  FloatTensor x{{3, 16, 16}, std::vector<float>(3 * 16 * 16, 0.5f)};
  const FloatTensor* one[] = {&x};
  EXPECT_EQ(model->run(one).at(0).shape, (std::vector<int64_t>{4}));
}

// On this CPU-only build, asking for cuda is an error naming the file, the field and the
// variant, for a libtorch model and for an emulation alike; never a crash.
TEST(ModelsDevice, CudaOnACpuOnlyBuildNamesFileFieldAndVariant) {
  if (torch_device_environment().built_with_cuda) GTEST_SKIP() << "built with the CUDA path";
  ModelsConfig c = parse(R"(
models:
  - {variant: det, zoo: small_cnn, input: [3, 16, 16], device: cuda}
  - {variant: emu, emulate: profile, device: "GPU-1234abcd"}
)");
  for (const char* variant : {"det", "emu"}) {
    try {
      load_model(c.spec_for(variant));
      ADD_FAILURE() << variant;
    } catch (const SpecError& e) {
      EXPECT_EQ(e.file(), "models.yaml");
      EXPECT_EQ(e.field(), variant == std::string("det") ? "models[0].device" : "models[1].device");
      EXPECT_NE(e.problem().find(std::string("variant '") + variant + "'"), std::string::npos);
      EXPECT_NE(e.problem().find("this tessera was built against a CPU-only libtorch"),
                std::string::npos);
    }
  }
  c.set_default_device("cuda:0");
  try {
    load_model(c.spec_for("small_cnn"));
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--device: variant 'small_cnn': device 'cuda:0': this "
                                          "tessera was built against a CPU-only libtorch",
                                          0),
              0u)
        << e.what();
  }
}

// The decoder's refusal of cuda:1 on this CPU-only build begins the message.
void expect_cuda1_refused_on_cpu_build(const std::runtime_error& e) {
  EXPECT_EQ(std::string(e.what()).rfind(
                "device 'cuda:1': this tessera was built against a CPU-only libtorch", 0),
            0u)
      << e.what();
}

// The LLM decoder takes the same device: cpu resolves, cuda on this CPU-only build is the
// same clear error, raised before the checkpoint is read.
TEST(DecoderDevice, CpuResolvesAndCudaOnACpuOnlyBuildIsAClearError) {
  EXPECT_EQ(Decoder::check_device(parse_device("cpu")), -1);
  if (torch_device_environment().built_with_cuda) GTEST_SKIP() << "built with the CUDA path";
  DecoderOptions options;
  options.device = parse_device("cuda:1");
  try {
    Decoder::load("/nonexistent-checkpoint", options);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    expect_cuda1_refused_on_cpu_build(e);
  }
}

// `tessera llm step-profile --device` loads its decoder there: cuda on this CPU-only build is
// the decoder's clear error, before any checkpoint is read or profile written.
TEST(DecoderDevice, StepProfileTakesTheDevice) {
  if (torch_device_environment().built_with_cuda) GTEST_SKIP() << "built with the CUDA path";
  StepProfileOptions options;
  options.checkpoint = "/nonexistent-checkpoint";
  options.out = "/nonexistent-dir/profile.yaml";
  options.device = parse_device("cuda:1");
  std::ostringstream report;
  try {
    write_step_profiles(options, report);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    expect_cuda1_refused_on_cpu_build(e);
  }
  EXPECT_EQ(report.str(), "");
}

}  // namespace
}  // namespace tessera
