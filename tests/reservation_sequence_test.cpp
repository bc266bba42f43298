// Algorithm 1's decisions must not depend on how probe() finds them. Two checks:
//  - a reference probe (the paper's greedy written out as a plain scan of every pool
//    member, as the data plane first did it) against ReservationBook::probe on random
//    tables, exactly (same vGPUs, same doubles);
//  - golden sequences: seeded whole runs of the reservation plane hash every reservation
//    they make (path, slots, transfers) and every step that ran; the constants were
//    recorded with the scanning probe (main at a84aeba), before probe() learnt to skip pool
//    members; the same constants come out of both.

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "dataplane/ppipe/batcher.hpp"
#include "dataplane/ppipe/book.hpp"
#include "dataplane/ppipe/reservation_plane.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "reservation_usage.hpp"
#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera::reservation {
namespace {

const std::filesystem::path kTimings = std::filesystem::path(TESSERA_SOURCE_DIR) / "data" /
                                       "profiles" / "ppipe" / "models" / "block-timing-tf32";

// ---- the reference probe -------------------------------------------------------------------

// Every member of every pool, in pool order; a member ending strictly earlier wins.
Offer reference_probe(const ReservationBook& book, const PipelinePlan& pipeline, int batch,
                      Time now) {
  Offer offer;
  offer.batch = batch;
  if (pipeline.pools.empty() || pipeline.pools.size() > kMaxHops) return offer;
  Time t_g = now;
  Time wait = 0.0;
  uint32_t last = 0;
  for (std::size_t k = 0; k < pipeline.pools.size(); ++k) {
    const PoolPlan& pool = pipeline.pools[k];
    if (pool.members.empty()) return Offer{};
    const Time l_i = pool.step_time(batch);
    const double bytes = pool.in_bytes_per_item * batch;
    Hop best;
    Time best_end = std::numeric_limits<Time>::infinity();
    Time best_wait = 0.0;
    for (uint32_t g : pool.members) {
      Hop h;
      h.vgpu = g;
      Time t = t_g;
      Time w = 0.0;
      if (k > 0) {
        h.xfer_len = book.transfer_time(last, g, bytes);
        if (h.xfer_len > 0) {
          h.xfer_start = earliest_common_fit(book.link(book.uplink_of(last)),
                                             book.link(book.downlink_of(g)), t, h.xfer_len);
          w += h.xfer_start - t;
          t = h.xfer_start + h.xfer_len;
        } else {
          h.xfer_start = t;
        }
        t += book.transfer_latency(last, g);
      }
      h.ready = t;
      h.start = book.gpu(g).earliest_fit(t, l_i);
      h.len = l_i;
      w += h.start - t;
      const Time end = h.start + l_i;
      if (end < best_end) {
        best_end = end;
        best = h;
        best_wait = w;
      }
    }
    offer.hop[k] = best;
    wait += best_wait;
    t_g = best_end;
    last = best.vgpu;
  }
  offer.hops = static_cast<int>(pipeline.pools.size());
  offer.finish = t_g;
  offer.wait = wait;
  return offer;
}

void expect_same(const Offer& a, const Offer& b) {
  ASSERT_EQ(a.valid(), b.valid());
  ASSERT_EQ(a.hops, b.hops);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.finish, b.finish);
  EXPECT_EQ(a.wait, b.wait);
  for (int k = 0; k < a.hops; ++k) {
    const Hop& x = a.hop[static_cast<std::size_t>(k)];
    const Hop& y = b.hop[static_cast<std::size_t>(k)];
    SCOPED_TRACE("hop " + std::to_string(k));
    EXPECT_EQ(x.vgpu, y.vgpu);
    EXPECT_EQ(x.xfer_start, y.xfer_start);
    EXPECT_EQ(x.xfer_len, y.xfer_len);
    EXPECT_EQ(x.ready, y.ready);
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.len, y.len);
  }
}

