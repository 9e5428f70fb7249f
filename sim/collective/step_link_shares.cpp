#include "sim/collective/step_link_shares.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/collective/algorithms/schedule_parts.hpp"

namespace commsim::closed_form {
namespace {

// The hops `positions` visits over each channel's order (its pieces turned to their roots: shared_step_hops).
std::vector<SharedHop> hops_of(const std::vector<int>& order, int rotation_block, int channels, int rooted, int root,
                               const VisitPositions& positions) {
  std::vector<SharedHop> hops;
  for (int c = 0; c < std::max(1, channels); ++c) {
    std::vector<int> channel = schedule_parts::channel_order(order, rotation_block, c, std::max(1, channels));
    for (std::size_t first = 0; rooted > 0 && first < channel.size(); first += static_cast<std::size_t>(rooted)) {
      const auto begin = channel.begin() + static_cast<std::ptrdiff_t>(first), end = begin + rooted;
      const auto at = std::find(begin, end, order[first + static_cast<std::size_t>(root)]) - begin;
      std::rotate(begin, begin + (at - root + rooted) % rooted, end);  // the root back at `root`
    }
    positions([&](int i, int j) {
      const int a = channel[static_cast<std::size_t>(i)], b = channel[static_cast<std::size_t>(j)];
      if (a != b) hops.push_back({a, b, 0});
    });
  }
  return hops;
}

}  // namespace

std::vector<SharedHop> shared_step_hops(const Topology& topology, const std::vector<int>& order, int rotation_block,
                                        int channels, const VisitPositions& positions, const VisitPositions& sharing,
                                        int rooted, int root) {
  std::vector<SharedHop> hops = hops_of(order, rotation_block, channels, rooted, root, positions);
  // Every priced hop routed once: hop h's links are routes.links[first[h] .. first[h + 1]).
  Route routes;
  std::vector<std::size_t> first{0};
  for (const SharedHop& h : hops) {
    topology.route(h.from, h.to, routes);
    first.push_back(routes.links.size());
  }
  std::vector<std::uint32_t> crossings(topology.link_count(), 0);  // per link, the sharing hops that cross it
  if (sharing) {
    Route route;
    for (const SharedHop& h : hops_of(order, rotation_block, channels, rooted, root, sharing)) {
      route.links.clear();
      topology.route(h.from, h.to, route);
      for (LinkId id : route.links) ++crossings[id];
    }
  } else {
    for (LinkId id : routes.links) ++crossings[id];
  }
  for (std::size_t h = 0; h < hops.size(); ++h) {
    double rate = std::numeric_limits<double>::infinity();
    for (std::size_t k = first[h]; k < first[h + 1]; ++k) {  // a hop shares at least with itself, counted or not
      const LinkId id = routes.links[k];
      rate = std::min(rate, topology.link(id).effective_Bps() / std::max<std::uint32_t>(1, crossings[id]));
    }
    hops[h].rate_Bps = rate;
  }
  return hops;
}

}  // namespace commsim::closed_form
