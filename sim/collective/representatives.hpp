// Ring collectives generated once per orbit of a symmetry: when rotating the ring by `positions` (or mapping each
// channel onto the next) is an automorphism of the schedule and of the topology's routes, every flow of an orbit
// does exactly what its representative does, shifted, and the flow engine simulates the representatives alone
// (sim/network/symmetry.hpp finds the symmetry, checks it on the links, and falls back to the full schedule).
#pragma once

#include <vector>

#include "sim/collective/collective.hpp"

namespace commsim {

struct RingRepresentatives {
  int channels = 1;   // channels [0, channels) are generated
  int positions = 0;  // in each, ring positions [0, positions); position `positions` stands for position 0
};

// The ring order of every channel of a ring collective, as generate() uses them (participants rotated per channel).
std::vector<std::vector<int>> ring_channel_orders(const CollectiveSpec& spec, const Topology& topology);

// Appends the representatives' operations of a ring allreduce, reduce-scatter or allgather (algorithm Ring, not
// aggregated) that starts with nothing to wait for: the same operations generate() makes for those positions, with
// the dependencies that cross into another representative's orbit pointing to the representative instead.
void generate_ring_representatives(const CollectiveSpec& spec, const Topology& topology,
                                   const RingRepresentatives& reps, Schedule& schedule);

}  // namespace commsim
