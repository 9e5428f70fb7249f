#include "sim/engine/symmetry.hpp"

#include "sim/core/error.hpp"
#include "sim/engine/executor.hpp"

namespace commsim {
namespace {

bool ring_eligible(const CollectiveSpec& s, const CollectiveSpec& first, int p) {
  if (s.algorithm != Algorithm::Ring || s.aggregate) return false;
  if (s.op != Collective::AllReduce && s.op != Collective::ReduceScatter && s.op != Collective::AllGather) return false;
  if (s.ranks != first.ranks || s.channels != first.channels || s.ranks_per_node != first.ranks_per_node) return false;
  // Every transfer of an orbit moves the same bytes: each channel's share, its p ring blocks and their chunks
  // divide evenly (generate() cuts pieces that differ by one byte otherwise).
  const auto channels = static_cast<Bytes>(s.channels), chunks = static_cast<Bytes>(s.chunks > 0 ? s.chunks : 1);
  return s.channels >= 1 && s.bytes % channels == 0 && (s.bytes / channels) % static_cast<Bytes>(p) == 0 &&
         (s.bytes / channels / static_cast<Bytes>(p)) % chunks == 0;
}

// The link map pi with route(sigma a, sigma b) = pi(route(a, b)) for every ring edge a -> b of every channel, with
// equal capacities, classes and path latencies, as orbits; none if there is no such map.
std::optional<LinkQuotient> quotient_of(const std::vector<std::vector<int>>& orders, const std::vector<int>& sigma,
                                        int multiplicity, const Topology& topology) {
  const std::size_t link_count = topology.link_count();
  std::vector<LinkId> image(link_count, kNoLinkInQuotient), preimage(link_count, kNoLinkInQuotient);
  std::vector<LinkId> used;
  Route from, to;
  for (const std::vector<int>& order : orders) {
    const std::size_t p = order.size();
    for (std::size_t i = 0; i < p; ++i) {
      const int a = order[i], b = order[(i + 1) % p];
      from.links.clear();
      to.links.clear();
      topology.route(a, b, from);
      topology.route(sigma[a], sigma[b], to);
      if (from.links.size() != to.links.size() || from.cost.latency_s != to.cost.latency_s) return std::nullopt;
      for (std::size_t k = 0; k < from.links.size(); ++k) {
        const LinkId l = from.links[k], m = to.links[k];
        const LinkParams &pl = topology.link(l), &pm = topology.link(m);
        if (pl.effective_Bps() != pm.effective_Bps() || pl.link_class != pm.link_class) return std::nullopt;
        if (image[l] == kNoLinkInQuotient && preimage[m] == kNoLinkInQuotient) {
          image[l] = m;
          preimage[m] = l;
          used.push_back(l);
        } else if (image[l] != m || preimage[m] != l) {
          return std::nullopt;  // pi would not be a map, or not one to one
        }
      }
    }
  }
  // pi permutes the links used (the image of an edge is an edge); its cycles are the orbits.
  LinkQuotient q;
  q.multiplicity = multiplicity;
  q.representative.assign(link_count, kNoLinkInQuotient);
  q.orbit_size.assign(link_count, 0);
  std::vector<LinkId> cycle;
  for (LinkId start : used) {
    if (q.representative[start] != kNoLinkInQuotient) continue;
    cycle.clear();
    LinkId l = start;
    do {
      // Not closed, or not back to the start: cannot happen when every image of an edge is an edge; checked anyway.
      if (l == kNoLinkInQuotient || q.representative[l] != kNoLinkInQuotient) return std::nullopt;
      q.representative[l] = start;
      cycle.push_back(l);
      l = image[l];
    } while (l != start);
    if (multiplicity % static_cast<int>(cycle.size()) != 0) return std::nullopt;
    for (LinkId member : cycle) q.orbit_size[member] = static_cast<std::uint32_t>(cycle.size());
  }
  return q;
}

// sigma as a rank permutation (identity outside the rings) from rank_of(c, i) -> image position, if every channel
// agrees with it.
std::optional<std::vector<int>> rank_map(const std::vector<std::vector<int>>& orders, int ranks, int channel_step,
                                         int position_step) {
  const int channels = static_cast<int>(orders.size()), p = static_cast<int>(orders[0].size());
  std::vector<int> sigma(ranks, -1);
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < p; ++i) {
      const int a = orders[c][i], b = orders[(c + channel_step) % channels][(i + position_step) % p];
      if (sigma[a] == -1) {
        sigma[a] = b;
      } else if (sigma[a] != b) {
        return std::nullopt;
      }
    }
  for (int r = 0; r < ranks; ++r)
    if (sigma[r] == -1) sigma[r] = r;
  return sigma;
}

}  // namespace