// A random book: servers of 1-4 vGPUs with their own NIC directions (two bandwidths, so
// pools mix link speeds), 3 pools over them, and tables filled by random reservations,
// corrections (overlaps, as overruns leave them) and releases; probed at random times.
TEST(ProbeReference, SameOffersAsTheScanOnRandomTables) {
  std::mt19937_64 rng(20251127);
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  for (int trial = 0; trial < 60; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    ReservationBook book;
    std::vector<uint32_t> vgpus;
    const int servers = 2 + static_cast<int>(rng() % 10);
    for (int s = 0; s < servers; ++s) {
      const double bw = (rng() % 2 ? 1.25e9 : 2.5e9);
      const uint32_t up = book.add_link(LinkParams{bw, rng() % 3 ? 20e-6 : 0.0});
      const uint32_t down = book.add_link(LinkParams{bw, 20e-6});
      const int per = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < per; ++i) vgpus.push_back(book.add_vgpu(up, down));
    }
    PipelinePlan pipe;
    pipe.batch = 1 + static_cast<int>(rng() % 4);
    const int pools = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < pools; ++k) {
      PoolPlan pool;
      for (uint32_t v : vgpus) {
        if (rng() % 3 == 0 || pool.members.empty()) pool.members.push_back(v);
      }
      std::shuffle(pool.members.begin(), pool.members.end(), rng);
      pool.latency.assign(static_cast<std::size_t>(pipe.batch) + 1, 0.0);
      for (int b = 1; b <= pipe.batch; ++b) {
        pool.latency[static_cast<std::size_t>(b)] = uni(2e-3, 6e-3) * (1.0 + 0.6 * (b - 1));
      }
      pool.in_bytes_per_item = k == 0 ? 0.0 : uni(1e5, 3e6);
      pipe.pools.push_back(pool);
    }
    Time now = 0.0;
    uint64_t id = 1;
    for (int step = 0; step < 200; ++step) {
      now += uni(0.0, 4e-3);
      const int b = 1 + static_cast<int>(rng() % static_cast<uint64_t>(pipe.batch));
      if (step % 50 == 49) {
        // A member leaves its pool (as a lost instance does): the probe's index of that
        // pool must follow the pool.
        auto& members = pipe.pools[static_cast<std::size_t>(step / 50) % pipe.pools.size()].members;
        if (members.size() > 1)
          members.erase(members.begin() + static_cast<long>(members.size() / 2));
      }
      const Offer got = book.probe(pipe, b, now);
      const Offer want = reference_probe(book, pipe, b, now);
      expect_same(got, want);
      if (::testing::Test::HasFailure()) return;
      const uint64_t action = rng() % 10;
      if (action < 6) {
        book.reserve(got, id++);  // what a dispatch does
      } else if (action < 8 && id > 1) {
        // Feedback on an earlier batch's first slot: it started late or ran long.
        const uint64_t old = 1 + rng() % (id - 1);
        for (uint32_t v : vgpus) {
          Timeline& t = book.gpu(v);
          for (const Interval& iv : t.intervals()) {
            if (iv.id == ReservationBook::gpu_id(old, 0)) {
              const Time s = iv.start + uni(-1e-3, 2e-3);
              t.correct(iv.id, s, s + (iv.end - iv.start) * uni(0.9, 1.5));
              break;
            }
          }
        }
      } else {
        // Intervals in the past go, as feedback removes them.
        for (uint32_t v : vgpus) {
          std::vector<ReservationId> past;
          for (const Interval& iv : book.gpu(v).intervals()) {
            if (iv.end < now) past.push_back(iv.id);
          }
          for (ReservationId r : past) book.gpu(v).release(r);
        }
        for (uint32_t l = 0; l < book.links(); ++l) {
          std::vector<ReservationId> past;
          for (const Interval& iv : book.link(l).intervals()) {
            if (iv.end < now) past.push_back(iv.id);
          }
          for (ReservationId r : past) book.link(l).release(r);
        }
      }
    }
  }
}

// ---- golden sequences ----------------------------------------------------------------------

struct Fnv {
  uint64_t h = 1469598103934665603ULL;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ULL;
  }
  void u(uint64_t v) { bytes(&v, sizeof v); }
  void d(double v) { u(std::bit_cast<uint64_t>(v)); }
};

// convnext_large cut in 3 partitions on pools of 25 T4, 21 L4 and 39 T4 (PPipe's artifact
// plan for 25 L4 + 75 T4 at 10 Gbit/s, its third pipeline), batch 2, SLO 53.2 ms.
ppipe::PpipePlan convnext_three_partitions() {
  ppipe::PpipePlan plan;
  plan.cluster.bandwidth_fraction = 1.0;
  plan.cluster.classes = {{"L4", 21, 4, 10.0, 4}, {"T4", 64, 2, 10.0, 4}};
  ppipe::DnnPlan d;
  d.dnn = "convnext_large";
  d.slo_ms = 53.22865572033898;
  ppipe::Pipeline p;
  p.batch = 2;
  p.partitions.push_back({0, 4, "T4", 1, 25});
  p.partitions.push_back({4, 8, "L4", 1, 21});
  p.partitions.push_back({8, 10, "T4", 1, 39});
  d.pipelines = {p};
  plan.dnns.push_back(d);
  return plan;
}

