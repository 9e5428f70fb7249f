// The double binary tree's closed form walks its first piece up and its last piece down every channel's two trees,
// hop by hop (a parent joins its children one after the other, and forwards down to both at once), rather than a
// level at a time: a path up or down crosses the network once where a level of the heap mixes network and NVLink
// hops. Each hop runs at the least, over the links of its route, of link rate / the hops counted there, and what
// counts is found by a fixed point:
//  1. first, the hops of its wave (hop_classes.hpp tree_wave_positions: the edges that climb, or descend, at the same
//     time where every hop costs the same), of both trees in every channel, that cross the link;
//  2. then, where it is more, how many hops (both trees, both directions, every channel) run on the link on average
//     over the hop's own span in the walk so far. The walk is run again with the new counts until none grows (they
//     only grow, so it ends; kMaxTreeRounds bounds it).
// Step 2 keeps the walk from running ahead of the flow engine where hops are unequal: a hop that starts early under a
// fast parent shares its links with the slow hops of the wave before it, still running elsewhere. Like the flow
// engine, the walk is then not monotone in every link's rate and latency: making one link faster moves which hops
// overlap (monotonicity_test.cpp bounds how much).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/collective/closed_form_steps.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::closed_form {

// Rounds of the walk at most, and the growth below which a count has settled. At 1024 ranks of dgx-a100 (8 channels,
// 25 MiB) the walk's time settles by the ninth round, the eighth 0.02 % short of it.
inline constexpr int kMaxTreeRounds = 8;
inline constexpr double kCountTolerance = 1e-3;

// Hop of heap position `child` (1 .. p-1) of tree 0 (A, over channel `order`'s order) or 1 (B, over it reversed),
// child -> parent, or parent -> child when `down`: its index among a walk's hops.
inline std::size_t tree_hop_index(int p, int order, int tree, bool down, int child) {
  return ((static_cast<std::size_t>(order) * 2 + tree) * 2 + down) * static_cast<std::size_t>(p - 1) + child - 1;
}

// The hops of both trees' climb and descent over each channel's order (tree_hop_index), routed once.
struct TreeHops {
  int p = 0, orders = 0;
  std::vector<int> wave;  // per hop: 2 x tree_wave of its child + 1 going down
  std::vector<PathCost> cost;
  std::vector<char> same_node;
  std::vector<std::uint32_t> link_begin;  // hop h crosses links[link_begin[h] .. link_begin[h + 1])
  std::vector<LinkId> links;
  // Per index into `links` (a crossing): its hop, the hops of that hop's wave on the link, and the link's rate.
  std::vector<std::uint32_t> hop_of, wave_count;
  std::vector<double> link_Bps;
  std::vector<std::uint32_t> crossing_begin;  // per link id: crossings[crossing_begin[l] .. crossing_begin[l + 1])
  std::vector<std::uint32_t> crossings;       // indices into `links`
  std::vector<LinkId> mixed_links;            // the links crossed by hops of more than one wave
};
// Over `channels` orders of `order`, rotated inside blocks of rotation_block positions (schedule_parts::channel_order).
TreeHops route_tree_hops(const Topology& topology, const std::vector<int>& order, int rotation_block, int channels);

// From the start until the last piece of pieces of `piece` bytes has reached every rank: piece 0 climbs, the last
// descends `between` after it reached the root (the pieces between follow in the pipeline); the slowest tree and
// channel ends it. `rounds`: how many walks at most (1: the waves' counts alone).
TimePs tree_first_and_last_ps(const Steps& steps, const TreeHops& hops, Bytes piece, TimePs between,
                              int rounds = kMaxTreeRounds);

// The same walk over one order, every hop of a (tree, direction, wave) at wave_ps(tree, wave, down): beyond
// kRoutedMaxRanks participants, where the hops are not routed.
TimePs tree_first_and_last_ps(const Steps& steps, int p, Bytes piece, TimePs between,
                              const std::function<TimePs(int tree, int wave, bool down)>& wave_ps);

}  // namespace commsim::closed_form
