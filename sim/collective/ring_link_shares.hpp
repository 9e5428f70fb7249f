// What a ring's channels leave each hop of their links. The channels of a ring over whole nodes run rotated orders
// (schedule_parts::channel_order): each channel's ring crosses its own hops between nodes and all but one of the
// node's hops inside it, and a hop's route may cross links that other hops' routes cross too (a hop out of a node
// through PXN crosses the NVSwitch links of the hops inside it; rotated rings cross a link between sockets in one
// direction more often than in the other). A hop then gets, on each link of its route, that link's rate over the
// number of ring edges of all channels that cross it, and its rate is the least of those.
//
// The edges counted are those of the hop's own node and, for a hop between nodes, of the node it enters: every edge
// of every channel that starts or ends there (the node's ring edges, the one entering it and the one leaving it, per
// channel). Edges of other nodes are not counted, even where their routes meet the hop's (a switch between leaves
// that many nodes' hops cross): that is what lets the fast path (hop_classes.hpp ring_shared_classes) find the
// rates from one node per relation to its neighbours.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/topology/topology.hpp"

namespace commsim::closed_form {

// The ring over p positions, position j at rank rank_at(j), whose channels rotate their order inside every block
// of ranks_per_node positions as schedule_parts::channel_order does.
struct RingLayout {
  const Topology& topology;
  std::int64_t p;
  int ranks_per_node;
  int channels;
  std::function<int(std::int64_t)> rank_at;

  // The rank at position j of channel c's order.
  int rank(int channel, std::int64_t j) const;
  // The blocks whose edges hop i (position i to i + 1) counts: its own and the one it enters.
  std::pair<std::int64_t, std::int64_t> window(std::int64_t i) const;
  // The links the edges of every channel in hop i's window cross, a link once per edge that crosses it, sorted.
  std::vector<LinkId> crossings(std::int64_t i) const;
  // The rate hop i of channel 0's order gets on the links of its route, `crossings` those of its window.
  double shared_Bps(std::int64_t i, const std::vector<LinkId>& crossings) const;
};

// The rates of hops from..to - 1 (hops sharing a window count its edges once), each passed to use(i, rate).
template <typename Use>
void for_each_shared_rate(const RingLayout& ring, std::int64_t from, std::int64_t to, Use use) {
  std::pair<std::int64_t, std::int64_t> counted{-1, -1};
  std::vector<LinkId> crossings;
  for (std::int64_t i = from; i < to; ++i) {
    if (ring.window(i) != counted) crossings = ring.crossings(i), counted = ring.window(i);
    use(i, ring.shared_Bps(i, crossings));
  }
}

}  // namespace commsim::closed_form
