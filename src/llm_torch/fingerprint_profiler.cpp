#include "llm_torch/fingerprint_profiler.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <stdexcept>

#include "llm_arch/checkpoint_layout.hpp"
#include "llm_arch/deployment_config.hpp"
#include "llm_torch/host_memory.hpp"
#include "llm_torch/memory_meter.hpp"

namespace tessera {
namespace {

std::vector<int64_t> prompt_of(int64_t tokens, int64_t vocab) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < tokens; ++i) p.push_back((7 + 31 * i) % vocab);
  return p;
}

// One request: a prefill, then `n` decode steps (n tokens after the first).
void serve(const Decoder& d, const std::vector<int64_t>& prompt, int64_t n) {
  const auto seq = d.start(static_cast<int64_t>(prompt.size()) + n + 1);
  std::vector<float> logits = d.step(*seq, prompt);
  for (int64_t i = 0; i < n; ++i) {
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    logits = d.step(*seq, {best});
  }
}

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times batch-1 requests on each decoder: `warmups` untimed requests of the longest length on
// each, then `repeats` rounds in which every (output length, decoder) pair serves one request
// in turn, so that a change in what else the machine runs falls on every length and every
// decoder alike (the TPOT is a difference of lengths, the per-layer cost a difference of
// decoders). Medians per decoder and length.
struct Timings {
  std::vector<double> seconds, cpu_seconds;
};
std::vector<Timings> time_requests(const std::vector<const Decoder*>& decoders,
                                   const MeasureOptions& how) {
  using Clock = std::chrono::steady_clock;
  const int64_t longest = *std::max_element(how.output_lengths.begin(), how.output_lengths.end());
  std::vector<std::vector<int64_t>> prompts;
  for (const Decoder* d : decoders) {
    prompts.push_back(prompt_of(how.prompt_tokens, d->architecture().vocab));
    for (int w = 0; w < how.warmups; ++w) serve(*d, prompts.back(), longest);
  }
  const std::size_t lengths = how.output_lengths.size();
  std::vector<std::vector<std::vector<double>>> wall(decoders.size(),
                                                     std::vector<std::vector<double>>(lengths)),
      cpu = wall;
  for (int r = 0; r < how.repeats; ++r) {
    for (std::size_t i = 0; i < lengths; ++i) {
      for (std::size_t d = 0; d < decoders.size(); ++d) {
        const double c0 = process_cpu_seconds();
        const auto t0 = Clock::now();
        serve(*decoders[d], prompts[d], how.output_lengths[i]);
        wall[d][i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        cpu[d][i].push_back(process_cpu_seconds() - c0);
      }
    }
  }
  std::vector<Timings> out(decoders.size());
  for (std::size_t d = 0; d < decoders.size(); ++d) {
    for (std::size_t i = 0; i < lengths; ++i) {
      out[d].seconds.push_back(median(wall[d][i]));
      out[d].cpu_seconds.push_back(median(cpu[d][i]));
    }
  }
  return out;
}

}  // namespace

Measurement measure_checkpoint(const std::filesystem::path& checkpoint,
                               const DecoderOptions& options, const MeasureOptions& how,
                               bool memory, bool latency) {
  return measure_alongside(checkpoint, options, {}, how, memory, latency).front();
}

std::vector<Measurement> measure_alongside(const std::filesystem::path& checkpoint,
                                           const DecoderOptions& options,
                                           const std::vector<std::filesystem::path>& alongside,
                                           const MeasureOptions& how, bool memory, bool latency) {
  if (how.output_lengths.empty() || how.repeats < 1 || how.prompt_tokens < 1) {
    throw std::invalid_argument("a measurement needs output lengths, a prompt and a repeat");
  }
  memory_meter::install();
  host_memory::hold_freed_host_memory();  // a request's buffers do not depend on the last's
  // One intra-op thread per shard at every TP (the decoder sets it for TP > 1; TP 1 must
  // match, or its timings would use a thread pool the shards do not have).
  at::set_num_threads(1);
  std::vector<Measurement> out(1 + alongside.size());
  const uint64_t before = memory_meter::current();
  const auto decoder = Decoder::load(checkpoint, options);
  const std::vector<int64_t> prompt = prompt_of(how.prompt_tokens, decoder->architecture().vocab);
  const int64_t longest = *std::max_element(how.output_lengths.begin(), how.output_lengths.end());
  if (memory) {
    memory_meter::reset_peak();
    serve(*decoder, prompt, longest);
    out[0].peak_bytes = static_cast<double>(memory_meter::peak() - before);
  }
  if (latency) {
    // The others at PP 1 with the same TP and quantisation, loaded after the peak was read.
    std::vector<std::unique_ptr<Decoder>> others;
    std::vector<const Decoder*> timed_decoders{decoder.get()};
    for (const auto& dir : alongside) {
      others.push_back(Decoder::load(
          dir, {options.weights, options.kv_cache, options.tp, 1, {}, options.device}));
      timed_decoders.push_back(others.back().get());
    }
    const auto timed = time_requests(timed_decoders, how);
    for (std::size_t d = 0; d < out.size(); ++d) {
      out[d].seconds = timed[d].seconds;
      out[d].cpu_seconds = timed[d].cpu_seconds;
    }
  }
  return out;
}

