#include "sim/collective/ring_link_shares.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "sim/collective/algorithms/schedule_parts.hpp"

namespace commsim::closed_form {

int RingLayout::rank(int channel, std::int64_t j) const {
  return rank_at(schedule_parts::channel_position(j % p, p, ranks_per_node, channel, channels));
}

std::pair<std::int64_t, std::int64_t> RingLayout::window(std::int64_t i) const {
  const std::int64_t r = std::max(1, ranks_per_node);
  return {i / r, (i + 1) % p / r};
}

std::vector<LinkId> RingLayout::crossings(std::int64_t i) const {
  const std::int64_t r = std::max(1, ranks_per_node);
  // Edge j runs from position j to j + 1 (in every channel's order): a block's edges are j = b r - 1 .. b r + r - 1.
  std::vector<std::int64_t> edges;
  const auto [own, entered] = window(i);
  for (std::int64_t block : {own, entered})
    for (std::int64_t j = block * r - 1; j < block * r + r; ++j) edges.push_back((j % p + p) % p);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  Route route;
  for (int c = 0; c < std::max(1, channels); ++c)
    for (std::int64_t j : edges) {
      const int a = rank(c, j), b = rank(c, j + 1);
      if (a != b) topology.route(a, b, route);
    }
  std::sort(route.links.begin(), route.links.end());
  return std::move(route.links);
}

double RingLayout::shared_Bps(std::int64_t i, const std::vector<LinkId>& crossings) const {
  const int a = rank_at(i), b = rank_at((i + 1) % p);
  if (a == b) return 0;  // a ring of one rank: no hop
  Route route;
  topology.route(a, b, route);
  double rate = std::numeric_limits<double>::infinity();
  for (LinkId id : route.links) {
    const auto [first, last] = std::equal_range(crossings.begin(), crossings.end(), id);
    rate = std::min(rate, topology.link(id).effective_Bps() / static_cast<double>(last - first));
  }
  return rate;
}

}  // namespace commsim::closed_form
