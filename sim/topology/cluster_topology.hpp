// A node template (devices and links inside one server) repeated `nodes` times, joined by a fabric of switches.
// Directed link ids: [intra-node links, node-major][NIC <-> leaf links][leaf <-> spine links], each full-duplex
// link contributing ids 2k (forward: a->b, or up) and 2k+1 (reverse, or down).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "sim/topology/topology.hpp"

namespace commsim {

enum class DeviceKind : std::uint8_t { Gpu, CpuRank, Cpu, PcieSwitch, NvSwitch, Nic };

enum class FabricKind : std::uint8_t {
  None,           // one node, no network
  SingleSwitch,   // every NIC on one non-blocking switch
  FatTree,        // two-level leaf-spine; a leaf serves `nodes_per_leaf` nodes; uplinks thinned by oversubscription
  RailOptimized,  // as FatTree but NIC i of every node goes to rail i's leaves; crossing rails goes via a spine
};

struct TemplateDevice {
  std::string name;
  DeviceKind kind;
  int nic = -1;  // for ranks: local index of the NIC it uses; -1 = nearest
};

struct TemplateLink {
  int a = 0, b = 0;  // local device indices
  LinkParams params;
};

struct FabricSpec {
  FabricKind kind = FabricKind::None;
  LinkParams nic_link;    // NIC <-> leaf (or the single switch)
  LinkParams spine_link;  // leaf <-> spine, bandwidth already divided by oversubscription
  int nodes_per_leaf = 1;
  int spines = 1;
  double oversubscription = 1;
};

struct ClusterSpec {
  std::string name;
  std::string source_file;
  std::vector<TemplateDevice> devices;
  std::vector<TemplateLink> links;
  int nodes = 1;
  FabricSpec fabric;
  bool gpudirect_p2p = true;
  bool gpudirect_rdma = true;
};

class ClusterTopology final : public Topology {
 public:
  explicit ClusterTopology(ClusterSpec spec);  // throws InputError on a disconnected or impossible spec

  int ranks() const override { return spec_.nodes * ranks_per_node(); }
  int ranks_per_node() const override { return static_cast<int>(rank_devices_.size()); }
  std::uint64_t link_count() const override { return 2 * (fabric_spine_base_ + spine_links_); }
  const LinkParams& link(LinkId id) const override;
  std::string link_name(LinkId id) const override;
  void route(int src, int dst, Route& route) const override;
  PathCost path_cost(int src, int dst) const override;
  std::string summary() const override;
  std::vector<int> ring_order() const override;
  std::vector<int> local_ring_order() const override { return local_ring_; }
  std::vector<RingHop> ring_hops() const override;
  // The fabric part of a path between nodes costs the same unless its NICs sit on different leaves, and with PXN both
  // ends use the destination's rail, so the cost turns on whether the nodes share a leaf group (0) or not (1).
  int node_relation(int node_a, int node_b) const override;
  int default_channels() const override { return std::max(1, static_cast<int>(nic_devices_.size())); }
  NicPath nic_path(int local_rank) const override;

  const ClusterSpec& spec() const { return spec_; }

 private:
  // A path inside one node between two template devices, as local directed link ids.
  struct LocalPath {
    std::vector<LinkId> links;  // local directed ids: 2 * template link + direction
    PathCost cost;
    bool exists = false;
  };
  // compute_local_paths: the routes between every pair of devices (device_paths), then those the ranks use under
  // the GPUDirect rules (rank_paths), then PXN's on a rail-optimized fabric (pxn_paths).
  void compute_local_paths();
  void compute_device_paths();
  void compute_rank_paths();
  void compute_pxn_paths();
  const LocalPath& device_path(int a, int b) const;     // local device indices
  int nearest_device(int from, DeviceKind kind) const;  // -1: none reachable
  // Without GPUDirect (`direct_allowed` false, `flag` its field), a GPU's path turns at the nearest CPU.
  LocalPath staged_path(int rank_device, int other, bool direct_allowed, const std::string& flag) const;
  void compute_ring_order();
  LocalPath join(const LocalPath& first, const LocalPath& second) const;
  const LocalPath& rank_to_rank(int a, int b) const;  // local rank indices
  std::pair<const LocalPath*, int> sending_side(int src_local, int dst_local) const;
  int leaf_of(int node, int nic) const;
  // Fabric part of a route between two NICs (global ids); appends links if `out` is not null.
  PathCost fabric_path(int src_node, int src_nic, int dst_node, int dst_nic, std::vector<LinkId>* out) const;

  ClusterSpec spec_;
  int device_count_ = 0;
  std::vector<int> local_ring_;         // ring order of the local ranks
  std::vector<int> rank_devices_;       // local device index of each local rank
  std::vector<int> nic_devices_;        // local device index of each NIC
  std::vector<int> rank_nic_;           // NIC (index into nic_devices_) used by each local rank
  std::vector<LocalPath> paths_;        // [a * device_count_ + b]
  std::vector<LocalPath> rank_paths_;   // [ra * ranks_per_node + rb], after the P2P rule
  std::vector<LocalPath> rank_to_nic_;  // per local rank, after the GPUDirect RDMA rule
  std::vector<LocalPath> nic_to_rank_;
  std::vector<LocalPath> pxn_;  // [src * ranks_per_node + dst]: via the GPU on dst's rail (rail fabrics)
  std::uint64_t intra_links_per_node_ = 0;
  std::uint64_t fabric_nic_base_ = 0;  // first full-duplex id of NIC links
  std::uint64_t fabric_spine_base_ = 0;
  std::uint64_t spine_links_ = 0;
  int leaves_ = 0;
  int leaf_groups_ = 0;  // leaves per rail
};

}  // namespace commsim
