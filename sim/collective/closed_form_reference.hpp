// The closed forms' reference: every hop of every group visited, as the closed forms were first written. The fast
// path (cost_model.cpp, hop_classes.hpp) must agree with it bit for bit; tests compare both on every shipped
// topology. Also what both share: the busiest-link bound and the argmin that is `auto`.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "sim/collective/closed_form_steps.hpp"
#include "sim/collective/collective.hpp"
#include "sim/collective/step_link_shares.hpp"

namespace commsim::closed_form {

// The step-by-step closed form of a resolved (non-auto, schedulable) algorithm, visiting every hop (its registry
// entry's full_walk_step_ps).
TimePs full_walk_step_ps(const CollectiveSpec& spec, const Topology& topology);

// What the algorithms' full walks share. The slowest hop among those `enumerate` visits (positions into `order`),
// each priced on its own.
template <typename Enumerate>
TimePs walk(const Steps& steps, const Topology& topo, const std::vector<int>& order, Bytes bytes, Enumerate enumerate) {
  TimePs worst = 0;
  enumerate([&](int i, int j) {
    const int a = order[static_cast<std::size_t>(i)], b = order[static_cast<std::size_t>(j)];
    worst = std::max(worst, steps.hop_time(topo.path_cost(a, b), topo.node_of(a) == topo.node_of(b), bytes));
  });
  return worst;
}
// The slowest hop of a step whose hops share the links they cross (step_link_shares.hpp): those `positions` visits
// over each of the steps' channels' orders of `order` (rotated inside blocks of rotation_block positions), every hop
// visited, sharing with those `sharing` visits (empty: themselves), chains turned to their roots as
// shared_step_hops does. Beyond kRoutedMaxRanks participants, `walk` (the channels' share of a rank's links).
TimePs step_walk(const Steps& steps, const Topology& topo, const std::vector<int>& order, int rotation_block,
                 Bytes bytes, const VisitPositions& positions, const VisitPositions& sharing = {}, int rooted = 0,
                 int root = 0);
// The ring over `order` whose channels share its links (ring_link_shares.hpp), every hop visited.
TimePs shared_ring_over(const Steps& s, const Topology& t, const std::vector<int>& order, Bytes bytes, bool rs,
                        bool ag);

// The busiest link's load over its rate: every transfer of the schedule crosses the links of its route, and a link
// drains at most its effective rate, so no execution of the schedule is faster than that.
TimePs busiest_link_ps(const CollectiveSpec& spec, const Topology& topology);

// The closed form: the step closed form `steps_ps`, and for the tree, halving-doubling, hierarchical and 2D ring up
// to kRoutedMaxRanks ranks at least the busiest link's time.
TimePs closed_form_ps(const CollectiveSpec& spec, const Topology& topology, TimePs steps_ps);

// `auto` on a topology without a library model: the algorithm of least closed_form_ps(candidate) among those that
// apply (the registry's entries with a schedule; ties keep the earlier, simpler algorithm, in registry order).
Algorithm cheapest_algorithm(const CollectiveSpec& spec, int ranks,
                             const std::function<TimePs(const CollectiveSpec&)>& closed_form_ps);

// cheapest_algorithm over the full walk: what choose_algorithm must return on a topology without a library model.
Algorithm full_walk_choose_algorithm(const CollectiveSpec& spec, const Topology& topology);

}  // namespace commsim::closed_form
