// ASTRA-sim's analytical network: building blocks (Ring, FullyConnected, Switch) stacked as dimensions, each with
// its own link bandwidth and latency; NPU ids are mixed-radix coordinates, dimension 0 fastest. Routing is
// dimension-ordered (dimension 0 first), as ASTRA-sim routes multi-dimensional collectives.
#pragma once

#include <vector>

#include "sim/topology/topology.hpp"

namespace commsim {

enum class BlockKind : std::uint8_t { Ring, FullyConnected, Switch };

struct AstraDimension {
  BlockKind kind;
  int npus;
  LinkParams link;
};

class AstraTopology final : public Topology {
 public:
  AstraTopology(std::string name, std::string source_file, std::vector<AstraDimension> dims);

  int ranks() const override { return ranks_; }
  int ranks_per_node() const override { return dims_[0].spec.npus; }
  std::uint64_t link_count() const override { return 2 * total_links_; }
  const LinkParams& link(LinkId id) const override;
  std::string link_name(LinkId id) const override;
  void route(int src, int dst, Route& route) const override;
  PathCost path_cost(int src, int dst) const override;
  std::string summary() const override;

 private:
  struct Dim {
    AstraDimension spec;
    std::uint64_t stride = 1;           // rank distance between neighbours in this dimension
    std::uint64_t links_per_group = 0;  // full-duplex links inside one building block
    std::uint64_t base = 0;             // first full-duplex link id of this dimension
  };
  // Walks the dimension-ordered route, calling hop(directed link id) per link.
  template <typename Hop>
  void walk(int src, int dst, Hop&& hop) const;

  std::vector<Dim> dims_;
  int ranks_ = 1;
  std::uint64_t total_links_ = 0;
};

}  // namespace commsim
