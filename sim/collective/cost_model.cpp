// Closed-form alpha-beta-gamma model of every schedule generator, evaluated on the topology's actual paths: a step
// costs what its slowest hop costs (latency + bytes / bottleneck bandwidth), rounded to the engine's picosecond
// quantum exactly as the engine rounds, so on a uniform network the closed form and the simulated schedule agree
// to the picosecond. Channels: a ring's channels all pass through every rank, so they share each rank's
// intra-node links (bandwidth / channels); across nodes each channel leaves through a different GPU and NIC
// (rotated order), so NIC links are shared only when channels outnumber the ranks of a node.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "sim/collective/collective.hpp"
#include "sim/collective/nccl_model.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

Bytes ceil_div(Bytes a, Bytes b) { return (a + b - 1) / b; }

struct Model {
  const CollectiveSpec& spec;
  const Topology& topo;
  int channels;

  TimePs hop(int a, int b, Bytes bytes) const {
    return hop_time(topo.path_cost(a, b), topo.node_of(a) == topo.node_of(b), bytes);
  }
  TimePs hop_time(const PathCost& c, bool same_node, Bytes bytes) const {
    const double share =
        same_node ? channels : std::max(1.0, std::ceil(static_cast<double>(channels) / spec.ranks_per_node));
    // The engine enters a flow after its latency, then drains it at its rate: the same two roundings here.
    return add_ps(seconds_to_ps(c.latency_s), transfer_ps(static_cast<double>(bytes), c.bottleneck_Bps / share));
  }
  TimePs reduce(Bytes bytes) const {
    return spec.reduce_Bps > 0 ? transfer_ps(static_cast<double>(bytes), spec.reduce_Bps) : 0;
  }
  // Slowest hop of a ring over `order` for a message of `bytes`. Rings visit hundreds of thousands of ranks, so
  // hops are priced sparingly: a hop inside a node costs what the same pair of local ranks costs in any node (every
  // node is the same template), so those are priced once per local pair; a hop between nodes is priced only when
  // its path cost differs from the previous such hop's.
  TimePs ring_hop(const std::vector<int>& order, Bytes bytes) const {
    TimePs worst = 0;
    const std::size_t p = order.size();
    const int rpn = topo.ranks_per_node();
    const bool small_node = rpn <= 64;
    std::vector<TimePs> local(small_node ? static_cast<std::size_t>(rpn) * rpn : 0, -1);  // by local pair
    PathCost last{-1, -1};
    bool last_same_node = false;
    TimePs last_time = 0;
    int node_a = p > 0 ? order[0] / rpn : 0;
    for (std::size_t i = 0; i < p; ++i) {
      const int a = order[i], b = order[i + 1 == p ? 0 : i + 1];
      const int node_b = b / rpn;
      const bool same_node = node_a == node_b;
      node_a = node_b;
      if (same_node && small_node) {
        TimePs& t = local[static_cast<std::size_t>(a - node_b * rpn) * rpn + (b - node_b * rpn)];
        if (t < 0) t = hop_time(topo.path_cost(a, b), true, bytes);
        worst = std::max(worst, t);
        continue;
      }
      const PathCost c = topo.path_cost(a, b);
      if (c.latency_s != last.latency_s || c.bottleneck_Bps != last.bottleneck_Bps || same_node != last_same_node) {
        last = c;
        last_same_node = same_node;
        last_time = hop_time(c, same_node, bytes);
      }
      worst = std::max(worst, last_time);
    }
    return worst;
  }

