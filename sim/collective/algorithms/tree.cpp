// NCCL's double binary tree (Sanders et al. 2009): tree A over the participants, tree B over them reversed
// (interior ranks of one are leaves of the other), each with half of the data; allreduce only.
#include <functional>

#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/step_pricer.hpp"
#include "sim/collective/tree_timeline.hpp"

namespace commsim {
namespace {

using schedule_parts::Gen;
using schedule_parts::piece;
using schedule_parts::piece_offset;

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

void generate_tree(const CollectiveSpec& s, const Topology& topology, const std::vector<int>& ranks, Schedule& schedule,
                   std::vector<OpId>& frontier) {
  schedule_parts::for_each_channel(
      s, topology, ranks, schedule, frontier, [&](Gen& g, std::vector<int>& order, Bytes bytes) {
        double_tree(g, order, bytes, schedule_parts::default_chunks(s, true, piece(bytes, 2, 0)));
      });
}

enum Pattern : int { kWaves = 1, kAllEdges };

// The positions of one tree's edges in a wave (beyond kRoutedMaxRanks), and of every edge.
auto wave_positions(int p, int wave, bool down, int tree) {
  return
      [=](const std::function<void(int, int)>& visit) { closed_form::tree_wave_positions(p, wave, down, tree, visit); };
}
auto all_positions(int p) {
  return [p](const std::function<void(int, int)>& visit) { closed_form::tree_all_positions(p, visit); };
}

// The first piece's climb and the last one's descent hop by hop, each hop at its share of the links among the hops
// that run with it (tree_timeline.hpp); the pieces between at their share of every edge's links
// (step_link_shares.hpp). Beyond kRoutedMaxRanks participants, a wave's hops each cost its slowest, as if its links
// were its own.
TimePs tree_step_ps(StepPricer& pricer) {
  const int p = pricer.p;
  StepPricer::SharedStep every_edge{.pattern = kAllEdges,
                                    .x = p,
                                    .channels = pricer.steps.channels,
                                    .rotation_block = pricer.spec.ranks_per_node,
                                    .positions = all_positions(p)};
  const auto stream_hop = StepPricer::price(pricer.steps, pricer.shared_classes(every_edge));
  if (p <= closed_form::kRoutedMaxRanks) {
    const closed_form::TreeHops& hops = pricer.tree_hops();
    return pricer.steps.tree(
        p, pricer.spec.bytes,
        [&](Bytes piece, TimePs between) {
          return closed_form::tree_first_and_last_ps(pricer.steps, hops, piece, between);
        },
        stream_hop);
  }
  return pricer.steps.tree(
      p, pricer.spec.bytes,
      [&](Bytes piece, TimePs between) {
        return closed_form::tree_first_and_last_ps(pricer.steps, p, piece, between, [&](int tree, int wave, bool down) {
          const int key = (wave * 2 + down) * 2 + tree;  // the wave, its direction and the tree
          return closed_form::slowest(pricer.steps, pricer.classes(kWaves, p, key, wave_positions(p, wave, down, tree)),
                                      piece);
        });
      },
      stream_hop);
}

TimePs tree_full_walk_ps(const CollectiveSpec& spec, const Topology& topo, const std::vector<int>& ranks) {
  const closed_form::Steps m{spec, spec.channels};
  const int p = static_cast<int>(ranks.size()), block = spec.ranks_per_node;
  auto stream_hop = [&](Bytes piece) { return closed_form::step_walk(m, topo, ranks, block, piece, all_positions(p)); };
  if (p <= closed_form::kRoutedMaxRanks) {
    const closed_form::TreeHops hops = closed_form::route_tree_hops(topo, ranks, block, m.channels);
    return m.tree(
        p, spec.bytes,
        [&](Bytes piece, TimePs between) { return closed_form::tree_first_and_last_ps(m, hops, piece, between); },
        stream_hop);
  }
  return m.tree(
      p, spec.bytes,
      [&](Bytes piece, TimePs between) {
        return closed_form::tree_first_and_last_ps(m, p, piece, between, [&](int tree, int wave, bool down) {
          return closed_form::walk(m, topo, ranks, piece, wave_positions(p, wave, down, tree));
        });
      },
      stream_hop);
}

double tree_transfer_bytes(const CollectiveSpec& spec, int p) {
  return 2.0 * (p - 1) * static_cast<double>(spec.bytes);  // two trees, each m/2 up and down p-1 edges
}

}  // namespace

AlgorithmEntry tree_algorithm() {
  return {.id = Algorithm::Tree,
          .name = "tree",
          .ops = AlgorithmEntry::op_bit(Collective::AllReduce),
          .step_closed_form_ps = tree_step_ps,
          .full_walk_step_ps = tree_full_walk_ps,
          .generate = generate_tree,
          .transfer_bytes = tree_transfer_bytes};
}

}  // namespace commsim
