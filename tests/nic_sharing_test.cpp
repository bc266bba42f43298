// NIC sharing across DNNs in PPipe's reservation data plane (issue 12): the NIC tables of a
// server are one set for every DNN whose vGPUs sit on it (dataplane/ppipe/nic_tables.hpp), and
// the DNNs' engines advance on one virtual time (sim/co_simulation.hpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "dataplane/ppipe/book.hpp"
#include "dataplane/ppipe/nic_tables.hpp"
#include "dataplane/ppipe/reservation_plane.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "reservation_usage.hpp"
#include "sim/co_simulation.hpp"
#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera::reservation {
namespace {

const std::filesystem::path kTimings = std::filesystem::path(TESSERA_SOURCE_DIR) / "data" /
                                       "profiles" / "ppipe" / "models" / "block-timing-tf32";

// Two-stage pipeline of one DNN: a vGPU on server `first` sends 1 byte per item (1 s at
// bandwidth 1) to a vGPU on server `second`; each step takes 1 s.
struct Dnn {
  ReservationBook book;
  PipelinePlan pipe;
  Dnn(std::shared_ptr<NicTables> nics, const std::string& first, const std::string& second) {
    if (nics) book.share_nics(std::move(nics));
    const LinkParams p{1.0, 0.0};
    const uint32_t a =
        book.add_vgpu(book.add_link(first + "/up", p), book.add_link(first + "/down", p));
    const uint32_t b =
        book.add_vgpu(book.add_link(second + "/up", p), book.add_link(second + "/down", p));
    pipe.batch = 1;
    pipe.pools = {PoolPlan{{a}, {0.0, 1.0}, 0.0}, PoolPlan{{b}, {0.0, 1.0}, 1.0}};
  }
};

TEST(NicTables, ATransferOfOneDnnDelaysTheOthersReservation) {
  // DNN A sends from server S0 to S1, DNN B from S0 to S2: both need S0's uplink.
  auto nics = std::make_shared<NicTables>();
  Dnn a(nics, "S0", "S1");
  Dnn b(nics, "S0", "S2");
  EXPECT_EQ(a.book.uplink_of(a.pipe.pools[0].members[0]),
            b.book.uplink_of(b.pipe.pools[0].members[0]));  // one table for S0's uplink
  const Offer oa = a.book.probe(a.pipe, 1, 0.0);
  EXPECT_DOUBLE_EQ(oa.hop[1].xfer_start, 1.0);  // after A's first step
  a.book.reserve(oa, (nics->next_id_space() << NicTables::kSpaceShift) + 1);
  const Offer ob = b.book.probe(b.pipe, 1, 0.0);
  EXPECT_DOUBLE_EQ(ob.hop[1].xfer_start, 2.0);  // S0's uplink is A's during [1, 2)
  EXPECT_DOUBLE_EQ(ob.finish, 4.0);
  EXPECT_DOUBLE_EQ(ob.wait, 1.0);

  // Without sharing, B's table of S0's uplink is empty: its transfer starts at 1.
  Dnn alone_a(nullptr, "S0", "S1");
  Dnn alone_b(nullptr, "S0", "S2");
  alone_a.book.reserve(alone_a.book.probe(alone_a.pipe, 1, 0.0), 1);
  EXPECT_DOUBLE_EQ(alone_b.book.probe(alone_b.pipe, 1, 0.0).hop[1].xfer_start, 1.0);
}

TEST(NicTables, OneServerNamedWithTwoBandwidthsIsAnError) {
  NicTables nics;
  const uint32_t up = nics.named("S0/up", {1.0, 0.0});
  EXPECT_EQ(nics.named("S0/up", {1.0, 0.0}), up);
  EXPECT_NE(nics.named("S1/up", {1.0, 0.0}), up);
  EXPECT_THROW(nics.named("S0/up", {2.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(nics.add({0.0, 0.0}), std::invalid_argument);
  ReservationBook book;
  book.add_link({1.0, 0.0});
  EXPECT_THROW(book.share_nics(std::make_shared<NicTables>()), std::logic_error);
}

// Two DNNs (both wide_resnet101_2), each one pipeline T4 [0,4) -> L4 [4,10); the cluster's
// two T4s share one server (T4-s0), the L4s are one per server: the DNNs' first partitions
// send their cuts through the same uplink.
ppipe::PpipePlan two_dnn_plan() {
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"T4", 2, 2, 10.0, 1}, {"L4", 2, 1, 10.0, 1}};
  for (int m = 0; m < 2; ++m) {
    ppipe::DnnPlan d;
    d.dnn = "wide_resnet101_2";
    d.slo_ms = 200.0;
    ppipe::Pipeline p;
    p.batch = 1;
    p.partitions.push_back({0, 4, "T4", 1, 1});
    p.partitions.push_back({4, 10, "L4", 1, 1});
    d.pipelines = {p};
    plan.dnns.push_back(d);
  }
  return plan;
}

struct TwoRun {
  std::vector<PlaneStats> stats;
  std::vector<ReservationPlane::Usage> links;  // both planes' link uses (shared ids when shared)
  uint64_t submitted = 0, finished = 0;
};

TwoRun run_two(bool shared, double rate, uint64_t seed) {
  const ppipe::PpipePlan plan = two_dnn_plan();
  const auto blocks = load_ppipe_model(kTimings, "wide_resnet101_2");
  std::vector<PpipeSetup> setups = {build_setup(plan, 0, blocks), build_setup(plan, 1, blocks)};
  auto nics = shared ? std::make_shared<NicTables>() : nullptr;
  std::vector<std::shared_ptr<ReservationPlane>> planes;
  std::vector<std::unique_ptr<Simulator>> sims;
  std::vector<std::unique_ptr<ArrivalSource>> sources;
  for (std::size_t m = 0; m < 2; ++m) {
    planes.push_back(ReservationPlane::create(setups[m], {}, nics));
    planes.back()->keep_history(true);
    SimOptions so;
    so.seed = seed + m;
    sims.push_back(std::make_unique<Simulator>(setups[m].app, setups[m].deployment,
                                               setups[m].profiles, planes.back()->policies(), so,
                                               EngineOptions{}));
    sources.push_back(std::make_unique<Bounded>(std::make_unique<PoissonSource>(rate, seed + m),
                                                std::nullopt, 600));
  }
  run_together({sims[0].get(), sims[1].get()}, {sources[0].get(), sources[1].get()});
  TwoRun r;
  for (std::size_t m = 0; m < 2; ++m) {
    r.stats.push_back(planes[m]->stats());
    for (const auto& u : planes[m]->usage()) {
      if (u.link) r.links.push_back(u);
    }
    r.submitted += sims[m]->metrics().submitted();
    r.finished += sims[m]->metrics().finished();
  }
  return r;
}

using testing::worst_overlap;

TEST(SharedNics, TwoDnnsOnOneServerContendForItsUplink) {
  // 2.23 MB per item at 10 Gb/s x 0.2 = 250 MB/s: 8.9 ms of S0's uplink per request, so
  // at 40 req/s each DNN alone keeps it 36 % busy and both together 71 %.
  const TwoRun alone = run_two(false, 40.0, 3);
  const TwoRun shared = run_two(true, 40.0, 3);
  EXPECT_EQ(alone.submitted, 1200u);
  EXPECT_EQ(shared.submitted, 1200u);
  EXPECT_EQ(shared.finished, shared.submitted);  // every request ends once (run_together checks)
  // Alone, the two planes book the same server's uplink in two separate tables: taken
  // together their transfers overlap on the one physical link. Shared: never.
  EXPECT_GT(worst_overlap(alone.links, true), 1e-3);
  EXPECT_LE(worst_overlap(shared.links, true), 1e-12);
  // Contention shows in the transfer times (sender end to arrival, waits included).
  double alone_mean = 0.0, shared_mean = 0.0;
  for (int m = 0; m < 2; ++m) {
    alone_mean += alone.stats[static_cast<std::size_t>(m)].transfer_time.mean() / 2;
    shared_mean += shared.stats[static_cast<std::size_t>(m)].transfer_time.mean() / 2;
    EXPECT_GT(shared.stats[static_cast<std::size_t>(m)].transfers, 500u);
  }
  EXPECT_GT(shared_mean, alone_mean * 1.05);
}

}  // namespace
}  // namespace tessera::reservation
