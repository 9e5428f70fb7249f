// Schedules run on the flow network once per class of operations that the network cannot tell apart.
//
// Max-min fair rates (progressive filling) depend on a link only through its capacity and how many flows of each
// kind cross it, and on a flow only through how many links of each kind it crosses. Partition the links and the
// operations so that (a) every link of a class has the same capacity and carries the same number of transfers of
// each operation class, (b) every transfer of a class has the same route latency and crosses the same number of
// links of each link class, and (c) every operation of a class has the same kind and size and waits for the same
// number of operations of each class: an equitable partition (Godsil & Royle, "Algebraic Graph Theory", 9.3). Then,
// by induction over the events, the operations of a class start together, get equal rates at every filling round
// (a link class saturates as a whole) and finish together, so one representative per class, standing for the size
// of its class, gives the same times. The coarsest such partition is what colour refinement (1-dimensional
// Weisfeiler-Leman) converges to; it groups what an automorphism would (symmetry.hpp), and more: the ring edges of
// a fabric whose node count is not a multiple of its leaf, which no rotation maps onto each other.
#pragma once

#include <optional>
#include <vector>

#include "sim/collective/schedule.hpp"
#include "sim/network/network.hpp"

namespace commsim {

struct LumpedSchedules {
  LinkQuotient quotient;            // the link classes: representative and size (multiplicity unused: 1)
  std::vector<Schedule> schedules;  // per input schedule: one operation per class, Schedule::copies its class size
  std::uint64_t operations = 0;     // of the input schedules
  std::uint64_t classes = 0;        // operation classes: the operations of the lumped schedules
};

// The coarsest equitable partition of the schedules' operations and the links their transfers cross, and the
// schedules reduced to it. The schedules may run at any times and any number of times at once on one flow network
// over the quotient: each run of a lumped schedule then stands for a run of the full one. nullopt when the
// partition found does not check out as equitable (a collision of the 128-bit class signatures; then run the full
// schedules).
std::optional<LumpedSchedules> lump_schedules(const std::vector<const Schedule*>& schedules, const Topology& topology);

}  // namespace commsim
