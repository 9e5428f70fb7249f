// Schedule generators. Each is a pure function from (collective, participants, size) to operations; dependency
// rules mirror how NCCL and MPI implementations progress: a rank forwards a piece only after receiving (and
// reducing) it, and pieces on one connection leave in order (FIFO).
#include <algorithm>
#include <numeric>

#include "sim/collective/collective.hpp"
#include "sim/collective/representatives.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

// Splits `total` into `parts` whole-byte pieces that differ by at most one byte and sum exactly to `total`.
Bytes piece(Bytes total, std::uint64_t parts, std::uint64_t index) {
  return total / parts + (index < total % parts ? 1 : 0);
}
// Where piece `index` of piece(total, parts, .) starts: the sum of the pieces before it.
Bytes piece_offset(Bytes total, std::uint64_t parts, std::uint64_t index) {
  return index * (total / parts) + std::min(index, total % parts);
}

// `bytes`: what one pipeline moves (one channel's share; for the double tree, one tree's half), as the closed form
// (cost_model.cpp pipeline_chunks) counts it.
int default_chunks(const CollectiveSpec& s, bool pipeline, Bytes bytes) {
  if (s.chunks > 0) return s.chunks;
  if (!pipeline) return 1;
  // Pipelined algorithms move ~512 KiB slices, the order of NCCL's Simple-protocol chunk (NCCL_BUFFSIZE 4 MiB / 8
  // steps).
  const Bytes in_bytes = bytes * static_cast<Bytes>(std::max(1, s.unit_bytes));
  return static_cast<int>(std::clamp<Bytes>((in_bytes + (512u << 10) - 1) / (512u << 10), 1, 64));
}

std::vector<int> participants(const CollectiveSpec& s, const Topology& t) {
  if (!s.ranks.empty()) return s.ranks;
  return t.ring_order();
}

// Ring order for one channel: when the participants are whole nodes, channel c rotates the order inside every
// node by c x stride, so that different channels leave and enter nodes through different GPUs and NICs. With fewer
// channels than GPUs per node (a NIC per pair of GPUs, say) the stride spreads them over the node, as NCCL's search
// spreads its rings over the NICs: with 4 channels on 8 GPUs whose pairs share a NIC, channel c leaves through GPU
// 2c - 1 and enters through GPU 2c, one NIC each.
std::vector<int> channel_order(const std::vector<int>& ranks, int ranks_per_node, int channel, int channels) {
  const int p = static_cast<int>(ranks.size());
  if (ranks_per_node <= 1 || p % ranks_per_node != 0 || channel == 0) return ranks;
  const int shift = channel * std::max(1, ranks_per_node / std::max(1, channels));
  std::vector<int> order(p);
  for (int i = 0; i < p; ++i)
    order[i] = ranks[(i / ranks_per_node) * ranks_per_node + (i % ranks_per_node + shift) % ranks_per_node];
  return order;
}

struct Gen {
  const CollectiveSpec& spec;
  const Topology& topo;
  Schedule& s;
  std::vector<OpId>& frontier;
  Bytes base = 0;  // where this channel's share starts in the vector (Op::offset)
  // Rings only: generate positions [0, positions) alone, one per orbit of a rotation of the ring by `positions`
  // (generate_ring_representatives); 0 = every position.
  int positions = 0;
  bool reduces() const { return spec.reduce_Bps > 0; }
  OpId maybe_reduce(int rank, Bytes bytes, OpId after, OpId also = kNoOp, Bytes offset = 0) {
    return reduces() ? s.reduce(rank, bytes, {after, also}, offset) : after;
  }
};

