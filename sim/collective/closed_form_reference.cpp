#include "sim/collective/closed_form_reference.hpp"

#include <algorithm>
#include <limits>

#include "sim/collective/hop_classes.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/ring_link_shares.hpp"
#include "sim/core/error.hpp"

namespace commsim::closed_form {

TimePs shared_ring_over(const Steps& s, const Topology& t, const std::vector<int>& order, Bytes bytes, bool rs,
                        bool ag) {
  const auto p = static_cast<std::int64_t>(order.size());
  const RingLayout ring{t, p, s.spec.ranks_per_node, s.channels, [&](std::int64_t j) { return order[j]; }};
  std::vector<double> shared(order.size());
  for_each_shared_rate(ring, 0, p, [&](std::int64_t i, double rate) { shared[i] = rate; });
  return s.ring(order.size(), bytes, rs, ag, [&](Bytes piece) {
    TimePs worst = 0;
    for (std::int64_t i = 0; i < p; ++i) {
      const int a = order[i], b = order[(i + 1) % p];
      if (a == b) continue;
      worst = std::max(worst, s.hop_time(t.path_cost(a, b), t.node_of(a) == t.node_of(b), piece, shared[i]));
    }
    return worst;
  });
}

TimePs step_walk(const Steps& steps, const Topology& topo, const std::vector<int>& order, int rotation_block,
                 Bytes bytes, const VisitPositions& positions, const VisitPositions& sharing, int rooted, int root) {
  if (static_cast<int>(order.size()) > kRoutedMaxRanks) return walk(steps, topo, order, bytes, positions);
  TimePs worst = 0;
  for (const SharedHop& h :
       shared_step_hops(topo, order, rotation_block, steps.channels, positions, sharing, rooted, root))
    worst = std::max(worst, steps.hop_time(topo.path_cost(h.from, h.to), topo.node_of(h.from) == topo.node_of(h.to),
                                           bytes, h.rate_Bps));
  return worst;
}

TimePs full_walk_step_ps(const CollectiveSpec& spec, const Topology& topo) {
  const std::vector<int> ranks = spec.ranks.empty() ? topo.ring_order() : spec.ranks;
  check_supported(spec, static_cast<int>(ranks.size()), "collective");
  COMMSIM_CHECK(spec.algorithm != Algorithm::Auto && algorithm_entry(spec.algorithm).full_walk_step_ps,
                "closed form of auto and of NCCL-only algorithms is not a schedule's");
  return algorithm_entry(spec.algorithm).full_walk_step_ps(spec, topo, ranks);
}

TimePs busiest_link_ps(const CollectiveSpec& spec, const Topology& topo) {
  // `auto` prices this for every new size: the schedule's storage and the loads are kept between calls on a thread
  // (only cleared), so that a size does not pay for fresh pages. The spec's algorithm is resolved and its phases
  // are rings, so generating it does not come back here; the check holds that.
  thread_local Schedule schedule;
  thread_local bool generating = false;
  COMMSIM_CHECK(!generating, "busiest_link_ps re-entered while generating its schedule");
  COMMSIM_CHECK(spec.algorithm != Algorithm::Auto, "busiest_link_ps needs a resolved algorithm");
  schedule.ops.clear(), schedule.deps.clear(), schedule.copies.clear();
  std::vector<OpId> frontier(topo.ranks(), kNoOp);
  {
    generating = true;
    struct Generating {  // cleared however generate() ends
      bool& flag;
      ~Generating() { flag = false; }
    } during{generating};
    generate(spec, topo, schedule, frontier);
  }
  // The bytes each pair of ranks sends, then each pair routed once: a pipelined schedule sends many pieces over one
  // pair. Bytes are whole numbers, so the sums do not depend on their order.
  thread_local std::vector<int> index_of;  // rank -> its index among the ranks the schedule moves bytes between
  thread_local std::vector<int> ranks;
  thread_local std::vector<double> pair_bytes, load;
  thread_local std::vector<std::size_t> pairs;
  thread_local std::vector<LinkId> loaded;
  index_of.assign(topo.ranks(), -1);
  ranks.clear();
  for (const Op& op : schedule.ops)
    if (op.kind == OpKind::Transfer)
      for (int r : {op.src, op.dst})
        if (index_of[r] < 0) index_of[r] = static_cast<int>(ranks.size()), ranks.push_back(r);
  const std::size_t n = ranks.size();
  pair_bytes.assign(n * n, 0);
  pairs.clear();
  for (const Op& op : schedule.ops) {
    if (op.kind != OpKind::Transfer || op.bytes == 0)
      continue;  // an empty piece loads nothing (and would list its
                 // pair twice: it is listed when its sum is 0)
    const std::size_t pair =
        static_cast<std::size_t>(index_of[op.src]) * n + static_cast<std::size_t>(index_of[op.dst]);
    if (pair_bytes[pair] == 0) pairs.push_back(pair);
    pair_bytes[pair] += static_cast<double>(op.bytes);
  }
  load.assign(topo.link_count(), 0);
  loaded.clear();
  Route route;
  for (std::size_t pair : pairs) {
    route.links.clear();
    topo.route(ranks[pair / n], ranks[pair % n], route);
    for (LinkId id : route.links) {
      if (load[id] == 0) loaded.push_back(id);
      load[id] += pair_bytes[pair];
    }
  }
  TimePs busiest = 0;
  for (LinkId id : loaded) busiest = std::max(busiest, transfer_ps(load[id], topo.link(id).effective_Bps()));
  return busiest;
}

TimePs closed_form_ps(const CollectiveSpec& spec, const Topology& topo, TimePs steps_ps) {
  const int p = spec.ranks.empty() ? topo.ranks() : static_cast<int>(spec.ranks.size());
  if (!algorithm_entry(spec.algorithm).load_bound || p > kRoutedMaxRanks) return steps_ps;
  return std::max(steps_ps, busiest_link_ps(spec, topo));
}

Algorithm cheapest_algorithm(const CollectiveSpec& spec, int p,
                             const std::function<TimePs(const CollectiveSpec&)>& closed_form_ps) {
  Algorithm best = Algorithm::Ring;
  TimePs best_ps = std::numeric_limits<TimePs>::max();
  for (const AlgorithmEntry& entry : algorithm_entries()) {
    if (!entry.has_schedule()) continue;
    CollectiveSpec candidate = spec;
    candidate.algorithm = entry.id;
    try {
      check_supported(candidate, p, "collective");
    } catch (const InputError&) {
      continue;  // not applicable to this collective or rank count
    }
    if (entry.auto_candidate && !entry.auto_candidate(spec, p)) continue;
    const TimePs t = closed_form_ps(candidate);
    if (t < best_ps) best_ps = t, best = entry.id;  // ties keep the earlier (simpler) algorithm
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
