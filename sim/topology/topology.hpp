// Topology: rank endpoints joined by full-duplex links, each direction an independent resource with a latency
// (alpha, seconds) and a bandwidth (beta, bytes/s). Routing is computed and deterministic. Implementations never
// expand the graph: ids are computed from (node, local index), so one object covers 8 or 100 000 GPUs.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/topology/library.hpp"

namespace commsim {

enum class LinkClass : std::uint8_t {
  NvLink,    // point-to-point NVLink between two GPUs
  NvSwitch,  // GPU <-> NVSwitch port group
  Pcie,      // PCIe lane group (GPU/NIC <-> PCIe switch or root complex)
  Upi,       // CPU socket interconnect (QPI/UPI, AMD Infinity Fabric)
  Shm,       // shared memory between CPU ranks of one host
  Rdma,      // InfiniBand / RoCE NIC <-> switch
  Tcp,       // Ethernet NIC <-> switch, TCP transport (NCCL's socket transport)
  Fabric,    // switch <-> switch, or a generic network dimension
  Efa,       // AWS Elastic Fabric Adapter: SRD transport through libfabric (aws-ofi-nccl)
  Tcpx,      // GCP GPUDirect-TCPX / TCPXO: TCP with GPU memory as the socket buffer (NCCL net plugin)
};
inline constexpr int kLinkClassCount = 10;
std::string_view to_string(LinkClass c);
bool parse_link_class(std::string_view name, LinkClass& out);

// One direction of a link.
struct LinkParams {
  LinkClass link_class = LinkClass::Fabric;
  double latency_s = 0;      // alpha: time from first byte sent to first byte received
  double bandwidth_Bps = 0;  // beta: datasheet rate, bytes per second, per direction
  double efficiency = 1;     // fraction of bandwidth_Bps the communication library achieves (named, not hidden)
  // Transports that move a link's bytes over separate connections (TCP): what one connection reaches (a cloud's
  // per-flow cap, or what one socket of the transport sustains) and how many the transport keeps busy on the link
  // at once (NCCL's socket transport: channels x NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD). 0 = no such cap.
  double per_flow_Bps = 0;
  int flows = 1;
  // A token bucket in front of the link (Linux tc tbf, as the emulated cluster shapes its NICs): tokens fill at the
  // sustained rate, effective_Bps(), up to burst_bytes, and while at least one frame's worth is left the link passes
  // burst_Bps. After an idle spell the first burst_bytes go nearly unshaped. 0 = no bucket. The flow fidelity models
  // it (sim/network/flow_network.hpp); the analytical one prices the sustained rate.
  double burst_bytes = 0;
  double burst_Bps = 0;
  double effective_Bps() const {
    const double rate = bandwidth_Bps * efficiency;
    return per_flow_Bps > 0 && per_flow_Bps * flows < rate ? per_flow_Bps * flows : rate;
  }
};

using LinkId = std::uint32_t;  // a directed link

// Latency and bottleneck of a path, without its link list.
struct PathCost {
  double latency_s = 0;
  double bottleneck_Bps = 0;  // min effective bandwidth along the path
};

struct Route {
  std::vector<LinkId> links;
  PathCost cost;
};

class Topology {
 public:
  virtual ~Topology() = default;
  const std::string& name() const { return name_; }
  const std::string& source_file() const { return source_file_; }

  virtual int ranks() const = 0;
  // Ranks are grouped into nodes (the first level of the hierarchy), node-major: rank = node * ranks_per_node + i.
  virtual int ranks_per_node() const = 0;
  int nodes() const { return ranks() / ranks_per_node(); }
  int node_of(int rank) const { return rank / ranks_per_node(); }

  virtual std::uint64_t link_count() const = 0;  // directed links
  virtual const LinkParams& link(LinkId id) const = 0;
  virtual std::string link_name(LinkId id) const = 0;

  // Appends the directed links from rank src to rank dst (src != dst) to route.links and sets route.cost.
  virtual void route(int src, int dst, Route& route) const = 0;
  virtual PathCost path_cost(int src, int dst) const = 0;
  // All ranks in the order a ring should visit them (node by node; inside a node the fastest cycle).
  virtual std::vector<int> ring_order() const {
    std::vector<int> order(ranks());
    for (int i = 0; i < ranks(); ++i) order[i] = i;
    return order;
  }
  // The first ranks_per_node() ranks of ring_order(): on a topology whose nodes are alike (node_relation >= 0),
  // the local order every node's ranks follow.
  virtual std::vector<int> local_ring_order() const {
    std::vector<int> order = ring_order();
    order.resize(static_cast<std::size_t>(std::min(ranks(), ranks_per_node())));
    return order;
  }
  // The distinct hops of ring_order() (with the hop from the last rank back to the first): each hop's path cost
  // and whether it stays inside a node. A closed form needs only the slowest, so a topology that knows its structure
  // lists them without visiting every rank of a 100 000-rank ring; this default visits every hop.
  struct RingHop {
    PathCost cost;
    bool same_node = false;
  };
  virtual std::vector<RingHop> ring_hops() const;

  // Whether ranks of different nodes reach each other alike: path_cost(a, b) between ranks of nodes na != nb is a
  // function of the ranks' local indices (rank % ranks_per_node) and node_relation(na, nb) alone, and path_cost
  // inside a node of the local indices alone (every node is one template). Returns a small number >= 0 naming the
  // relation (for a cluster: whether the two nodes hang off the same leaf switches), or -1 when the topology makes no
  // such promise (the default); closed forms then visit every hop instead of one node and one column.
  virtual int node_relation(int /*node_a*/, int /*node_b*/) const { return -1; }

  // Names this object's contents for caches of what is derived from them (closed forms, auto's choice): unique per
  // construction and renewed by set_library; a copy keeps it, having the same contents.
  std::uint64_t instance_id() const { return instance_id_; }

  // Channels a collective library would open: one per NIC of a node, so every NIC carries a ring.
  virtual int default_channels() const { return 1; }

  // What lies between a rank and the NIC it sends through, in the terms of NCCL's path types (src/graph/topo.h
  // PATH_*): NCCL's tuning enables LL128 across nodes only over some of them. A topology that does not describe
  // the inside of its nodes has its NICs next to its ranks (the default).
  enum class NicPath : std::uint8_t {
    Pix,  // through at most one PCIe switch
    Pxb,  // through several PCIe switches
    P2c,  // through the rank's CPU reached over NVLink-C2C (Grace); NCCL names it apart from 2.27.3 on, PHB before
    Phb,  // through a CPU (its PCIe host bridge)
    Sys,  // across the CPUs' interconnect (QPI/UPI)
  };
  virtual NicPath nic_path(int /*local_rank*/) const { return NicPath::Pix; }
  // The communication library the collectives run on (the file's "library" block; Generic when absent).
  const CommLibrary& library() const { return library_; }
  void set_library(CommLibrary library) {
    library_ = std::move(library);
    instance_id_ = next_instance_id();
  }
  // A one-line description of the machine for reports.
  virtual std::string summary() const = 0;

 protected:
  std::string name_;
  std::string source_file_;
  CommLibrary library_;

 private:
  static std::uint64_t next_instance_id() {
    static std::atomic<std::uint64_t> last{0};
    return ++last;
  }
  std::uint64_t instance_id_ = next_instance_id();
};

// Loads topologies/*.json (node template + fabric, or ASTRA-sim's network dimensions). `nodes_override` > 0
// replaces the file's node count. Throws InputError naming the file and the field.
std::unique_ptr<Topology> load_topology(const std::string& path, int nodes_override = 0);

}  // namespace commsim