// Ring reduce-scatter and/or allgather over `order`, `bytes` the full vector. With both phases this is the ring
// allreduce: 2(p-1) steps, each moving bytes/p per rank.
void ring(Gen& g, const std::vector<int>& order, Bytes bytes, bool reduce_scatter, bool all_gather, int chunks) {
  const int p = static_cast<int>(order.size());
  if (p < 2) return;
  const int steps = (reduce_scatter ? p - 1 : 0) + (all_gather ? p - 1 : 0);
  if (g.spec.aggregate) {
    // The other steps' latencies: those of the slowest edge, as the closed form counts them.
    double latency_s = 0;
    for (int i = 0; i < p; ++i)
      latency_s = std::max(latency_s, g.topo.path_cost(order[i], order[(i + 1) % p]).latency_s);
    const TimePs wait = times_ps(steps - 1, seconds_to_ps(latency_s));
    std::vector<OpId> into(p);
    for (int i = 0; i < p; ++i) {
      const int to = (i + 1) % p;
      Bytes total = 0;
      for (int step = 0; step < steps; ++step)
        total += piece(bytes, p, static_cast<std::uint64_t>(((i - step) % p + p) % p));
      OpId d = g.s.delay(order[i], wait, {g.frontier[order[i]], g.frontier[order[to]]});
      into[to] = g.s.transfer(order[i], order[to], total, {d});
    }
    for (int i = 0; i < p; ++i)
      g.frontier[order[i]] =
          reduce_scatter && g.reduces() ? g.s.reduce(order[i], (p - 1) * piece(bytes, p, 0), {into[i]}) : into[i];
    return;
  }
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
      // Block index (mod p) sent at this step: the classic ring schedule sends block (i - step) mod p.
      const std::uint64_t block = static_cast<std::uint64_t>(((i - first_step - step) % p + p) % p);
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

// One binary tree over `order` in heap layout (parent of position i is (i-1)/2): pipelined reduce to the root,
// then pipelined broadcast back down. Returns per position the op after which it holds the result.
void tree(Gen& g, const std::vector<int>& order, Bytes base, Bytes bytes, int chunks, std::vector<OpId>& done) {
  const int p = static_cast<int>(order.size());
  std::vector<OpId> entry(p);
  for (int i = 0; i < p; ++i) entry[i] = g.frontier[order[i]];
  // Up: process positions from the deepest (highest index) to the root so children come first.
  std::vector<std::vector<OpId>> reduced(p, std::vector<OpId>(chunks, kNoOp));
  std::vector<OpId> last_up(p, kNoOp);
  for (int i = p - 1; i >= 0; --i) {
    for (int k = 0; k < chunks; ++k) {
      const Bytes b = piece(bytes, chunks, k);
      const Bytes offset = base + piece_offset(bytes, chunks, k);
      OpId have = entry[i];
      for (int child : {2 * i + 1, 2 * i + 2}) {
        if (child >= p) continue;
        OpId t = g.s.transfer(order[child], order[i], b, {reduced[child][k], last_up[child], entry[i]}, offset);
        last_up[child] = t;
        // Joins the child's piece with what i holds; without gamma the reduce takes no time.
        have = g.s.reduce(order[i], g.reduces() ? b : 0, {t, have}, offset);
      }
      reduced[i][k] = have;
    }
  }
  // Down: the root holds the reduced pieces; each parent forwards piece k to its children in order.
  std::vector<std::vector<OpId>> have(p, std::vector<OpId>(chunks, kNoOp));
  have[0] = reduced[0];
  std::vector<OpId> last_down(p, kNoOp);
  for (int i = 0; i < p; ++i)
    for (int child : {2 * i + 1, 2 * i + 2}) {
      if (child >= p) continue;
      for (int k = 0; k < chunks; ++k) {
        OpId t = g.s.transfer(order[i], order[child], piece(bytes, chunks, k), {have[i][k], last_down[child]},
                              base + piece_offset(bytes, chunks, k));
        last_down[child] = t;
        have[child][k] = t;
      }
    }
  done.assign(p, kNoOp);
  for (int i = 0; i < p; ++i) done[i] = have[i][chunks - 1];
}

// Double binary tree: tree A over the order, tree B over the reversed order (interior ranks of one are leaves of
// the other), each with half of the data.
void double_tree(Gen& g, const std::vector<int>& order, Bytes bytes, int chunks) {
  const int p = static_cast<int>(order.size());
  if (p < 2) return;
  std::vector<int> reversed(order.rbegin(), order.rend());
  std::vector<OpId> done_a, done_b;
  tree(g, order, g.base, piece(bytes, 2, 0), chunks, done_a);
  tree(g, reversed, g.base + piece(bytes, 2, 0), piece(bytes, 2, 1), chunks, done_b);
  // A rank holds its result when both halves have arrived; a zero-byte reduce joins the two dependencies.
  for (int i = 0; i < p; ++i) g.frontier[order[i]] = g.s.reduce(order[i], 0, {done_a[i], done_b[p - 1 - i]});
}

// Rabenseifner: recursive-halving reduce-scatter then recursive-doubling allgather over a power of two; the
// ranks beyond it first fold their data into a partner and get the result back at the end (Thakur et al. 2005).
void halving_doubling(Gen& g, const std::vector<int>& order, Bytes bytes) {
  const int p = static_cast<int>(order.size());
  if (p < 2) return;
  const int q = largest_power_of_two_at_most(p);
  std::vector<OpId> state(p);
  for (int i = 0; i < p; ++i) state[i] = g.frontier[order[i]];
  for (int i = q; i < p; ++i) {
    OpId t = g.s.transfer(order[i], order[i - q], bytes, {state[i], state[i - q]}, g.base);
    state[i - q] = g.maybe_reduce(order[i - q], bytes, t, state[i - q], g.base);
  }
  // Reduce-scatter: distance q/2, q/4, ..., 1; each exchange moves half of the range the pair owns. owns[i]: the
  // range position i is reducing; both positions of a pair own the same range, so uneven halves stay exact.
  struct Range {
    Bytes offset, bytes;
  };
  std::vector<Range> owns(q, Range{g.base, bytes});
  std::vector<std::vector<Range>> before_halving;  // what the allgather retraces, innermost last
  for (int distance = q / 2; distance >= 1; distance /= 2) {
    before_halving.push_back(owns);
    std::vector<OpId> next(state);
    for (int i = 0; i < q; ++i) {
      const int partner = i ^ distance;
      const Range r = owns[i];
      const Bytes kept = r.bytes - r.bytes / 2;
      // The lower rank of a pair keeps the first part (`kept` bytes) and sends the rest, and vice versa.
      const Range send = i < partner ? Range{r.offset + kept, r.bytes - kept} : Range{r.offset, kept};
      OpId t = g.s.transfer(order[i], order[partner], send.bytes, {state[i], state[partner]}, send.offset);
      next[partner] = g.s.reduce(order[partner], g.reduces() ? send.bytes : 0, {t, next[partner]}, send.offset);
    }
    for (int i = 0; i < q; ++i) {
      const Range r = owns[i];
      const Bytes kept = r.bytes - r.bytes / 2;
      owns[i] = i < (i ^ distance) ? Range{r.offset, kept} : Range{r.offset + kept, r.bytes - kept};
    }
    state = next;
  }
  // Allgather: distance 1, 2, ..., q/2, exchanging what each rank owns, doubling it.
  for (int distance = 1; distance < q; distance *= 2) {
    std::vector<OpId> next(state);
    for (int i = 0; i < q; ++i) {
      const int partner = i ^ distance;
      OpId t = g.s.transfer(order[i], order[partner], owns[i].bytes, {state[i], state[partner]}, owns[i].offset);
      next[partner] = g.s.reduce(order[partner], 0, {next[partner], t});
    }
    owns = before_halving.back();
    before_halving.pop_back();
    state = next;
  }
  for (int i = q; i < p; ++i) state[i] = g.s.transfer(order[i - q], order[i], bytes, {state[i - q], state[i]}, g.base);
  for (int i = 0; i < p; ++i) g.frontier[order[i]] = state[i];
}

}  // namespace

