// NCCL's tuning model on the machine NCCL's search would see: per (algorithm, protocol) its latency and bus
// bandwidth (tuning.cc), its channels (enqueue.cc) and the fill of the NVLS pipelines.
#include "sim/collective/nccl_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace commsim::nccl::detail {
namespace {

int steps_of(Collective op, int ranks) {
  switch (op) {
    case Collective::AllReduce:
      return 2 * (ranks - 1);
    case Collective::ReduceScatter:
    case Collective::AllGather:
      return ranks - 1;
    default:
      return ranks;
  }
}

bool newer_than_2_23(const Table& t) { return t.number >= 2023; }

// NCCL sets NVLS up only on NVSwitch systems with enough GPUs in a node (transport/nvls.cc ncclNvlsInit: "gpuCount
// <= 2" returns without NVLS at v2.18.6-1:239 to v2.28.3-1:160, "gpuCount < 2" from v2.28.7-1:161; the table's
// nvls.min_gpus_per_node).
bool nvls_supported(const Machine& m, const CommLibrary& lib, const Table& t) {
  return lib.nvls && m.ranks / m.nodes >= t.nvls_min_gpus_per_node;
}

// The channels of the communicator (comm->nChannels): the topology's, copied up to the NVLS channels where NVLS is
// set up in the releases that copy them (graph/connect.cc, v2.23.4-1:496-498; the table's
// channels.rings_copied_up_to_nvls, 2.22-2.27 here).
int comm_channels(const Machine& m, const CommLibrary& lib, const Table& t) {
  if (!(t.ring_channels_at_least_nvls && nvls_supported(m, lib, t))) return m.channels;
  return std::max(m.channels, nvls_setup(t, lib.gpu_arch, m).channels);
}

// Whether NCCL enables LL128 across nodes over the machine's NIC paths (graphs[a]->typeInter; tuning.cc
// v2.18.6-1:285, v2.27.7-1:459-465; the table's ll128_nic_paths): sockets never, up to PXB always, a path through
// the CPU never but, from 2.27 on Hopper and later, one through NVLink-C2C (P2C).
bool ll128_across_nodes(const Machine& m, const CommLibrary& lib, const Table& t) {
  if (!m.gpudirect_network) return false;
  using NicPath = Topology::NicPath;
  if (m.nic_path <= NicPath::Pxb) return true;
  return m.nic_path == NicPath::P2c && t.ll128_over_c2c && lib.gpu_arch >= GpuArch::Hopper;
}

// Which (collective, algorithm, protocol) NCCL models and enables by default (tuning.cc; nccl_model.hpp).
bool applies(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  const int ppn = m.ranks / m.nodes;
  // LL128 only where NCCL tested it: NVLink inside the node (typeIntra <= PATH_NVB; a node of one GPU is PATH_LOC,
  // which passes: search.cc v2.18.6-1:827, tuning.cc v2.18.6-1:286), NIC paths it allows, and a compute capability
  // the version enables (before 2.25 exactly sm70 / sm80 / sm90, so not Blackwell).
  if (p == proto_index(Protocol::LL128) &&
      !((m.nvlink_intra || ppn == 1) && (m.nodes == 1 || ll128_across_nodes(m, lib, t)) &&
        t.ll128_enabled[arch_index(lib.gpu_arch)]))
    return false;
  const bool simple_only = a == kNvls || a == kNvlsTree || a == kCollNetDirect || a == kCollNetChain || a == kPat;
  if (simple_only && p != proto_index(Protocol::Simple)) return false;
  if (op == Collective::Broadcast || op == Collective::Reduce) return a == kRing;
  if (op == Collective::ReduceScatter || op == Collective::AllGather) {
    if (!t.gather_scatter[a]) return false;
    if (a == kRing) return true;
    if (a == kNvls) return nvls_supported(m, lib, t) && m.nodes == 1;
    if (a == kPat) return ppn == 1;
    return false;  // CollNet direct: SHARP's allgather / reduce-scatter is not modelled
  }
  switch (a) {  // allreduce
    case kRing:
    case kTree:
      return true;
    case kNvls:
      return nvls_supported(m, lib, t) && (m.nodes == 1 || lib.collnet);  // across nodes NVLS needs SHARP
    case kNvlsTree:
      return nvls_supported(m, lib, t) && m.nodes > 1;
    case kCollNetDirect:
      return lib.collnet && m.nodes > 1 && m.nvlink_intra && ppn <= 8;
    case kCollNetChain:
      return lib.collnet && m.nodes > 1 && ppn <= 8;
    default:
      return false;
  }
}

// NVLS's per-node bus bandwidth. The NVLS search gives each of the node's ppn GPUs one channel ("head") and reserves
// bw on every GPU's NVSwitch link per channel plus bw more for the head: (ppn + 1) bw <= the link, so
// bwIntra = link / (ppn + 1); on one node bwInter is raised to about 1.5 bwIntra (the search stops below 2x);
// across nodes a head's share of the node's NICs.
double nvls_bus_bw(int a, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  const int heads = m.ranks / m.nodes;
  const double intra = m.nvlink_GBps / (heads + 1);
  const double inter = m.nodes == 1 ? 1.5 * intra : m.inter_GBps / heads;
  double bw = 0;
  switch (t.nvls_bandwidth) {
    case NvlsBandwidth::Intra:
      bw = m.nodes <= 2 ? intra : inter;
      break;
    case NvlsBandwidth::MinIntraInter:
      if (a == kNvls && op != Collective::AllReduce && t.nvls_gather_scatter_share)
        bw = std::min(intra * (heads - 1) / heads, 0.9 * inter);  // tuning.cc v2.27.7-1:271-272
      else
        bw = a == kNvls ? std::min(intra, inter) : std::min(intra, m.nodes <= 2 ? inter : inter / 2);
      break;
    case NvlsBandwidth::Efficiency: {
      double intra_bw = intra * t.nvls_efficiency[arch_index(lib.gpu_arch)] * (heads - 1) / heads;
      intra_bw *= op == Collective::AllReduce ? 2.0 : static_cast<double>(heads - 1) / heads;
      bw = std::min(intra_bw, inter * (a == kNvlsTree && m.nodes <= 2 ? 2 : 1));
      if (a == kNvlsTree && t.nvls_tree_capped) {
        const int nodes_index = nodes_index_of(m.nodes);
        bw = std::min(bw, t.nvls_tree_per_channel_GBps[arch_index(lib.gpu_arch)][nodes_index]);
      }
      break;
    }
  }
  return heads * bw;
}

// Bus bandwidth: the graph's (the slower of the node's ring and its network share), refined per protocol.
double bus_bandwidth_GBps(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  const int nodes = m.nodes, ppn = m.ranks / m.nodes;
  const int arch = arch_index(lib.gpu_arch);
  const int nodes_index = nodes_index_of(nodes);
  const double ll_max_bw = nodes == 1 ? t.ll_max_bw_single_node[arch][nodes_index]
                                      : t.ll_max_bw_multi_node[lib.cpu_amd ? 1 : 0][nodes_index];
  // The tuning model counts the search's channels; NCCL runs twice as many (each search ring used by two CTAs).
  const double search_channels = std::max(1, m.channels / 2);
  // Across nodes a graph is as fast as the slower of its node part and its network share. NCCL prices trees on 2
  // nodes and CollNet with the node part alone (tuning.cc: bw = nNodes <= 2 || collnet ? bwIntra : bwInter), which
  // its search raises to twice the network's for those graphs (search.cc, "increase bwIntra for trees (2 nodes or
  // collnet)": while bwIntra < 2 bwInter): in the double binary tree on 2 nodes each node sends the vector once per
  // direction while the tree's bus bandwidth counts it twice.
  // PAT runs on the tree's graph (src/init.cc graphs[], v2.23.4-1:736), so it is priced as the tree is. With one GPU
  // per node no local link bounds that raise: the node part is the network doubled.
  const bool tree_graph = a == kTree || a == kPat;
  const bool doubled_network = (tree_graph && nodes == 2) || a == kCollNetDirect || a == kCollNetChain;
  const double node_part = ppn > 1 ? m.intra_GBps : std::numeric_limits<double>::infinity();
  double bus = a == kNvls || a == kNvlsTree ? nvls_bus_bw(a, op, m, lib, t)
               : nodes == 1                 ? m.intra_GBps
                                            : std::min(node_part, (doubled_network ? 2 : 1) * m.inter_GBps);
  if (a == kRing && p == 0)
    bus = std::min(ll_max_bw, bus * ((nodes > 1 || op == Collective::AllReduce || op == Collective::Reduce)
                                         ? t.ring_ll_factor_allreduce_or_multi_node
                                         : t.ring_ll_factor_other));
  if (a == kRing && p == 1)
    bus = std::min(bus * (ppn < 2 ? t.ring_ll128_factor_one_gpu_per_node : 0.92),
                   search_channels * t.ring_ll128_per_channel_GBps[arch][nodes_index]);
  if (a == kTree) bus = std::min(bus * 0.92, search_channels * t.tree_per_channel_GBps[arch][nodes_index]);
  if (a == kTree && p == 0) bus = std::min(bus / 3.8, ll_max_bw);
  if (a == kTree && p == 1)
    bus = std::min(bus * (nodes == 1 ? 7.0 / 9 : 120.0 / 128),
                   search_channels * t.tree_ll128_per_channel_GBps[arch][nodes_index]);
  // A tree over nodes of one GPU is a plain tree, not a balanced one (search.cc: "if (ngpus == 1) ... pattern =
  // NCCL_TOPO_PATTERN_TREE", v2.18.6-1:850 to v2.29.7-1:1068), which tuning.cc prices at .85 (v2.18.6-1:183,
  // v2.29.7-1:310).
  if (a == kTree && ppn == 1) bus *= 0.85;
  if (a == kPat) bus *= t.pat_bandwidth_factor;
  if (a == kCollNetDirect) {
    double factor = ppn / search_channels;  // GPUs per NIC channel: CollNet direct wants a NIC per GPU
    factor -= (factor - 1) / 2;
    if (factor > 0) bus /= factor;
    if (lib.gpu_arch >= GpuArch::Hopper) bus *= 0.85;
  }
  return bus;
}

// Bus bandwidth to the algorithm bandwidth NCCL stores.
double algbw_ratio(int a, Collective op, const Machine& m, const Table& t) {
  const int n = m.ranks, steps = steps_of(op, n);
  const bool gather_or_scatter = op == Collective::ReduceScatter || op == Collective::AllGather;
  double ratio = 0.5;
  if (a == kRing)
    ratio = static_cast<double>(n) / steps;
  else if (a == kNvls || a == kNvlsTree)
    ratio = t.nvls_ring_ratio                             ? static_cast<double>(n) / steps
            : (a == kNvlsTree && !t.nvls_latency_from_hw) ? 0.7 * m.nodes / (2.0 * (m.nodes - 1))
                                                          : 5.0 / 6;
  if (gather_or_scatter && a != kRing && newer_than_2_23(t)) ratio = 1;
  return ratio;
}

// A ring's latency: its steps inside nodes at the intra-node latency (or the network's per-step CPU overhead, the
// larger), its steps between nodes at the network's.
double ring_latency_us(int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t, double intra_lat,
                       double inter_lat) {
  const int nodes = m.nodes, steps = steps_of(op, m.ranks);
  // Broadcast and reduce: one step's latency when the channels replay one ring (NCCL's "sameChannels"), else a latency
  // per step, Simple's at the tree's hop latency (tuning.cc v2.18.6-1:210-216, v2.29.7-1).
  if (op == Collective::Broadcast || op == Collective::Reduce) {
    const int hw = nodes == 1 ? (m.nvlink_intra ? kNvlinkHw : kPciHw) : kNetHw;
    if (m.same_channels) return t.hw_latency_us[hw][kRing][p];
    return steps * t.hw_latency_us[hw][p == proto_index(Protocol::Simple) ? kTree : kRing][p];
  }
  const int inter_steps = op == Collective::AllReduce
                              ? (nodes > 1 ? 2 * (nodes - (t.ring_inter_steps_exclude_one_node ? 1 : 0)) : 0)
                              : nodes - 1;
  double net_overhead = 0;
  if (nodes > 1) net_overhead = (lib.cpu_amd ? t.net_overhead_amd_us : t.net_overhead_intel_us) * (p == 2 ? 3 : 1);
  return (steps - inter_steps) * std::max(intra_lat, net_overhead) + inter_steps * inter_lat;
}

}  // namespace

