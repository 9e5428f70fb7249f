// Closed-form alpha-beta-gamma model of every schedule generator, evaluated on the topology's actual paths
// (closed_form_steps.hpp), and `auto`. A step's slowest hop is found from the distinct hops of its pattern
// (hop_classes.hpp), once per topology and pattern, so that pricing another message size, or choosing the algorithm
// of another bucket, costs a handful of hop prices instead of a walk over every hop of every group; the walk stays
// as the reference (closed_form_reference.cpp) that the tests hold this to, bit for bit.
#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/closed_form_steps.hpp"
#include "sim/collective/collective.hpp"
#include "sim/collective/hop_classes.hpp"
#include "sim/collective/nccl_model.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

using closed_form::HopClasses;
using closed_form::HopCollector;
using closed_form::Steps;

// What a topology's closed forms have found, kept per thread for the few topologies used last (no lock: the tuner
// evaluates on several threads, each with its own topology). Entries are keyed by the topology's instance_id, so a
// topology destroyed and another built at the same address never share them.
struct TopologyCache {
  std::uint64_t topology = 0;
  // Hop classes of a pattern over the topology's ring order: (pattern, size or distance, root).
  std::map<std::tuple<int, int, int>, HopClasses> classes;
  std::map<CollectiveKey, TimePs> closed_ps;
  std::map<std::pair<CollectiveKey, bool>, Algorithm> choice;
};
constexpr std::size_t kCachedTopologies = 4;
constexpr std::size_t kMaxCachedSpecs = 1 << 16;  // a cache that grows past this is cleared (bounded memory)

TopologyCache& cache_of(const Topology& topo) {
  thread_local std::array<TopologyCache, kCachedTopologies> caches;
  thread_local std::size_t next = 0;
  for (TopologyCache& c : caches)
    if (c.topology == topo.instance_id()) return c;
  TopologyCache& c = caches[next];
  next = (next + 1) % kCachedTopologies;
  c = TopologyCache{};
  c.topology = topo.instance_id();
  return c;
}

enum Pattern : int {
  kRingPattern,
  kChainPattern,
  kTreePattern,
  kFoldPattern,
  kExchangePattern,
  kGroupRings,
  kGroupChains,
  kLeaders,
  kNodeRings,
  kColumns
};