FingerprintProfile profile_fingerprints(const std::filesystem::path& checkpoint,
                                        const std::filesystem::path& work_dir,
                                        const std::vector<CompressionProfile>& compressions,
                                        const std::vector<int>& tps, const MeasureOptions& how,
                                        std::pair<int64_t, int64_t> depths) {
  const LlmArchitecture arch = load_llm_architecture(checkpoint / "config.json");
  if (depths.first < 1 || depths.first >= depths.second || depths.second > arch.layers) {
    throw std::invalid_argument(
        "fingerprint depths must be 1 <= a < b <= " + std::to_string(arch.layers) + " layers");
  }
  if (how.output_lengths.size() < 2) {
    throw std::invalid_argument("latency profiling needs two output lengths");
  }
  host_memory::hold_freed_host_memory();  // before `device` below records it
  std::filesystem::create_directories(work_dir);
  const int64_t depth[2] = {depths.first, depths.second};
  const std::filesystem::path fp[2] = {work_dir / ("fp" + std::to_string(depth[0])),
                                       work_dir / ("fp" + std::to_string(depth[1]))};
  for (int i = 0; i < 2; ++i) {
    std::filesystem::remove_all(fp[i]);
    write_fingerprint(checkpoint, depth[i], fp[i]);
  }
  FingerprintProfile profile;
  profile.model = arch.name;
  profile.layers = arch.layers;
  profile.device = how.device.is_cpu() ? "cpu (libtorch, 1 intra-op thread per shard)"
                                       : how.device.text() + " (libtorch, every shard on it)";
  if (host_memory::holding_freed_host_memory()) profile.device += "; freed host memory held";
  profile.prompt_tokens = how.prompt_tokens;
  profile.repeats = how.repeats;
  profile.depths = depths;
  const bool tp2 = parallelism_problem(arch, Parallelism{2, 1}).empty();
  for (CompressionProfile c : compressions) {
    c.memory.clear();
    c.latency.clear();
    for (int f = 0; f < 2; ++f) {
      const int64_t layers = depth[f];
      const auto& dir = fp[f];
      struct Point {
        int tp, pp;
      };
      std::vector<Point> points{{1, 1}, {1, 2}};
      if (tp2) points.push_back({2, 1});
      for (const Point& p : points) {
        DecoderOptions o{c.weights, c.kv_cache, p.tp, p.pp, {}, how.device};
        if (p.pp == 2 && layers == 1) o.stage_layers = {1, 0};  // else split evenly
        const Measurement m = measure_checkpoint(dir, o, how, true, false);
        c.memory.push_back({layers, p.tp, p.pp, m.peak_bytes});
      }
    }
    // Latency: both fingerprints loaded at once and timed in turn (time_requests), so that a
    // slower spell of the machine does not fall on one depth only and come back multiplied
    // by the extrapolation (the per-layer cost is their difference).
    at::set_num_threads(1);  // as measure_checkpoint: one intra-op thread per shard
    for (int tp : tps) {
      if (!parallelism_problem(arch, Parallelism{tp, 1}).empty()) continue;
      std::vector<std::unique_ptr<Decoder>> loaded;
      for (int f = 0; f < 2; ++f) {
        loaded.push_back(Decoder::load(fp[f], {c.weights, c.kv_cache, tp, 1, {}, how.device}));
      }
      const auto timed = time_requests({loaded[0].get(), loaded[1].get()}, how);
      for (int f = 0; f < 2; ++f) {
        for (std::size_t i = 0; i < how.output_lengths.size(); ++i) {
          c.latency.push_back(
              {depth[f], tp, how.output_lengths[i], timed[f].seconds[i], timed[f].cpu_seconds[i]});
        }
      }
    }
    profile.compressions.push_back(std::move(c));
  }
  return profile;
}

}  // namespace tessera