double latency_us(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  const int n = m.ranks, nodes = m.nodes, ppn = n / nodes;
  const double intra_lat = t.hw_latency_us[m.nvlink_intra ? kNvlinkHw : kPciHw][a][p];
  double inter_lat = t.hw_latency_us[kNetHw][ppn == 1 && t.one_gpu_per_node_inter_latency_from_tree ? kTree : a][p] +
                     m.transport_latency_us;
  if (p == proto_index(Protocol::Simple)) inter_lat += m.transport_latency_us;  // the flush after a receive
  const int log_nodes = log2i(static_cast<Bytes>(nodes));
  const double base = t.base_latency_us[a][p];
  switch (a) {
    case kRing:
      return base + ring_latency_us(p, op, m, lib, t, intra_lat, inter_lat);
    case kTree:
      return base + 2 * ((ppn - 1) * intra_lat + log_nodes * inter_lat);
    case kCollNetDirect:
      return base + 2 * (std::min(1, ppn - 1) * intra_lat + (ppn - 1) * t.collnet_arity_us) + inter_lat;
    case kCollNetChain:
      return base + 2 * (ppn - 1) * intra_lat + inter_lat;
    case kNvls:
      if (t.nvls_latency_from_hw) return intra_lat + (nodes > 1 ? inter_lat : 0);
      return base + (nodes > 1 ? t.hw_latency_us[kNetHw][a][p] : 0);
    case kNvlsTree:
      if (t.nvls_latency_from_hw) return base + intra_lat + 2 * log_nodes * inter_lat;
      return base + 2 * (nodes - 1) * t.hw_latency_us[kNetHw][a][p];
    case kPat:
      return t.pat_base_latency_us + log_nodes * inter_lat / t.pat_inter_latency_divisor +
             t.pat_latency_per_rank_us * n;
  }
  return base;
}