std::string_view to_string(Collective c) {
  static constexpr std::string_view names[] = {"allreduce", "reducescatter", "allgather", "broadcast", "reduce"};
  return names[static_cast<int>(c)];
}
std::string_view to_string(Algorithm a) {
  static constexpr std::string_view names[] = {"ring",          "tree", "hd",       "hierarchical",
                                               "2d-ring",       "nvls", "nvlstree", "collnet_direct",
                                               "collnet_chain", "pat",  "auto"};
  return names[static_cast<int>(a)];
}
std::string_view to_string(Protocol p) {
  static constexpr std::string_view names[] = {"ll", "ll128", "simple", "auto"};
  return names[static_cast<int>(p)];
}
bool parse_protocol(std::string_view s, Protocol& out) {
  for (int i = 0; i <= static_cast<int>(Protocol::Auto); ++i)
    if (to_string(static_cast<Protocol>(i)) == s) return (out = static_cast<Protocol>(i)), true;
  return false;
}
bool parse_collective(std::string_view s, Collective& out) {
  for (int i = 0; i < 5; ++i)
    if (to_string(static_cast<Collective>(i)) == s) return (out = static_cast<Collective>(i)), true;
  return false;
}
bool parse_algorithm(std::string_view s, Algorithm& out) {
  for (int i = 0; i <= static_cast<int>(Algorithm::Auto); ++i)
    if (to_string(static_cast<Algorithm>(i)) == s) return (out = static_cast<Algorithm>(i)), true;
  return false;
}

