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
  std::vector<std::uint32_t> crossings(topology.link_count(), 0);  // per link, the sharing hops that cross it
  Route route;
  for (const SharedHop& h : sharing ? hops_of(order, rotation_block, channels, rooted, root, sharing) : hops) {
    route.links.clear();
    topology.route(h.from, h.to, route);
    for (LinkId id : route.links) ++crossings[id];
  }
  for (SharedHop& h : hops) {
    route.links.clear();
    topology.route(h.from, h.to, route);
    double rate = std::numeric_limits<double>::infinity();
    for (LinkId id : route.links)  // a hop shares at least with itself, counted or not
      rate = std::min(rate, topology.link(id).effective_Bps() / std::max<std::uint32_t>(1, crossings[id]));
    h.rate_Bps = rate;
  }
  return hops;
}

}  // namespace commsim::closed_form