bool is_network(LinkClass c) {
  return c == LinkClass::Rdma || c == LinkClass::Tcp || c == LinkClass::Efa || c == LinkClass::Tcpx ||
         c == LinkClass::Fabric;
}

int log2i(Bytes n) {
  int l = -1;
  while (n > 0) n >>= 1, ++l;
  return l;
}

Evaluation evaluate(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  Evaluation e;
  if (m.ranks < 2 || !applies(a, p, op, m, lib, t)) return e;
  e.algbw_GBps = bus_bandwidth_GBps(a, p, op, m, lib, t) * algbw_ratio(a, op, m, t);
  e.latency_us = latency_us(a, p, op, m, lib, t);
  e.applicable = e.algbw_GBps > 0;
  return e;
}

// NCCL's loop (tuning.cc, v2.18.6-1:166-172, v2.21.5-1:166-172, v2.29.7-1:274-289): broadcast and reduce by ring only;
// reduce-scatter and allgather by the table's algorithms (ring; NVLS from 2.19, CollNet direct from 2.20, PAT from
// 2.23 with Simple and one GPU per node); allreduce by all but PAT; NVLS and NVLS-tree with Simple only, and without
// an NVLS graph only up to 2.27 (latency priced, bandwidth 0: the table's nvls_latency_without_nvls).
bool modeled(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  if (m.ranks < 2) return false;
  const bool simple = p == proto_index(Protocol::Simple);
  if ((a == kNvls || a == kNvlsTree) && !(simple && (nvls_supported(m, lib, t) || t.nvls_latency_without_nvls)))
    return false;
  if (op == Collective::Broadcast || op == Collective::Reduce) return a == kRing;
  if (op == Collective::ReduceScatter || op == Collective::AllGather) {
    if (!t.gather_scatter[a]) return false;
    return a != kPat || (simple && m.ranks == m.nodes);
  }
  return a != kPat;
}

