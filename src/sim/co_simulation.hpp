#pragma once

// Co-simulation: several Simulators (one engine each, e.g. one per DNN of a PPipe plan)
// advanced on one virtual time, so that state they share outside the engines (the NIC
// reservation tables of servers that hold vGPUs of several DNNs, dataplane/ppipe/nic_tables.hpp)
// sees every simulator's actions in time order. Each step processes the earliest next
// arrival or event over all simulators; ties go to the lower index, so a run is
// deterministic. Each simulator keeps its own metrics and accounting checks.
//
// The simulators and sources are borrowed, not owned; one thread.

#include <vector>

#include "sim/simulator.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// Runs sims[i] on arrivals[i] until every stream has ended and every request finished.
// Throws std::invalid_argument when the two lists differ in length or hold a null, and
// what Simulator::finish throws.
void run_together(const std::vector<Simulator*>& sims, const std::vector<ArrivalSource*>& arrivals);

}  // namespace tessera