double busbw_factor(Collective op, int n) {
  switch (op) {
    case Collective::AllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::ReduceScatter:
    case Collective::AllGather:
      return static_cast<double>(n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce:
      return 1.0;
  }
  return 1.0;
}

int hierarchy_group_count(const CollectiveSpec& spec, int ranks) {
  return spec.hierarchy_groups > 0 ? spec.hierarchy_groups : std::max(1, ranks / spec.ranks_per_node);
}

int largest_power_of_two_at_most(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

void check_supported(const CollectiveSpec& spec, int ranks, const std::string& field) {
  const std::string algo(to_string(spec.algorithm));
  if (ranks < 1) throw InputError(field, "", "a collective needs at least one rank");
  if (spec.channels < 1) throw InputError(field, "channels", "must be >= 1");
  const bool allreduce_only = spec.algorithm == Algorithm::Tree || spec.algorithm == Algorithm::HalvingDoubling ||
                              spec.algorithm == Algorithm::Hierarchical || spec.algorithm == Algorithm::Ring2D;
  if (allreduce_only && spec.op != Collective::AllReduce)
    throw InputError(
        field, "algo",
        algo + " is implemented for allreduce only (use ring for " + std::string(to_string(spec.op)) + ")");
  if (spec.algorithm == Algorithm::Hierarchical) {
    const int groups = hierarchy_group_count(spec, ranks);
    if (ranks % groups != 0)
      throw InputError(
          field, "hierarchical_allreduce_leaders",
          std::to_string(groups) + " leaders do not divide " + std::to_string(ranks) + " ranks into equal groups");
  }
  if (spec.algorithm == Algorithm::Ring2D && (spec.ranks_per_node < 1 || ranks % spec.ranks_per_node != 0))
    throw InputError(field, "algo",
                     "2d-ring needs whole nodes (" + std::to_string(ranks) + " ranks, " +
                         std::to_string(spec.ranks_per_node) + " per node)");
}

void generate(const CollectiveSpec& spec, const Topology& topology, Schedule& schedule, std::vector<OpId>& frontier) {
  COMMSIM_CHECK(static_cast<int>(frontier.size()) == topology.ranks(), "frontier must have one entry per rank");
  CollectiveSpec s = spec;
  if (s.algorithm == Algorithm::Auto) s.algorithm = choose_algorithm(spec, topology, true);
  if (library_only(s.algorithm))
    throw InputError(
        "collective", "algo",
        std::string(to_string(s.algorithm)) +
            " is priced by the NCCL model only: use the analytical fidelity (it has no schedule for flow)");
  const std::vector<int> ranks = participants(s, topology);
  const int p = static_cast<int>(ranks.size());
  check_supported(s, p, "collective");

  if (s.algorithm == Algorithm::Hierarchical) {
    const int groups = hierarchy_group_count(s, p);
    const int size = p / groups;
    CollectiveSpec inner = s;
    inner.algorithm = Algorithm::Ring;
    std::vector<int> leaders;
    for (int gi = 0; gi < groups; ++gi) {
      inner.ranks.assign(ranks.begin() + gi * size, ranks.begin() + (gi + 1) * size);
      leaders.push_back(inner.ranks.front());
      generate(inner, topology, schedule, frontier);  // 1. allreduce inside the group
    }
    inner.ranks = leaders;
    generate(inner, topology, schedule, frontier);  // 2. allreduce among the leaders
    inner.op = Collective::Broadcast;
    for (int gi = 0; gi < groups; ++gi) {  // 3. each leader broadcasts to its group
      inner.ranks.assign(ranks.begin() + gi * size, ranks.begin() + (gi + 1) * size);
      generate(inner, topology, schedule, frontier);
    }
    return;
  }
  if (s.algorithm == Algorithm::Ring2D) {
    const int rpn = s.ranks_per_node, nodes = p / rpn;
    CollectiveSpec inner = s;
    inner.algorithm = Algorithm::Ring;
    for (int phase = 0; phase < 3; ++phase) {
      const bool across = phase == 1;
      inner.op = phase == 0 ? Collective::ReduceScatter : phase == 1 ? Collective::AllReduce : Collective::AllGather;
      inner.ranks_per_node = 1;
      for (int group = 0; group < (across ? rpn : nodes); ++group) {
        // Across nodes each local position carries the block the node's reduce-scatter left it: position j of a
        // ring ends the reduce-scatter holding block (j + 1) mod rpn (see ring()), piece(bytes, rpn, that block).
        const std::uint64_t block = static_cast<std::uint64_t>((group + 1) % rpn);
        inner.bytes = across ? piece(s.bytes, rpn, block) : s.bytes;
        inner.offset = across ? s.offset + piece_offset(s.bytes, rpn, block) : s.offset;
        inner.ranks.clear();
        for (int j = 0; j < (across ? nodes : rpn); ++j)
          inner.ranks.push_back(across ? ranks[j * rpn + group] : ranks[group * rpn + j]);
        generate(inner, topology, schedule, frontier);
      }
    }
    return;
  }
  const std::vector<OpId> entry = frontier;
  for (int c = 0; c < s.channels; ++c) {
    std::vector<OpId> channel_frontier = entry;
    Gen g{s, topology, schedule, channel_frontier, s.offset + piece_offset(s.bytes, s.channels, c)};
    const Bytes bytes = piece(s.bytes, s.channels, c);
    std::vector<int> order = channel_order(ranks, s.ranks_per_node, c, s.channels);
    switch (s.algorithm) {
      case Algorithm::Ring:
        if (s.op == Collective::Broadcast || s.op == Collective::Reduce) {
          std::rotate(order.begin(), std::find(order.begin(), order.end(), ranks[s.root % p]), order.end());
          chain(g, order, bytes, s.op == Collective::Reduce, default_chunks(s, true, bytes));
        } else {
          ring(g, order, bytes, s.op != Collective::AllGather, s.op != Collective::ReduceScatter,
               default_chunks(s, false, bytes));
        }
        break;
      case Algorithm::Tree:
        double_tree(g, order, bytes, default_chunks(s, true, piece(bytes, 2, 0)));
        break;
      case Algorithm::HalvingDoubling:
        halving_doubling(g, order, bytes);
        break;
      default:
        COMMSIM_CHECK(false, "unreachable algorithm");
    }
    // A rank holds its result when every channel has delivered: a zero-byte reduce joins the channels.
    for (int r : ranks)
      frontier[r] = c == 0 ? channel_frontier[r] : schedule.reduce(r, 0, {frontier[r], channel_frontier[r]});
  }
}

std::vector<std::vector<int>> ring_channel_orders(const CollectiveSpec& spec, const Topology& topology) {
  const std::vector<int> ranks = participants(spec, topology);
  std::vector<std::vector<int>> orders;
  for (int c = 0; c < spec.channels; ++c) orders.push_back(channel_order(ranks, spec.ranks_per_node, c, spec.channels));
  return orders;
}

void generate_ring_representatives(const CollectiveSpec& spec, const Topology& topology,
                                   const RingRepresentatives& reps, Schedule& schedule) {
  COMMSIM_CHECK(spec.algorithm == Algorithm::Ring && !spec.aggregate &&
                    (spec.op == Collective::AllReduce || spec.op == Collective::ReduceScatter ||
                     spec.op == Collective::AllGather),
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
         default_chunks(spec, false, bytes));
    // The zero-byte joins of generate() for the represented ranks: they take no time, so only their order matters.
    for (int i = 0; i < reps.positions; ++i) {
      const int r = orders[c][i];
      joined[r] = c == 0 ? frontier[r] : schedule.reduce(r, 0, {joined[r], frontier[r]});
    }
  }
}

Bytes Schedule::bytes_transferred() const {
  Bytes total = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::Transfer) total += op.bytes;
  return total;
}

}  // namespace commsim