// The step closed form priced from hop classes. Patterns over the topology's own ring order (no rank list) are
// cached; over a rank list they are collected afresh (the spec's whole result is cached by the caller).
TimePs step_closed_form_ps(const CollectiveSpec& spec, const Topology& topo) {
  const bool rs_or_ag =
      spec.op == Collective::AllReduce || spec.op == Collective::ReduceScatter || spec.op == Collective::AllGather;
  const Steps m{spec, spec.channels}, single{spec, 1};
  if (spec.algorithm == Algorithm::Ring && rs_or_ag && spec.ranks.empty()) {  // the common case at scale: no rank list
    check_supported(spec, topo.ranks(), "collective");
    // The topology lists the distinct hops of its own ring (Topology::ring_hops).
    HopClasses hops;
    for (const Topology::RingHop& h : topo.ring_hops()) hops.push_back({h.cost, h.same_node});
    return m.ring(static_cast<Bytes>(topo.ranks()), spec.bytes, spec.op != Collective::AllGather,
                  spec.op != Collective::ReduceScatter,
                  [&](Bytes piece) { return closed_form::slowest(m, hops, piece); });
  }
  const int p = spec.ranks.empty() ? topo.ranks() : static_cast<int>(spec.ranks.size());
  check_supported(spec, p, "collective");
  std::vector<int> order;  // built on the first pattern that must visit hops
  auto rank_order = [&]() -> const std::vector<int>& {
    if (order.empty()) order = spec.ranks.empty() ? topo.ring_order() : spec.ranks;
    return order;
  };
  std::map<std::tuple<int, int, int>, HopClasses> uncached;
  auto& store = spec.ranks.empty() ? cache_of(topo).classes : uncached;
  // The classes of a pattern: `regular` may find them from one node and one column (returns false where it cannot),
  // else `positions` visits every hop of the pattern.
  auto classes = [&](Pattern pattern, int x, int y, auto regular, auto positions) -> const HopClasses& {
    auto [it, fresh] = store.try_emplace({pattern, x, y});
    if (!fresh) return it->second;
    HopCollector shortcut(topo);  // the regular shortcuts collect nothing where they return false
    if (spec.ranks.empty() && regular(shortcut)) return it->second = shortcut.take();
    HopCollector every_hop(topo);
    const std::vector<int>& ranks = rank_order();
    positions(
        [&](int i, int j) { every_hop.add(ranks[static_cast<std::size_t>(i)], ranks[static_cast<std::size_t>(j)]); });
    return it->second = every_hop.take();
  };
  auto no_shortcut = [](HopCollector&) { return false; };
  auto price = [&](const Steps& steps, const HopClasses& c) {
    return [&steps, &c](Bytes piece) { return closed_form::slowest(steps, c, piece); };
  };
  switch (spec.algorithm) {
    case Algorithm::Ring: {
      if (spec.op == Collective::Broadcast || spec.op == Collective::Reduce) {
        // A chain from the root: position i of the chain is position (root + i) mod p of the order.
        const int root = spec.root % p;
        const HopClasses& c = classes(kChainPattern, root, 0, no_shortcut, [&](auto visit) {
          closed_form::chain_positions(p, [&](int i, int j) { visit((root + i) % p, (root + j) % p); });
        });
        return m.chain(static_cast<Bytes>(p), spec.bytes, spec.op == Collective::Reduce, price(m, c));
      }
      const HopClasses& c =
          classes(kRingPattern, 0, 0, no_shortcut, [&](auto visit) { closed_form::ring_positions(p, visit); });
      return m.ring(static_cast<Bytes>(p), spec.bytes, spec.op != Collective::AllGather,
                    spec.op != Collective::ReduceScatter, price(m, c));
    }
    case Algorithm::Tree: {
      const HopClasses& c =
          classes(kTreePattern, p, 0, no_shortcut, [&](auto visit) { closed_form::tree_positions(p, visit); });
      return m.tree(p, spec.bytes, price(m, c));
    }
    case Algorithm::HalvingDoubling: {
      const int q = largest_power_of_two_at_most(p);
      return m.halving_doubling(
          p, spec.bytes,
          [&](Bytes b) {
            return closed_form::slowest(
                m,
                classes(kFoldPattern, p, q, no_shortcut, [&](auto visit) { closed_form::fold_positions(p, q, visit); }),
                b);
          },
          [&](int distance, Bytes b) {
            return closed_form::slowest(
                m,
                classes(kExchangePattern, q, distance, no_shortcut,
                        [&](auto visit) { closed_form::exchange_positions(q, distance, visit); }),
                b);
          });
    }
    case Algorithm::Hierarchical: {
      // Every group has `size` ranks, so the slowest group's ring (chain) is the ring (chain) at the slowest hop of
      // all the groups' hops (closed_form_steps.hpp).
      const int groups = hierarchy_group_count(spec, p), size = p / groups;
      auto in_groups = [&](bool closed) {
        return [&, closed](auto visit) {
          for (int g = 0; g < groups; ++g) {
            auto shifted = [&](int i, int j) { visit(g * size + i, g * size + j); };
            closed ? closed_form::ring_positions(size, shifted) : closed_form::chain_positions(size, shifted);
          }
        };
      };
      const HopClasses& rings = classes(
          kGroupRings, size, 0, [&](HopCollector& c) { return closed_form::regular_group_hops(topo, size, true, c); },
          in_groups(true));
      const HopClasses& chains = classes(
          kGroupChains, size, 0, [&](HopCollector& c) { return closed_form::regular_group_hops(topo, size, false, c); },
          in_groups(false));
      const HopClasses& leaders = classes(
          kLeaders, size, 0, [&](HopCollector& c) { return closed_form::regular_leader_hops(topo, size, c); },
          [&](auto visit) { closed_form::ring_positions(groups, [&](int i, int j) { visit(i * size, j * size); }); });
      const TimePs intra = single.ring(static_cast<Bytes>(size), spec.bytes, true, true, price(single, rings));
      const TimePs broadcast = single.chain(static_cast<Bytes>(size), spec.bytes, false, price(single, chains));
      const TimePs across = single.ring(static_cast<Bytes>(groups), spec.bytes, true, true, price(single, leaders));
      return add_ps(add_ps(intra, across), broadcast);
    }
    case Algorithm::Ring2D: {
      const int rpn = spec.ranks_per_node, nodes = p / rpn;
      const bool topology_nodes = rpn == topo.ranks_per_node();  // the shortcuts know the topology's nodes only
      const HopClasses& node_rings = classes(
          kNodeRings, rpn, 0,
          [&](HopCollector& c) { return topology_nodes && closed_form::regular_group_hops(topo, rpn, true, c); },
          [&](auto visit) {
            for (int n = 0; n < nodes; ++n)
              closed_form::ring_positions(rpn, [&](int i, int j) { visit(n * rpn + i, n * rpn + j); });
          });
      const HopClasses& columns = classes(
          kColumns, rpn, 0,
          [&](HopCollector& c) { return topology_nodes && closed_form::regular_column_hops(topo, c); },
          [&](auto visit) {
            for (int j = 0; j < rpn; ++j)
              closed_form::ring_positions(nodes, [&](int a, int b) { visit(a * rpn + j, b * rpn + j); });
          });
      const TimePs rs = single.ring(static_cast<Bytes>(rpn), spec.bytes, true, false, price(single, node_rings));
      const TimePs across = single.ring(static_cast<Bytes>(nodes), closed_form::ceil_div(spec.bytes, rpn), true, true,
                                        price(single, columns));  // the largest block
      // The allgather inside the node mirrors the reduce-scatter without reductions.
      const TimePs ag = single.ring(static_cast<Bytes>(rpn), spec.bytes, false, true, price(single, node_rings));
      return add_ps(add_ps(rs, across), ag);
    }
    default:
      break;
  }
  COMMSIM_CHECK(false, "closed form of auto and of NCCL-only algorithms is not a schedule's");
  return 0;
}