std::optional<RingSymmetry> find_ring_symmetry(const std::vector<CollectiveSpec>& specs, const Topology& topology,
                                               bool channel_map_only) {
  if (specs.empty()) return std::nullopt;
  const std::vector<std::vector<int>> orders = ring_channel_orders(specs[0], topology);
  const int p = static_cast<int>(orders[0].size()), channels = specs[0].channels;
  if (p < 2) return std::nullopt;
  for (const CollectiveSpec& s : specs)
    if (!ring_eligible(s, specs[0], p)) return std::nullopt;
  // Rotations of every ring by s positions (s dividing p, the smallest first: the largest order p / s).
  for (int s = 1; s < p && !channel_map_only; ++s) {
    if (p % s != 0 || p / s < channels) continue;  // a channel map would do at least as well
    const auto sigma = rank_map(orders, topology.ranks(), 0, s);
    if (!sigma) continue;
    if (auto q = quotient_of(orders, *sigma, p / s, topology)) return RingSymmetry{{channels, s}, std::move(*q)};
  }
  // Each channel's ring onto the next channel's, the same positions.
  if (channels > 1)
    if (const auto sigma = rank_map(orders, topology.ranks(), 1, 0))
      if (auto q = quotient_of(orders, *sigma, channels, topology)) return RingSymmetry{{1, p}, std::move(*q)};
  return std::nullopt;
}

FlowCollectivesResult simulate_flow_collectives(const std::vector<CollectiveSpec>& specs, const Topology& topology,
                                                bool use_symmetry) {
  check_network_size(Fidelity::Flow, topology);
  std::vector<CollectiveSpec> resolved = specs;
  for (CollectiveSpec& s : resolved)
    if (s.algorithm == Algorithm::Auto) s.algorithm = choose_algorithm(s, topology, true);
  const std::optional<RingSymmetry> symmetry = use_symmetry ? find_ring_symmetry(resolved, topology) : std::nullopt;

  FlowCollectivesResult result;
  std::vector<Schedule> schedules(resolved.size());
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    if (symmetry) {
      generate_ring_representatives(resolved[i], topology, symmetry->representatives, schedules[i]);
    } else {
      std::vector<OpId> frontier(topology.ranks(), kNoOp);
      generate(resolved[i], topology, schedules[i], frontier);
    }
    for (const Op& op : schedules[i].ops) result.transfers += op.kind == OpKind::Transfer;
  }
  result.multiplicity = symmetry ? symmetry->quotient.multiplicity : 1;
  result.full_transfers = result.transfers * static_cast<std::uint64_t>(result.multiplicity);

  EventQueue queue;
  const std::unique_ptr<NetworkModel> network = symmetry
                                                    ? make_quotient_flow_network(topology, queue, symmetry->quotient)
                                                    : make_network(Fidelity::Flow, topology, queue);
  std::vector<std::unique_ptr<ScheduleRun>> runs;
  for (std::size_t i = 0; i < resolved.size(); ++i)
    runs.push_back(std::make_unique<ScheduleRun>(schedules[i], resolved[i].reduce_Bps, *network, queue, nullptr));
  for (auto& run : runs) run->start();
  queue.run();
  for (auto& run : runs) {
    COMMSIM_CHECK(run->done(), "schedule did not finish: a dependency cycle");
    result.seconds.push_back(ps_to_seconds(run->finished_at()));
  }
  result.events = queue.processed();
  result.usage = network->usage();
  return result;
}

}  // namespace commsim