// What each GPU and each node must send of an S-byte vector, per algorithm (so algbw = S / time is at most the
// link's rate divided by that share); intra = the GPU's slowest local hop, inter = the node's NICs, both the
// topology's effective rates:
//   ring, PAT, and NVLS reduce-scatter / allgather: steps / n of S from every GPU and out of every node;
//   NVLS and NVLS-tree allreduce inside the node: S per GPU (its shards to the switch, its reduced shard back out);
//   tree and CollNet chain inside the node: a chain, 2 S from every GPU with a parent and a child (S with 2 GPUs);
//   across nodes, NCCL's double binary tree (tree, NVLS-tree): on 2 nodes each node is the other's parent in one tree
//   and its child in the other, S out per node; beyond, a node is interior in one tree (S/2 up, S/2 to each of two
//   children) and a leaf in the other (S/2 up), 2 S out; CollNet and NVLS with SHARP: S to the switch per node.
double link_ceiling_algbw_GBps(int a, Collective op, const Machine& m) {
  const int n = m.ranks, ppn = m.ranks / m.nodes, steps = steps_of(op, n);
  const double unbounded = std::numeric_limits<double>::infinity();
  const double intra = ppn > 1 ? m.intra_GBps : unbounded;
  const double inter = m.nodes > 1 ? m.inter_GBps : unbounded;
  const bool ring_like = a == kRing || a == kPat || op != Collective::AllReduce;
  if (ring_like) return std::min(intra, inter) * n / steps;
  const double chain = ppn > 2 ? intra / 2 : intra;
  const double tree_inter = m.nodes > 2 ? inter / 2 : inter;
  switch (a) {
    case kTree:
      return std::min(chain, tree_inter);
    case kNvlsTree:
      return std::min(intra, tree_inter);
    case kCollNetChain:
      return std::min(chain, inter);
    default:  // NVLS, CollNet direct
      return std::min(intra, inter);
  }
}

