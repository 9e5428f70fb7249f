#include "sim/topology/cluster_topology.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include "sim/core/error.hpp"

namespace commsim {
namespace {

bool is_rank(DeviceKind k) { return k == DeviceKind::Gpu || k == DeviceKind::CpuRank; }
// Ranks and NICs are endpoints: traffic never passes through a GPU or a NIC on its way elsewhere.
bool may_transit(DeviceKind k) {
  return k == DeviceKind::Cpu || k == DeviceKind::PcieSwitch || k == DeviceKind::NvSwitch;
}

// A path's latency is that of its slowest link class, not the sum over links: the files give each class the
// end-to-end latency of one communication step across it, as NCCL's tuning model defines hwLat.
PathCost chain(PathCost a, PathCost b) {
  return {std::max(a.latency_s, b.latency_s), std::min(a.bottleneck_Bps, b.bottleneck_Bps)};
}

constexpr double kInf = std::numeric_limits<double>::infinity();
// Routing weight of a link: latency plus the time of a 1 MiB message, so that wide links win over narrow ones and,
// among equals, fewer hops win.
double routing_weight(const LinkParams& p) { return p.latency_s + 1048576.0 / p.effective_Bps(); }

}  // namespace

ClusterTopology::ClusterTopology(ClusterSpec spec) : spec_(std::move(spec)) {
  name_ = spec_.name;
  source_file_ = spec_.source_file;
  device_count_ = static_cast<int>(spec_.devices.size());
  for (int d = 0; d < device_count_; ++d) {
    if (is_rank(spec_.devices[d].kind)) rank_devices_.push_back(d);
    if (spec_.devices[d].kind == DeviceKind::Nic) nic_devices_.push_back(d);
  }
  const std::string& file = spec_.source_file;
  if (rank_devices_.empty()) throw InputError(file, "node.devices", "no rank endpoint (kind gpu or cpu_rank)");
  if (spec_.fabric.kind == FabricKind::None && spec_.nodes > 1)
    throw InputError(file, "fabric.kind", "is \"none\" but nodes = " + std::to_string(spec_.nodes) + " (> 1)");
  if (spec_.fabric.kind != FabricKind::None && nic_devices_.empty())
    throw InputError(file, "node.devices", "the fabric needs at least one device of kind nic");

  compute_local_paths();
  compute_ring_order();

  const auto nodes = static_cast<std::uint64_t>(spec_.nodes);
  const auto nics = static_cast<std::uint64_t>(nic_devices_.size());
  intra_links_per_node_ = spec_.links.size();
  fabric_nic_base_ = nodes * intra_links_per_node_;
  const bool has_fabric = spec_.fabric.kind != FabricKind::None;
  fabric_spine_base_ = fabric_nic_base_ + (has_fabric ? nodes * nics : 0);
  if (spec_.fabric.kind == FabricKind::FatTree || spec_.fabric.kind == FabricKind::RailOptimized) {
    FabricSpec& f = spec_.fabric;
    leaf_groups_ = static_cast<int>((nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf);
    const bool rail = f.kind == FabricKind::RailOptimized;
    leaves_ = rail ? leaf_groups_ * static_cast<int>(nics) : leaf_groups_;
    const double ports_per_leaf = rail ? f.nodes_per_leaf : f.nodes_per_leaf * static_cast<double>(nics);
    // Non-blocking uplinks carry what the leaf's ports can send; oversubscription thins them.
    f.spine_link.bandwidth_Bps = ports_per_leaf * f.nic_link.bandwidth_Bps / (f.oversubscription * f.spines);
    spine_links_ = static_cast<std::uint64_t>(leaves_) * f.spines;
  }
  if (link_count() > std::numeric_limits<LinkId>::max())
    throw InputError(file, "nodes",
                     std::to_string(spec_.nodes) + " nodes need " + std::to_string(link_count()) +
                         " directed links, more than the 4294967295 a simulation can address");
}

// The ring order inside a node, as NCCL searches for its rings: the Hamiltonian cycle over the node's ranks whose
// slowest hop is fastest (ties: lowest total weight, then lexicographic). Exhaustive for up to 9 ranks per node
// (8! cycles), identity beyond.
void ClusterTopology::compute_ring_order() {
  const int rpn = ranks_per_node();
  local_ring_.resize(rpn);
  for (int i = 0; i < rpn; ++i) local_ring_[i] = i;
  if (rpn < 4 || rpn > 9) return;
  auto weight = [&](int a, int b) {
    const PathCost& c = rank_to_rank(a, b).cost;
    return c.latency_s + 1048576.0 / c.bottleneck_Bps;
  };
  std::vector<int> order = local_ring_;
  double best_worst = kInf, best_total = kInf;
  do {
    double worst = 0, total = 0;
    for (int i = 0; i < rpn; ++i) {
      const double w = weight(order[i], order[(i + 1) % rpn]);
      worst = std::max(worst, w);
      total += w;
    }
    if (worst < best_worst * (1 - 1e-12) || (worst <= best_worst * (1 + 1e-12) && total < best_total * (1 - 1e-12))) {
      best_worst = worst;
      best_total = total;
      local_ring_ = order;
    }
  } while (std::next_permutation(order.begin() + 1, order.end()));
}

std::vector<int> ClusterTopology::ring_order() const {
  std::vector<int> order;
  order.reserve(ranks());
  const int rpn = ranks_per_node();
  for (int node = 0; node < spec_.nodes; ++node)
    for (int local : local_ring_) order.push_back(node * rpn + local);
  return order;
}

// Every node runs the same local ring, so the hops inside nodes are those of node 0; a hop between nodes leaves the
// last local rank of node k for the first of node k + 1, and its cost depends only on whether the two NICs share a
// leaf (fabric_path), so at most two of those are priced however many nodes there are.
std::vector<Topology::RingHop> ClusterTopology::ring_hops() const {
  std::vector<RingHop> hops;
  const int rpn = ranks_per_node(), nodes = spec_.nodes;
  const int local_hops = nodes == 1 ? rpn : rpn - 1;  // a single node closes its own ring
  for (int i = 0; i < local_hops && rpn > 1; ++i)
    hops.push_back({path_cost(local_ring_[i], local_ring_[(i + 1) % rpn]), true});
  if (nodes < 2) return hops;
  const int last = local_ring_.back(), first = local_ring_.front();
  const int src_nic = sending_side(last, first).second, dst_nic = rank_nic_[first];
  bool priced[2] = {false, false};  // [same leaf]
  for (int node = 0; node < nodes; ++node) {
    const int next = (node + 1) % nodes;
    const bool same_leaf = leaves_ == 0 || leaf_of(node, src_nic) == leaf_of(next, dst_nic);
    if (priced[same_leaf]) continue;
    priced[same_leaf] = true;
    hops.push_back({path_cost(node * rpn + last, next * rpn + first), false});
    if (priced[0] && priced[1]) break;
  }
  return hops;
}

int ClusterTopology::node_relation(int node_a, int node_b) const {
  if (leaves_ == 0) return 0;  // one switch (or one node): every pair of NICs alike
  const int npl = spec_.fabric.nodes_per_leaf;
  return node_a / npl == node_b / npl ? 0 : 1;
}

// NCCL's path type of the rank's own NIC path (the ring's; PXN's detours through another GPU carry other traffic):
// the worst of what it crosses, as src/graph/paths.cc classifies a path (v2.27.3-1:677-678 names GPU -> C2C -> CPU
// -> PCIe P2C). Routes never transit a GPU, so this path never is PXN.
Topology::NicPath ClusterTopology::nic_path(int local_rank) const {
  if (rank_to_nic_.empty()) return NicPath::Pix;
  const std::vector<LinkId>& links = rank_to_nic_[static_cast<std::size_t>(local_rank)].links;
  bool cpu = false, c2c_first = false;
  int switches = 0;
  for (std::size_t i = 0; i + 1 < links.size(); ++i) {  // the devices entered before the NIC
    const TemplateLink& link = spec_.links[links[i] / 2];
    if (link.params.link_class == LinkClass::Upi) return NicPath::Sys;
    const DeviceKind entered = spec_.devices[links[i] % 2 == 0 ? link.b : link.a].kind;
    if (entered == DeviceKind::Cpu) {
      cpu = true;
      c2c_first |= i == 0 && link.params.link_class == LinkClass::NvLink;
    }
    switches += entered == DeviceKind::PcieSwitch ? 1 : 0;
  }
  if (cpu) return c2c_first ? NicPath::P2c : NicPath::Phb;
  return switches > 1 ? NicPath::Pxb : NicPath::Pix;
}

void ClusterTopology::compute_local_paths() {
  compute_device_paths();
  compute_rank_paths();
  // PXN (NCCL >= 2.12, on by default): on a rail-optimized fabric a GPU sends to another node through the GPU that
  // owns the destination's rail, over NVLink, so that the traffic stays on one rail and avoids the spines.
  if (!nic_devices_.empty() && spec_.fabric.kind == FabricKind::RailOptimized) compute_pxn_paths();
}

void ClusterTopology::compute_device_paths() {
  const int n = device_count_;
  // Adjacency: (neighbour, local directed link id).
  std::vector<std::vector<std::pair<int, LinkId>>> adjacent(n);
  for (std::size_t l = 0; l < spec_.links.size(); ++l) {
    const TemplateLink& link = spec_.links[l];
    adjacent[link.a].push_back({link.b, static_cast<LinkId>(2 * l)});
    adjacent[link.b].push_back({link.a, static_cast<LinkId>(2 * l + 1)});
  }
  paths_.assign(static_cast<std::size_t>(n) * n, {});
  for (int source = 0; source < n; ++source) {
    // Dijkstra; ties broken by device index through the heap's pair ordering, so routes are deterministic.
    std::vector<double> dist(n, kInf);
    std::vector<LinkId> via(n, 0);
    std::vector<int> parent(n, -1);
    using Entry = std::pair<double, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    dist[source] = 0;
    queue.push({0, source});
    while (!queue.empty()) {
      auto [d, u] = queue.top();
      queue.pop();
      if (d > dist[u]) continue;
      if (u != source && !may_transit(spec_.devices[u].kind)) continue;
      for (auto [v, link] : adjacent[u]) {
        double candidate = d + routing_weight(spec_.links[link / 2].params);
        if (candidate < dist[v]) {
          dist[v] = candidate;
          via[v] = link;
          parent[v] = u;
          queue.push({candidate, v});
        }
      }
    }
    for (int target = 0; target < n; ++target) {
      LocalPath& path = paths_[static_cast<std::size_t>(source) * n + target];
      if (target == source || dist[target] == kInf) continue;
      path.exists = true;
      path.cost = {0, kInf};
      for (int v = target; v != source; v = parent[v]) {
        path.links.push_back(via[v]);
        const LinkParams& p = spec_.links[via[v] / 2].params;
        path.cost = chain(path.cost, {p.latency_s, p.effective_Bps()});
      }
      std::reverse(path.links.begin(), path.links.end());
    }
  }
}

const ClusterTopology::LocalPath& ClusterTopology::device_path(int a, int b) const {
  return paths_[static_cast<std::size_t>(a) * device_count_ + b];
}

int ClusterTopology::nearest_device(int from, DeviceKind kind) const {
  auto weight = [&](int d) {
    return device_path(from, d).cost.latency_s + 1048576.0 / device_path(from, d).cost.bottleneck_Bps;
  };
  int best = -1;
  for (int d = 0; d < device_count_; ++d)
    if (spec_.devices[d].kind == kind && device_path(from, d).exists && (best < 0 || weight(d) < weight(best)))
      best = d;
  return best;
}

ClusterTopology::LocalPath ClusterTopology::staged_path(int rank_device, int other, bool direct_allowed,
                                                        const std::string& flag) const {
  if (direct_allowed || spec_.devices[rank_device].kind != DeviceKind::Gpu) return device_path(rank_device, other);
  int cpu = nearest_device(rank_device, DeviceKind::Cpu);
  if (cpu < 0)
    throw InputError(spec_.source_file, flag, "is false but " + spec_.devices[rank_device].name + " reaches no cpu");
  return join(device_path(rank_device, cpu), device_path(cpu, other));
}

void ClusterTopology::compute_rank_paths() {
  const std::string& file = spec_.source_file;
  const int rpn = ranks_per_node();
  rank_paths_.assign(static_cast<std::size_t>(rpn) * rpn, {});
  for (int a = 0; a < rpn; ++a)
    for (int b = 0; b < rpn; ++b) {
      if (a == b) continue;
      const int da = rank_devices_[a], db = rank_devices_[b];
      LocalPath p = staged_path(da, db, spec_.gpudirect_p2p, "gpudirect_p2p");
      if (!p.exists)
        throw InputError(file, "node.links",
                         spec_.devices[da].name + " and " + spec_.devices[db].name + " are not connected");
      rank_paths_[static_cast<std::size_t>(a) * rpn + b] = std::move(p);
    }
  if (nic_devices_.empty()) return;
  for (int r = 0; r < rpn; ++r) {
    const TemplateDevice& device = spec_.devices[rank_devices_[r]];
    int nic_device = device.nic >= 0 ? device.nic : nearest_device(rank_devices_[r], DeviceKind::Nic);
    if (nic_device < 0 || !device_path(rank_devices_[r], nic_device).exists)
      throw InputError(file, "node.links", device.name + " reaches no nic");
    rank_nic_.push_back(
        static_cast<int>(std::find(nic_devices_.begin(), nic_devices_.end(), nic_device) - nic_devices_.begin()));
    rank_to_nic_.push_back(staged_path(rank_devices_[r], nic_device, spec_.gpudirect_rdma, "gpudirect_rdma"));
    LocalPath back = staged_path(rank_devices_[r], nic_device, spec_.gpudirect_rdma, "gpudirect_rdma");
    // The reverse path uses the same links in the opposite direction.
    std::reverse(back.links.begin(), back.links.end());
    for (LinkId& l : back.links) l ^= 1u;
    nic_to_rank_.push_back(std::move(back));
  }
}

void ClusterTopology::compute_pxn_paths() {
  const int rpn = ranks_per_node();
  pxn_.assign(static_cast<std::size_t>(rpn) * rpn, {});
  for (int a = 0; a < rpn; ++a)
    for (int b = 0; b < rpn; ++b) {
      if (rank_nic_[a] == rank_nic_[b]) continue;
      for (int owner = 0; owner < rpn; ++owner)
        if (rank_nic_[owner] == rank_nic_[b] && spec_.devices[rank_devices_[owner]].kind == DeviceKind::Gpu) {
          pxn_[static_cast<std::size_t>(a) * rpn + b] =
              owner == a ? rank_to_nic_[a] : join(rank_to_rank(a, owner), rank_to_nic_[owner]);
          break;
        }
    }
}

// The path from a rank to the NIC it sends through towards dst_local's node, and that NIC.
std::pair<const ClusterTopology::LocalPath*, int> ClusterTopology::sending_side(int src_local, int dst_local) const {
  if (!pxn_.empty()) {
    const LocalPath& p = pxn_[static_cast<std::size_t>(src_local) * ranks_per_node() + dst_local];
    if (p.exists) return {&p, rank_nic_[dst_local]};
  }
  return {&rank_to_nic_[src_local], rank_nic_[src_local]};
}

ClusterTopology::LocalPath ClusterTopology::join(const LocalPath& first, const LocalPath& second) const {
  LocalPath joined;
  joined.exists = first.exists && second.exists;
  joined.links = first.links;
  joined.links.insert(joined.links.end(), second.links.begin(), second.links.end());
  joined.cost = chain(first.cost, second.cost);
  return joined;
}

const ClusterTopology::LocalPath& ClusterTopology::rank_to_rank(int a, int b) const {
  return rank_paths_[static_cast<std::size_t>(a) * ranks_per_node() + b];
}

int ClusterTopology::leaf_of(int node, int nic) const {
  const int group = node / spec_.fabric.nodes_per_leaf;
  return spec_.fabric.kind == FabricKind::RailOptimized ? nic * leaf_groups_ + group : group;
}

PathCost ClusterTopology::fabric_path(int src_node, int src_nic, int dst_node, int dst_nic,
                                      std::vector<LinkId>* out) const {
  const FabricSpec& f = spec_.fabric;
  const auto nics = static_cast<std::uint64_t>(nic_devices_.size());
  const std::uint64_t src_global = src_node * nics + src_nic, dst_global = dst_node * nics + dst_nic;
  const PathCost nic_hop{f.nic_link.latency_s, f.nic_link.effective_Bps()};
  PathCost cost = chain(nic_hop, nic_hop);
  auto add = [&](std::uint64_t directed) {
    if (out) out->push_back(static_cast<LinkId>(directed));
  };
  add(2 * (fabric_nic_base_ + src_global));
  if (f.kind == FabricKind::FatTree || f.kind == FabricKind::RailOptimized) {
    const int src_leaf = leaf_of(src_node, src_nic), dst_leaf = leaf_of(dst_node, dst_nic);
    if (src_leaf != dst_leaf) {
      // Deterministic ECMP: the spine is a function of the NIC pair, as a switch's hash of the flow would be.
      const std::uint64_t spine = (src_global + dst_global) % static_cast<std::uint64_t>(f.spines);
      add(2 * (fabric_spine_base_ + static_cast<std::uint64_t>(src_leaf) * f.spines + spine));
      add(2 * (fabric_spine_base_ + static_cast<std::uint64_t>(dst_leaf) * f.spines + spine) + 1);
      const PathCost spine_hop{f.spine_link.latency_s, f.spine_link.effective_Bps()};
      cost = chain(cost, chain(spine_hop, spine_hop));
    }
  }
  add(2 * (fabric_nic_base_ + dst_global) + 1);
  return cost;
}

void ClusterTopology::route(int src, int dst, Route& route) const {
  COMMSIM_CHECK(src != dst && src >= 0 && dst >= 0 && src < ranks() && dst < ranks(), "bad route endpoints");
  const int rpn = ranks_per_node();
  const int src_node = src / rpn, dst_node = dst / rpn, src_local = src % rpn, dst_local = dst % rpn;
  auto append_local = [&](const LocalPath& p, int node) {
    for (LinkId l : p.links)
      route.links.push_back(
          static_cast<LinkId>(2 * (static_cast<std::uint64_t>(node) * intra_links_per_node_ + l / 2) + l % 2));
  };
  if (src_node == dst_node) {
    const LocalPath& p = rank_to_rank(src_local, dst_local);
    append_local(p, src_node);
    route.cost = p.cost;
    return;
  }
  auto [send, src_nic] = sending_side(src_local, dst_local);
  append_local(*send, src_node);
  PathCost fabric = fabric_path(src_node, src_nic, dst_node, rank_nic_[dst_local], &route.links);
  append_local(nic_to_rank_[dst_local], dst_node);
  route.cost = chain(chain(send->cost, fabric), nic_to_rank_[dst_local].cost);
}

PathCost ClusterTopology::path_cost(int src, int dst) const {
  const int rpn = ranks_per_node();
  const int src_node = src / rpn, dst_node = dst / rpn, src_local = src % rpn, dst_local = dst % rpn;
  if (src_node == dst_node) return rank_to_rank(src_local, dst_local).cost;
  auto [send, src_nic] = sending_side(src_local, dst_local);
  PathCost fabric = fabric_path(src_node, src_nic, dst_node, rank_nic_[dst_local], nullptr);
  return chain(chain(send->cost, fabric), nic_to_rank_[dst_local].cost);
}

const LinkParams& ClusterTopology::link(LinkId id) const {
  const std::uint64_t full = id / 2;
  if (full < fabric_nic_base_) return spec_.links[full % intra_links_per_node_].params;
  if (full < fabric_spine_base_) return spec_.fabric.nic_link;
  return spec_.fabric.spine_link;
}

std::string ClusterTopology::link_name(LinkId id) const {
  const std::uint64_t full = id / 2;
  const bool reverse = id % 2;
  if (full < fabric_nic_base_) {
    const TemplateLink& l = spec_.links[full % intra_links_per_node_];
    const std::string& a = spec_.devices[l.a].name;
    const std::string& b = spec_.devices[l.b].name;
    return "node" + std::to_string(full / intra_links_per_node_) + "/" + (reverse ? b + "->" + a : a + "->" + b);
  }
  if (full < fabric_spine_base_) {
    const std::uint64_t global = full - fabric_nic_base_, nics = nic_devices_.size();
    const std::string nic =
        "node" + std::to_string(global / nics) + "/" + spec_.devices[nic_devices_[global % nics]].name;
    const std::string sw =
        leaves_ ? "leaf" + std::to_string(leaf_of(static_cast<int>(global / nics), static_cast<int>(global % nics)))
                : "switch";
    return reverse ? sw + "->" + nic : nic + "->" + sw;
  }
  const std::uint64_t k = full - fabric_spine_base_;
  const std::string leaf = "leaf" + std::to_string(k / spec_.fabric.spines);
  const std::string spine = "spine" + std::to_string(k % spec_.fabric.spines);
  return reverse ? spine + "->" + leaf : leaf + "->" + spine;
}

std::string ClusterTopology::summary() const {
  static const char* kFabric[] = {"none", "single switch", "fat tree", "rail-optimized"};
  return name_ + ": " + std::to_string(spec_.nodes) + " node(s) x " + std::to_string(ranks_per_node()) +
         " rank(s), fabric " + kFabric[static_cast<int>(spec_.fabric.kind)] +
         (spec_.gpudirect_p2p ? "" : ", no GPUDirect P2P") + (spec_.gpudirect_rdma ? "" : ", no GPUDirect RDMA");
}

}  // namespace commsim
