#include "sim/collective/step_link_shares.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/collective/algorithms/schedule_parts.hpp"

namespace commsim::closed_form {

std::vector<SharedHop> shared_step_hops(const Topology& topology, const std::vector<int>& order, int rotation_block,
                                        int channels, const VisitPositions& positions) {
  std::vector<SharedHop> hops;
  for (int c = 0; c < std::max(1, channels); ++c) {
    const std::vector<int> channel = schedule_parts::channel_order(order, rotation_block, c, std::max(1, channels));
    positions([&](int i, int j) {
      const int a = channel[static_cast<std::size_t>(i)], b = channel[static_cast<std::size_t>(j)];
      if (a != b) hops.push_back({a, b, 0});
    });
  }
  // Every hop's links, one after the other (hop h's are first[h] .. first[h + 1]), each link counted per hop.
  Route routes;
  std::vector<std::size_t> first{0};
  for (const SharedHop& h : hops) {
    topology.route(h.from, h.to, routes);
    first.push_back(routes.links.size());
  }
  std::vector<std::uint32_t> crossings(topology.link_count(), 0);
  for (LinkId id : routes.links) ++crossings[id];
  for (std::size_t h = 0; h < hops.size(); ++h) {
    double rate = std::numeric_limits<double>::infinity();
    for (std::size_t k = first[h]; k < first[h + 1]; ++k) {
      const LinkId id = routes.links[k];
      rate = std::min(rate, topology.link(id).effective_Bps() / crossings[id]);
    }
    hops[h].rate_Bps = rate;
  }
  return hops;
}

}  // namespace commsim::closed_form