  // Ring reduce-scatter and/or allgather (both: allreduce) of `bytes` over `order`, one channel's share.
  TimePs ring(const std::vector<int>& order, Bytes bytes, bool rs, bool ag) const {
    return ring_steps(order.size(), bytes, rs, ag, [&](Bytes piece) { return ring_hop(order, piece); });
  }
  // The same over the topology's own ring of every rank, from its distinct hops.
  TimePs whole_ring(Bytes bytes, bool rs, bool ag) const {
    const std::vector<Topology::RingHop> hops = topo.ring_hops();
    return ring_steps(static_cast<Bytes>(topo.ranks()), bytes, rs, ag, [&](Bytes piece) {
      TimePs worst = 0;
      for (const Topology::RingHop& h : hops) worst = std::max(worst, hop_time(h.cost, h.same_node, piece));
      return worst;
    });
  }
  // A ring of p ranks whose slowest hop takes slowest_hop(piece) for a piece of that many bytes.
  template <typename SlowestHop>
  TimePs ring_steps(Bytes p, Bytes bytes, bool rs, bool ag, SlowestHop slowest_hop) const {
    if (p < 2) return 0;
    const int chunks = spec.chunks > 0 ? spec.chunks : 1;
    const Bytes piece = ceil_div(ceil_div(ceil_div(bytes, channels), p), chunks);
    const TimePs steps = (rs ? p - 1 : 0) + (ag ? p - 1 : 0);
    // A rank sends the `chunks` pieces of a step back to back on one connection (FIFO: each after the previous one
    // has arrived), so a step occupies chunks hops: the ring gains nothing from pipelining, as every link is busy at
    // every step already. Step s+1 starts once the step-s piece 0 from the left has arrived (and been reduced) and
    // the rank's own step-s pieces are out: max(g, (chunks - 1) h) + h after a reducing step, chunks * h otherwise.
    const TimePs h = slowest_hop(piece), g = reduce(piece), k = chunks;
    const TimePs reducing_gaps = rs ? static_cast<TimePs>(p) - (ag ? 1 : 2) : 0;  // step starts after a reducing step
    const TimePs plain_gaps = steps - 1 - reducing_gaps;
    const TimePs reducing_step = add_ps(std::max(g, times_ps(k - 1, h)), h);
    TimePs total = add_ps(h, times_ps(reducing_gaps, reducing_step));
    total = add_ps(total, times_ps(plain_gaps, times_ps(k, h)));
    total = add_ps(total, times_ps(k - 1, h));
    return add_ps(total, rs && !ag ? g : 0);
  }
  int pipeline_chunks(Bytes bytes) const {
    if (spec.chunks > 0) return spec.chunks;
    return static_cast<int>(std::clamp<Bytes>(ceil_div(bytes, 512u << 10), 1, 64));
  }
  // Pipelined chain broadcast / reduce.
  TimePs chain(const std::vector<int>& order, Bytes bytes, bool reducing) const {
    const Bytes p = order.size();
    if (p < 2) return 0;
    const Bytes per_channel = ceil_div(bytes, channels);
    const int k = pipeline_chunks(per_channel);
    const Bytes piece = ceil_div(per_channel, k);
    TimePs worst = 0;
    for (std::size_t i = 0; i + 1 < p; ++i) worst = std::max(worst, hop(order[i], order[i + 1], piece));
    return add_ps(times_ps(static_cast<TimePs>(p - 2 + k), worst),
                  reducing ? times_ps(static_cast<TimePs>(p - 1), reduce(piece)) : 0);
  }
  // Double binary tree: up and down the depth D with k pipelined pieces, each tree half the data.
  TimePs tree(const std::vector<int>& order, Bytes bytes) const {
    const int p = static_cast<int>(order.size());
    if (p < 2) return 0;
    const Bytes half = ceil_div(ceil_div(bytes, channels), 2);
    const int k = pipeline_chunks(half);
    const Bytes piece = ceil_div(half, k);
    TimePs worst = 0;
    for (int i = 1; i < p; ++i) {
      worst = std::max(worst, hop(order[i], order[(i - 1) / 2], piece));
      worst = std::max(worst, hop(order[p - 1 - i], order[p - 1 - (i - 1) / 2], piece));
    }
    int depth = 0;
    while ((2 << depth) - 1 < p) ++depth;  // heap depth: positions 0 .. p-1
    // Piece 0 up the tree: a parent joins its children one after the other (receive, then reduce), so the time the
    // root holds it depends on the heap's shape (a parent with one child reduces once). Every later piece follows
    // one hop behind the previous one on every edge (the reductions of different pieces overlap), and the stream
    // then flows down `depth` hops to the deepest leaf.
    const TimePs g = reduce(piece);
    std::vector<TimePs> up(static_cast<std::size_t>(p), 0);
    for (int i = p - 1; i >= 0; --i)
      for (int child : {2 * i + 1, 2 * i + 2})
        if (child < p) up[i] = add_ps(std::max(up[i], add_ps(up[child], worst)), g);
    return add_ps(up[0], times_ps(depth + k - 1, worst));
  }
  // Rabenseifner halving-doubling with the fold for non-powers of two.
  TimePs halving_doubling(const std::vector<int>& order, Bytes bytes) const {
    const int p = static_cast<int>(order.size());
    if (p < 2) return 0;
    bytes = ceil_div(bytes, channels);
    const int q = largest_power_of_two_at_most(p);
    TimePs total = 0;
    if (q < p) {
      TimePs fold = 0;
      for (int i = q; i < p; ++i) fold = std::max(fold, hop(order[i], order[i - q], bytes));
      total = add_ps(total, add_ps(times_ps(2, fold), reduce(bytes)));
    }
    auto exchange = [&](int distance, Bytes b) {
      TimePs worst = 0;
      for (int i = 0; i < q; ++i) worst = std::max(worst, hop(order[i], order[i ^ distance], b));
      return worst;
    };
    Bytes owned = bytes;
    std::vector<Bytes> kept;
    for (int distance = q / 2; distance >= 1; distance /= 2) {
      const Bytes send = owned - owned / 2;  // the larger half, as the upper rank of each pair sends it
      total = add_ps(total, add_ps(exchange(distance, send), reduce(send)));
      kept.push_back(owned - owned / 2);
      owned -= owned / 2;
    }
    for (int distance = 1; distance < q; distance *= 2) {
      total = add_ps(total, exchange(distance, kept.back()));
      kept.pop_back();
    }
    return total;
  }
};

