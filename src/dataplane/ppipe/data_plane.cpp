#include "dataplane/ppipe/data_plane.hpp"

#include <cstdio>
#include <stdexcept>

#include "dataplane/ppipe/reactive_plane.hpp"
#include "dataplane/ppipe/reservation_plane.hpp"

namespace tessera::reservation {

DataPlaneKind parse_data_plane(const std::string& name) {
  if (name == "reservation") return DataPlaneKind::kReservation;
  if (name == "reactive") return DataPlaneKind::kReactive;
  throw std::invalid_argument("unknown data plane '" + name + "' (reservation | reactive)");
}

const char* data_plane_name(DataPlaneKind kind) {
  return kind == DataPlaneKind::kReservation ? "reservation" : "reactive";
}

SetupOptions setup_options_for(DataPlaneKind kind, Time link_latency) {
  SetupOptions o;
  o.link_edges = kind == DataPlaneKind::kReactive;
  o.link_latency = link_latency;
  return o;
}

namespace {

double per(uint64_t a, uint64_t b) {
  return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
}

}  // namespace

DataPlane make_data_plane(const PpipeSetup& setup, DataPlaneKind kind, BatcherOptions options,
                          std::shared_ptr<NicTables> nics) {
  DataPlane out;
  if (kind == DataPlaneKind::kReactive && nics != nullptr) {
    throw std::invalid_argument(
        "shared NIC tables need the reservation data plane (the reactive plane moves bytes on "
        "each engine's own links)");
  }
  if (kind == DataPlaneKind::kReservation) {
    auto plane = ReservationPlane::create(setup, options, std::move(nics));
    out.policies = plane->policies();
    out.summary = [plane] {
      const PlaneStats& s = plane->stats();
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "reservation data plane: %llu batches (mean size %.2f), %.2f probes per "
                    "batch, %llu dropped at the central queue, %llu transfers (mean %.2f ms, "
                    "p99 %.2f ms, %llu re-slotted)",
                    static_cast<unsigned long long>(s.batches), per(s.batch_items, s.batches),
                    per(plane->probes(), s.batches), static_cast<unsigned long long>(s.drops),
                    static_cast<unsigned long long>(s.transfers), s.transfer_time.mean() * 1e3,
                    s.transfer_time.quantile(0.99) * 1e3,
                    static_cast<unsigned long long>(s.reslotted));
      return std::string(buf);
    };
    out.counts = [plane] {
      const PlaneStats& s = plane->stats();
      return DataPlaneCounts{s.batches,
                             s.batch_items,
                             plane->probes(),
                             s.drops,
                             s.transfers,
                             s.transfer_time.mean() * 1e3,
                             s.transfer_time.quantile(0.5) * 1e3,
                             s.transfer_time.quantile(0.99) * 1e3};
    };
  } else {
    auto plane = ReactivePlane::create(setup, options);
    out.policies = plane->policies();
    out.summary = [plane] {
      const ReactiveStats& s = plane->stats();
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "reactive data plane: %llu batches (mean size %.2f), %llu dropped at the "
                    "pools, %llu transfers (mean %.2f ms, p99 %.2f ms)",
                    static_cast<unsigned long long>(s.batches), per(s.batch_items, s.batches),
                    static_cast<unsigned long long>(s.drops),
                    static_cast<unsigned long long>(s.transfers), s.transfer_time.mean() * 1e3,
                    s.transfer_time.quantile(0.99) * 1e3);
      return std::string(buf);
    };
    out.counts = [plane] {
      const ReactiveStats& s = plane->stats();
      return DataPlaneCounts{s.batches,
                             s.batch_items,
                             0,
                             s.drops,
                             s.transfers,
                             s.transfer_time.mean() * 1e3,
                             s.transfer_time.quantile(0.5) * 1e3,
                             s.transfer_time.quantile(0.99) * 1e3};
    };
  }
  return out;
}

}  // namespace tessera::reservation
