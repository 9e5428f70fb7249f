// 2D ring: a ring reduce-scatter inside every node, a ring allreduce across the nodes for each local position (the
// block the node's reduce-scatter left it), then a ring allgather inside every node. Allreduce over whole nodes.
#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/step_pricer.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

void check_ring_2d(const CollectiveSpec& spec, int ranks, const std::string& field) {
  if (spec.ranks_per_node < 1 || ranks % spec.ranks_per_node != 0)
    throw InputError(field, "algo",
                     "2d-ring needs whole nodes (" + std::to_string(ranks) + " ranks, " +
                         std::to_string(spec.ranks_per_node) + " per node)");
}

// `auto` weighs it over two nodes or more (over one it is the ring inside the node, twice).
bool ring_2d_auto_candidate(const CollectiveSpec& spec, int ranks) { return ranks / spec.ranks_per_node >= 2; }

void generate_ring_2d(const CollectiveSpec& s, const Topology& topology, const std::vector<int>& ranks,
                      Schedule& schedule, std::vector<OpId>& frontier) {
  const int p = static_cast<int>(ranks.size());
  const int rpn = s.ranks_per_node, nodes = p / rpn;
  CollectiveSpec inner = s;
  inner.algorithm = Algorithm::Ring;
  for (int phase = 0; phase < 3; ++phase) {
    const bool across = phase == 1;
    inner.op = phase == 0 ? Collective::ReduceScatter : phase == 1 ? Collective::AllReduce : Collective::AllGather;
    inner.ranks_per_node = 1;
    for (int group = 0; group < (across ? rpn : nodes); ++group) {
      // Across nodes each local position carries the block the node's reduce-scatter left it: position j of a
      // ring ends the reduce-scatter holding block (j + 1) mod rpn (see ring.cpp), piece(bytes, rpn, that block).
      const std::uint64_t block = static_cast<std::uint64_t>((group + 1) % rpn);
      inner.bytes = across ? schedule_parts::piece(s.bytes, rpn, block) : s.bytes;
      inner.offset = across ? s.offset + schedule_parts::piece_offset(s.bytes, rpn, block) : s.offset;
      inner.ranks.clear();
      for (int j = 0; j < (across ? nodes : rpn); ++j)
        inner.ranks.push_back(across ? ranks[j * rpn + group] : ranks[group * rpn + j]);
      generate(inner, topology, schedule, frontier);
    }
  }
}

enum Pattern : int { kNodeRings, kColumns };

TimePs ring_2d_step_ps(StepPricer& pricer) {
  const CollectiveSpec& spec = pricer.spec;
  const Topology& topo = pricer.topology;
  const closed_form::Steps& single = pricer.single_steps;
  const int rpn = spec.ranks_per_node, nodes = pricer.p / rpn;
  const bool topology_nodes = rpn == topo.ranks_per_node();  // the shortcuts know the topology's nodes only
  // Every node's ring, and every column, runs at once: their hops share the links they cross (step_link_shares.hpp).
  const closed_form::HopClasses& node_rings = pricer.shared_classes(
      {.pattern = kNodeRings,
       .x = rpn,
       .positions =
           [&](const StepPricer::Visit& visit) {
             for (int n = 0; n < nodes; ++n)
               closed_form::ring_positions(rpn, [&](int i, int j) { visit(n * rpn + i, n * rpn + j); });
           },
       .regular = [&](auto& c) { return topology_nodes && closed_form::regular_group_hops(topo, rpn, true, c); }});
  const closed_form::HopClasses& columns = pricer.shared_classes(
      {.pattern = kColumns,
       .x = rpn,
       .positions =
           [&](const StepPricer::Visit& visit) {
             for (int j = 0; j < rpn; ++j)
               closed_form::ring_positions(nodes, [&](int a, int b) { visit(a * rpn + j, b * rpn + j); });
           },
       .regular = [&](auto& c) { return topology_nodes && closed_form::regular_column_hops(topo, c); }});
  const TimePs rs =
      single.ring(static_cast<Bytes>(rpn), spec.bytes, true, false, StepPricer::price(single, node_rings));
  const TimePs across = single.ring(static_cast<Bytes>(nodes), closed_form::ceil_div(spec.bytes, rpn), true, true,
                                    StepPricer::price(single, columns));  // the largest block
  // The allgather inside the node mirrors the reduce-scatter without reductions.
  const TimePs ag =
      single.ring(static_cast<Bytes>(rpn), spec.bytes, false, true, StepPricer::price(single, node_rings));
  return add_ps(add_ps(rs, across), ag);
}

TimePs ring_2d_full_walk_ps(const CollectiveSpec& spec, const Topology& topo, const std::vector<int>& ranks) {
  const closed_form::Steps single{spec, 1};
  const int rpn = spec.ranks_per_node, nodes = static_cast<int>(ranks.size()) / rpn;
  auto node_rings = [&](Bytes piece) {
    return closed_form::step_walk(single, topo, ranks, 1, piece, [&](const auto& visit) {
      for (int n = 0; n < nodes; ++n)
        closed_form::ring_positions(rpn, [&](int i, int j) { visit(n * rpn + i, n * rpn + j); });
    });
  };
  const TimePs rs = single.ring(static_cast<Bytes>(rpn), spec.bytes, true, false, node_rings);
  const TimePs across =
      single.ring(static_cast<Bytes>(nodes), closed_form::ceil_div(spec.bytes, rpn), true, true, [&](Bytes piece) {
        return closed_form::step_walk(single, topo, ranks, 1, piece, [&](const auto& visit) {
          for (int j = 0; j < rpn; ++j)
            closed_form::ring_positions(nodes, [&](int a, int b) { visit(a * rpn + j, b * rpn + j); });
        });
      });
  const TimePs ag = single.ring(static_cast<Bytes>(rpn), spec.bytes, false, true, node_rings);
  return add_ps(add_ps(rs, across), ag);
}

double ring_2d_transfer_bytes(const CollectiveSpec& spec, int p) {
  const int r = spec.ranks_per_node, n = p / r;
  const double m = static_cast<double>(spec.bytes);
  return 2.0 * n * (r - 1) * m + 2.0 * (n - 1) * m;  // in-node reduce-scatter + allgather, across-node allreduce
}

}  // namespace

AlgorithmEntry ring_2d_algorithm() {
  return {.id = Algorithm::Ring2D,
          .name = "2d-ring",
          .ops = AlgorithmEntry::op_bit(Collective::AllReduce),
          .check = check_ring_2d,
          .auto_candidate = ring_2d_auto_candidate,
          .step_closed_form_ps = ring_2d_step_ps,
          .full_walk_step_ps = ring_2d_full_walk_ps,
          .generate = generate_ring_2d,
          .transfer_bytes = ring_2d_transfer_bytes};
}

}  // namespace commsim
