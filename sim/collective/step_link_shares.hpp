// What the hops of one step of a schedule leave each other, for the closed forms of halving-doubling, the 2D ring,
// the hierarchical allreduce, the tree's pipeline steady state (its climb and descent: tree_timeline.hpp), a chain
// and a ring over a rank list. Such a step runs all its hops at once: the same pattern in every channel (each over
// its rotated order, schedule_parts::channel_order) and in every group. Each hop gets, on each link of its route,
// that link's rate over the number of the step's hops that cross it, and its rate is the least of those. This is a
// lower bound of the rate max-min sharing gives the hop (on the link that limits it under max-min, the hop's rate is
// the largest of the rates there, which sum to the link's rate, so at least the link's rate over its hops), and it
// counts every hop of the step wherever it is, links between switches too. The ring over the topology's own order
// counts the edges of the nodes a hop joins instead (ring_link_shares.hpp), which lets its fast path work from one
// node.
#pragma once

#include <functional>
#include <vector>

#include "sim/topology/topology.hpp"

namespace commsim::closed_form {

// The largest communicator whose hops the closed forms route: for the steps' link shares here, and for the busiest
// link's load (closed_form_reference.hpp busiest_link_ps). Routing every hop of every channel and step costs about
// channels x p log p routes; beyond, the steps are priced with the channels' share of a rank's links alone
// (Steps::hop_time without a shared rate) and stand without the busiest-link bound.
inline constexpr int kRoutedMaxRanks = 1024;

struct SharedHop {
  int from = 0, to = 0;  // ranks
  double rate_Bps = 0;
};

using VisitPositions = std::function<void(const std::function<void(int, int)>&)>;

// The hops of a step: `positions` visits pairs of positions into a channel's order, run over each of `channels`
// orders of `order` (rotated inside blocks of rotation_block positions, as schedule_parts::channel_order rotates a
// schedule's channels; channel 0: `order` itself). Hops from a rank to itself are left out. Every hop comes with its
// shared rate, counting on each link the hops `sharing` visits the same way (empty: the hops priced). With `rooted`
// > 0, each channel's order is cut into pieces of that many positions and each piece turned so that the rank `root`
// positions into the same piece of `order` is there again, as a schedule starts every channel's chain at its root.
std::vector<SharedHop> shared_step_hops(const Topology& topology, const std::vector<int>& order, int rotation_block,
                                        int channels, const VisitPositions& positions,
                                        const VisitPositions& sharing = {}, int rooted = 0, int root = 0);

}  // namespace commsim::closed_form
