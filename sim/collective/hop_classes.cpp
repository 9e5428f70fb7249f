#include "sim/collective/hop_classes.hpp"

#include <algorithm>
#include <map>

#include "sim/collective/ring_link_shares.hpp"

namespace commsim::closed_form {
namespace {

constexpr int kRelations = 8;     // relation values the keyed collector tells apart (a cluster has two)
constexpr int kMaxKeyedRpn = 64;  // beyond this many local ranks a pair table is too large: compare costs instead

bool regular(const Topology& topo) { return topo.node_relation(0, topo.nodes() > 1 ? 1 : 0) >= 0; }

// One representative node pair for each relation among the pairs enum(emit) emits (na != nb): whatever the pair,
// a hop between the same local ranks of two nodes so related costs the same (Topology::node_relation).
template <typename Enumerate>
std::vector<std::pair<int, int>> representatives(const Topology& topo, Enumerate enumerate) {
  std::map<int, std::pair<int, int>> by_relation;
  enumerate([&](int na, int nb) { by_relation.try_emplace(topo.node_relation(na, nb), na, nb); });
  std::vector<std::pair<int, int>> out;
  for (const auto& [relation, pair] : by_relation) out.push_back(pair);
  return out;
}

}  // namespace

TimePs slowest(const Steps& steps, const HopClasses& classes, Bytes bytes) {
  TimePs worst = 0;
  for (const HopClass& c : classes) worst = std::max(worst, steps.hop_time(c.cost, c.same_node, bytes, c.shared_Bps));
  return worst;
}

HopCollector::HopCollector(const Topology& topology)
    : topo_(topology), rpn_(topology.ranks_per_node()), keyed_(rpn_ <= kMaxKeyedRpn && regular(topology)) {
  if (keyed_) seen_.assign(static_cast<std::size_t>(rpn_) * rpn_ * (kRelations + 1), 0);
}

void HopCollector::add(int a, int b) {
  if (a == b) return;  // a ring or column of one rank: no hop (its closed form takes no step)
  const int na = a / rpn_, nb = b / rpn_;
  if (keyed_) {
    const int relation = na == nb ? -1 : topo_.node_relation(na, nb);
    if (relation < kRelations) {
      char& seen =
          seen_[(static_cast<std::size_t>(a - na * rpn_) * rpn_ + (b - nb * rpn_)) * (kRelations + 1) + (relation + 1)];
      if (seen) return;
      seen = 1;
    }
  }
  add_class(topo_.path_cost(a, b), na == nb);
}

void add_once(HopClasses& classes, const HopClass& hop) {
  for (const HopClass& c : classes)
    if (c.same_node == hop.same_node && c.cost.latency_s == hop.cost.latency_s &&
        c.cost.bottleneck_Bps == hop.cost.bottleneck_Bps && c.shared_Bps == hop.shared_Bps)
      return;
  classes.push_back(hop);
}

void HopCollector::add_class(const PathCost& cost, bool same_node) { add_once(classes_, {cost, same_node}); }

// Ring order: rank of position i is (i / R) * R + local[i % R], the same local order in every node.
bool regular_group_hops(const Topology& topo, int size, bool closed, HopCollector& out) {
  const int rpn = topo.ranks_per_node(), nodes = topo.nodes();
  if (!regular(topo) || size < 2) return false;
  const std::vector<int> local = [&] {
    std::vector<int> order = topo.ring_order();
    order.resize(static_cast<std::size_t>(rpn));
    return order;
  }();
  if (rpn % size == 0) {  // groups inside a node: node 0's groups stand for every node's (one template)
    for (int start = 0; start < rpn; start += size) {
      auto visit = [&](int i, int j) { out.add(local[start + i], local[start + j]); };
      closed ? ring_positions(size, visit) : chain_positions(size, visit);
    }
    return true;
  }
  if (size % rpn != 0) return false;
  // Groups of m whole nodes: node 0's chain inside the node, then one hop per relation between the nodes a group
  // steps across (node t to t + 1 inside a group) or closes its ring across (its last node to its first).
  const int m = size / rpn, groups = nodes / m;
  chain_positions(rpn, [&](int i, int j) { out.add(local[i], local[j]); });
  const int last = local[rpn - 1], first = local[0];
  for (auto [na, nb] : representatives(topo, [&](auto emit) {
         for (int g = 0; g < groups; ++g)
           for (int t = 0; t + 1 < m; ++t) emit(g * m + t, g * m + t + 1);
       }))
    out.add(na * rpn + last, nb * rpn + first);
  if (!closed) return true;
  if (m == 1) {
    out.add(last, first);  // a one-node group closes its ring inside the node
    return true;
  }
  for (auto [na, nb] : representatives(topo, [&](auto emit) {
         for (int g = 0; g < groups; ++g) emit(g * m + m - 1, g * m);
       }))
    out.add(na * rpn + last, nb * rpn + first);
  return true;
}

bool regular_leader_hops(const Topology& topo, int size, HopCollector& out) {
  const int rpn = topo.ranks_per_node(), nodes = topo.nodes();
  if (!regular(topo) || size < 1) return false;
  const int groups = topo.ranks() / size;
  if (groups < 2) return true;  // a ring of one leader has no hop
  const std::vector<int> order = topo.ring_order();
  auto rank = [&](int position) { return order[static_cast<std::size_t>(position)]; };
  if (rpn % size == 0) {  // rpn / size leaders in each node
    const int per_node = rpn / size;
    for (int k = 0; k + 1 < per_node; ++k) out.add(rank(k * size), rank((k + 1) * size));
    const int last = (per_node - 1) * size;
    if (nodes == 1) {
      out.add(rank(last), rank(0));
      return true;
    }
    for (auto [na, nb] : representatives(topo, [&](auto emit) {
           for (int n = 0; n < nodes; ++n) emit(n, (n + 1) % nodes);
         }))
      out.add(rank(na * rpn + last), rank(nb * rpn));
    return true;
  }
  if (size % rpn != 0) return false;
  const int m = size / rpn;  // one leader every m nodes, the first rank of its group
  for (auto [na, nb] : representatives(topo, [&](auto emit) {
         for (int g = 0; g < groups; ++g) emit(g * m, (g + 1) % groups * m);
       }))
    out.add(rank(na * rpn), rank(nb * rpn));
  return true;
}

bool regular_column_hops(const Topology& topo, HopCollector& out) {
  const int rpn = topo.ranks_per_node(), nodes = topo.nodes();
  if (!regular(topo)) return false;
  if (nodes < 2) return true;  // a column of one rank has no hop
  const std::vector<int> order = topo.ring_order();
  const std::vector<std::pair<int, int>> pairs = representatives(topo, [&](auto emit) {
    for (int n = 0; n < nodes; ++n) emit(n, (n + 1) % nodes);
  });
  for (int j = 0; j < rpn; ++j)
    for (auto [na, nb] : pairs)
      out.add(order[static_cast<std::size_t>(na) * rpn + j], order[static_cast<std::size_t>(nb) * rpn + j]);
  return true;
}

HopClasses ring_shared_classes(const Topology& topo, int ranks_per_node, int channels) {
  const std::int64_t p = topo.ranks();
  HopClasses classes;
  // Hops from .. to - 1 of the ring.
  auto add = [&](const RingLayout& ring, std::int64_t from, std::int64_t to) {
    for_each_shared_rate(ring, from, to, [&](std::int64_t i, double rate) {
      const int a = ring.rank_at(i), b = ring.rank_at((i + 1) % p);
      if (a == b) return;
      add_once(classes, {topo.path_cost(a, b), topo.node_of(a) == topo.node_of(b), rate});
    });
  };
  const int rpn = topo.ranks_per_node(), nodes = topo.nodes();
  if (!regular(topo) || ranks_per_node != rpn) {
    const std::vector<int> order = topo.ring_order();
    const RingLayout ring{topo, p, ranks_per_node, channels, [&](std::int64_t j) { return order[j]; }};
    add(ring, 0, p);
    return classes;
  }
  // Ring order: position n R + j is rank n R + local[j] (regular_group_hops). The hops of node n, and its hop to
  // node n + 1, count the edges of nodes n and n + 1 and the edges into and out of them: their links are alike
  // wherever the relations of node n - 1 to n, n to n + 1 and n + 1 to n + 2 are (Topology::node_relation).
  const std::vector<int> local = topo.local_ring_order();
  const RingLayout ring{topo, p, ranks_per_node, channels,
                        [&](std::int64_t j) { return static_cast<int>(j / rpn * rpn + local[j % rpn]); }};
  if (nodes == 1) {
    add(ring, 0, p);
    return classes;
  }
  // Each (relation into node n, out of it) once for its hops inside, each with the relation after once for its hop
  // out: a handful of keys (relations are small numbers), packed into one word each, in a list searched.
  auto relation = [&](int n) { return static_cast<std::uint64_t>(topo.node_relation(n % nodes, (n + 1) % nodes)); };
  std::vector<std::uint64_t> inside, across;
  auto first_time = [](std::vector<std::uint64_t>& seen, std::uint64_t key) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return false;
    seen.push_back(key);
    return true;
  };
  std::uint64_t before = relation(nodes - 1), out = relation(0);
  for (int n = 0; n < nodes; ++n) {
    const std::uint64_t after = relation(n + 1);
    const std::int64_t first = static_cast<std::int64_t>(n) * rpn, last = first + rpn - 1;
    if (first_time(inside, before << 32 | out)) add(ring, first, last);
    if (first_time(across, (before << 32 | out) << 16 | after)) add(ring, last, last + 1);
    before = out, out = after;
  }
  return classes;
}

}  // namespace commsim::closed_form
