// NCCL's tuning constants, one table per NCCL version (libraries/nccl.json, compiled in): the rows of
// src/graph/tuning.cc and the chunk and channel constants of src/enqueue.cc and src/transport/nvls.cc as data.
// Internal to the NCCL model (nccl_model.cpp, nccl_tuning.cpp).
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collective/nccl_model.hpp"

namespace commsim::nccl::detail {

// NCCL's algorithm and protocol indices (src/include/devcomm.h): the rows of the constants table.
enum NcclAlgo { kTree, kRing, kCollNetDirect, kCollNetChain, kNvls, kNvlsTree, kPat, kNcclAlgos };
constexpr std::array<std::string_view, kNcclAlgos> kAlgoKeys = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<Algorithm, kNcclAlgos> kAlgorithms = {
    Algorithm::Tree,     Algorithm::Ring, Algorithm::CollNetDirect, Algorithm::CollNetChain, Algorithm::Nvls,
    Algorithm::NvlsTree, Algorithm::Pat};
constexpr int kProtos = 3;  // LL, LL128, Simple
enum Hw { kNvlinkHw, kPciHw, kNetHw };
constexpr int kArchs = 4;
constexpr int kTreeCorrectionSizes = 23;  // tree: logSize < 23 in ncclTopoGetAlgoTime, every release

using PerProto = std::array<double, kProtos>;
using PerAlgo = std::array<PerProto, kNcclAlgos>;
using PerNodes = std::array<double, 3>;  // 1 node, 2 nodes, more
inline int nodes_index_of(int nodes) { return nodes <= 2 ? nodes - 1 : 2; }

// How a version prices NVLS (nccl_model.hpp, libraries/nccl.json "nvls").
enum class NvlsBandwidth { Intra, MinIntraInter, Efficiency };

// How NCCL's plan spreads one collective over its channels, from 2.22 (libraries/nccl.json "channel_split").
struct ChannelSplit {
  enum class Share : std::uint8_t {
    AtLeastTheMinimum,  // traffic / channels, at least one cell of the minimal traffic (2.23 - 2.28)
    RoundedUpTo16,      // traffic / channels rounded up to 16 bytes (2.29)
    FirstForm,          // 2.22: at least the minimum, cut in 16-byte cells, the first channel's share rounded down
  };
  Bytes min_traffic_per_channel = 0;  // 2.23+: the traffic of one cell, 2.22: a share's least; 0: before 2.22
  Bytes ll_traffic_factor = 1;        // an LL collective's traffic counts this many times (4 from 2.26)
  Share share = Share::AtLeastTheMinimum;
};

struct Table {
  std::string version;
  long long number = 0;  // version_number(version, 0)
  PerAlgo base_latency_us{};
  std::array<PerAlgo, 3> hw_latency_us{};                // NVLink, PCI, network
  std::array<PerNodes, kArchs> ll_max_bw_single_node{};  // by GPU generation
  std::array<PerNodes, 2> ll_max_bw_multi_node{};        // by CPU vendor: Intel, AMD
  std::array<PerNodes, kArchs> ring_ll128_per_channel_GBps{}, tree_ll128_per_channel_GBps{}, tree_per_channel_GBps{};
  std::array<PerNodes, kArchs> nvls_tree_per_channel_GBps{};  // all 0 = no cap (before 2.28)
  bool nvls_tree_capped = false;
  std::array<std::vector<double>, kProtos> tree_correction{};  // by log2(bytes / 64): 23 sizes, 24 from 2.29
  bool nvls_tree_size_correction = false;  // also NVLS-tree allreduce, Blackwell GPUs with x86 CPUs (2.29)
  PerProto max_threads{}, thread_threshold{};
  double slow_ring_at_most_GBps = 0, slow_ring_simple_threads = 0;  // Simple ring threads on a ring this slow
  double collnet_max_threads = 0, collnet_thread_threshold = 0;     // CollNet Simple
  ChannelSplit channel_split;
  bool ring_channels_at_least_nvls = false;   // 2.23-2.27 here (NCCL 2.22 too): rings copied up to the NVLS channels
  bool multi_node_nvls_at_most_ring = false;  // 2.28+: NVLS across nodes on no more channels than the rings
  double net_overhead_intel_us = 0, net_overhead_amd_us = 0;
  double ring_plateau_pre_ampere = 1, ring_plateau = 1;
  double ring_ll_factor_allreduce_or_multi_node = 0, ring_ll_factor_other = 0;
  double ring_ll128_factor_one_gpu_per_node = 0;
  bool ring_inter_steps_exclude_one_node = false;  // allreduce: 2 (nodes - 1) inter-node steps, else 2 nodes
  bool one_gpu_per_node_inter_latency_from_tree = false;
  double collnet_arity_us = 0;
  NvlsBandwidth nvls_bandwidth = NvlsBandwidth::Intra;
  bool nvls_ring_ratio = false;            // algbw = busBw x n / nsteps, else x 5/6
  bool nvls_latency_from_hw = false;       // hwLat NVLink NVLS (+ inter), else baseLat (+ NET NVLS)
  int nvls_min_gpus_per_node = 3;          // NVLS is set up on nodes of at least this many GPUs (2 from 2.28.7)
  bool nvls_latency_without_nvls = true;   // the tuning loop prices NVLS latencies without an NVLS graph (to 2.27)
  bool nvls_gather_scatter_share = false;  // min_intra_inter: allgather / reduce-scatter at (ppn-1)/ppn of intra (2.27)
  std::array<double, kArchs> nvls_efficiency{};
  std::array<PerNodes, kArchs> nvls_channels{};  // by GPU generation and node count
  Bytes nvls_chunk_bytes = 131072;
  Bytes nvls_tree_chunk_below_4_nodes = 0, nvls_tree_chunk_from_4_nodes = 0;
  bool nvls_blackwell_multi_node_tuning = false;  // 2.30: nvls_setup's rules for Blackwell across nodes
  bool pat = false;  // the release has PAT (its constants; then reduce-scatter and allgather list it too)
  double pat_bandwidth_factor = 1, pat_base_latency_us = 0, pat_inter_latency_divisor = 1, pat_latency_per_rank_us = 0;
  std::array<bool, kArchs> ll128_enabled{};  // by GPU generation, from "ll128_compute_capabilities"
  // Across nodes LL128 needs a NIC path up to PXB, or up to PXN from Hopper ("ll128_nic_paths"); from 2.27 a path
  // through NVLink-C2C (P2C) passes too on Hopper and later.
  bool ll128_over_c2c = false;
  std::array<bool, kNcclAlgos> gather_scatter{};  // the algorithms of reduce-scatter and allgather
  std::array<std::map<std::string, ModelScale>, kArchs> fitted;
  std::array<double, kArchs> fitted_band_rel{};
  std::array<int, kArchs> fitted_gpus_per_thread{};  // CommLibrary::fitted_gpus_per_thread of the table's fit
  // The host time one thread spends issuing one GPU's collective kernel (nccl-tests -g G issues G per operation),
  // fitted with the scales (libraries/nccl.json "fitted"."host"); 0 = not fitted.
  double launch_us_per_gpu = 0;
};

inline int arch_index(GpuArch a) { return static_cast<int>(a); }

// Every table, oldest first; the one a version uses (the newest not newer than it; none before the oldest);
// the topology's (InputError naming library.version when none).
const std::vector<Table>& tables();
const Table* find_table(std::string_view version);
const Table& table_of(const Topology& topo);

}  // namespace commsim::nccl::detail
