// Ring (Patarasuk & Yuan 2009): reduce-scatter and/or allgather around the participants (both: allreduce), and a
// pipelined chain from the root for broadcast and reduce. Also its representatives (representatives.hpp).
#include <algorithm>

#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/representatives.hpp"
#include "sim/collective/step_pricer.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

using schedule_parts::Gen;
using schedule_parts::piece;
using schedule_parts::piece_offset;

bool rooted(Collective op) { return op == Collective::Broadcast || op == Collective::Reduce; }

// The bytes of pieces from, from - 1, ... (`count` of them, cyclically over p): each whole turn is every piece once,
// the rest an ascending run of indices, summed from piece_offset's prefix sums (O(1), not O(count)).
Bytes pieces_down_from(Bytes bytes, int p, int from, int count) {
  const auto parts = static_cast<std::uint64_t>(p);
  const int rest = count % p;
  const auto begin = static_cast<std::uint64_t>(((from - rest + 1) % p + p) % p);
  const auto end = begin + static_cast<std::uint64_t>(rest);
  const Bytes run = end <= parts ? piece_offset(bytes, parts, end) - piece_offset(bytes, parts, begin)
                                 : bytes - piece_offset(bytes, parts, begin) + piece_offset(bytes, parts, end - parts);
  return static_cast<Bytes>(count / p) * bytes + run;
}

// The ring's edges as one flow each (CollectiveSpec::aggregate): all of a position's steps' bytes after a delay of
// the other steps' latencies, those of the slowest edge, as the closed form counts them.
void aggregated_ring(Gen& g, const std::vector<int>& order, Bytes bytes, bool reduce_scatter, int steps) {
  const int p = static_cast<int>(order.size());
  double latency_s = 0;
  for (int i = 0; i < p; ++i) latency_s = std::max(latency_s, g.topo.path_cost(order[i], order[(i + 1) % p]).latency_s);
  const TimePs wait = times_ps(steps - 1, seconds_to_ps(latency_s));
  const int first_step = reduce_scatter ? 0 : p - 1;  // as in ring()
  std::vector<OpId> into(p);
  for (int i = 0; i < p; ++i) {
    const int to = (i + 1) % p;
    OpId d = g.s.delay(order[i], wait, {g.frontier[order[i]], g.frontier[order[to]]});
    const auto first_block = static_cast<int>(schedule_parts::ring_block(i, 0, first_step, p));
    into[to] = g.s.transfer(order[i], order[to], pieces_down_from(bytes, p, first_block, steps), {d});
  }
  for (int i = 0; i < p; ++i)
    g.frontier[order[i]] =
        reduce_scatter && g.reduces() ? g.s.reduce(order[i], (p - 1) * piece(bytes, p, 0), {into[i]}) : into[i];
}

// Ring reduce-scatter and/or allgather over `order`, `bytes` the full vector. With both phases this is the ring
// allreduce: 2(p-1) steps, each moving bytes/p per rank.
void ring(Gen& g, const std::vector<int>& order, Bytes bytes, bool reduce_scatter, bool all_gather, int chunks) {
  const int p = static_cast<int>(order.size());
  if (p < 2) return;
  const int steps = (reduce_scatter ? p - 1 : 0) + (all_gather ? p - 1 : 0);
  if (g.spec.aggregate) return aggregated_ring(g, order, bytes, reduce_scatter, steps);
  // holds[i][k]: op after which position i holds piece k of the block it received last; last_out[i]: the last
  // transfer position i started, since pieces leave one connection in order (FIFO).
  // With representatives only, position n stands for position 0 (the same orbit), so the arrays wrap at n.
  const int n = g.positions > 0 ? g.positions : p;
  // One flat array per step, indexed [i * chunks + k]: a vector per position was 2(p - 1) x p allocations.
  const auto at = [chunks](int i, int k) { return static_cast<std::size_t>(i) * chunks + k; };
  std::vector<OpId> holds(at(n, 0), kNoOp), next(holds.size());
  std::vector<OpId> last_out(n, kNoOp);
  std::vector<OpId> entry(n);
  for (int i = 0; i < n; ++i) entry[i] = g.frontier[order[i]];
  // An allgather on its own runs the allreduce's second half, so position i contributes block (i + 1) mod p: the
  // block a reduce-scatter on its own leaves it (what Ring2D chains, and what a backend lays out real data by).
  const int first_step = reduce_scatter ? 0 : p - 1;
  for (int step = 0; step < steps; ++step) {
    const bool reducing = reduce_scatter && step < p - 1;
    std::fill(next.begin(), next.end(), kNoOp);
    for (int i = 0; i < n; ++i) {
      const int to = (i + 1) % p, to_slot = (i + 1) % n;
      const std::uint64_t block = schedule_parts::ring_block(i, step, first_step, p);
      const Bytes block_bytes = piece(bytes, p, block);
      const Bytes block_offset = g.base + piece_offset(bytes, p, block);
      for (int k = 0; k < chunks; ++k) {
        const Bytes b = piece(block_bytes, chunks, k);
        const Bytes offset = block_offset + piece_offset(block_bytes, chunks, k);
        OpId ready = step == 0 ? entry[i] : holds[at(i, k)];
        OpId t = g.s.transfer(order[i], order[to], b, {ready, last_out[i], step == 0 ? entry[to_slot] : kNoOp}, offset);
        last_out[i] = t;
        next[at(to_slot, k)] = reducing ? g.maybe_reduce(order[to], b, t, entry[to_slot], offset) : t;
      }
    }
    holds.swap(next);
  }
  for (int i = 0; i < n; ++i)
    g.frontier[order[i]] = holds[at(i, chunks - 1)] != kNoOp ? holds[at(i, chunks - 1)] : g.frontier[order[i]];
}

