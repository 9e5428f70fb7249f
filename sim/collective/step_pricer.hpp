// What an algorithm's step closed form (registry.hpp) works with: the spec, its step formulas (closed_form_steps.hpp)
// and the hop classes of the patterns its steps run over (hop_classes.hpp). A step's slowest hop is found from the
// distinct hops of its pattern, once per topology and pattern, so that pricing another message size, or choosing the
// algorithm of another bucket, costs a handful of hop prices instead of a walk over every hop of every group.
#pragma once

#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "sim/collective/closed_form_steps.hpp"
#include "sim/collective/collective.hpp"
#include "sim/collective/hop_classes.hpp"
#include "sim/collective/tree_timeline.hpp"

namespace commsim {

// Hop classes of a pattern: (algorithm, its pattern, size or distance, root, channels, the block the channels' orders
// rotate in); the last two are 0 where the classes do not depend on them (the channels then share a rank's links in
// Steps::hop_time).
using ClassesKey = std::tuple<int, int, int, int, int, int>;

// What a topology's closed forms have found, kept per thread for the few topologies used last (no lock: the tuner
// evaluates on several threads, each with its own topology). Entries are keyed by the topology's instance_id, so a
// topology destroyed and another built at the same address never share them.
struct ClosedFormCache {
  std::uint64_t topology = 0;
  // Hop classes of patterns over the topology's ring order.
  std::map<ClassesKey, closed_form::HopClasses> classes;
  // The double tree's routed hops, by (channels, the block their orders rotate in).
  std::map<std::pair<int, int>, closed_form::TreeHops> tree_hops;
  std::map<CollectiveKey, TimePs> closed_ps;
  std::map<std::pair<CollectiveKey, bool>, Algorithm> choice;
};
ClosedFormCache& closed_form_cache_of(const Topology& topology);

class StepPricer {
 public:
  // A spec over `ranks` participants (its rank list, else the topology's), already checked.
  StepPricer(const CollectiveSpec& spec, const Topology& topology, int ranks);

  using Visit = std::function<void(int, int)>;
  // Visits every hop of a pattern, as positions into the collective's rank order.
  using Positions = std::function<void(const Visit&)>;
  // Collects a pattern's classes from one node and one column on a regular topology; false where it cannot.
  using Regular = std::function<bool(closed_form::HopCollector&)>;

  // The hop classes of the algorithm's pattern number `pattern` with parameters (x, y): cached per topology over
  // the topology's own ring order (no rank list), else collected afresh. `regular` (may be empty) is tried first.
  const closed_form::HopClasses& classes(int pattern, int x, int y, const Positions& positions,
                                         const Regular& regular = {});
  // A step whose hops share the links they cross (step_link_shares.hpp).
  struct SharedStep {
    int pattern = 0, x = 0, y = 0;  // the pattern's number and parameters, as for `classes`
    int channels = 1;               // each channel runs the positions over its order, rotated inside blocks of
    int rotation_block = 1;         // this many positions (schedule_parts::channel_order)
    Positions positions = {};       // the hops priced
    Positions sharing = {};         // the hops that share their links (empty: the hops priced)
    int rooted = 0, root = 0;       // chains: each channel's pieces of `rooted` positions start at
                                    // their root (shared_step_hops)
    const std::vector<int>* order = nullptr;  // what the positions index (null: the collective's rank order)
    Regular regular = {};                     // for `classes` beyond kRoutedMaxRanks participants
  };
  // The classes of such a step, each hop at its shared rate; cached as `classes` is. Beyond kRoutedMaxRanks
  // participants, classes(pattern, x, y, positions, regular): each hop as if its links were its own.
  const closed_form::HopClasses& shared_classes(const SharedStep& step);

  // The double binary tree's climb and descent in every channel, routed (tree_timeline.hpp); cached as `classes` is.
  const closed_form::TreeHops& tree_hops();

  // The slowest hop of the classes for a piece, under `steps`' channel sharing.
  static auto price(const closed_form::Steps& steps, const closed_form::HopClasses& classes) {
    return [&steps, &classes](Bytes piece) { return closed_form::slowest(steps, classes, piece); };
  }

  const CollectiveSpec& spec;
  const Topology& topology;
  const int p;                            // participants
  const closed_form::Steps steps;         // with the spec's channels
  const closed_form::Steps single_steps;  // one channel (the phases of hierarchical and 2D ring)

 private:
  const std::vector<int>& rank_order();
  std::vector<int> order_;  // built on the first pattern that must visit hops
  std::map<ClassesKey, closed_form::HopClasses> uncached_;
  closed_form::TreeHops uncached_tree_hops_;
};

}  // namespace commsim