// The closed form of a resolved algorithm, once per topology and spec.
TimePs cached_closed_form_ps(const CollectiveSpec& spec, const Topology& topo) {
  TopologyCache& cache = cache_of(topo);
  if (cache.closed_ps.size() > kMaxCachedSpecs) cache.closed_ps.clear();
  const CollectiveKey key = collective_key(spec);
  if (auto it = cache.closed_ps.find(key); it != cache.closed_ps.end()) return it->second;
  const TimePs t = closed_form::closed_form_ps(spec, topo, step_closed_form_ps(spec, topo));
  // The cache may have been replaced meanwhile (a busiest-link schedule of `auto` resolves on the same thread).
  return cache_of(topo).closed_ps[key] = t;
}
std::vector<int> all_ranks(const CollectiveSpec& s, const Topology& t) {
  if (!s.ranks.empty()) return s.ranks;
  return t.ring_order();
}

}  // namespace

bool library_only(Algorithm a) {
  return a == Algorithm::Nvls || a == Algorithm::NvlsTree || a == Algorithm::CollNetDirect ||
         a == Algorithm::CollNetChain || a == Algorithm::Pat;
}

bool uses_library_model(const CollectiveSpec& spec, const Topology& topology) {
  if (topology.library().kind != LibraryKind::Nccl) return false;
  if (spec.algorithm == Algorithm::Hierarchical) return spec.ranks.empty();  // three NCCL collectives (below)
  const bool nccl_algorithm = spec.algorithm == Algorithm::Auto || spec.algorithm == Algorithm::Ring ||
                              spec.algorithm == Algorithm::Tree || library_only(spec.algorithm);
  return nccl_algorithm && (spec.ranks.empty() || nccl::machine_of(topology, spec.ranks).ranks > 0);
}

LibraryPrediction library_prediction(const CollectiveSpec& spec, const Topology& topology) {
  COMMSIM_CHECK(uses_library_model(spec, topology), "library_prediction needs a collective the library prices");
  if (spec.algorithm != Algorithm::Hierarchical) {
    const nccl::Estimate e = nccl::predict(spec, topology);
    return {e.latency_s, e.seconds};
  }
  // Paddle's hierarchical allreduce on NCCL: an allreduce inside each group, one between the groups' leaders, a
  // broadcast inside each group, each a collective NCCL prices on its own communicator. Groups have one shape (the
  // nodes repeat one template), so the first group stands for all.
  const std::vector<int> ranks = all_ranks(spec, topology);
  const int p = static_cast<int>(ranks.size());
  check_supported(spec, p, "collective");
  const int groups = hierarchy_group_count(spec, p);
  const int size = p / groups;
  CollectiveSpec phase = spec;
  phase.hierarchy_groups = 0;
  LibraryPrediction total{0, 0};
  auto add = [&](Collective op, std::vector<int> members) {
    if (members.size() < 2) return;
    phase.op = op;
    phase.algorithm = op == Collective::Broadcast ? Algorithm::Ring : Algorithm::Auto;
    phase.ranks = std::move(members);
    const nccl::Estimate e = nccl::predict(phase, topology);
    total.latency_s += e.latency_s;
    total.seconds += e.seconds;
  };
  std::vector<int> leaders;
  for (int g = 0; g < groups; ++g) leaders.push_back(ranks[g * size]);
  add(Collective::AllReduce, std::vector<int>(ranks.begin(), ranks.begin() + size));
  add(Collective::AllReduce, leaders);
  add(Collective::Broadcast, std::vector<int>(ranks.begin(), ranks.begin() + size));
  return total;
}

