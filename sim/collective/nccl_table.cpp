// Reads the NCCL constants tables from the JSON compiled in from libraries/nccl.json.
#include "sim/collective/nccl_table.hpp"

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

namespace detail {
namespace {

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
    out[key] = {v.at("latency_scale").get<double>(), v.at("bandwidth_scale").get<double>(),
                v.value("chunk_round_us", 0.0)};
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

// "major.minor[.patch]" (each 1 to 4 digits, nothing else) as a comparable number, major x 10^8 + minor x 10^4 +
// patch; a version without its patch is `unpatched` (0 for a table, which applies from the line's first release;
// 9999 for a version asked, which means the line's newest release). -1 when the text is not such a version ("2.26.x",
// "2.26 ", "2.26.2.1" are not).
long long version_number(std::string_view v, long unpatched) {
  long major = 0, minor = 0, patch = 0;
  std::size_t i = 0;
  auto digits = [&](long& out) {
    const std::size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9' && i - start < 4) out = out * 10 + (v[i++] - '0');
    return i > start;
  };
  if (!digits(major) || i >= v.size() || v[i++] != '.' || !digits(minor)) return -1;
  const bool patched = i < v.size();
  if (patched && (v[i++] != '.' || !digits(patch))) return -1;
  return i == v.size() ? major * 100000000LL + minor * 10000LL + (patched ? patch : unpatched) : -1;
}

// The table is part of the program (compiled in), so a malformed table is an internal fault, not bad input.
// tuning.cc's latencies, caps, corrections, factors and thresholds.
void read_core(const nlohmann::json& c, Table& t) {
  const auto number = [&c](const char* object, const char* field) { return c.at(object).at(field).get<double>(); };
  t.base_latency_us = read_per_algo(c.at("base_latency_us"));
  t.hw_latency_us = {read_per_algo(c.at("hw_latency_us").at("nvlink")), read_per_algo(c.at("hw_latency_us").at("pci")),
                     read_per_algo(c.at("hw_latency_us").at("net"))};
  t.ll_max_bw_single_node = read_per_arch(c.at("ll_max_bw_GBps").at("single_node"));
  t.ll_max_bw_multi_node = {read_array<3>(c.at("ll_max_bw_GBps").at("multi_node_intel")),
                            read_array<3>(c.at("ll_max_bw_GBps").at("multi_node_amd"))};
  t.ring_ll128_per_channel_GBps = read_per_arch(c.at("per_channel_max_ring_ll128_GBps"));
  t.tree_ll128_per_channel_GBps = read_per_arch(c.at("per_channel_max_tree_ll128_GBps"));
  t.tree_per_channel_GBps = read_per_arch(c.at("per_channel_max_tree_GBps"));
  const nlohmann::json& corr = c.at("tree_correction");
  t.tree_correction = {corr.at("ll").get<std::vector<double>>(), corr.at("ll128").get<std::vector<double>>(),
                       corr.at("simple").get<std::vector<double>>()};
  for (const std::vector<double>& sizes : t.tree_correction)
    COMMSIM_CHECK(sizes.size() >= kTreeCorrectionSizes, "libraries/nccl.json: tree_correction has too few sizes");
  const nlohmann::json& nvls_tree_correction = c.at("nvls_tree_size_correction");
  COMMSIM_CHECK(nvls_tree_correction.is_null() || nvls_tree_correction == "blackwell_x86",
                "libraries/nccl.json: nvls_tree_size_correction is neither null nor blackwell_x86");
  t.nvls_tree_size_correction = !nvls_tree_correction.is_null();
  t.max_threads = read_per_proto(c.at("max_threads"));
  t.thread_threshold = read_per_proto(c.at("thread_threshold"));
  t.slow_ring_at_most_GBps = number("slow_ring_simple_threads", "ring_at_most_GBps");
  t.slow_ring_simple_threads = number("slow_ring_simple_threads", "threads");
  t.ring_channels_at_least_nvls = c.at("channels").at("rings_copied_up_to_nvls").get<bool>();
  t.multi_node_nvls_at_most_ring = c.at("channels").at("multi_node_nvls_at_most_rings").get<bool>();
  t.collnet_max_threads = number("collnet_threads", "max_threads");
  t.collnet_thread_threshold = number("collnet_threads", "thread_threshold");
  if (const nlohmann::json& split = c.at("channel_split"); !split.is_null()) {
    t.channel_split.min_traffic_per_channel = split.at("min_traffic_per_channel_bytes").get<Bytes>();
    t.channel_split.ll_traffic_factor = split.at("ll_traffic_factor").get<Bytes>();
    const std::string share = split.at("traffic_per_channel").get<std::string>();
    using Share = ChannelSplit::Share;
    const std::map<std::string, Share> shares = {{"at least the minimum", Share::AtLeastTheMinimum},
                                                 {"rounded up to 16 bytes", Share::RoundedUpTo16},
                                                 {"at least the minimum, in 16-byte cells", Share::FirstForm}};
    const auto rule = shares.find(share);
    COMMSIM_CHECK(rule != shares.end(), "libraries/nccl.json: channel_split.traffic_per_channel is no known rule");
    t.channel_split.share = rule->second;
  }
  t.net_overhead_intel_us = number("net_overhead_us", "intel");
  t.net_overhead_amd_us = number("net_overhead_us", "amd");
  t.ring_plateau_pre_ampere = number("ring_simple_plateau", "pre_ampere");
  t.ring_plateau = number("ring_simple_plateau", "ampere_and_later");
  t.ring_ll_factor_allreduce_or_multi_node = number("ring_ll_factor", "allreduce_reduce_or_multi_node");
  t.ring_ll_factor_other = number("ring_ll_factor", "other");
  t.ring_ll128_factor_one_gpu_per_node = c.at("ring_ll128_factor_one_gpu_per_node").get<double>();
  t.ring_inter_steps_exclude_one_node =
      c.at("ring_allreduce_inter_steps_per_node").get<std::string>() == "2 (nodes - 1)";
  t.one_gpu_per_node_inter_latency_from_tree = c.at("one_gpu_per_node_inter_latency_from_tree").get<bool>();
  t.collnet_arity_us = c.at("collnet_arity_us").get<double>();
}

// How the version prices NVLS and NVLS-tree, its channels and chunks.
void read_nvls(const nlohmann::json& c, Table& t) {
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
  t.nvls_gather_scatter_share = nvls.at("gather_scatter_share").get<bool>();
  t.nvls_min_gpus_per_node = nvls.at("min_gpus_per_node").get<int>();
  t.nvls_latency_without_nvls = nvls.at("latency_without_nvls").get<bool>();
  for (int a = 0; a < kArchs; ++a)
    t.nvls_efficiency[a] = nvls.at("efficiency").at(std::string(to_string(static_cast<GpuArch>(a)))).get<double>();
  t.nvls_channels = read_per_arch(nvls.at("channels"));
  t.nvls_chunk_bytes = nvls.at("chunk_bytes").get<Bytes>();
  t.nvls_tree_chunk_below_4_nodes = nvls.at("tree_chunk_bytes").at("below_4_nodes").get<Bytes>();
  t.nvls_tree_chunk_from_4_nodes = nvls.at("tree_chunk_bytes").at("from_4_nodes").get<Bytes>();
  t.nvls_blackwell_multi_node_tuning = nvls.at("blackwell_multi_node_tuning").get<bool>();
}

// PAT (2.23 and later; null before).
void read_pat(const nlohmann::json& c, Table& t) {
  if (const nlohmann::json& pat = c.at("pat"); !pat.is_null()) {
    t.pat = true;
    t.pat_bandwidth_factor = pat.at("bandwidth_factor").get<double>();
    t.pat_base_latency_us = pat.at("base_latency_us").get<double>();
    t.pat_inter_latency_divisor = pat.at("inter_latency_divisor").get<double>();
    t.pat_latency_per_rank_us = pat.at("latency_per_rank_us").get<double>();
  }
}

// The algorithms NCCL's tuning loop considers for reduce-scatter and allgather (tuning.cc: ring; NVLS from 2.19;
// CollNet direct from 2.20; PAT from 2.23).
std::array<bool, kNcclAlgos> read_gather_scatter(const nlohmann::json& names) {
  std::array<bool, kNcclAlgos> out{};
  for (const auto& name : names) {
    const auto* key = std::find(kAlgoKeys.begin(), kAlgoKeys.end(), name.get<std::string>());
    COMMSIM_CHECK(key != kAlgoKeys.end(), "libraries/nccl.json: gather_scatter_algorithms names no NCCL algorithm");
    out[static_cast<std::size_t>(key - kAlgoKeys.begin())] = true;
  }
  return out;
}

std::vector<Table> load_tables() {
  const nlohmann::json doc = nlohmann::json::parse(embedded_table_json());
  std::vector<Table> tables;
  nlohmann::json c;  // the constants of the entry read last: the first lists them all, each later one its changes
  for (const auto& v : doc.at("versions")) {
    if (c.is_null())
      c = v.at("constants");
    else
      c.merge_patch(v.at("changes"));
    Table t;
    t.version = v.at("version").get<std::string>();
    t.number = version_number(t.version, 0);
    read_core(c, t);
    read_nvls(c, t);
    read_pat(c, t);
    t.ll128_enabled = ll128_generations(c.at("ll128_compute_capabilities").get<std::string>());
    const std::string nic_paths = c.at("ll128_nic_paths").get<std::string>();
    COMMSIM_CHECK(nic_paths == "PIX, PXB; PXN from 90" || nic_paths == "PIX, PXB; PXN, P2C from 90",
                  "libraries/nccl.json: ll128_nic_paths is neither rule");
    t.ll128_over_c2c = nic_paths == "PIX, PXB; PXN, P2C from 90";
    t.gather_scatter = read_gather_scatter(c.at("gather_scatter_algorithms"));
    COMMSIM_CHECK(t.gather_scatter[kPat] == t.pat, "libraries/nccl.json: PAT's constants and its allgather differ");
    for (int a = 0; a < kArchs; ++a) {
      const std::string arch(to_string(static_cast<GpuArch>(a)));
      if (!doc.at("fitted").contains(arch)) continue;
      t.fitted[a] = read_scales(doc.at("fitted").at(arch).at("scales"));
      t.fitted_band_rel[a] = doc.at("fitted").at(arch).at("band_rel").get<double>();
      t.fitted_gpus_per_thread[a] = doc.at("fitted").at(arch).value("gpus_per_thread", 0);
    }
    if (doc.at("fitted").contains("host"))
      t.launch_us_per_gpu = doc.at("fitted").at("host").at("launch_us_per_gpu").get<double>();
    tables.push_back(std::move(t));
  }
  return tables;
}

}  // namespace

const std::vector<Table>& tables() {
  static const std::vector<Table> all = load_tables();
  return all;
}

// A version uses the newest table not newer than it ("2.24.9" -> "2.24", "2.28.8" -> "2.28.7", "2.28" -> the
// newest 2.28 table); none before the oldest table.
const Table* find_table(std::string_view version) {
  const long long wanted = version_number(version, 9999);
  const Table* best = nullptr;
  for (const Table& t : tables())
    if (wanted >= 0 && t.number <= wanted) best = &t;
  return best;
}

const Table& table_of(const Topology& topo) {
  const Table* t = find_table(topo.library().version);
  if (t == nullptr)
    throw InputError(topo.source_file(), "library.version",
                     "\"" + topo.library().version +
                         "\" is not an NCCL version with constants (2.18.3 or later, as major.minor[.patch])");
  return *t;
}

}  // namespace detail

std::vector<std::string> table_versions() {
  std::vector<std::string> out;
  for (const detail::Table& t : detail::tables()) out.push_back(t.version);
  return out;
}
bool known_version(std::string_view version) { return detail::find_table(version) != nullptr; }

std::string table_for(std::string_view version) {
  const detail::Table* t = detail::find_table(version);
  return t != nullptr ? t->version : "";
}

std::string release_problem(const std::string& version) {
  if (known_version(version)) return "";
  std::string tables;
  for (const std::string& v : table_versions()) tables += (tables.empty() ? "" : ", ") + v;
  return "\"" + version + "\" is not an NCCL version with constants (major.minor[.patch], at least the oldest table; " +
         "tables: " + tables + ")";
}

void use_release(Topology& topology, const std::string& version, const std::string& file, const std::string& field) {
  if (topology.library().kind != LibraryKind::Nccl)
    throw InputError(file, field, topology.source_file() + " names no NCCL library");
  if (const std::string problem = release_problem(version); !problem.empty()) throw InputError(file, field, problem);
  CommLibrary library = topology.library();
  library.version = version;
  topology.set_library(std::move(library));
}

}  // namespace commsim::nccl