// NCCL's size-dependent factors of its estimate (ncclTopoGetAlgoTime): tree's size correction of the bandwidth (from
// 2.29 NVLS-tree allreduce's too, on Blackwell GPUs with x86 CPUs), the ring's plateau of the latency.
SizeFactors size_factors(int a, int p, Bytes bytes, const Machine& m, const CommLibrary& lib, const Table& t,
                         Collective op) {
  SizeFactors f;
  const int log_size = log2i(bytes >> 6);
  const std::vector<double>& correction = t.tree_correction[p];
  if (a == kTree && log_size >= 0 && log_size < kTreeCorrectionSizes) f.bandwidth = correction[log_size];
  if (a == kNvlsTree && op == Collective::AllReduce && t.nvls_tree_size_correction &&
      lib.gpu_arch == GpuArch::Blackwell && !lib.cpu_arm && log_size >= 0 &&
      log_size < static_cast<int>(correction.size()))
    f.bandwidth = correction[static_cast<std::size_t>(log_size)];
  if (a == kRing && p == 2 && m.nodes > 1 && op == Collective::AllReduce &&
      static_cast<double>(bytes) / (static_cast<double>(comm_channels(m, lib, t)) * m.ranks) >= 64)
    f.latency = lib.gpu_arch == GpuArch::Volta ? t.ring_plateau_pre_ampere : t.ring_plateau;
  return f;
}

double nccl_time_us(int a, int p, const Evaluation& e, Bytes bytes, const Machine& m, const CommLibrary& lib,
                    const Table& t, Collective op) {
  const SizeFactors f = size_factors(a, p, bytes, m, lib, t, op);
  return e.latency_us * f.latency + static_cast<double>(bytes) / (1000 * e.algbw_GBps * f.bandwidth);
}