double predict_seconds(const CollectiveSpec& spec, const Topology& topology) {
  if (uses_library_model(spec, topology)) return library_prediction(spec, topology).seconds;
  return closed_form_seconds(spec, topology);
}

Algorithm choose_algorithm(const CollectiveSpec& spec, const Topology& topology, bool need_schedule) {
  if (spec.algorithm != Algorithm::Auto) return spec.algorithm;
  if (uses_library_model(spec, topology)) return nccl::choose(spec, topology, "collective", need_schedule).algorithm;
  TopologyCache& cache = cache_of(topology);
  if (cache.choice.size() > kMaxCachedSpecs) cache.choice.clear();
  const std::pair<CollectiveKey, bool> key{collective_key(spec), need_schedule};
  if (auto it = cache.choice.find(key); it != cache.choice.end()) return it->second;
  const int p = spec.ranks.empty() ? topology.ranks() : static_cast<int>(spec.ranks.size());
  const Algorithm best = closed_form::cheapest_algorithm(
      spec, p, [&](const CollectiveSpec& candidate) { return cached_closed_form_ps(candidate, topology); });
  return cache_of(topology).choice[key] = best;
}

CollectiveKey collective_key(const CollectiveSpec& s) {
  return {s.op,         s.algorithm, s.protocol,         s.bytes,      s.ranks,          s.channels,
          s.chunks,     s.root,      s.hierarchy_groups, s.reduce_Bps, s.ranks_per_node, s.offset,
          s.unit_bytes, s.aggregate, s.nccl_channels};
}

double total_transfer_bytes(const CollectiveSpec& spec, int p) {
  const double m = static_cast<double>(spec.bytes);
  switch (spec.algorithm) {
    case Algorithm::Ring:
      // Allreduce: every rank sends 2(p-1) blocks of m/p; the others (p-1) blocks, or the chain's p-1 hops of m.
      return spec.op == Collective::AllReduce ? 2.0 * (p - 1) * m : (p - 1) * m;
    case Algorithm::Tree:
      return 2.0 * (p - 1) * m;  // two trees, each m/2 up and down p-1 edges
    case Algorithm::HalvingDoubling: {
      const int q = largest_power_of_two_at_most(p);
      return 2.0 * (q - 1) * m + 2.0 * (p - q) * m;  // halving + doubling, plus the fold in and out
    }
    case Algorithm::Hierarchical: {
      const int groups = hierarchy_group_count(spec, p);
      const int g = p / groups;
      return groups * 2.0 * (g - 1) * m + 2.0 * (groups - 1) * m + groups * (g - 1.0) * m;
    }
    case Algorithm::Ring2D: {
      const int r = spec.ranks_per_node, n = p / r;
      return 2.0 * n * (r - 1) * m + 2.0 * (n - 1) * m;  // in-node reduce-scatter + allgather, across-node allreduce
    }
    case Algorithm::Nvls:
    case Algorithm::CollNetDirect:
      return 1.0 * p * m;  // each rank sends its vector once, to the switch that reduces it
    case Algorithm::NvlsTree:
    case Algorithm::CollNetChain:
      return 2.0 * (p - 1) * m;  // as a chain/tree: up and down every edge once
    case Algorithm::Pat:
      return (p - 1) * m;  // as the ring: every rank sends p-1 blocks of m/p ... of the others
    case Algorithm::Auto:
      break;
  }
  COMMSIM_CHECK(false, "total_transfer_bytes needs a resolved algorithm");
  return 0;
}

double step_closed_form_seconds(const CollectiveSpec& spec, const Topology& topology) {
  CollectiveSpec s = spec;
  s.algorithm = choose_algorithm(spec, topology);
  COMMSIM_CHECK(!library_only(s.algorithm), "NCCL-only algorithms have no step closed form");
  return ps_to_seconds(step_closed_form_ps(s, topology));
}

double closed_form_seconds(const CollectiveSpec& spec, const Topology& topology) {
  CollectiveSpec s = spec;
  s.algorithm = choose_algorithm(spec, topology);
  if (library_only(s.algorithm)) return nccl::predict(s, topology).seconds;
  return ps_to_seconds(cached_closed_form_ps(s, topology));
}

}  // namespace commsim
