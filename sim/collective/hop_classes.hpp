// The distinct hops a closed form prices. A step costs its slowest hop, and a hop's time depends only on its path
// cost and on whether it stays inside a node, so the slowest of a million hops is the slowest of their few distinct
// (path cost, same node) classes: found once per pattern (tree, exchange at a distance, groups of a size), they price
// every message size in constant time, bit for bit as visiting every hop would.
//
// On a topology whose nodes are alike (Topology::node_relation >= 0), the classes of groups and columns are found
// from one node and one hop per relation between nodes, without visiting every group; on any other topology, or a
// collective over an explicit rank list, every hop is visited once.
#pragma once

#include <algorithm>
#include <bit>
#include <vector>

#include "sim/collective/closed_form_steps.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::closed_form {

struct HopClass {
  PathCost cost;
  bool same_node = false;
  double shared_Bps = 0;  // > 0: the rate a ring's channels leave the hop (Steps::hop_time)
};
using HopClasses = std::vector<HopClass>;

// Adds `hop` to `classes` unless a class of the same cost, node side and shared rate is there already.
void add_once(HopClasses& classes, const HopClass& hop);

// The slowest hop of the classes for a piece of `bytes` (0 when there are none).
TimePs slowest(const Steps& steps, const HopClasses& classes, Bytes bytes);

// Collects the distinct classes of hops between ranks.
class HopCollector {
 public:
  explicit HopCollector(const Topology& topology);
  void add(int a, int b);  // the hop from rank a to rank b (a == b: none)
  HopClasses take() { return std::move(classes_); }

 private:
  void add_class(const PathCost& cost, bool same_node);
  const Topology& topo_;
  int rpn_;
  bool keyed_;              // regular topology with few local ranks: classes found by (local pair, relation)
  std::vector<char> seen_;  // [(local a * rpn + local b) * kRelations + relation + 1]
  HopClasses classes_;
};

// The positions (into the collective's rank order) of the hops each closed form visits.
template <typename Visit>
void ring_positions(int p, Visit visit) {
  for (int i = 0; i < p; ++i) visit(i, i + 1 == p ? 0 : i + 1);
}
template <typename Visit>
void chain_positions(int p, Visit visit) {
  for (int i = 0; i + 1 < p; ++i) visit(i, i + 1);
}
// Both trees of the double binary tree: heap edges child -> parent, and their mirror images.
template <typename Visit>
void tree_positions(int p, Visit visit) {
  for (int i = 1; i < p; ++i) {
    visit(i, (i - 1) / 2);
    visit(p - 1 - i, p - 1 - (i - 1) / 2);
  }
}
// Heap positions of the double binary tree: the depth of position i (0: the root), and the height of its subtree
// among p positions (0: a leaf), the length of its leftmost path down, the longest in a heap.
inline int heap_depth(int i) { return std::bit_width(static_cast<unsigned>(i) + 1) - 1; }
inline int heap_height(int p, int i) {
  int height = 0;
  for (; 2 * i + 1 < p; i = 2 * i + 1) ++height;
  return height;
}
// The edges of one wave of a piece's way through tree 0 (A, the heap) or 1 (B, its mirror image), child -> parent
// going up, parent -> child going `down`. Up, a parent forwards once all its children have: the edges whose child's
// subtree has height `wave` (0: the leaves', wherever they are) climb at the same time. Down, the edges whose child is
// at depth `wave` (1: the root's children).
inline int tree_wave(int p, int child, bool down) { return down ? heap_depth(child) : heap_height(p, child); }
template <typename Visit>
void tree_wave_positions(int p, int wave, bool down, int tree, Visit visit) {
  for (int i = 1; i < p; ++i) {
    if (tree_wave(p, i, down) != wave) continue;
    const int child = tree == 0 ? i : p - 1 - i, parent = tree == 0 ? (i - 1) / 2 : p - 1 - (i - 1) / 2;
    down ? visit(parent, child) : visit(child, parent);
  }
}
// Every edge of both trees in both directions: what a pipeline of pieces keeps busy at once.
template <typename Visit>
void tree_all_positions(int p, Visit visit) {
  tree_positions(p, visit);
  tree_positions(p, [&](int i, int j) { visit(j, i); });
}
// Halving-doubling's fold of ranks q .. p-1 onto 0 .. p-q-1, and its exchange at `distance` among 0 .. q-1.
template <typename Visit>
void fold_positions(int p, int q, Visit visit) {
  for (int i = q; i < p; ++i) visit(i, i - q);
}
template <typename Visit>
void exchange_positions(int q, int distance, Visit visit) {
  for (int i = 0; i < q; ++i) visit(i, i ^ distance);
}

// Over the topology's own ring order (Topology::ring_order) on a regular topology: the classes of the rings
// (`closed`) or chains of every group of `size` consecutive ranks (Paddle's hierarchical groups, 2D ring's nodes),
// of the ring of the groups' first ranks (the leaders), and of the 2D ring's columns (rank j of every node). Each
// returns false, collecting nothing, where the topology is not regular or the groups neither fit in a node nor
// consist of whole nodes: the caller then visits every hop.
bool regular_group_hops(const Topology& topology, int size, bool closed, HopCollector& out);
bool regular_leader_hops(const Topology& topology, int size, HopCollector& out);
bool regular_column_hops(const Topology& topology, HopCollector& out);

// The classes of a ring over the topology's own ring order whose channels share its links
// (ring_link_shares.hpp): on a regular topology from one node and one hop between nodes per relation of it and
// its neighbours, else from every hop.
HopClasses ring_shared_classes(const Topology& topology, int ranks_per_node, int channels);

}  // namespace commsim::closed_form
