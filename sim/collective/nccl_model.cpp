// NCCL's tuning model on a commsim topology (see nccl_model.hpp for the formulas). Constants come from the table
// compiled in from libraries/nccl.json; the per-channel graph bandwidths NCCL's topology search would find are
// replaced by the topology's own link bandwidths (the same links the flow fidelity shares).
#include "sim/collective/nccl_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "sim/core/error.hpp"

namespace commsim::nccl {

std::string_view embedded_table_json();  // generated from libraries/nccl.json at build time

namespace {

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
constexpr int kCorrectionSizes = 23;

using PerProto = std::array<double, kProtos>;
using PerAlgo = std::array<PerProto, kNcclAlgos>;
using PerNodes = std::array<double, 3>;  // 1 node, 2 nodes, more
int nodes_index_of(int nodes) { return nodes <= 2 ? nodes - 1 : 2; }

// How a version prices NVLS (nccl_model.hpp, libraries/nccl.json "nvls").
enum class NvlsBandwidth { Intra, MinIntraInter, Efficiency };

struct Table {
  std::string version;
  long number = 0;  // version_number(version)
  PerAlgo base_latency_us{};
  std::array<PerAlgo, 3> hw_latency_us{};                // NVLink, PCI, network
  std::array<PerNodes, kArchs> ll_max_bw_single_node{};  // by GPU generation
  std::array<PerNodes, 2> ll_max_bw_multi_node{};        // by CPU vendor: Intel, AMD
  std::array<PerNodes, kArchs> ring_ll128_per_channel_GBps{}, tree_ll128_per_channel_GBps{}, tree_per_channel_GBps{};
  std::array<PerNodes, kArchs> nvls_tree_per_channel_GBps{};  // all 0 = no cap (before 2.29)
  bool nvls_tree_capped = false;
  std::array<std::array<double, kCorrectionSizes>, kProtos> tree_correction{};
  PerProto max_threads{}, thread_threshold{};
  double net_overhead_intel_us = 0, net_overhead_amd_us = 0;
  double ring_plateau_pre_ampere = 1, ring_plateau = 1;
  double ring_ll_factor_allreduce_or_multi_node = 0, ring_ll_factor_other = 0;
  double ring_ll128_factor_one_gpu_per_node = 0;
  bool ring_inter_steps_exclude_one_node = false;  // allreduce: 2 (nodes - 1) inter-node steps, else 2 nodes
  bool one_gpu_per_node_inter_latency_from_tree = false;
  double collnet_arity_us = 0;
  NvlsBandwidth nvls_bandwidth = NvlsBandwidth::Intra;
  bool nvls_ring_ratio = false;       // algbw = busBw x n / nsteps, else x 5/6
  bool nvls_latency_from_hw = false;  // hwLat NVLink NVLS (+ inter), else baseLat (+ NET NVLS)
  std::array<double, kArchs> nvls_efficiency{};
  std::array<PerNodes, kArchs> nvls_channels{};  // by GPU generation and node count
  Bytes nvls_chunk_bytes = 131072;
  PerNodes nvls_tree_chunk_bytes{};
  bool pat = false;
  double pat_bandwidth_factor = 1, pat_base_latency_us = 0, pat_inter_latency_divisor = 1, pat_latency_per_rank_us = 0;
  std::array<bool, kArchs> ll128_enabled{};  // by GPU generation, from "ll128_compute_capabilities"
  std::array<std::map<std::string, ModelScale>, kArchs> fitted;
  std::array<double, kArchs> fitted_band_rel{};
};

int arch_index(GpuArch a) { return static_cast<int>(a); }

template <std::size_t N>
std::array<double, N> read_array(const nlohmann::json& j) {
  std::array<double, N> out{};
  COMMSIM_CHECK(j.is_array() && j.size() == N, "libraries/nccl.json: an array has the wrong length");
  for (std::size_t i = 0; i < N; ++i) out[i] = j[i].get<double>();
  return out;
}
PerAlgo read_per_algo(const nlohmann::json& j) {
  PerAlgo out{};
  for (int a = 0; a < kNcclAlgos; ++a) out[a] = read_array<kProtos>(j.at(std::string(kAlgoKeys[a])));
  return out;
}
std::array<PerNodes, kArchs> read_per_arch(const nlohmann::json& j) {
  std::array<PerNodes, kArchs> out{};
  for (int a = 0; a < kArchs; ++a) out[a] = read_array<3>(j.at(std::string(to_string(static_cast<GpuArch>(a)))));
  return out;
}
PerProto read_per_proto(const nlohmann::json& j) {
  return {j.at("ll").get<double>(), j.at("ll128").get<double>(), j.at("simple").get<double>()};
}

std::map<std::string, ModelScale> read_scales(const nlohmann::json& j) {
  std::map<std::string, ModelScale> out;
  for (auto& [key, v] : j.items())
    out[key] = {v.at("latency_scale").get<double>(), v.at("bandwidth_scale").get<double>()};
  return out;
}

// The compute capability NCCL's LL128 switch sees for each generation's row (tuning.cc: Volta sm70, Ampere sm80,
// Hopper sm90, Blackwell sm100 as on B200 / GB200).
constexpr std::array<int, kArchs> kLl128ComputeCapability = {70, 80, 90, 100};

// "70 and later" (NCCL 2.27+: minCompCap >= 70) or "exactly 70, 80, 90[, ...]" (earlier: a switch on
// minCompCap) as the generations whose LL128 NCCL enables by default.
std::array<bool, kArchs> ll128_generations(const std::string& rule) {
  std::array<bool, kArchs> enabled{};
  if (rule == "70 and later") {
    enabled.fill(true);
    return enabled;
  }
  const std::string prefix = "exactly ";
  COMMSIM_CHECK(rule.starts_with(prefix),
                "libraries/nccl.json: ll128_compute_capabilities is not \"70 and later\" "
                "or \"exactly ...\"");
  std::stringstream list(rule.substr(prefix.size()));
  for (std::string item; std::getline(list, item, ',');) {
    int sm = 0;
    COMMSIM_CHECK(std::sscanf(item.c_str(), " %d", &sm) == 1,
                  "libraries/nccl.json: ll128_compute_capabilities lists something not a compute capability");
    for (int a = 0; a < kArchs; ++a) enabled[a] = enabled[a] || kLl128ComputeCapability[a] == sm;
  }
  return enabled;
}

// "major.minor[.patch]" as a comparable number; -1 when the text is not a version.
long version_number(std::string_view v) {
  long major = 0, minor = 0;
  std::size_t i = 0;
  auto digits = [&](long& out) {
    const std::size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9' && i - start < 4) out = out * 10 + (v[i++] - '0');
    return i > start;
  };
  if (!digits(major) || i >= v.size() || v[i++] != '.' || !digits(minor)) return -1;
  return major * 1000 + minor;
}

// The table is part of the program (compiled in), so a malformed table is an internal fault, not bad input.
std::vector<Table> load_tables() {
  const nlohmann::json doc = nlohmann::json::parse(embedded_table_json());
  std::vector<Table> tables;
  for (const auto& v : doc.at("versions")) {
    const nlohmann::json& c = v.at("constants");
    Table t;
    t.version = v.at("version").get<std::string>();
    t.number = version_number(t.version);
    t.base_latency_us = read_per_algo(c.at("base_latency_us"));
    t.hw_latency_us = {read_per_algo(c.at("hw_latency_us").at("nvlink")),
                       read_per_algo(c.at("hw_latency_us").at("pci")), read_per_algo(c.at("hw_latency_us").at("net"))};
    t.ll_max_bw_single_node = read_per_arch(c.at("ll_max_bw_GBps").at("single_node"));
    t.ll_max_bw_multi_node = {read_array<3>(c.at("ll_max_bw_GBps").at("multi_node_intel")),
                              read_array<3>(c.at("ll_max_bw_GBps").at("multi_node_amd"))};
    t.ring_ll128_per_channel_GBps = read_per_arch(c.at("per_channel_max_ring_ll128_GBps"));
    t.tree_ll128_per_channel_GBps = read_per_arch(c.at("per_channel_max_tree_ll128_GBps"));
    t.tree_per_channel_GBps = read_per_arch(c.at("per_channel_max_tree_GBps"));
    const nlohmann::json& corr = c.at("tree_correction");
    t.tree_correction = {read_array<kCorrectionSizes>(corr.at("ll")), read_array<kCorrectionSizes>(corr.at("ll128")),
                         read_array<kCorrectionSizes>(corr.at("simple"))};
    t.max_threads = read_per_proto(c.at("max_threads"));
    t.thread_threshold = read_per_proto(c.at("thread_threshold"));
    t.net_overhead_intel_us = c.at("net_overhead_us").at("intel").get<double>();
    t.net_overhead_amd_us = c.at("net_overhead_us").at("amd").get<double>();
    t.ring_plateau_pre_ampere = c.at("ring_simple_plateau").at("pre_ampere").get<double>();
    t.ring_plateau = c.at("ring_simple_plateau").at("ampere_and_later").get<double>();
    t.ring_ll_factor_allreduce_or_multi_node =
        c.at("ring_ll_factor").at("allreduce_reduce_or_multi_node").get<double>();
    t.ring_ll_factor_other = c.at("ring_ll_factor").at("other").get<double>();
    t.ring_ll128_factor_one_gpu_per_node = c.at("ring_ll128_factor_one_gpu_per_node").get<double>();
    t.ring_inter_steps_exclude_one_node =
        c.at("ring_allreduce_inter_steps_per_node").get<std::string>() == "2 (nodes - 1)";
    t.one_gpu_per_node_inter_latency_from_tree = c.at("one_gpu_per_node_inter_latency_from_tree").get<bool>();
    t.collnet_arity_us = c.at("collnet_arity_us").get<double>();
    if (!c.at("per_channel_max_nvls_tree_GBps").is_null()) {
      t.nvls_tree_per_channel_GBps = read_per_arch(c.at("per_channel_max_nvls_tree_GBps"));
      t.nvls_tree_capped = true;
    }
    const nlohmann::json& nvls = c.at("nvls");
    const std::string bw = nvls.at("bandwidth").get<std::string>();
    t.nvls_bandwidth = bw == "intra"             ? NvlsBandwidth::Intra
                       : bw == "min_intra_inter" ? NvlsBandwidth::MinIntraInter
                                                 : NvlsBandwidth::Efficiency;
    t.nvls_ring_ratio = nvls.at("ratio").get<std::string>() == "ring";
    t.nvls_latency_from_hw = nvls.at("latency").get<std::string>() == "hw";
    for (int a = 0; a < kArchs; ++a)
      t.nvls_efficiency[a] = nvls.at("efficiency").at(std::string(to_string(static_cast<GpuArch>(a)))).get<double>();
    t.nvls_channels = read_per_arch(nvls.at("channels"));
    t.nvls_chunk_bytes = nvls.at("chunk_bytes").get<Bytes>();
    t.nvls_tree_chunk_bytes = read_array<3>(nvls.at("tree_chunk_bytes"));
    if (const nlohmann::json& pat = c.at("pat"); !pat.is_null()) {
      t.pat = true;
      t.pat_bandwidth_factor = pat.at("bandwidth_factor").get<double>();
      t.pat_base_latency_us = pat.at("base_latency_us").get<double>();
      t.pat_inter_latency_divisor = pat.at("inter_latency_divisor").get<double>();
      t.pat_latency_per_rank_us = pat.at("latency_per_rank_us").get<double>();
    }
    t.ll128_enabled = ll128_generations(c.at("ll128_compute_capabilities").get<std::string>());
    for (int a = 0; a < kArchs; ++a) {
      const std::string arch(to_string(static_cast<GpuArch>(a)));
      if (!doc.at("fitted").contains(arch)) continue;
      t.fitted[a] = read_scales(doc.at("fitted").at(arch).at("scales"));
      t.fitted_band_rel[a] = doc.at("fitted").at(arch).at("band_rel").get<double>();
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

const std::vector<Table>& tables() {
  static const std::vector<Table> all = load_tables();
  return all;
}

// A version uses the newest table not newer than it ("2.20.5" -> "2.18"); none before the oldest table.
const Table* find_table(std::string_view version) {
  const long wanted = version_number(version);
  const Table* best = nullptr;
  for (const Table& t : tables())
    if (wanted >= 0 && t.number <= wanted) best = &t;
  return best;
}

const Table& table_of(const Topology& topo) {
  const Table* t = find_table(topo.library().version);
  if (t == nullptr)
    throw InputError(
        topo.source_file(), "library.version",
        "\"" + topo.library().version + "\" is not an NCCL version with constants (2.18 or later, as major.minor)");
  return *t;
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

int proto_index(Protocol p) { return static_cast<int>(p); }

struct Evaluation {
  bool applicable = false;
  double latency_us = 0;
  double algbw_GBps = 0;
};

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

bool newer_than_2_21(const Table& t) { return t.number >= 2021; }
bool newer_than_2_23(const Table& t) { return t.number >= 2023; }

// Which (collective, algorithm, protocol) NCCL models and enables by default (tuning.cc; nccl_model.hpp).
bool applies(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  const int ppn = m.ranks / m.nodes;
  // LL128 only where NCCL tested it: NVLink inside the node, the NIC reached without the CPU, and a compute
  // capability the version enables (before 2.25 exactly sm70 / sm80 / sm90, so not Blackwell).
  if (p == proto_index(Protocol::LL128) &&
      !(m.nvlink_intra && (m.nodes == 1 || m.gpudirect_network) && t.ll128_enabled[arch_index(lib.gpu_arch)]))
    return false;
  const bool simple_only = a == kNvls || a == kNvlsTree || a == kCollNetDirect || a == kCollNetChain || a == kPat;
  if (simple_only && p != proto_index(Protocol::Simple)) return false;
  if (op == Collective::Broadcast || op == Collective::Reduce) return a == kRing;
  if (op == Collective::ReduceScatter || op == Collective::AllGather) {
    if (a == kRing) return true;
    if (a == kNvls) return newer_than_2_21(t) && lib.nvls && m.nodes == 1 && ppn > 1;
    if (a == kPat) return t.pat && ppn == 1;
    return false;
  }
  switch (a) {  // allreduce
    case kRing:
    case kTree:
      return true;
    case kNvls:
      return lib.nvls && ppn > 1 && (m.nodes == 1 || lib.collnet);  // across nodes NVLS needs SHARP
    case kNvlsTree:
      return lib.nvls && ppn > 1 && m.nodes > 1;
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

Evaluation evaluate(int a, int p, Collective op, const Machine& m, const CommLibrary& lib, const Table& t) {
  Evaluation e;
  if (m.ranks < 2 || !applies(a, p, op, m, lib, t)) return e;
  const int n = m.ranks, nodes = m.nodes, ppn = n / nodes;
  const int arch = arch_index(lib.gpu_arch);
  const int nodes_index = nodes_index_of(nodes);
  const double ll_max_bw = nodes == 1 ? t.ll_max_bw_single_node[arch][nodes_index]
                                      : t.ll_max_bw_multi_node[lib.cpu_amd ? 1 : 0][nodes_index];
  // The tuning model counts the search's channels; NCCL runs twice as many (each search ring used by two CTAs).
  const double search_channels = std::max(1, m.channels / 2);

  // Bus bandwidth: the graph's (the slower of the node's ring and its network share), refined per protocol.
  double bus = a == kNvls || a == kNvlsTree ? nvls_bus_bw(a, op, m, lib, t)
               : nodes == 1                 ? m.intra_GBps
                                            : std::min(m.intra_GBps, m.inter_GBps);
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
  if (a == kPat) bus *= t.pat_bandwidth_factor;
  if (a == kCollNetDirect) {
    double factor = ppn / search_channels;  // GPUs per NIC channel: CollNet direct wants a NIC per GPU
    factor -= (factor - 1) / 2;
    if (factor > 0) bus /= factor;
    if (lib.gpu_arch >= GpuArch::Hopper) bus *= 0.85;
  }
  // Bus bandwidth to the algorithm bandwidth NCCL stores.
  const int steps = steps_of(op, n);
  const bool gather_or_scatter = op == Collective::ReduceScatter || op == Collective::AllGather;
  double ratio = 0.5;
  if (a == kRing)
    ratio = static_cast<double>(n) / steps;
  else if (a == kNvls || a == kNvlsTree)
    ratio = t.nvls_ring_ratio                             ? static_cast<double>(n) / steps
            : (a == kNvlsTree && !t.nvls_latency_from_hw) ? 0.7 * nodes / (2.0 * (nodes - 1))
                                                          : 5.0 / 6;
  if (gather_or_scatter && a != kRing && newer_than_2_23(t)) ratio = 1;
  e.algbw_GBps = bus * ratio;

  // Latency.
  const Hw intra_hw = m.nvlink_intra ? kNvlinkHw : kPciHw;
  const double base = t.base_latency_us[a][p];
  double intra_lat = t.hw_latency_us[intra_hw][a][p];
  double inter_lat = t.hw_latency_us[kNetHw][ppn == 1 && t.one_gpu_per_node_inter_latency_from_tree ? kTree : a][p] +
                     m.transport_latency_us;
  if (p == proto_index(Protocol::Simple)) inter_lat += m.transport_latency_us;  // the flush after a receive
  const int log_nodes = log2i(static_cast<Bytes>(nodes));
  double lat = base;
  switch (a) {
    case kRing:
      if (op == Collective::Broadcast || op == Collective::Reduce) {
        lat += steps * t.hw_latency_us[nodes == 1 ? intra_hw : kNetHw][a][p];
      } else {
        const int inter_steps = op == Collective::AllReduce
                                    ? (nodes > 1 ? 2 * (nodes - (t.ring_inter_steps_exclude_one_node ? 1 : 0)) : 0)
                                    : nodes - 1;
        double net_overhead = 0;
        if (nodes > 1)
          net_overhead = (lib.cpu_amd ? t.net_overhead_amd_us : t.net_overhead_intel_us) * (p == 2 ? 3 : 1);
        lat += (steps - inter_steps) * std::max(intra_lat, net_overhead) + inter_steps * inter_lat;
      }
      break;
    case kTree:
      lat += 2 * ((ppn - 1) * intra_lat + log_nodes * inter_lat);
      break;
    case kCollNetDirect:
      lat += 2 * (std::min(1, ppn - 1) * intra_lat + (ppn - 1) * t.collnet_arity_us) + inter_lat;
      break;
    case kCollNetChain:
      lat += 2 * (ppn - 1) * intra_lat + inter_lat;
      break;
    case kNvls:
      if (t.nvls_latency_from_hw)
        lat = intra_lat + (nodes > 1 ? inter_lat : 0);
      else
        lat += nodes > 1 ? t.hw_latency_us[kNetHw][a][p] : 0;
      break;
    case kNvlsTree:
      if (t.nvls_latency_from_hw)
        lat += intra_lat + 2 * log_nodes * inter_lat;
      else
        lat += 2 * (nodes - 1) * t.hw_latency_us[kNetHw][a][p];
      break;
    case kPat:
      lat = t.pat_base_latency_us + log_nodes * inter_lat / t.pat_inter_latency_divisor + t.pat_latency_per_rank_us * n;
      break;
  }
  e.latency_us = lat;
  e.applicable = e.algbw_GBps > 0;
  return e;
}

// NCCL's estimate for `bytes` (ncclTopoGetAlgoTime): tree's size correction, the ring's plateau.
double nccl_time_us(int a, int p, const Evaluation& e, Bytes bytes, const Machine& m, const CommLibrary& lib,
                    const Table& t, Collective op) {
  double bw = e.algbw_GBps, lat = e.latency_us;
  const int log_size = log2i(bytes >> 6);
  if (a == kTree && log_size >= 0 && log_size < kCorrectionSizes) bw *= t.tree_correction[p][log_size];
  if (a == kRing && p == 2 && m.nodes > 1 && op == Collective::AllReduce &&
      static_cast<double>(bytes) / (static_cast<double>(m.channels) * m.ranks) >= 64)
    lat *= lib.gpu_arch == GpuArch::Volta ? t.ring_plateau_pre_ampere : t.ring_plateau;
  return lat + static_cast<double>(bytes) / (1000 * bw);
}

int nvls_channel_count(const Table& t, GpuArch arch, int nodes) {
  return static_cast<int>(t.nvls_channels[arch_index(arch)][nodes_index_of(nodes)]);
}

// Channels NCCL launches for `bytes` (enqueue.cc): fewer while each thread would get less than its threshold.
int launched_channels(int a, int p, Bytes bytes, const Machine& m, const Table& t, GpuArch arch) {
  if (a == kNvls || a == kNvlsTree) return nvls_channel_count(t, arch, m.nodes);
  double nc = m.channels, nt = t.max_threads[p];
  const double threshold = t.thread_threshold[p] * (a == kRing && p == 0 ? m.ranks : 1);
  while (static_cast<double>(bytes) < nc * nt * threshold) {
    if (nc >= 2)
      --nc;
    else if (std::fmod(nt, 128) == 0)
      nt /= 2;
    else
      break;
  }
  return static_cast<int>(nc);
}

int nccl_index(Algorithm a) {
  for (int i = 0; i < kNcclAlgos; ++i)
    if (kAlgorithms[i] == a) return i;
  return -1;
}

// The fitted scales of a (collective, algorithm, protocol) and their error band: the topology's own (from its
// calibration), else the table's for the GPU generation, else NCCL's constants (1, 1, no band).
struct Fit {
  ModelScale scale;
  double band_rel = 0;
  bool measured = false;  // false: NCCL's constants alone
};
Fit fitted_scale(const CommLibrary& lib, const Table& t, Collective op, Algorithm algorithm, Protocol protocol) {
  const std::string key = scale_key(op, algorithm, protocol);
  if (auto it = lib.fitted.find(key); it != lib.fitted.end()) return {it->second, lib.fitted_band_rel, true};
  const int arch = arch_index(lib.gpu_arch);
  if (auto it = t.fitted[arch].find(key); it != t.fitted[arch].end())
    return {it->second, t.fitted_band_rel[arch], true};
  return {};
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
double nvls_fill_bytes(int a, Collective op, Bytes bytes, const Machine& m, const Table& t, GpuArch arch) {
  if (!(a == kNvls && m.nodes == 1) && a != kNvlsTree) return 0;
  const Bytes ops = static_cast<Bytes>(nvls_channel_count(t, arch, m.nodes)) * static_cast<Bytes>(m.ranks / m.nodes);
  Bytes chunk = 0;
  int stages = 0;
  const auto shrink = [&](Bytes below_chunks_per_op, Bytes to) {
    if (bytes < below_chunks_per_op * ops * chunk && chunk > to) chunk = to;
  };
  if (a == kNvls) {
    stages = op == Collective::AllReduce ? 3 : 2;
    chunk = t.nvls_chunk_bytes;
    shrink(64, 65536), shrink(8, 32768), shrink(2, 16384);
  } else {
    stages = 4;
    chunk = static_cast<Bytes>(t.nvls_tree_chunk_bytes[nodes_index_of(m.nodes)]);
    shrink(32, 262144), shrink(16, 131072), shrink(4, 65536), shrink(1, 32768);
  }
  const double per_op = std::min(static_cast<double>(chunk), static_cast<double>(bytes) / static_cast<double>(ops));
  return (stages - 1) * per_op * static_cast<double>(ops);
}

Estimate make_estimate(int a, int p, int channels, double latency_us, double algbw_GBps, Bytes bytes,
                       double fill_bytes = 0) {
  Estimate e;
  e.algorithm = kAlgorithms[a];
  e.protocol = static_cast<Protocol>(p);
  e.channels = channels;
  e.latency_s = latency_us * 1e-6;
  e.algbw_Bps = algbw_GBps * 1e9;
  e.bandwidth_s = (static_cast<double>(bytes) + fill_bytes) / e.algbw_Bps;
  e.seconds = e.latency_s + e.bandwidth_s;
  return e;
}

}  // namespace

std::string scale_key(Collective op, Algorithm algorithm, Protocol protocol) {
  const int a = nccl_index(algorithm);
  COMMSIM_CHECK(a >= 0 && protocol != Protocol::Auto, "scale_key needs an NCCL algorithm and a protocol");
  return std::string(to_string(op)) + "/" + std::string(kAlgoKeys[a]) + "/" + std::string(to_string(protocol));
}

std::vector<std::string> table_versions() {
  std::vector<std::string> out;
  for (const Table& t : tables()) out.push_back(t.version);
  return out;
}
bool known_version(std::string_view version) { return find_table(version) != nullptr; }

Machine machine_of(const Topology& topo, const std::vector<int>& ranks) {
  Machine m;
  m.channels = topo.library().channels > 0 ? topo.library().channels : 2 * topo.default_channels();
  // The ranks of the communicator's first two nodes, in its order: they stand for every node (one template).
  std::vector<int> first, second;
  double intra = std::numeric_limits<double>::infinity();
  if (ranks.empty()) {
    m.ranks = topo.ranks();
    m.nodes = topo.nodes();
    const int rpn = topo.ranks_per_node();
    for (int i = 0; i < rpn; ++i) first.push_back(i), second.push_back(m.nodes > 1 ? rpn + i : i);
    for (const Topology::RingHop& hop : topo.ring_hops())
      if (hop.same_node) intra = std::min(intra, hop.cost.bottleneck_Bps / 1e9);
  } else {
    std::map<int, std::vector<int>> by_node;
    for (int r : ranks) by_node[topo.node_of(r)].push_back(r);
    const std::size_t ppn = by_node.begin()->second.size();
    for (const auto& [node, members] : by_node)
      if (members.size() != ppn) return Machine{};  // not the same number of ranks on every node: not NCCL's case
    m.ranks = static_cast<int>(ranks.size());
    m.nodes = static_cast<int>(by_node.size());
    first = by_node.begin()->second;
    second = std::next(by_node.begin()) != by_node.end() ? std::next(by_node.begin())->second : first;
    for (std::size_t i = 0; first.size() > 1 && i < first.size(); ++i)
      intra = std::min(intra, topo.path_cost(first[i], first[(i + 1) % first.size()]).bottleneck_Bps / 1e9);
  }
  if (first.size() > 1) {
    Route r;
    topo.route(first[0], first[1], r);
    for (LinkId id : r.links) {
      const LinkClass c = topo.link(id).link_class;
      if (c == LinkClass::NvLink || c == LinkClass::NvSwitch) m.nvlink_intra = true;
    }
  }
  if (m.nodes > 1) {
    // Each local rank reaches its peer in the next node through a NIC; GPUs that share a NIC share its bandwidth.
    std::map<LinkId, double> nic_links;
    double latency_s = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
      Route r;
      topo.route(first[i], second[i], r);
      for (LinkId id : r.links) {
        const LinkParams& link = topo.link(id);
        if (!is_network(link.link_class)) continue;
        nic_links[id] = link.effective_Bps() / 1e9;
        m.gpudirect_network = link.link_class != LinkClass::Tcp;
        latency_s = std::max(latency_s, link.latency_s);
        break;
      }
    }
    for (auto [id, GBps] : nic_links) m.inter_GBps += GBps;
    // The table's LL latency of one network step is InfiniBand's (hwLat NET Ring LL); a transport whose step latency
    // is above it (sockets, EFA, TCPX) adds the difference, as NCCL adds a net plugin's reported latency.
    m.transport_latency_us = std::max(0.0, latency_s * 1e6 - table_of(topo).hw_latency_us[kNetHw][kRing][0]);
  }
  m.intra_GBps = first.size() > 1 ? intra : m.inter_GBps;
  m.nvlink_GBps = m.nvlink_intra ? m.intra_GBps : 0;
  return m;
}

namespace {

// What one collective's estimates share: the constants table and the machine of its communicator, found once.
struct Context {
  const Table& table;
  const CommLibrary& library;
  Machine machine;
};

Context context_of(const CollectiveSpec& spec, const Topology& topo) {
  Context c{table_of(topo), topo.library(), machine_of(topo, spec.ranks)};
  if (spec.nccl_channels > 0) c.machine.channels = spec.nccl_channels;
  return c;
}

std::vector<Estimate> candidates_in(const Context& c, const CollectiveSpec& spec) {
  std::vector<Estimate> out;
  for (int a = 0; a < kNcclAlgos; ++a)
    for (int p = 0; p < kProtos; ++p) {
      const Evaluation e = evaluate(a, p, spec.op, c.machine, c.library, c.table);
      if (!e.applicable) continue;
      Estimate est = make_estimate(a, p, c.machine.channels, e.latency_us, e.algbw_GBps, spec.bytes);
      est.seconds = nccl_time_us(a, p, e, spec.bytes, c.machine, c.library, c.table, spec.op) * 1e-6;
      est.bandwidth_s = est.seconds - est.latency_s;  // NCCL's own estimate: its size corrections, no fill
      out.push_back(est);
    }
  return out;
}

Estimate choose_in(const Context& c, const CollectiveSpec& spec, const Topology& topo, const std::string& field,
                   bool schedulable_only) {
  const std::vector<Estimate> all = candidates_in(c, spec);
  const Estimate* best = nullptr;
  for (const Estimate& e : all) {
    if (spec.algorithm != Algorithm::Auto && e.algorithm != spec.algorithm) continue;
    if (schedulable_only && e.algorithm != Algorithm::Ring && e.algorithm != Algorithm::Tree) continue;
    if (spec.protocol != Protocol::Auto && e.protocol != spec.protocol) continue;
    if (best == nullptr || e.seconds < best->seconds) best = &e;  // ties keep NCCL's order
  }
  if (best == nullptr)
    throw InputError(field, "algo",
                     "NCCL has no " + std::string(to_string(spec.algorithm)) + "/" +
                         std::string(to_string(spec.protocol)) + " " + std::string(to_string(spec.op)) + " on " +
                         topo.name() + " (" + std::to_string(topo.ranks()) + " ranks, " + std::to_string(topo.nodes()) +
                         " nodes)");
  return *best;
}

Estimate predict_in(const Context& c, const CollectiveSpec& spec, Algorithm algorithm, Protocol protocol,
                    ModelScale scale) {
  const int a = nccl_index(algorithm), p = proto_index(protocol);
  COMMSIM_CHECK(a >= 0 && protocol != Protocol::Auto, "predict_with needs an NCCL algorithm and a protocol");
  const Evaluation e = evaluate(a, p, spec.op, c.machine, c.library, c.table);
  if (!e.applicable) return make_estimate(a, p, 0, 0, 0, spec.bytes);
  // Fewer channels for small messages do not lower the bandwidth term: those sizes are latency-bound, and the
  // published curves keep NCCL's all-channel bandwidth as their slope (e.g. 8x A100 LL: 256 KiB -> 1 MiB at ~28 GB/s
  // algbw, with 8 and 16 channels), as NCCL's own estimate does (ncclTopoGetAlgoTime before channels are chosen).
  return make_estimate(a, p, launched_channels(a, p, spec.bytes, c.machine, c.table, c.library.gpu_arch),
                       e.latency_us * scale.latency_scale, e.algbw_GBps * scale.bandwidth_scale, spec.bytes,
                       nvls_fill_bytes(a, spec.op, spec.bytes, c.machine, c.table, c.library.gpu_arch));
}

// NCCL's choice for the spec, priced with its fitted scales.
Estimate predict_chosen(const Context& c, const CollectiveSpec& spec, const Topology& topo, const std::string& field) {
  const Estimate chosen = choose_in(c, spec, topo, field, false);
  const Fit fit = fitted_scale(c.library, c.table, spec.op, chosen.algorithm, chosen.protocol);
  Estimate e = predict_in(c, spec, chosen.algorithm, chosen.protocol, fit.scale);
  e.band_rel = fit.band_rel;
  return e;
}

void require_nccl(const Topology& topo) {
  if (topo.library().kind != LibraryKind::Nccl)
    throw InputError(topo.source_file(), "library", "NCCL's algorithms need a topology whose library is nccl");
}

}  // namespace

std::vector<Estimate> candidates(const CollectiveSpec& spec, const Topology& topo) {
  if (topo.library().kind != LibraryKind::Nccl) return {};
  return candidates_in(context_of(spec, topo), spec);
}

Estimate choose(const CollectiveSpec& spec, const Topology& topo, const std::string& field, bool schedulable_only) {
  require_nccl(topo);
  return choose_in(context_of(spec, topo), spec, topo, field, schedulable_only);
}

Estimate predict_with(const CollectiveSpec& spec, const Topology& topo, Algorithm algorithm, Protocol protocol,
                      ModelScale scale) {
  require_nccl(topo);
  return predict_in(context_of(spec, topo), spec, algorithm, protocol, scale);
}

Estimate predict(const CollectiveSpec& spec, const Topology& topo, const std::string& field) {
  require_nccl(topo);
  return predict_chosen(context_of(spec, topo), spec, topo, field);
}

std::vector<TunerRule> tuner_rules(Collective op, const Topology& topo, double min_gain) {
  std::vector<TunerRule> rules;
  if (topo.library().kind != LibraryKind::Nccl) return rules;
  CollectiveSpec spec;
  spec.op = op;
  spec.algorithm = Algorithm::Auto;
  const Context c = context_of(spec, topo);  // the machine does not depend on the size
  for (Bytes size = 1024, low = 0; size <= (Bytes{4} << 30); low = size + 1, size *= 2) {
    spec.bytes = size;
    const Estimate nccl_choice = predict_chosen(c, spec, topo, "collective");
    std::optional<Estimate> best;
    for (const Estimate& candidate : candidates_in(c, spec)) {
      const Fit fit = fitted_scale(c.library, c.table, op, candidate.algorithm, candidate.protocol);
      if (!fit.measured) continue;  // only where a measurement says how fast it runs
      const Estimate e = predict_in(c, spec, candidate.algorithm, candidate.protocol, fit.scale);
      if (!best || e.seconds < best->seconds) best = e;
    }
    if (!best || nccl_choice.seconds <= best->seconds * (1 + min_gain)) continue;
    const double gain = nccl_choice.seconds / best->seconds - 1;
    const Bytes max_bytes = size == (Bytes{4} << 30) ? 4294967295u : size;
    if (!rules.empty() && rules.back().max_bytes + 1 == low && rules.back().algorithm == best->algorithm &&
        rules.back().protocol == best->protocol) {
      rules.back().max_bytes = max_bytes;
      rules.back().gain = std::max(rules.back().gain, gain);
    } else {
      rules.push_back({op, low, max_bytes, best->algorithm, best->protocol, gain});
    }
  }
  return rules;
}

std::string tuner_line(const TunerRule& r, const Topology& topo) {
  // nccl_tuner.conf: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks
  return std::string(to_string(r.op)) + "," + std::to_string(r.min_bytes) + "," + std::to_string(r.max_bytes) + "," +
         std::string(kAlgoKeys[nccl_index(r.algorithm)]) + "," + std::string(to_string(r.protocol)) + ",-1," +
         std::to_string(topo.nodes()) + "," + std::to_string(topo.ranks());
}

}  // namespace commsim::nccl