// Before 2.30 the table's channels, NCCL_NVLS_CHUNKSIZE's 128 KiB and NVLS-tree's chunk by node count. 2.30 tunes
// Blackwell across nodes by the nodes, GPUs per node, the slowest GPU -> NIC path (comm->minNetBw, in NCCL's GB/s:
// 48 is a PCIe Gen5 x16 link or a 400 Gb/s NIC) and its type (src/transport/nvls.cc v2.30.7-1:164-199); NVLS-tree's
// chunk is then the smaller of NVLS's and the tuned one (src/enqueue.cc v2.30.7-1:2281).
NvlsSetup nvls_setup(const Table& t, GpuArch arch, const Machine& m) {
  NvlsSetup s{static_cast<int>(t.nvls_channels[arch_index(arch)][nodes_index_of(m.nodes)]), t.nvls_chunk_bytes,
              m.nodes >= 4 ? t.nvls_tree_chunk_from_4_nodes : t.nvls_tree_chunk_below_4_nodes};
  if (!(t.nvls_blackwell_multi_node_tuning && arch == GpuArch::Blackwell && m.nodes > 1)) return s;
  constexpr Bytes k64 = 65536, k128 = 131072, k256 = 262144;
  // The topology's rates are datasheet x efficiency products that land on NCCL's figures up to rounding.
  const auto at_least = [&m](double GBps) { return m.nic_path_GBps >= GBps * (1 - 1e-9); };
  const int ppn = m.ranks / m.nodes;
  const bool near_nic = m.nic_path <= Topology::NicPath::Pxb;
  Bytes tree_max = 0;  // 0: untuned (NVLS-tree's chunk by node count, below)
  if (m.nodes == 2 && at_least(48)) {
    s.channels = 32, tree_max = k128;
    if (ppn <= 4)
      s.chunk_bytes = k256, tree_max = k256;
    else if (ppn >= 16 || (ppn <= 8 && near_nic && !at_least(96)))
      tree_max = k64;
  } else if (at_least(96)) {
    if (ppn <= 8)
      s.channels = 24, s.chunk_bytes = k256, tree_max = k256;
    else
      s.channels = 32, tree_max = ppn < 32 ? k128 : k64;
  } else if (at_least(48)) {
    s.channels = 24, tree_max = near_nic ? k64 : k128;
  }
  if (tree_max == 0) tree_max = m.nodes >= 4 ? k64 : s.chunk_bytes;
  s.tree_chunk_bytes = std::min(s.chunk_bytes, tree_max);
  return s;
}

// The channels NCCL's plan spreads one collective over from 2.22 (src/enqueue.cc scheduleCollTasksToPlan; the rules
// of each release in libraries/nccl.json "channel_split"): the operation's traffic (bytes x 2 for allreduce, x ranks
// of one rank's share for allgather and reduce-scatter, x 1 otherwise; an LL operation's x the release's LL factor)
// is shared among the `nc` channels the thread thresholds left, in cells, the first channel taking as many as the
// rest: so a collective of less traffic than nc cells takes fewer channels than the nc it may use, and one of more
// traffic than its shares hold one more, up to `comm_max` (NCCL's nChannels or nvlsChannels), past which what the
// first channel leaves is spread over the others. From 2.23 (v2.29.7-1:571-690) a cell carries the minimal traffic per
// channel and every share is a whole number of cells rounded up; 2.22 (v2.22.3-1:583-700) cuts 16-byte cells, shares
// at least 512 bytes of traffic and rounds the first channel's share down.
int traffic_channels(int p, Collective op, Bytes bytes, int ranks, int nc, int comm_max, const ChannelSplit& split) {
  const auto div_up = [](Bytes x, Bytes y) { return (x + y - 1) / y; };
  const Bytes min_traffic = split.min_traffic_per_channel;
  const bool gather = op == Collective::AllGather || op == Collective::ReduceScatter;
  Bytes per_byte = op == Collective::AllReduce ? 2 : gather ? static_cast<Bytes>(ranks) : 1;
  const Bytes task_bytes = gather ? bytes / static_cast<Bytes>(ranks) : bytes;  // NCCL's count: one rank's share
  if (p == proto_index(Protocol::LL)) per_byte *= split.ll_traffic_factor;
  const bool first_form = split.share == ChannelSplit::Share::FirstForm;
  // The traffic a channel takes, and the cell it is cut in.
  const Bytes traffic = first_form ? task_bytes * per_byte : std::max(min_traffic, task_bytes * per_byte);
  const Bytes share = traffic / static_cast<Bytes>(nc);
  const Bytes traffic_per_channel =
      split.share == ChannelSplit::Share::RoundedUpTo16 ? div_up(share, 16) * 16 : std::max(min_traffic, share);
  const Bytes cell_bytes = first_form ? 16 : div_up(div_up(min_traffic, per_byte), 16) * 16;
  const Bytes cells = std::max<Bytes>(1, div_up(task_bytes, cell_bytes));  // an empty operation still takes one
  const Bytes cell_traffic = cell_bytes * per_byte;
  // NCCL's split of the cells: the first channel's share (rounded down in 2.22), whole shares, the rest.
  Bytes per_channel = std::min(cells, div_up(traffic_per_channel, cell_traffic));
  Bytes first = comm_max == 1 ? cells : first_form ? std::min(cells, traffic_per_channel / cell_traffic) : per_channel;
  auto middle = static_cast<std::int64_t>((cells - first) / per_channel);
  Bytes last = (cells - first) % per_channel;
  if (comm_max < (first != 0) + middle + (last != 0)) {  // overflowed: the rest over the channels there are
    middle = comm_max - 2;
    per_channel = (cells - first) / static_cast<Bytes>(middle + 1);
    last = per_channel + (cells - first) % static_cast<Bytes>(middle + 1);
  }
  if (last == 0 && middle != 0) last = per_channel, --middle;
  if (first == 0) {  // the first channel took nothing: the next one is the first
    if (middle == 0)
      first = std::exchange(last, 0);
    else
      first = per_channel, --middle;
  }
  return static_cast<int>((first != 0) + middle + (last != 0));
}