struct Scenario {
  ppipe::PpipePlan plan;
  std::string model;
  double rate = 0.0;
  uint64_t requests = 0;
  uint64_t seed = 1;
  double noise = 0.0;
  double first_look = 0.0;
  std::vector<std::pair<Time, WorkerId>> losses;
};

uint64_t sequence_hash(const Scenario& sc) {
  const auto blocks = load_ppipe_model(kTimings, sc.model);
  const PpipeSetup s = build_setup(sc.plan, 0, blocks);
  BatcherOptions opt;
  opt.first_look_fraction = sc.first_look;
  auto plane = ReservationPlane::create(s, opt);
  plane->keep_history(true);
  SimOptions so;
  so.seed = sc.seed;
  so.noise_cv = sc.noise;
  so.worker_losses = sc.losses;
  Simulator sim(s.app, s.deployment, s.profiles, plane->policies(), so, EngineOptions{});
  Bounded arrivals(std::make_unique<PoissonSource>(sc.rate, sc.seed), std::nullopt, sc.requests);
  sim.run(arrivals);
  Fnv f;
  for (const Offer& o : plane->history()) {
    f.u(static_cast<uint64_t>(o.pipeline));
    f.u(static_cast<uint64_t>(o.batch));
    f.d(o.finish);
    f.d(o.wait);
    for (int k = 0; k < o.hops; ++k) {
      const Hop& h = o.hop[static_cast<std::size_t>(k)];
      f.u(h.vgpu);
      f.d(h.xfer_start);
      f.d(h.xfer_len);
      f.d(h.ready);
      f.d(h.start);
      f.d(h.len);
    }
  }
  for (const auto& u : plane->usage()) {
    f.u(u.link ? 1 : 0);
    f.u(u.resource);
    f.d(u.start);
    f.d(u.end);
  }
  const PlaneStats& st = plane->stats();
  for (uint64_t v : {st.batches, st.decisions, st.drops, st.first_look_drops, st.waits,
                     st.transfers, st.reslotted, plane->probes()}) {
    f.u(v);
  }
  for (Outcome o : {Outcome::kOk, Outcome::kLate, Outcome::kDropped, Outcome::kFailed}) {
    f.u(sim.metrics().count(o));
  }
  return f.h;
}

Scenario scenario(ppipe::PpipePlan plan, std::string model, double rate, uint64_t requests,
                  uint64_t seed, double noise = 0.0, double first_look = 0.0,
                  std::vector<std::pair<Time, WorkerId>> losses = {}) {
  return Scenario{std::move(plan), std::move(model), rate, requests, seed, noise,
                  first_look,      std::move(losses)};
}

TEST(ProbeGolden, SameReservationSequenceAsTheScanningProbe) {
  // Light and overloaded, noise, the first-look rule, lost instances; the convnext plan at
  // its planned rate and above.
  const std::vector<std::pair<Scenario, uint64_t>> cases = {
      {scenario(testing::wrn_plan(), "wide_resnet101_2", 250.0, 3000, 7), 0x761a4314c778f6cbULL},
      {scenario(testing::wrn_plan(), "wide_resnet101_2", 600.0, 3000, 3, 0.1),
       0x5309e24534bc111cULL},
      {scenario(testing::wrn_plan(), "wide_resnet101_2", 330.0, 3000, 5, 0.0, 0.95),
       0xfd1d7f0d6eac3303ULL},
      {scenario(testing::wrn_plan(), "wide_resnet101_2", 320.0, 2000, 2, 0.05, 0.0,
                {{1.0, 0}, {2.0, 3}, {3.0, 7}}),
       0x605c82f0883f308bULL},
      {scenario(convnext_three_partitions(), "convnext_large", 4169.562195969496, 20000, 1),
       0xf844230ad71b3790ULL},
      {scenario(convnext_three_partitions(), "convnext_large", 4169.562195969496, 20000, 3, 0.0,
                0.95),
       0xe1996454c8034e93ULL},
      {scenario(convnext_three_partitions(), "convnext_large", 4800.0, 20000, 9, 0.05),
       0x05d95c1ad224a7ebULL},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("scenario " + std::to_string(i));
    const uint64_t h = sequence_hash(cases[i].first);
    EXPECT_EQ(h, cases[i].second) << "got 0x" << std::hex << h;
  }
}

}  // namespace
}  // namespace tessera::reservation
