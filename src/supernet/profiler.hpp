#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "supernet/supernet_config.hpp"

namespace tessera::supernet {

struct SupernetProfileOptions {
  int resolution = 64;  // square input side; small so that a 2-core CPU profiles in seconds
  std::vector<int> batches{1, 2, 4, 8, 16};
  int subnets = 12;  // the pareto set size (select_subnets)
  int warmup = 1;    // untimed runs per (subnet, batch)
  int reps = 5;      // timed runs per (subnet, batch); the median is kept
  int calibration_batch = 8;
  std::string segment = "cpu";
  std::filesystem::path accuracy_csv;  // data/supernet/ofa_resnet50_accuracy.csv
};

struct ProfiledSubnet {
  SubnetConfig config;
  double macs_g = 0.0;         // at 224x224, the resolution of the accuracy data
  double macs_g_profiled = 0;  // at the profiled resolution
  double params_m = 0.0;       // of the extracted network
  double top1 = 0.0;           // percent, from the accuracy model
  std::vector<std::pair<int, double>> latency_ms;  // (batch, median ms)
};

struct SupernetProfile {
  SupernetProfileOptions options;
  std::vector<ProfiledSubnet> subnets;  // ascending MACs
  double actuation_us = 0.0;            // median time of one actuation while profiling
  double seconds = 0.0;                 // wall time of the whole profile
};

// Hosts the pareto subnets on one supernet (random weights, SubnetNorm calibrated on random
// inputs) and measures the median latency of actuation + forward for every batch size, on the
// current thread with libtorch's current thread count. `progress` is called after each subnet.
SupernetProfile profile_supernet(const SupernetProfileOptions& options,
                                 const std::function<void(const ProfiledSubnet&)>& progress = {});

// Writes into `dir`: profiles.yaml (tessera's profile format, one curve per subnet),
// app.yaml (one task "classify" whose variants are the subnets with their accuracy) and
// subnets.csv (name, choices, MACs, parameters, accuracy, latencies). `slo_ms` defaults to the
// latency of the largest subnet at the largest batch, rounded up to whole milliseconds.
void write_supernet_profile(const SupernetProfile& profile, const std::filesystem::path& dir,
                            std::optional<double> slo_ms = std::nullopt);

// Latency-monotonicity problems (SuperServe P1: latency grows with batch; P2: with accuracy),
// one line each; empty when the profile has none.
std::vector<std::string> monotonicity_problems(const SupernetProfile& profile);

}  // namespace tessera::supernet