// Channels NCCL launches for `bytes` (enqueue.cc topoGetAlgoInfo): NVLS its own channels (from 2.28 across nodes no
// more than the ring's); ring, tree and CollNet chain fewer while each thread would get less than its threshold, with
// fewer Simple ring threads where the ring graph inside a node is slow (the table's slow_ring_simple_threads) and
// CollNet's own threads and threshold; CollNet direct by its own loop; PAT all; from 2.22 no more than the traffic
// fills (traffic_channels), except CollNet's and multi-node NVLS's, which take all their channels (enqueue.cc
// isCollnet).
int launched_channels(int a, int p, Collective op, Bytes bytes, const Machine& m, const Table& t,
                      const CommLibrary& lib) {
  int nc = comm_channels(m, lib, t);
  int comm_max = nc;  // NCCL's comm->nChannels, or nvlsChannels for NVLS: what the plan may spread over
  if (a == kNvls || a == kNvlsTree) {
    nc = nvls_setup(t, lib.gpu_arch, m).channels;
    comm_max = nc;
    if (a == kNvls && m.nodes > 1 && t.multi_node_nvls_at_most_ring) nc = std::min(nc, m.channels);
  } else if (a == kCollNetDirect) {
    // Its own loop over the CollNet heads (one per NIC channel of the search, as the bandwidth counts them), halving
    // the threshold at 1.5 x each switch point 16, 8, 4, 2, 1 (enqueue.cc topoGetAlgoInfo, v2.18.6-1:1192-1202 to
    // v2.29.7-1:1980-1990).
    const double heads = std::max(1, m.channels / 2);
    double threshold = t.collnet_thread_threshold;
    bool short_of_work = true;
    for (int switch_at = 16; switch_at >= 1 && short_of_work; switch_at /= 2)
      while ((short_of_work = static_cast<double>(bytes) < nc * t.collnet_max_threads * heads * threshold) &&
             nc > switch_at) {
        if (nc == switch_at + switch_at / 2) threshold /= 2;
        --nc;
      }
  } else if (a != kPat) {  // PAT has no thread count in NCCL's table (maxThreads 0), so no trimming
    const bool collnet_chain = a == kCollNetChain;
    // The ring graph's bwIntra x nChannels (tuning.cc v2.18.6-1:121): across nodes the search sets bwIntra to bwInter
    // (search.cc v2.27.7-1:1052), so a ring limited by its NICs counts as slow too.
    const double ring_GBps = m.nodes > 1 ? std::min(m.intra_GBps, m.inter_GBps) : m.intra_GBps;
    const bool slow_ring = a == kRing && p == proto_index(Protocol::Simple) && ring_GBps <= t.slow_ring_at_most_GBps;
    double nt = collnet_chain ? t.collnet_max_threads : slow_ring ? t.slow_ring_simple_threads : t.max_threads[p];
    const double threshold =
        collnet_chain ? t.collnet_thread_threshold : t.thread_threshold[p] * (a == kRing && p == 0 ? m.ranks : 1);
    while (static_cast<double>(bytes) < nc * nt * threshold) {
      if (nc >= 2)
        --nc;
      else if (std::fmod(nt, 128) == 0)
        nt /= 2;
      else
        break;
    }
  }
  const bool collnet_kind = a == kCollNetDirect || a == kCollNetChain || (a == kNvls && m.nodes > 1);
  if (t.channel_split.min_traffic_per_channel > 0 && !collnet_kind)
    nc = traffic_channels(p, op, bytes, m.ranks, nc, comm_max, t.channel_split);
  return nc;
}