std::vector<int> all_ranks(const CollectiveSpec& s, const Topology& t) {
  if (!s.ranks.empty()) return s.ranks;
  return t.ring_order();
}

TimePs step_closed_form_ps(const CollectiveSpec& spec, const Topology& topo) {
  const bool rs_or_ag =
      spec.op == Collective::AllReduce || spec.op == Collective::ReduceScatter || spec.op == Collective::AllGather;
  if (spec.algorithm == Algorithm::Ring && rs_or_ag && spec.ranks.empty()) {  // the common case at scale: no rank list
    check_supported(spec, topo.ranks(), "collective");
    return Model{spec, topo, spec.channels}.whole_ring(spec.bytes, spec.op != Collective::AllGather,
                                                       spec.op != Collective::ReduceScatter);
  }
  const std::vector<int> ranks = all_ranks(spec, topo);
  const int p = static_cast<int>(ranks.size());
  check_supported(spec, p, "collective");
  Model m{spec, topo, spec.channels};
  Model single{spec, topo, 1};
  switch (spec.algorithm) {
    case Algorithm::Ring:
      if (spec.op == Collective::Broadcast || spec.op == Collective::Reduce) {
        std::vector<int> order = ranks;
        std::rotate(order.begin(), order.begin() + spec.root % p, order.end());
        return m.chain(order, spec.bytes, spec.op == Collective::Reduce);
      }
      return m.ring(ranks, spec.bytes, spec.op != Collective::AllGather, spec.op != Collective::ReduceScatter);
    case Algorithm::Tree:
      return m.tree(ranks, spec.bytes);
    case Algorithm::HalvingDoubling:
      return m.halving_doubling(ranks, spec.bytes);
    case Algorithm::Hierarchical: {
      const int groups = hierarchy_group_count(spec, p);
      const int size = p / groups;
      TimePs intra = 0, broadcast = 0;
      std::vector<int> leaders;
      for (int g = 0; g < groups; ++g) {
        std::vector<int> group(ranks.begin() + g * size, ranks.begin() + (g + 1) * size);
        leaders.push_back(group.front());
        intra = std::max(intra, single.ring(group, spec.bytes, true, true));
        broadcast = std::max(broadcast, single.chain(group, spec.bytes, false));
      }
      return add_ps(add_ps(intra, single.ring(leaders, spec.bytes, true, true)), broadcast);
    }
    case Algorithm::Ring2D: {
      const int rpn = spec.ranks_per_node, nodes = p / rpn;
      TimePs rs = 0, across = 0;
      for (int n = 0; n < nodes; ++n) {
        std::vector<int> node(ranks.begin() + n * rpn, ranks.begin() + (n + 1) * rpn);
        rs = std::max(rs, single.ring(node, spec.bytes, true, false));
      }
      for (int j = 0; j < rpn; ++j) {
        std::vector<int> column;
        for (int n = 0; n < nodes; ++n) column.push_back(ranks[n * rpn + j]);
        across = std::max(across, single.ring(column, ceil_div(spec.bytes, rpn), true, true));  // the largest block
      }
      // The allgather inside the node mirrors the reduce-scatter without reductions.
      TimePs ag = 0;
      for (int n = 0; n < nodes; ++n) {
        std::vector<int> node(ranks.begin() + n * rpn, ranks.begin() + (n + 1) * rpn);
        ag = std::max(ag, single.ring(node, spec.bytes, false, true));
      }
      return add_ps(add_ps(rs, across), ag);
    }
    default:
      break;
  }
  COMMSIM_CHECK(false, "closed form of auto and of NCCL-only algorithms is not a schedule's");
  return 0;
}

// Largest communicator whose schedule is routed for the busiest-link bound (generating and routing it costs about
// p log p transfers for the tree and halving-doubling); beyond it the step closed form stands alone.
constexpr int kLoadBoundMaxRanks = 1024;

// The busiest link's load: every transfer of the schedule crosses the links of its route, and a link drains at most
// its effective rate, so no execution of the schedule (flow, or the hardware) is faster than load / rate. The
// step-by-step closed forms of the tree, halving-doubling, hierarchical and 2D ring price each step as if its
// transfers had their links alone; where several of them share a link (a NIC of a node, say) this bound is larger.
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

TimePs closed_form_ps(const CollectiveSpec& spec, const Topology& topo) {
  const TimePs steps = step_closed_form_ps(spec, topo);
  const int p = spec.ranks.empty() ? topo.ranks() : static_cast<int>(spec.ranks.size());
  if (spec.algorithm == Algorithm::Ring || p > kLoadBoundMaxRanks) return steps;  // a ring's steps already share
  return std::max(steps, busiest_link_ps(spec, topo));
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
  const int p = spec.ranks.empty() ? topology.ranks() : static_cast<int>(spec.ranks.size());
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
    TimePs t = closed_form_ps(candidate, topology);
    if (t < best_ps) best_ps = t, best = a;  // ties keep the earlier (simpler) algorithm
  }
  return best;
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
  return ps_to_seconds(closed_form_ps(s, topology));
}

}  // namespace commsim
