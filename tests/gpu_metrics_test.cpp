// GPU metrics (src/server/gpu_metrics): the Prometheus text in Triton's names from an
// injected sampler, NVML loaded with dlopen from a fake library (the real loading and
// binding code, without a GPU), and the absent-NVML path (nothing exported, one info line).

#include "serve/metrics/gpu_metrics.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace tessera {
namespace {

class FakeSampler final : public GpuSampler {
 public:
  explicit FakeSampler(std::vector<GpuSample> gpus) : gpus_(std::move(gpus)) {}
  std::vector<GpuSample> sample() override { return gpus_; }

 private:
  std::vector<GpuSample> gpus_;
};

TEST(GpuMetrics, RendersTritonNamesPerGpuUuid) {
  FakeSampler sampler({{"GPU-aaaa", 0.25, 1024, 4096}, {"MIG-b\"c", std::nullopt, 0, 2048}});
  EXPECT_EQ(render_gpu_metrics(&sampler),
            "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0) (NVML).\n"
            "# TYPE nv_gpu_utilization gauge\n"
            "nv_gpu_utilization{gpu_uuid=\"GPU-aaaa\"} 0.25\n"
            "# HELP nv_gpu_memory_total_bytes GPU total memory, in bytes (NVML).\n"
            "# TYPE nv_gpu_memory_total_bytes gauge\n"
            "nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-aaaa\"} 4096\n"
            "nv_gpu_memory_total_bytes{gpu_uuid=\"MIG-b\\\"c\"} 2048\n"
            "# HELP nv_gpu_memory_used_bytes GPU used memory, in bytes (NVML).\n"
            "# TYPE nv_gpu_memory_used_bytes gauge\n"
            "nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-aaaa\"} 1024\n"
            "nv_gpu_memory_used_bytes{gpu_uuid=\"MIG-b\\\"c\"} 0\n");
}

TEST(GpuMetrics, NoSamplerOrNoGpuExportsNothing) {
  EXPECT_EQ(render_gpu_metrics(nullptr), "");
  FakeSampler none({});
  EXPECT_EQ(render_gpu_metrics(&none), "");
  // A family with no value for any GPU is left out, header and all.
  FakeSampler bare({{"GPU-x", std::nullopt, std::nullopt, std::nullopt}});
  EXPECT_EQ(render_gpu_metrics(&bare), "");
}

TEST(GpuMetrics, NvmlLoadedWithDlopenFromAFakeLibrary) {
  std::string why;
  auto sampler = open_nvml(TESSERA_FAKE_NVML, &why);
  ASSERT_TRUE(sampler) << why;
  const std::string text = render_gpu_metrics(sampler.get());
  EXPECT_NE(text.find("nv_gpu_utilization{gpu_uuid=\"GPU-11111111-2222-3333-4444-555555555555\"} "
                      "0.42\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("nv_gpu_utilization{gpu_uuid=\"MIG-"), std::string::npos) << text;
  EXPECT_NE(text.find("nv_gpu_memory_total_bytes{gpu_uuid=\"MIG-66666666-7777-8888-9999-"
                      "000000000000\"} 10200547328\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-11111111-2222-3333-4444-"
                      "555555555555\"} 1048576\n"),
            std::string::npos)
      << text;
}

TEST(GpuMetrics, AbsentNvmlIsNullWithAReason) {
  std::string why;
  EXPECT_FALSE(open_nvml("libtessera-no-such-nvml.so.1", &why));
  EXPECT_NE(why.find("cannot load libtessera-no-such-nvml.so.1"), std::string::npos) << why;
  // A library without NVML's functions is refused by name, not called.
  EXPECT_FALSE(open_nvml("libc.so.6", &why));
  EXPECT_EQ(why, "NVML has no nvmlInit_v2");
}

TEST(GpuMetrics, ProcessSamplerLogsItsAbsenceOnce) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("gpu_metrics_test", sink);
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  GpuSampler* first = process_gpu_sampler();
  GpuSampler* second = process_gpu_sampler();
  spdlog::set_default_logger(previous);
  EXPECT_EQ(first, second);
  if (first) GTEST_SKIP() << "this machine has NVML";
  const auto lines = sink->last_formatted();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("no GPU metrics: cannot load libnvidia-ml.so.1"), std::string::npos)
      << lines[0];
  EXPECT_EQ(render_gpu_metrics(first), "");
}

}  // namespace
}  // namespace tessera
