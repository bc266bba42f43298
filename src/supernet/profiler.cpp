#include "supernet/profiler.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "profile/profile_table.hpp"
#include "profile/profile_yaml.hpp"
#include "supernet/accuracy_model.hpp"
#include "supernet/flops.hpp"
#include "supernet/subnet_selection.hpp"
#include "supernet/supernet.hpp"

namespace tessera::supernet {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void write_file(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  if (!out) throw std::runtime_error("cannot write " + file.string());
  out << text;
}

}  // namespace

SupernetProfile profile_supernet(const SupernetProfileOptions& options,
                                 const std::function<void(const ProfiledSubnet&)>& progress) {
  if (options.resolution < 32) throw std::invalid_argument("resolution must be at least 32");
  if (options.batches.empty()) throw std::invalid_argument("no batch sizes to profile");
  if (options.reps < 1) throw std::invalid_argument("reps must be at least 1");
  const auto start = Clock::now();
  const AccuracyModel accuracy = AccuracyModel::load(options.accuracy_csv);
  SupernetProfile profile;
  profile.options = options;
  at::NoGradGuard no_grad;
  Supernet supernet;
  auto gen = at::detail::createCPUGenerator(11);
  const at::Tensor calibration = at::randn(
      {options.calibration_batch, 3, options.resolution, options.resolution}, gen, at::kFloat);
  std::vector<double> actuation_us;
  for (const SubnetConfig& config : select_subnets(options.subnets)) {
    supernet.host(config, calibration);
    ProfiledSubnet p;
    p.config = config;
    const SubnetCost cost = subnet_cost(config);
    p.macs_g = cost.macs / 1e9;
    p.macs_g_profiled = subnet_cost(config, options.resolution).macs / 1e9;
    p.params_m = static_cast<double>(cost.params) / 1e6;
    p.top1 = accuracy.top1(p.macs_g);
    for (int batch : options.batches) {
      if (batch < 1) throw std::invalid_argument("batch sizes must be >= 1");
      const at::Tensor x =
          at::randn({batch, 3, options.resolution, options.resolution}, gen, at::kFloat);
      std::vector<double> times;
      for (int r = 0; r < options.warmup + options.reps; ++r) {
        const auto t0 = Clock::now();
        const ActiveSubnet active = supernet.actuate(config);
        const double actuated = ms_since(t0);
        const at::Tensor y = run_subnet(active, x);
        (void)y.data_ptr<float>();
        if (r >= options.warmup) {
          times.push_back(ms_since(t0));
          actuation_us.push_back(actuated * 1000.0);
        }
      }
      p.latency_ms.emplace_back(batch, median(times));
    }
    if (progress) progress(p);
    profile.subnets.push_back(std::move(p));
  }
  profile.actuation_us = median(actuation_us);
  profile.seconds = ms_since(start) / 1000.0;
  return profile;
}

void write_supernet_profile(const SupernetProfile& profile, const std::filesystem::path& dir,
                            std::optional<double> slo_ms) {
  if (profile.subnets.empty()) throw std::invalid_argument("empty supernet profile");
  std::filesystem::create_directories(dir);
  const SupernetProfileOptions& o = profile.options;
  const std::string source = fmt::format(
      "tessera supernet profile (OFA-ResNet50 supernet, SubNetAct, {}x{} input, "
      "median of {})",
      o.resolution, o.resolution, o.reps);
  ProfileTable table;
  for (const ProfiledSubnet& s : profile.subnets) {
    for (const auto& [batch, ms] : s.latency_ms) {
      table.add(s.config.name(), o.segment, batch, ms, ProfileOrigin::kMeasured, source);
    }
  }
  std::ostringstream yaml;
  write_profile_yaml(table, yaml);
  write_file(dir / "profiles.yaml", yaml.str());

  const double slo = slo_ms.value_or(std::ceil(profile.subnets.back().latency_ms.back().second));
  std::ostringstream app;
  app << "# Written by `tessera supernet profile`: one task served by the pareto subnets of an\n"
      << "# OFA-ResNet50 supernet through SubNetAct. Accuracy: ImageNet top-1 / 100 from\n"
      << "# data/supernet/ofa_resnet50_accuracy.csv (docs/supernet.md).\n"
      << "name: supernet_classification\n"
      << "slo_ms: " << slo << "\n"
      << "tasks:\n"
      << "  - name: classify\n"
      << "    variants:\n";
  for (const ProfiledSubnet& s : profile.subnets) {
    app << fmt::format("      - {{name: \"{}\", accuracy: {:.4f}}}\n", s.config.name(),
                       s.top1 / 100.0);
  }
  write_file(dir / "app.yaml", app.str());

  std::ostringstream csv;
  csv << "subnet,id,macs_g_224,macs_g_profiled,params_m,top1";
  for (const auto& [batch, ms] : profile.subnets.front().latency_ms)
    csv << ",latency_ms_b" << batch;
  csv << "\n";
  for (const ProfiledSubnet& s : profile.subnets) {
    csv << fmt::format("{},{},{:.4f},{:.4f},{:.3f},{:.2f}", s.config.name(), s.config.id(),
                       s.macs_g, s.macs_g_profiled, s.params_m, s.top1);
    for (const auto& [batch, ms] : s.latency_ms) csv << fmt::format(",{:.3f}", ms);
    csv << "\n";
  }
  write_file(dir / "subnets.csv", csv.str());
}

std::vector<std::string> monotonicity_problems(const SupernetProfile& profile) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < profile.subnets.size(); ++i) {
    const ProfiledSubnet& s = profile.subnets[i];
    for (std::size_t b = 1; b < s.latency_ms.size(); ++b) {
      if (s.latency_ms[b].second < s.latency_ms[b - 1].second) {
        problems.push_back(
            fmt::format("P1: {} is faster at batch {} ({:.3f} ms) than at batch {} "
                        "({:.3f} ms)",
                        s.config.name(), s.latency_ms[b].first, s.latency_ms[b].second,
                        s.latency_ms[b - 1].first, s.latency_ms[b - 1].second));
      }
    }
    if (i == 0) continue;
    const ProfiledSubnet& prev = profile.subnets[i - 1];
    for (std::size_t b = 0; b < s.latency_ms.size(); ++b) {
      if (s.latency_ms[b].second < prev.latency_ms[b].second) {
        problems.push_back(
            fmt::format("P2: at batch {} {} ({:.2f}%, {:.3f} ms) is faster than "
                        "{} ({:.2f}%, {:.3f} ms)",
                        s.latency_ms[b].first, s.config.name(), s.top1, s.latency_ms[b].second,
                        prev.config.name(), prev.top1, prev.latency_ms[b].second));
      }
    }
  }
  return problems;
}

}  // namespace tessera::supernet