// Pipelined chain broadcast (reduce=false, from order[0] down the chain) or chain reduce (reduce=true, towards
// order[0]): the piece k moves one hop per step; time (p - 1 + chunks - 1) hops.
void chain(Gen& g, std::vector<int> order, Bytes bytes, bool reduce, int chunks) {
  const int p = static_cast<int>(order.size());
  if (p < 2) return;
  if (reduce) std::reverse(order.begin(), order.end());  // data flows from the far end to the root
  std::vector<OpId> entry(p);
  for (int i = 0; i < p; ++i) entry[i] = g.frontier[order[i]];
  std::vector<OpId> have(chunks, kNoOp);  // op after which order[i] holds piece k (for the current i)
  for (int k = 0; k < chunks; ++k) have[k] = entry[0];
  for (int i = 0; i + 1 < p; ++i) {
    OpId previous = kNoOp;
    for (int k = 0; k < chunks; ++k) {
      const Bytes b = piece(bytes, chunks, k);
      const Bytes offset = g.base + piece_offset(bytes, chunks, k);
      OpId t = g.s.transfer(order[i], order[i + 1], b, {have[k], previous, entry[i + 1]}, offset);
      previous = t;
      have[k] = reduce ? g.maybe_reduce(order[i + 1], b, t, entry[i + 1], offset) : t;
    }
    // Every rank but the last holds its result once it has passed the last piece on (broadcast) or, for reduce,
    // only the root matters; intermediate ranks are done once they forwarded.
    g.frontier[order[i]] = previous;
  }
  g.frontier[order[p - 1]] = have[chunks - 1];
}

void generate_ring(const CollectiveSpec& s, const Topology& topology, const std::vector<int>& ranks, Schedule& schedule,
                   std::vector<OpId>& frontier) {
  const int p = static_cast<int>(ranks.size());
  schedule_parts::for_each_channel(
      s, topology, ranks, schedule, frontier, [&](Gen& g, std::vector<int>& order, Bytes bytes) {
        if (rooted(s.op)) {
          std::rotate(order.begin(), std::find(order.begin(), order.end(), ranks[s.root % p]), order.end());
          chain(g, order, bytes, s.op == Collective::Reduce, schedule_parts::default_chunks(s, true, bytes));
        } else {
          ring(g, order, bytes, s.op != Collective::AllGather, s.op != Collective::ReduceScatter,
               schedule_parts::default_chunks(s, false, bytes));
        }
      });
}

enum Pattern : int { kRingPattern, kChainPattern, kSharedRingPattern };

// The chain from the root: position i of the chain is position (root + i) mod p of the order.
closed_form::VisitPositions chain_from(int p, int root) {
  return [p, root](const std::function<void(int, int)>& visit) {
    closed_form::chain_positions(p, [&](int i, int j) { visit((root + i) % p, (root + j) % p); });
  };
}

TimePs ring_step_ps(StepPricer& pricer) {
  const CollectiveSpec& spec = pricer.spec;
  const closed_form::Steps& m = pricer.steps;
  const bool reduce_scatter = spec.op != Collective::AllGather, all_gather = spec.op != Collective::ReduceScatter;
  if (!rooted(spec.op) && spec.ranks.empty()) {  // the common case at scale: no rank list
    // The channels share the ring's links (ring_link_shares.hpp): classes found once per topology, channel count
    // and node size.
    auto& store = closed_form_cache_of(pricer.topology).classes;
    auto [it, fresh] = store.try_emplace(
        {static_cast<int>(Algorithm::Ring), kSharedRingPattern, 0, 0, spec.channels, spec.ranks_per_node});
    if (fresh) it->second = closed_form::ring_shared_classes(pricer.topology, spec.ranks_per_node, spec.channels);
    return m.ring(static_cast<Bytes>(pricer.topology.ranks()), spec.bytes, reduce_scatter, all_gather,
                  StepPricer::price(m, it->second));
  }
  // A rank list, or a chain: every channel's hops (over its rotated order) share the links they cross
  // (step_link_shares.hpp).
  const int p = pricer.p;
  StepPricer::SharedStep step{.channels = m.channels, .rotation_block = spec.ranks_per_node};
  if (rooted(spec.op)) {
    step.pattern = kChainPattern;
    step.x = step.root = spec.root % p;
    step.rooted = p;  // every channel's chain starts at the root (generate_ring)
    step.positions = chain_from(p, step.x);
    return m.chain(static_cast<Bytes>(p), spec.bytes, spec.op == Collective::Reduce,
                   StepPricer::price(m, pricer.shared_classes(step)));
  }
  step.pattern = kRingPattern;
  step.positions = [p](const StepPricer::Visit& visit) { closed_form::ring_positions(p, visit); };
  return m.ring(static_cast<Bytes>(p), spec.bytes, reduce_scatter, all_gather,
                StepPricer::price(m, pricer.shared_classes(step)));
}

