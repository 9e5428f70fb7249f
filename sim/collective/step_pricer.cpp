#include "sim/collective/step_pricer.hpp"

#include <array>

#include "sim/collective/step_link_shares.hpp"

namespace commsim {
namespace {
constexpr std::size_t kCachedTopologies = 4;
}  // namespace

ClosedFormCache& closed_form_cache_of(const Topology& topo) {
  thread_local std::array<ClosedFormCache, kCachedTopologies> caches;
  thread_local std::size_t next = 0;
  for (ClosedFormCache& c : caches)
    if (c.topology == topo.instance_id()) return c;
  ClosedFormCache& c = caches[next];
  next = (next + 1) % kCachedTopologies;
  c = ClosedFormCache{};
  c.topology = topo.instance_id();
  return c;
}

StepPricer::StepPricer(const CollectiveSpec& s, const Topology& t, int ranks)
    : spec(s), topology(t), p(ranks), steps{s, s.channels}, single_steps{s, 1} {}

const std::vector<int>& StepPricer::rank_order() {
  if (order_.empty()) order_ = spec.ranks.empty() ? topology.ring_order() : spec.ranks;
  return order_;
}

const closed_form::HopClasses& StepPricer::classes(int pattern, int x, int y, const Positions& positions,
                                                   const Regular& regular) {
  auto& store = spec.ranks.empty() ? closed_form_cache_of(topology).classes : uncached_;
  auto [it, fresh] = store.try_emplace({static_cast<int>(spec.algorithm), pattern, x, y, 0, 0});
  if (!fresh) return it->second;
  closed_form::HopCollector shortcut(topology);  // the regular shortcuts collect nothing where they return false
  if (spec.ranks.empty() && regular && regular(shortcut)) return it->second = shortcut.take();
  closed_form::HopCollector every_hop(topology);
  const std::vector<int>& ranks = rank_order();
  positions(
      [&](int i, int j) { every_hop.add(ranks[static_cast<std::size_t>(i)], ranks[static_cast<std::size_t>(j)]); });
  return it->second = every_hop.take();
}

const closed_form::HopClasses& StepPricer::shared_classes(const SharedStep& step) {
  if (p > closed_form::kRoutedMaxRanks) return classes(step.pattern, step.x, step.y, step.positions, step.regular);
  auto& store = spec.ranks.empty() ? closed_form_cache_of(topology).classes : uncached_;
  auto [it, fresh] = store.try_emplace(
      {static_cast<int>(spec.algorithm), step.pattern, step.x, step.y, step.channels, step.rotation_block});
  if (!fresh) return it->second;
  closed_form::HopClasses out;
  for (const closed_form::SharedHop& h :
       closed_form::shared_step_hops(topology, step.order ? *step.order : rank_order(), step.rotation_block,
                                     step.channels, step.positions, step.sharing, step.rooted, step.root))
    closed_form::add_once(
        out, {topology.path_cost(h.from, h.to), topology.node_of(h.from) == topology.node_of(h.to), h.rate_Bps});
  return it->second = std::move(out);
}

const closed_form::TreeHops& StepPricer::tree_hops() {
  auto route = [&] {
    return closed_form::route_tree_hops(topology, rank_order(), spec.ranks_per_node, steps.channels);
  };
  if (!spec.ranks.empty()) return uncached_tree_hops_ = route();
  auto [it, fresh] = closed_form_cache_of(topology).tree_hops.try_emplace({steps.channels, spec.ranks_per_node});
  if (fresh) it->second = route();
  return it->second;
}

}  // namespace commsim
