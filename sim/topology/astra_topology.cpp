#include "sim/topology/astra_topology.hpp"

#include <algorithm>
#include <limits>

#include "sim/core/error.hpp"

namespace commsim {
namespace {
// Full-duplex links inside one building block of n NPUs.
std::uint64_t block_links(BlockKind kind, std::uint64_t n) {
  if (n < 2) return 0;
  switch (kind) {
    case BlockKind::Ring:
      return n == 2 ? 1 : n;  // i <-> i+1 mod n
    case BlockKind::FullyConnected:
      return n * (n - 1) / 2;
    case BlockKind::Switch:
      return n;  // NPU i <-> the block's switch
  }
  return 0;
}
// Index of the FullyConnected link between i < j among n.
std::uint64_t pair_index(std::uint64_t i, std::uint64_t j, std::uint64_t n) {
  return i * (2 * n - i - 1) / 2 + (j - i - 1);
}
}  // namespace

AstraTopology::AstraTopology(std::string name, std::string source_file, std::vector<AstraDimension> dims) {
  name_ = std::move(name);
  source_file_ = std::move(source_file);
  std::uint64_t stride = 1;
  for (const AstraDimension& d : dims) {
    Dim dim{d, stride, block_links(d.kind, static_cast<std::uint64_t>(d.npus)), 0};
    stride *= static_cast<std::uint64_t>(d.npus);
    if (stride > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
      throw InputError(source_file_, "astra_sim.npus_count", "product exceeds 2147483647 NPUs");
    dims_.push_back(dim);
  }
  ranks_ = static_cast<int>(stride);
  for (Dim& d : dims_) {
    d.base = total_links_;
    total_links_ += (static_cast<std::uint64_t>(ranks_) / d.spec.npus) * d.links_per_group;
  }
  if (2 * total_links_ > std::numeric_limits<LinkId>::max())
    throw InputError(source_file_, "astra_sim.npus_count",
                     "too many links to address (" + std::to_string(2 * total_links_) + ")");
}

template <typename Hop>
void AstraTopology::walk(int src, int dst, Hop&& hop) const {
  std::uint64_t at = static_cast<std::uint64_t>(src);
  const std::uint64_t target = static_cast<std::uint64_t>(dst);
  for (const Dim& d : dims_) {
    const std::uint64_t n = d.spec.npus;
    const std::uint64_t from = (at / d.stride) % n, to = (target / d.stride) % n;
    if (from == to) continue;
    // The building block: ranks that differ only in this coordinate.
    const std::uint64_t group = (at / (d.stride * n)) * d.stride + at % d.stride;
    const std::uint64_t first = d.base + group * d.links_per_group;
    switch (d.spec.kind) {
      case BlockKind::FullyConnected: {
        const std::uint64_t lo = std::min(from, to), hi = std::max(from, to);
        hop(2 * (first + pair_index(lo, hi, n)) + (from < to ? 0 : 1));
        break;
      }
      case BlockKind::Switch:
        hop(2 * (first + from));
        hop(2 * (first + to) + 1);
        break;
      case BlockKind::Ring: {
        // Shortest direction; ties go forward. Link i joins i and i+1 mod n.
        const std::uint64_t forward = (to + n - from) % n;
        const bool go_forward = forward <= n - forward;
        std::uint64_t c = from;
        while (c != to) {
          if (go_forward) {
            hop(2 * (first + (n == 2 ? 0 : c)));
            c = (c + 1) % n;
          } else {
            const std::uint64_t prev = (c + n - 1) % n;
            hop(2 * (first + (n == 2 ? 0 : prev)) + 1);
            c = prev;
          }
        }
        break;
      }
    }
    at = at - from * d.stride + to * d.stride;
  }
}

void AstraTopology::route(int src, int dst, Route& route) const {
  COMMSIM_CHECK(src != dst, "route to self");
  route.cost = {0, std::numeric_limits<double>::infinity()};
  walk(src, dst, [&](std::uint64_t id) {
    route.links.push_back(static_cast<LinkId>(id));
    const LinkParams& p = link(static_cast<LinkId>(id));
    route.cost.latency_s += p.latency_s;
    route.cost.bottleneck_Bps = std::min(route.cost.bottleneck_Bps, p.effective_Bps());
  });
}

PathCost AstraTopology::path_cost(int src, int dst) const {
  PathCost cost{0, std::numeric_limits<double>::infinity()};
  walk(src, dst, [&](std::uint64_t id) {
    const LinkParams& p = link(static_cast<LinkId>(id));
    cost.latency_s += p.latency_s;
    cost.bottleneck_Bps = std::min(cost.bottleneck_Bps, p.effective_Bps());
  });
  return cost;
}

const LinkParams& AstraTopology::link(LinkId id) const {
  const std::uint64_t full = id / 2;
  for (std::size_t i = dims_.size(); i-- > 0;)
    if (full >= dims_[i].base) return dims_[i].spec.link;
  return dims_[0].spec.link;
}

std::string AstraTopology::link_name(LinkId id) const {
  const std::uint64_t full = id / 2;
  for (std::size_t i = dims_.size(); i-- > 0;)
    if (full >= dims_[i].base)
      return "dim" + std::to_string(i) + "/link" + std::to_string(full - dims_[i].base) + (id % 2 ? "<-" : "->");
  return "?";
}

std::string AstraTopology::summary() const {
  static const char* kKind[] = {"Ring", "FullyConnected", "Switch"};
  std::string s = name_ + ": ASTRA-sim dimensions";
  for (const Dim& d : dims_)
    s += std::string(" ") + kKind[static_cast<int>(d.spec.kind)] + "(" + std::to_string(d.spec.npus) + ")";
  return s + ", " + std::to_string(ranks_) + " NPUs";
}

}  // namespace commsim
