#include "sim/collective/closed_form_reference.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "sim/collective/closed_form_steps.hpp"
#include "sim/collective/hop_classes.hpp"
#include "sim/core/error.hpp"

namespace commsim::closed_form {
namespace {

// The slowest hop among those `enumerate` visits (positions into `order`), each priced on its own.
template <typename Enumerate>
TimePs walk(const Steps& steps, const Topology& topo, const std::vector<int>& order, Bytes bytes, Enumerate enumerate) {
  TimePs worst = 0;
  enumerate([&](int i, int j) {
    const int a = order[static_cast<std::size_t>(i)], b = order[static_cast<std::size_t>(j)];
    worst = std::max(worst, steps.hop_time(topo.path_cost(a, b), topo.node_of(a) == topo.node_of(b), bytes));
  });
  return worst;
}

TimePs ring_over(const Steps& s, const Topology& t, const std::vector<int>& order, Bytes bytes, bool rs, bool ag) {
  const int p = static_cast<int>(order.size());
  return s.ring(order.size(), bytes, rs, ag,
                [&](Bytes piece) { return walk(s, t, order, piece, [&](auto v) { ring_positions(p, v); }); });
}
TimePs chain_over(const Steps& s, const Topology& t, const std::vector<int>& order, Bytes bytes, bool reducing) {
  const int p = static_cast<int>(order.size());
  return s.chain(order.size(), bytes, reducing,
                 [&](Bytes piece) { return walk(s, t, order, piece, [&](auto v) { chain_positions(p, v); }); });
}

}  // namespace

TimePs full_walk_step_ps(const CollectiveSpec& spec, const Topology& topo) {
  const std::vector<int> ranks = spec.ranks.empty() ? topo.ring_order() : spec.ranks;
  const int p = static_cast<int>(ranks.size());
  check_supported(spec, p, "collective");
  const Steps m{spec, spec.channels}, single{spec, 1};
  switch (spec.algorithm) {
    case Algorithm::Ring:
      if (spec.op == Collective::Broadcast || spec.op == Collective::Reduce) {
        std::vector<int> order = ranks;
        std::rotate(order.begin(), order.begin() + spec.root % p, order.end());
        return chain_over(m, topo, order, spec.bytes, spec.op == Collective::Reduce);
      }
      return ring_over(m, topo, ranks, spec.bytes, spec.op != Collective::AllGather,
                       spec.op != Collective::ReduceScatter);
    case Algorithm::Tree:
      return m.tree(p, spec.bytes,
                    [&](Bytes piece) { return walk(m, topo, ranks, piece, [&](auto v) { tree_positions(p, v); }); });
    case Algorithm::HalvingDoubling: {
      const int q = largest_power_of_two_at_most(p);
      return m.halving_doubling(
          p, spec.bytes, [&](Bytes b) { return walk(m, topo, ranks, b, [&](auto v) { fold_positions(p, q, v); }); },
          [&](int d, Bytes b) { return walk(m, topo, ranks, b, [&](auto v) { exchange_positions(q, d, v); }); });
    }
    case Algorithm::Hierarchical: {
      const int groups = hierarchy_group_count(spec, p);
      const int size = p / groups;
      TimePs intra = 0, broadcast = 0;
      std::vector<int> leaders;
      for (int g = 0; g < groups; ++g) {
        std::vector<int> group(ranks.begin() + g * size, ranks.begin() + (g + 1) * size);
        leaders.push_back(group.front());
        intra = std::max(intra, ring_over(single, topo, group, spec.bytes, true, true));
        broadcast = std::max(broadcast, chain_over(single, topo, group, spec.bytes, false));
      }
      return add_ps(add_ps(intra, ring_over(single, topo, leaders, spec.bytes, true, true)), broadcast);
    }
    case Algorithm::Ring2D: {
      const int rpn = spec.ranks_per_node, nodes = p / rpn;
      TimePs rs = 0, across = 0, ag = 0;
      for (int n = 0; n < nodes; ++n) {
        std::vector<int> node(ranks.begin() + n * rpn, ranks.begin() + (n + 1) * rpn);
        rs = std::max(rs, ring_over(single, topo, node, spec.bytes, true, false));
        // The allgather inside the node mirrors the reduce-scatter without reductions.
        ag = std::max(ag, ring_over(single, topo, node, spec.bytes, false, true));
      }
      for (int j = 0; j < rpn; ++j) {
        std::vector<int> column;
        for (int n = 0; n < nodes; ++n) column.push_back(ranks[n * rpn + j]);
        across = std::max(across, ring_over(single, topo, column, ceil_div(spec.bytes, rpn), true, true));
      }
      return add_ps(add_ps(rs, across), ag);
    }
    default:
      break;
  }
  COMMSIM_CHECK(false, "closed form of auto and of NCCL-only algorithms is not a schedule's");
  return 0;
}

TimePs busiest_link_ps(const CollectiveSpec& spec, const Topology& topo) {
  Schedule schedule;
  std::vector<OpId> frontier(topo.ranks(), kNoOp);
  generate(spec, topo, schedule, frontier);
  std::unordered_map<LinkId, double> load;
  Route route;
  for (const Op& op : schedule.ops) {
    if (op.kind != OpKind::Transfer) continue;
    route.links.clear();
    topo.route(op.src, op.dst, route);
    for (LinkId id : route.links) load[id] += static_cast<double>(op.bytes);
  }
  TimePs busiest = 0;
  for (auto [id, bytes] : load) busiest = std::max(busiest, transfer_ps(bytes, topo.link(id).effective_Bps()));
  return busiest;
}

TimePs closed_form_ps(const CollectiveSpec& spec, const Topology& topo, TimePs steps_ps) {
  const int p = spec.ranks.empty() ? topo.ranks() : static_cast<int>(spec.ranks.size());
  if (spec.algorithm == Algorithm::Ring || p > kLoadBoundMaxRanks) return steps_ps;  // a ring's steps already share
  return std::max(steps_ps, busiest_link_ps(spec, topo));
}

Algorithm cheapest_algorithm(const CollectiveSpec& spec, int p,
                             const std::function<TimePs(const CollectiveSpec&)>& closed_form_ps) {
  Algorithm best = Algorithm::Ring;
  TimePs best_ps = std::numeric_limits<TimePs>::max();
  for (Algorithm a :
       {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical, Algorithm::Ring2D}) {
    CollectiveSpec candidate = spec;
    candidate.algorithm = a;
    try {
      check_supported(candidate, p, "collective");
    } catch (const InputError&) {
      continue;  // not applicable to this collective or rank count
    }
    if (a == Algorithm::Ring2D && p / spec.ranks_per_node < 2) continue;
    if (a == Algorithm::Hierarchical && p / spec.ranks_per_node < 2 && spec.hierarchy_groups == 0) continue;
    const TimePs t = closed_form_ps(candidate);
    if (t < best_ps) best_ps = t, best = a;  // ties keep the earlier (simpler) algorithm
  }
  return best;
}

Algorithm full_walk_choose_algorithm(const CollectiveSpec& spec, const Topology& topo) {
  const int p = spec.ranks.empty() ? topo.ranks() : static_cast<int>(spec.ranks.size());
  return cheapest_algorithm(spec, p, [&](const CollectiveSpec& candidate) {
    return closed_form_ps(candidate, topo, full_walk_step_ps(candidate, topo));
  });
}

}  // namespace commsim::closed_form
