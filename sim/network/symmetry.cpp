#include "sim/network/symmetry.hpp"

#include "sim/core/error.hpp"
#include "sim/engine/executor.hpp"
#include "sim/engine/ring_run.hpp"

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
// equal capacities, classes and path latencies; none if there is no such map. It permutes the links used (the image
// of an edge is an edge), listed in `used`.
std::optional<std::vector<LinkId>> link_image(const std::vector<std::vector<int>>& orders,
                                              const std::vector<int>& sigma, const Topology& topology,
                                              std::vector<LinkId>& used) {
  const std::size_t link_count = topology.link_count();
  std::vector<LinkId> image(link_count, kNoLinkInQuotient), preimage(link_count, kNoLinkInQuotient);
  used.clear();
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
        if (pl.burst_bytes > 0) return std::nullopt;  // a bucket's tokens are per link: the engine keeps them unshared
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
  return image;
}

// The orbits of the links used under the group the link maps generate; none if one is not closed or its size does
// not divide the group's order (neither happens for maps from link_image; checked anyway).
std::optional<LinkQuotient> orbits(const std::vector<const std::vector<LinkId>*>& images,
                                   const std::vector<LinkId>& used, int multiplicity, std::size_t link_count) {
  LinkQuotient q;
  q.multiplicity = multiplicity;
  q.representative.assign(link_count, kNoLinkInQuotient);
  q.orbit_size.assign(link_count, 0);
  std::vector<LinkId> orbit;
  for (LinkId start : used) {
    if (q.representative[start] != kNoLinkInQuotient) continue;
    orbit.assign(1, start);
    q.representative[start] = start;
    for (std::size_t i = 0; i < orbit.size(); ++i)
      for (const std::vector<LinkId>* image : images) {
        const LinkId next = (*image)[orbit[i]];
        if (next == kNoLinkInQuotient) return std::nullopt;
        if (q.representative[next] == kNoLinkInQuotient) {
          q.representative[next] = start;
          orbit.push_back(next);
        }
      }
    if (multiplicity % static_cast<int>(orbit.size()) != 0) return std::nullopt;
    for (LinkId member : orbit) q.orbit_size[member] = static_cast<std::uint32_t>(orbit.size());
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
  // Rotations of every ring by s positions (s dividing p; the smallest first: the largest order p / s).
  std::optional<std::vector<int>> position_map;
  std::optional<std::vector<LinkId>> position_links;
  std::vector<LinkId> used;
  int s = 1;
  for (; s < p && !channel_map_only; ++s) {
    if (p % s != 0 || !(position_map = rank_map(orders, topology.ranks(), 0, s))) continue;
    if ((position_links = link_image(orders, *position_map, topology, used))) break;
  }
  // Each channel's ring onto the next channel's, the same positions.
  std::optional<std::vector<int>> channel_map;
  std::optional<std::vector<LinkId>> channel_links;
  std::vector<LinkId> channel_used;
  if (channels > 1 && (channel_map = rank_map(orders, topology.ranks(), 1, 0)))
    channel_links = link_image(orders, *channel_map, topology, channel_used);
  const std::size_t link_count = topology.link_count();
  if (position_links && channel_links) {
    // Both, if they commute: the group they generate has order (p / s) x channels (each flow's images are the
    // flows of other channels and positions), and channel 0's positions [0, s) represent it.
    bool commute = true;
    for (int r = 0; r < topology.ranks() && commute; ++r)
      commute = (*position_map)[(*channel_map)[r]] == (*channel_map)[(*position_map)[r]];
    if (commute)
      if (auto q = orbits({&*position_links, &*channel_links}, used, p / s * channels, link_count))
        return RingSymmetry{{1, s}, std::move(*q)};
  }
  if (position_links && (!channel_links || p / s >= channels))
    if (auto q = orbits({&*position_links}, used, p / s, link_count)) return RingSymmetry{{channels, s}, std::move(*q)};
  if (channel_links)
    if (auto q = orbits({&*channel_links}, channel_used, channels, link_count))
      return RingSymmetry{{1, p}, std::move(*q)};
  return std::nullopt;
}

FlowCollectivesResult simulate_flow_collectives(const std::vector<CollectiveSpec>& specs, const Topology& topology,
                                                bool use_symmetry, const FlowProgress& progress,
                                                bool skip_steady_state) {
  check_network_size(Fidelity::Flow, topology);
  std::vector<CollectiveSpec> resolved = specs;
  for (CollectiveSpec& s : resolved)
    if (s.algorithm == Algorithm::Auto) s.algorithm = choose_algorithm(s, topology, true);
  const std::optional<RingSymmetry> symmetry = use_symmetry ? find_ring_symmetry(resolved, topology) : std::nullopt;

  FlowCollectivesResult result;
  result.multiplicity = symmetry ? symmetry->quotient.multiplicity : 1;
  EventQueue queue;
  const std::unique_ptr<NetworkModel> network =
      symmetry ? make_quotient_flow_network(topology, queue, symmetry->quotient) : make_flow_network(topology, queue);
  // The representatives of one channel run as they are generated (RingRun: O(positions) memory); so does a lone ring
  // that has no symmetry, as its own representatives (every position of each channel, one run per channel, on the
  // plain network: the operations of its full schedule, in the same order). Other cases run their materialised
  // schedules.
  const CollectiveSpec& first = resolved.front();
  const bool lone_ring =
      use_symmetry && !symmetry && resolved.size() == 1 && first.algorithm == Algorithm::Ring && !first.aggregate &&
      first.channels >= 1 && topology.ranks() >= 2 &&
      (first.op == Collective::AllReduce || first.op == Collective::ReduceScatter || first.op == Collective::AllGather);
  const bool on_the_fly = (symmetry && symmetry->representatives.channels == 1) || lone_ring;
  std::vector<Schedule> schedules(on_the_fly ? 0 : resolved.size());
  std::vector<std::unique_ptr<RingRun>> ring_runs;
  std::vector<std::unique_ptr<ScheduleRun>> runs;
  if (lone_ring) {
    // Alone on the network (one channel), a ring may skip the steps its steady state repeats (RingRun).
    for (int c = 0; c < first.channels; ++c)
      ring_runs.push_back(std::make_unique<RingRun>(first, topology, topology.ranks(), *network, queue,
                                                    skip_steady_state && first.channels == 1, c));
  }
  for (std::size_t i = 0; i < resolved.size() && !lone_ring; ++i) {
    if (on_the_fly) {
      ring_runs.push_back(std::make_unique<RingRun>(resolved[i], topology, symmetry->representatives.positions,
                                                    *network, queue, skip_steady_state && resolved.size() == 1));
      continue;
    }
    if (symmetry) {
      generate_ring_representatives(resolved[i], topology, symmetry->representatives, schedules[i]);
    } else {
      std::vector<OpId> frontier(topology.ranks(), kNoOp);
      generate(resolved[i], topology, schedules[i], frontier);
    }
    for (const Op& op : schedules[i].ops) result.transfers += op.kind == OpKind::Transfer;
    runs.push_back(std::make_unique<ScheduleRun>(schedules[i], resolved[i].reduce_Bps, *network, queue, nullptr));
  }
  for (const auto& run : ring_runs) result.transfers += run->transfers();
  result.full_transfers = result.transfers * static_cast<std::uint64_t>(result.multiplicity);
  for (auto& run : ring_runs) run->start();
  for (auto& run : runs) run->start();
  if (progress.keep_going) {
    result.complete = queue.run_checked(progress.every_events, progress.keep_going);
  } else {
    queue.run();
  }
  const auto finished_ps = [&](const auto& run) {
    COMMSIM_CHECK(run->done() || !result.complete, "schedule did not finish: a dependency cycle");
    return run->done() ? run->finished_at() : queue.now();
  };
  TimePs lone_ring_ps = 0;  // a lone ring ends with its last channel
  for (auto& run : ring_runs) {
    if (lone_ring) {
      lone_ring_ps = std::max(lone_ring_ps, finished_ps(run));
    } else {
      result.seconds.push_back(ps_to_seconds(finished_ps(run)));
    }
    result.skipped_steps += run->skipped_steps();
  }
  if (lone_ring) result.seconds.push_back(ps_to_seconds(lone_ring_ps));
  for (auto& run : runs) result.seconds.push_back(ps_to_seconds(finished_ps(run)));
  result.events = queue.processed();
  result.usage = network->usage();
  return result;
}

}  // namespace commsim