TimePs ring_full_walk_ps(const CollectiveSpec& spec, const Topology& topo, const std::vector<int>& ranks) {
  const closed_form::Steps m{spec, spec.channels};
  const int p = static_cast<int>(ranks.size());
  auto slowest = [&](const closed_form::VisitPositions& positions, int rooted_ranks = 0, int root = 0) {
    return [&, positions, rooted_ranks, root](Bytes piece) {
      return closed_form::step_walk(m, topo, ranks, spec.ranks_per_node, piece, positions, {}, rooted_ranks, root);
    };
  };
  if (rooted(spec.op)) {
    const int root = spec.root % p;
    return m.chain(static_cast<Bytes>(p), spec.bytes, spec.op == Collective::Reduce,
                   slowest(chain_from(p, root), p, root));
  }
  const bool rs = spec.op != Collective::AllGather, ag = spec.op != Collective::ReduceScatter;
  if (spec.ranks.empty()) return closed_form::shared_ring_over(m, topo, ranks, spec.bytes, rs, ag);
  return m.ring(static_cast<Bytes>(p), spec.bytes, rs, ag,
                slowest([p](const auto& visit) { closed_form::ring_positions(p, visit); }));
}

double ring_transfer_bytes(const CollectiveSpec& spec, int p) {
  // Allreduce: every rank sends 2(p-1) blocks of m/p; the others (p-1) blocks, or the chain's p-1 hops of m.
  const double m = static_cast<double>(spec.bytes);
  return spec.op == Collective::AllReduce ? 2.0 * (p - 1) * m : (p - 1) * m;
}

}  // namespace

AlgorithmEntry ring_algorithm() {
  return {.id = Algorithm::Ring,
          .name = "ring",
          .load_bound = false,  // a ring's steps already share its links
          .step_closed_form_ps = ring_step_ps,
          .full_walk_step_ps = ring_full_walk_ps,
          .generate = generate_ring,
          .transfer_bytes = ring_transfer_bytes};
}

std::vector<std::vector<int>> ring_channel_orders(const CollectiveSpec& spec, const Topology& topology) {
  const std::vector<int> ranks = schedule_parts::participants(spec, topology);
  std::vector<std::vector<int>> orders;
  for (int c = 0; c < spec.channels; ++c)
    orders.push_back(schedule_parts::channel_order(ranks, spec.ranks_per_node, c, spec.channels));
  return orders;
}

void generate_ring_representatives(const CollectiveSpec& spec, const Topology& topology,
                                   const RingRepresentatives& reps, Schedule& schedule) {
  COMMSIM_CHECK(spec.algorithm == Algorithm::Ring && !spec.aggregate && !rooted(spec.op),
                "representatives of a ring allreduce, reduce-scatter or allgather only");
  const std::vector<std::vector<int>> orders = ring_channel_orders(spec, topology);
  std::vector<OpId> frontier(topology.ranks(), kNoOp), joined(topology.ranks(), kNoOp);
  // Room for every operation at once (a transfer, maybe a reduce, per position, step and chunk), so that the
  // vectors do not grow by copying: 2 M operations for the 1024-GPU ring.
  const auto p = static_cast<std::size_t>(orders[0].size());
  const std::size_t steps = (spec.op == Collective::AllReduce ? 2 : 1) * (p - 1);
  const std::size_t transfers = static_cast<std::size_t>(reps.channels) * static_cast<std::size_t>(reps.positions) *
                                steps * static_cast<std::size_t>(std::max(1, spec.chunks));
  schedule.ops.reserve(schedule.ops.size() + transfers * (spec.reduce_Bps > 0 ? 2 : 1));
  schedule.deps.reserve(schedule.deps.size() + 3 * transfers);
  for (int c = 0; c < reps.channels; ++c) {
    std::fill(frontier.begin(), frontier.end(), kNoOp);
    Gen g{spec, topology, schedule, frontier, spec.offset + piece_offset(spec.bytes, spec.channels, c), reps.positions};
    const Bytes bytes = piece(spec.bytes, spec.channels, c);
    ring(g, orders[c], bytes, spec.op != Collective::AllGather, spec.op != Collective::ReduceScatter,
         schedule_parts::default_chunks(spec, false, bytes));
    // The zero-byte joins of generate() for the represented ranks: they take no time, so only their order matters.
    for (int i = 0; i < reps.positions; ++i) {
      const int r = orders[c][i];
      joined[r] = c == 0 ? frontier[r] : schedule.reduce(r, 0, {joined[r], frontier[r]});
    }
  }
}

}  // namespace commsim
