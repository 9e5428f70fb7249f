// Paddle's use_hierarchical_allreduce: a ring allreduce inside each group of consecutive ranks, one among the
// groups' first ranks (the leaders), then a chain broadcast from each leader to its group. Allreduce only.
#include <functional>
#include <vector>

#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/step_pricer.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

void check_hierarchical(const CollectiveSpec& spec, int ranks, const std::string& field) {
  const int groups = hierarchy_group_count(spec, ranks);
  if (ranks % groups != 0)
    throw InputError(
        field, "hierarchical_allreduce_leaders",
        std::to_string(groups) + " leaders do not divide " + std::to_string(ranks) + " ranks into equal groups");
}

// `auto` weighs it where there are groups to speak of: more than one node, or groups the spec asks for.
bool hierarchical_auto_candidate(const CollectiveSpec& spec, int ranks) {
  return ranks / spec.ranks_per_node >= 2 || spec.hierarchy_groups != 0;
}

void generate_hierarchical(const CollectiveSpec& s, const Topology& topology, const std::vector<int>& ranks,
                           Schedule& schedule, std::vector<OpId>& frontier) {
  const int p = static_cast<int>(ranks.size());
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
}

enum Pattern : int { kGroupRings, kGroupChains, kLeaders };

// The positions of the groups' rings (closed) or chains, every group at once.
auto in_groups(int groups, int size, bool closed) {
  return [groups, size, closed](const std::function<void(int, int)>& visit) {
    for (int g = 0; g < groups; ++g) {
      auto shifted = [&](int i, int j) { visit(g * size + i, g * size + j); };
      closed ? closed_form::ring_positions(size, shifted) : closed_form::chain_positions(size, shifted);
    }
  };
}

// Each group's first rank, in order.
std::vector<int> leaders_of(const std::vector<int>& ranks, int groups, int size) {
  std::vector<int> leaders;
  for (int g = 0; g < groups; ++g) leaders.push_back(ranks[static_cast<std::size_t>(g) * size]);
  return leaders;
}

// Every group has `size` ranks, so the slowest group's ring (chain) is the ring (chain) at the slowest hop of all
// the groups' hops (closed_form_steps.hpp). Up to kRoutedMaxRanks participants each phase is priced as the
// schedule runs it: over the spec's channels, each channel's order rotated inside whole nodes (as
// schedule_parts::channel_order rotates a rank list: a group's where it is whole nodes, the leaders' where they
// fill whole blocks of a node's size), every group at once, the hops sharing the links they cross
// (step_link_shares.hpp). Beyond, each phase is one channel priced as if its hops had their links alone.
TimePs hierarchical_step_ps(StepPricer& pricer) {
  const CollectiveSpec& spec = pricer.spec;
  const Topology& topo = pricer.topology;
  const int p = pricer.p, groups = hierarchy_group_count(spec, p), size = p / groups;
  const bool shared = p <= closed_form::kRoutedMaxRanks;
  const closed_form::Steps& m = shared ? pricer.steps : pricer.single_steps;
  const int rpn = spec.ranks_per_node, group_block = size % rpn == 0 ? rpn : 1;
  const closed_form::HopClasses& rings =
      pricer.shared_classes({.pattern = kGroupRings,
                             .x = size,
                             .channels = m.channels,
                             .rotation_block = group_block,
                             .positions = in_groups(groups, size, true),
                             .regular = [&](auto& c) { return closed_form::regular_group_hops(topo, size, true, c); }});
  const closed_form::HopClasses& chains = pricer.shared_classes(
      {.pattern = kGroupChains,
       .x = size,
       .channels = m.channels,
       .rotation_block = group_block,
       .positions = in_groups(groups, size, false),
       .rooted = size,  // every channel's chain starts at its leader (generate_hierarchical's broadcasts)
       .regular = [&](auto& c) { return closed_form::regular_group_hops(topo, size, false, c); }});
  const std::vector<int> leaders =
      shared ? leaders_of(spec.ranks.empty() ? topo.ring_order() : spec.ranks, groups, size) : std::vector<int>{};
  const closed_form::HopClasses& leader_ring =
      shared ? pricer.shared_classes(
                   {.pattern = kLeaders,
                    .x = size,
                    .channels = m.channels,
                    .rotation_block = rpn,
                    .positions = [&](const StepPricer::Visit& visit) { closed_form::ring_positions(groups, visit); },
                    .order = &leaders})
             : pricer.classes(
                   kLeaders, size, 0,
                   [&](const StepPricer::Visit& visit) {
                     closed_form::ring_positions(groups, [&](int i, int j) { visit(i * size, j * size); });
                   },
                   [&](auto& c) { return closed_form::regular_leader_hops(topo, size, c); });
  const TimePs intra = m.ring(static_cast<Bytes>(size), spec.bytes, true, true, StepPricer::price(m, rings));
  const TimePs broadcast = m.chain(static_cast<Bytes>(size), spec.bytes, false, StepPricer::price(m, chains));
  const TimePs across = m.ring(static_cast<Bytes>(groups), spec.bytes, true, true, StepPricer::price(m, leader_ring));
  return add_ps(add_ps(intra, across), broadcast);
}

TimePs hierarchical_full_walk_ps(const CollectiveSpec& spec, const Topology& topo, const std::vector<int>& ranks) {
  const int p = static_cast<int>(ranks.size());
  const int groups = hierarchy_group_count(spec, p);
  const int size = p / groups;
  const closed_form::Steps m{spec, p <= closed_form::kRoutedMaxRanks ? spec.channels : 1};
  const int rpn = spec.ranks_per_node, group_block = size % rpn == 0 ? rpn : 1;
  auto slowest_in_groups = [&](bool closed) {
    return [&, closed](Bytes piece) {
      return closed_form::step_walk(m, topo, ranks, group_block, piece, in_groups(groups, size, closed), {},
                                    closed ? 0 : size);
    };
  };
  const std::vector<int> leaders = leaders_of(ranks, groups, size);
  const TimePs intra = m.ring(static_cast<Bytes>(size), spec.bytes, true, true, slowest_in_groups(true));
  const TimePs broadcast = m.chain(static_cast<Bytes>(size), spec.bytes, false, slowest_in_groups(false));
  const TimePs across = m.ring(static_cast<Bytes>(groups), spec.bytes, true, true, [&](Bytes piece) {
    return closed_form::step_walk(m, topo, leaders, rpn, piece,
                                  [&](const auto& visit) { closed_form::ring_positions(groups, visit); });
  });
  return add_ps(add_ps(intra, across), broadcast);
}

double hierarchical_transfer_bytes(const CollectiveSpec& spec, int p) {
  const int groups = hierarchy_group_count(spec, p);
  const int g = p / groups;
  const double m = static_cast<double>(spec.bytes);
  return groups * 2.0 * (g - 1) * m + 2.0 * (groups - 1) * m + groups * (g - 1.0) * m;
}

}  // namespace

AlgorithmEntry hierarchical_algorithm() {
  return {.id = Algorithm::Hierarchical,
          .name = "hierarchical",
          .ops = AlgorithmEntry::op_bit(Collective::AllReduce),
          .check = check_hierarchical,
          .auto_candidate = hierarchical_auto_candidate,
          .step_closed_form_ps = hierarchical_step_ps,
          .full_walk_step_ps = hierarchical_full_walk_ps,
          .generate = generate_hierarchical,
          .transfer_bytes = hierarchical_transfer_bytes};
}

}  // namespace commsim