// NVLS is a pipeline: every chunk passes through the warp groups of the kernel in turn (src/device/all_reduce.h,
// reduce_scatter.h, all_gather.h, RunWorkColl<..., NCCL_ALGO_NVLS / NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE>):
// NVLS allreduce scatters into the switch buffer, reduces and broadcasts through the switch, gathers (3 stages);
// reduce-scatter scatters and reduces, allgather gathers and broadcasts (2); NVLS-tree allreduce scatters, reduces
// and sends to the network, receives and broadcasts, gathers (4). So the last chunk leaves (stages - 1) chunk times
// after the user buffer has streamed through: that many chunks more over all concurrent ops (channels x heads, one
// head per GPU of a node) at the algorithm's bandwidth. The chunk is NCCL's (src/enqueue.cc calcCollChunking):
// NVLS from NCCL_NVLS_CHUNKSIZE down to 64 KiB below 64 chunks per op, 32 KiB below 8, 16 KiB below 2; NVLS-tree
// from its largest chunk down to 256 KiB below 32, 128 KiB below 16, 64 KiB below 4, 32 KiB below 1. An op with
// less than a chunk sends what it has. NVLS across nodes (with SHARP) adds network stages not counted: no fill.
// The same chunking sets how many rounds the kernel runs: each round moves one chunk on every op and ends with the
// stages' synchronisation, so a fixed cost per round makes the small chunks of mid sizes slower per byte (fitted,
// ModelScale::chunk_round_us; NCCL's own model has none).
NvlsChunking nvls_chunking(int a, Collective op, Bytes bytes, const Machine& m, const Table& t, GpuArch arch) {
  if (!(a == kNvls && m.nodes == 1) && a != kNvlsTree) return {};
  const NvlsSetup setup = nvls_setup(t, arch, m);
  const Bytes ops = static_cast<Bytes>(setup.channels) * static_cast<Bytes>(m.ranks / m.nodes);
  Bytes chunk = 0;
  int stages = 0;
  const auto shrink = [&](Bytes below_chunks_per_op, Bytes to) {
    if (bytes < below_chunks_per_op * ops * chunk && chunk > to) chunk = to;
  };
  if (a == kNvls) {
    stages = op == Collective::AllReduce ? 3 : 2;
    chunk = setup.chunk_bytes;
    shrink(64, 65536), shrink(8, 32768), shrink(2, 16384);
  } else {
    stages = 4;
    chunk = setup.tree_chunk_bytes;
    shrink(32, 262144), shrink(16, 131072), shrink(4, 65536), shrink(1, 32768);
  }
  const double round_bytes = static_cast<double>(chunk) * static_cast<double>(ops);
  const double per_op = std::min(static_cast<double>(chunk), static_cast<double>(bytes) / static_cast<double>(ops));
  return {(stages - 1) * per_op * static_cast<double>(ops), std::ceil(static_cast<double>(bytes) / round_bytes)};
}

}  // namespace commsim::nccl::detail
