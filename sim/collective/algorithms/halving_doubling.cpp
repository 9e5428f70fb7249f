// Rabenseifner (Thakur et al. 2005): recursive-halving reduce-scatter then recursive-doubling allgather over the
// largest power of two of the participants; the ranks beyond it first fold their data into a partner and get the
// result back at the end. Allreduce only.
#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/step_pricer.hpp"

namespace commsim {
namespace {

using schedule_parts::Gen;

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

void generate_halving_doubling(const CollectiveSpec& s, const Topology& topology, const std::vector<int>& ranks,
                               Schedule& schedule, std::vector<OpId>& frontier) {
  schedule_parts::for_each_channel(
      s, topology, ranks, schedule, frontier,
      [&](Gen& g, std::vector<int>& order, Bytes bytes) { halving_doubling(g, order, bytes); });
}

enum Pattern : int { kFoldPattern, kExchangePattern };

TimePs halving_doubling_step_ps(StepPricer& pricer) {
  const int p = pricer.p, q = largest_power_of_two_at_most(p);
  const closed_form::Steps& m = pricer.steps;
  // The slowest hop of a pattern's step for a piece, every channel's hops sharing the links they cross.
  auto slowest_hop = [&](int pattern, int x, int y, const StepPricer::Positions& positions, Bytes piece) {
    return closed_form::slowest(m,
                                pricer.shared_classes({.pattern = pattern,
                                                       .x = x,
                                                       .y = y,
                                                       .channels = m.channels,
                                                       .rotation_block = pricer.spec.ranks_per_node,
                                                       .positions = positions}),
                                piece);
  };
  auto fold_hop = [&](Bytes b) {
    return slowest_hop(
        kFoldPattern, p, q, [&](const StepPricer::Visit& visit) { closed_form::fold_positions(p, q, visit); }, b);
  };
  auto exchange_hop = [&](int distance, Bytes b) {
    return slowest_hop(
        kExchangePattern, q, distance,
        [&](const StepPricer::Visit& visit) { closed_form::exchange_positions(q, distance, visit); }, b);
  };
  return m.halving_doubling(p, pricer.spec.bytes, fold_hop, exchange_hop);
}

TimePs halving_doubling_full_walk_ps(const CollectiveSpec& spec, const Topology& topo, const std::vector<int>& ranks) {
  const closed_form::Steps m{spec, spec.channels};
  const int p = static_cast<int>(ranks.size()), q = largest_power_of_two_at_most(p);
  return m.halving_doubling(
      p, spec.bytes,
      [&](Bytes b) {
        return closed_form::step_walk(m, topo, ranks, spec.ranks_per_node, b,
                                      [&](const auto& v) { closed_form::fold_positions(p, q, v); });
      },
      [&](int d, Bytes b) {
        return closed_form::step_walk(m, topo, ranks, spec.ranks_per_node, b,
                                      [&](const auto& v) { closed_form::exchange_positions(q, d, v); });
      });
}

double halving_doubling_transfer_bytes(const CollectiveSpec& spec, int p) {
  const int q = largest_power_of_two_at_most(p);
  const double m = static_cast<double>(spec.bytes);
  return 2.0 * (q - 1) * m + 2.0 * (p - q) * m;  // halving + doubling, plus the fold in and out
}

}  // namespace

AlgorithmEntry halving_doubling_algorithm() {
  return {.id = Algorithm::HalvingDoubling,
          .name = "hd",
          .ops = AlgorithmEntry::op_bit(Collective::AllReduce),
          .step_closed_form_ps = halving_doubling_step_ps,
          .full_walk_step_ps = halving_doubling_full_walk_ps,
          .generate = generate_halving_doubling,
          .transfer_bytes = halving_doubling_transfer_bytes};
}

}  // namespace commsim
