// NCCL's tuning model on a commsim topology (see nccl_model.hpp for the formulas). Constants come from the table
// compiled in from libraries/nccl.json; the per-channel graph bandwidths NCCL's topology search would find are
// replaced by the topology's own link bandwidths (the same links the flow fidelity shares).
#include "sim/collective/nccl_model.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "sim/collective/nccl_tuning.hpp"
#include "sim/collective/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/text.hpp"

namespace commsim::nccl {

using namespace detail;

namespace {

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
// The fitted scales of (op, algorithm, protocol) for an operation issued with `gpus_per_thread` GPUs per thread.
// Logs of one thread driving G > 1 GPUs (nccl-tests -g G) time each operation with G kernel issues in it: the
// issues overlap the collective's own latency, so the latency scale fitted there describes that regime and is
// confounded with the host for any other (its sizes cannot tell GPU latency from issue overhead). Another regime
// keeps NCCL's latency (scale 1) and the fitted bandwidth scale, which large sizes, far above the issue time, fix.
Fit fitted_scale(const CommLibrary& lib, const Table& t, Collective op, Algorithm algorithm, Protocol protocol,
                 int gpus_per_thread) {
  const std::string key = scale_key(op, algorithm, protocol);
  Fit fit;
  int fitted_regime = 0;
  if (auto it = lib.fitted.find(key); it != lib.fitted.end()) {
    fit = {it->second, lib.fitted_band_rel, true};
    fitted_regime = lib.fitted_gpus_per_thread;
  } else if (const int arch = arch_index(lib.gpu_arch); t.fitted[arch].count(key) > 0) {
    fit = {t.fitted[arch].at(key), t.fitted_band_rel[arch], true};
    fitted_regime = t.fitted_gpus_per_thread[arch];
  }
  // 0: a training step's collective, issued by its own process (one GPU per thread).
  if (fitted_regime > 0 && fitted_regime != std::max(gpus_per_thread, 1)) fit.scale.latency_scale = 1;
  return fit;
}

double launch_us_of(const CommLibrary& library, const Table& table) {
  return library.fitted_launch_us_per_gpu > 0 ? library.fitted_launch_us_per_gpu : table.launch_us_per_gpu;
}

Estimate make_estimate(int a, int p, int channels, double latency_us, double algbw_GBps, Bytes bytes,
                       NvlsChunking chunking = {}, double chunk_round_us = 0) {
  Estimate e;
  e.algorithm = kAlgorithms[a];
  e.protocol = static_cast<Protocol>(p);
  e.channels = channels;
  e.latency_s = latency_us * 1e-6;
  e.algbw_Bps = algbw_GBps * 1e9;
  e.bandwidth_s = (static_cast<double>(bytes) + chunking.fill_bytes) / e.algbw_Bps;
  e.chunk_rounds = chunking.rounds;
  e.chunk_rounds_s = chunking.rounds * chunk_round_us * 1e-6;
  e.seconds = e.latency_s + e.bandwidth_s + e.chunk_rounds_s;
  return e;
}

}  // namespace

std::string scale_key(Collective op, Algorithm algorithm, Protocol protocol) {
  const int a = nccl_index(algorithm);
  COMMSIM_CHECK(a >= 0 && protocol != Protocol::Auto, "scale_key needs an NCCL algorithm and a protocol");
  return std::string(to_string(op)) + "/" + std::string(kAlgoKeys[a]) + "/" + std::string(to_string(protocol));
}

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
    m.nic_path_GBps = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < first.size(); ++i) {
      Route r;
      topo.route(first[i], second[i], r);
      double path_GBps = std::numeric_limits<double>::infinity();
      for (LinkId id : r.links) {
        const LinkParams& link = topo.link(id);
        path_GBps = std::min(path_GBps, link.effective_Bps() / 1e9);
        if (!is_network(link.link_class)) continue;
        m.nic_path_GBps = std::min(m.nic_path_GBps, path_GBps);
        nic_links[id] = link.effective_Bps() / 1e9;
        m.gpudirect_network = link.link_class != LinkClass::Tcp;
        m.nic_path = std::max(m.nic_path, topo.nic_path(first[i] % topo.ranks_per_node()));
        latency_s = std::max(latency_s, link.latency_s);
        break;
      }
    }
    for (auto [id, GBps] : nic_links) m.inter_GBps += GBps;
    m.same_channels = nic_links.size() <= 1;
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

// A communicator of one rank: NCCL prices ring/Simple alone, at 0 (src/enqueue.cc updateCollCostTable, `nRanks == 1`,
// v2.28.9-1:1791), and whatever NCCL_ALGO / NCCL_PROTO force, runs at most a local copy, no channel
// (ncclLaunchOneRank, src/device/onerank.cu): every time 0.
bool one_rank(const Context& c) { return c.machine.ranks == 1; }
Estimate one_rank_copy(Algorithm algorithm = Algorithm::Ring, Protocol protocol = Protocol::Simple) {
  Estimate e;
  e.algorithm = algorithm;
  e.protocol = protocol;
  return e;
}

std::vector<Estimate> candidates_in(const Context& c, const CollectiveSpec& spec) {
  if (one_rank(c)) return {one_rank_copy()};
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

bool enabled(unsigned mask, int index) { return mask == 0 || ((mask >> index) & 1u) != 0; }

Estimate choose_in(const Context& c, const CollectiveSpec& spec, const Topology& topo, const std::string& field,
                   bool schedulable_only) {
  if (one_rank(c))
    return one_rank_copy(
        spec.algorithm != Algorithm::Auto && nccl_index(spec.algorithm) >= 0 ? spec.algorithm : Algorithm::Ring,
        spec.protocol != Protocol::Auto ? spec.protocol : Protocol::Simple);
  const std::vector<Estimate> all = candidates_in(c, spec);
  const Estimate* best = nullptr;
  for (const Estimate& e : all) {
    if (spec.algorithm != Algorithm::Auto && e.algorithm != spec.algorithm) continue;
    if (schedulable_only && !algorithm_entry(e.algorithm).has_schedule()) continue;
    if (spec.protocol != Protocol::Auto && e.protocol != spec.protocol) continue;
    if (!enabled(spec.nccl_algorithms, nccl_index(e.algorithm)) ||
        !enabled(spec.nccl_protocols, proto_index(e.protocol)))
      continue;
    if (best == nullptr || e.seconds < best->seconds) best = &e;  // ties keep NCCL's order
  }
  if (best == nullptr) {
    const std::string algorithms = spec.nccl_algorithms != 0 ? "the algorithms of the --algo list"
                                   : spec.algorithm == Algorithm::Auto
                                       ? "any algorithm"
                                       : "algorithm " + std::string(to_string(spec.algorithm));
    const std::string protocols = spec.nccl_protocols != 0 ? "the protocols of the --proto list"
                                  : spec.protocol == Protocol::Auto
                                      ? "any protocol"
                                      : "protocol " + std::string(to_string(spec.protocol));
    throw InputError(field, "algo",
                     "NCCL runs no " + std::string(to_string(spec.op)) + " on " + topo.name() + " (" +
                         std::to_string(topo.ranks()) + " ranks, " + std::to_string(topo.nodes()) + " nodes) with " +
                         algorithms + " and " + protocols +
                         (schedulable_only ? " among the algorithms the flow fidelity schedules (ring, tree)" : ""));
  }
  return *best;
}

Estimate predict_in(const Context& c, const CollectiveSpec& spec, Algorithm algorithm, Protocol protocol,
                    ModelScale scale) {
  const int a = nccl_index(algorithm), p = proto_index(protocol);
  COMMSIM_CHECK(a >= 0 && protocol != Protocol::Auto, "predict_with needs an NCCL algorithm and a protocol");
  if (one_rank(c)) return one_rank_copy(algorithm, protocol);
  const Evaluation e = evaluate(a, p, spec.op, c.machine, c.library, c.table);
  if (!e.applicable) return make_estimate(a, p, 0, 0, 0, spec.bytes);
  // Fewer channels for small messages do not lower the bandwidth term: those sizes are latency-bound, and the
  // published curves keep NCCL's all-channel bandwidth as their slope (e.g. 8x A100 LL: 256 KiB -> 1 MiB at ~28 GB/s
  // algbw, with 8 and 16 channels), as NCCL's own estimate does (ncclTopoGetAlgoTime before channels are chosen).
  const double ceiling_GBps = link_ceiling_algbw_GBps(a, spec.op, c.machine);
  const SizeFactors f = size_factors(a, p, spec.bytes, c.machine, c.library, c.table, spec.op);
  Estimate est = make_estimate(a, p, launched_channels(a, p, spec.op, spec.bytes, c.machine, c.table, c.library),
                               e.latency_us * f.latency * scale.latency_scale,
                               std::min(e.algbw_GBps * f.bandwidth * scale.bandwidth_scale, ceiling_GBps), spec.bytes,
                               nvls_chunking(a, spec.op, spec.bytes, c.machine, c.table, c.library.gpu_arch),
                               scale.chunk_round_us);
  est.ceiling_algbw_Bps = ceiling_GBps * 1e9;
  est.host_floor_s = spec.gpus_per_thread * launch_us_of(c.library, c.table) * 1e-6;
  est.seconds = std::max(est.seconds, est.host_floor_s);
  return est;
}

// NCCL's choice for the spec, priced with its fitted scales.
Estimate predict_chosen(const Context& c, const CollectiveSpec& spec, const Topology& topo, const std::string& field) {
  const Estimate chosen = choose_in(c, spec, topo, field, false);
  const Fit fit = fitted_scale(c.library, c.table, spec.op, chosen.algorithm, chosen.protocol, spec.gpus_per_thread);
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

namespace {

bool same_name(std::string_view a, std::string_view b) { return lowercase(a) == lowercase(b); }

// NCCL's spelling of its algorithms, in NcclAlgo order (ncclAlgoStr: src/init.cc:43 at v2.26.2-1), the names
// NCCL_ALGO takes.
constexpr std::array<std::string_view, kNcclAlgos> kNcclAlgoNames = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};

int element_index(std::string_view name, bool protocols) {
  if (protocols) {
    for (int p = 0; p < kProtos; ++p)
      if (same_name(name, kNcclProtocolNames[p])) return p;
    return -1;
  }
  for (int a = 0; a < kNcclAlgos; ++a)
    if (same_name(name, kNcclAlgoNames[a]) || same_name(name, algorithm_entry(kAlgorithms[a]).name)) return a;
  return -1;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t end = text.find(separator, at);
    parts.push_back(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) return parts;
    at = end + 1;
  }
}

}  // namespace

std::string_view nccl_algorithm_name(Algorithm algorithm) {
  const int a = nccl_index(algorithm);
  COMMSIM_CHECK(a >= 0, "nccl_algorithm_name needs one of NCCL's algorithms");
  return kNcclAlgoNames[static_cast<std::size_t>(a)];
}

bool is_nccl_list(std::string_view text) { return text.find_first_of(",;:^") != std::string_view::npos; }

unsigned parse_nccl_list(std::string_view text, Collective op, bool protocols, const std::string& file,
                         const std::string& field) {
  const int elements = protocols ? kProtos : kNcclAlgos;
  const unsigned all = (1u << elements) - 1;
  const std::string quoted = "\"" + std::string(text) + "\"";
  unsigned mask = all;
  const std::vector<std::string_view> entries = split(text, ';');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::vector<std::string_view> parts = split(entries[i], ':');
    if (parts.size() > 2) throw InputError(file, field, "more than one ':' in an entry of " + quoted);
    if (parts.size() == 1 && i > 0)
      throw InputError(file, field, "every entry but the first must name its collective (as NCCL requires): " + quoted);
    std::string_view list = parts.back();
    bool applies = parts.size() == 1;
    if (parts.size() == 2) {
      if (std::none_of(kNcclCollectiveNames.begin(), kNcclCollectiveNames.end(),
                       [&](std::string_view name) { return same_name(parts[0], name); }))
        throw InputError(file, field, "unknown collective \"" + std::string(parts[0]) + "\" in " + quoted);
      applies = same_name(parts[0], to_string(op));
    }
    const bool exclude = !list.empty() && list.front() == '^';
    if (exclude) list.remove_prefix(1);
    unsigned entry_mask = exclude ? all : 0;
    for (std::string_view name : split(list, ',')) {
      const int index = element_index(name, protocols);
      if (index < 0)
        throw InputError(file, field,
                         "unknown " + std::string(protocols ? "protocol" : "algorithm") + " \"" + std::string(name) +
                             "\" in " + quoted);
      entry_mask = exclude ? entry_mask & ~(1u << index) : entry_mask | (1u << index);
    }
    if (applies) mask = entry_mask;
  }
  return mask;
}

unsigned enabled_by_list(std::string_view text, Collective op, bool protocols, const std::string& file,
                         const std::string& field) {
  const unsigned mask = parse_nccl_list(text, op, protocols, file, field);
  if (mask == 0)
    throw InputError(file, field, "\"" + std::string(text) + "\" enables nothing for " + std::string(to_string(op)));
  return mask;
}

TuningTable tuning_table(const Topology& topo, const std::string& algorithms, const std::string& protocols,
                         int channels) {
  require_nccl(topo);
  CollectiveSpec spec;
  spec.nccl_channels = channels;
  const Context c = context_of(spec, topo);
  const int algos = c.table.pat ? kNcclAlgos : kPat;  // PAT joined NCCL's algorithms in 2.23
  TuningTable table;
  table.channels = c.machine.channels;
  for (int a = 0; a < algos; ++a) table.algorithms.emplace_back(kNcclAlgoNames[a]);
  for (std::size_t f = 0; f < kNcclCollectives.size(); ++f) {
    const Collective op = kNcclCollectives[f];
    const std::string_view name = kNcclCollectiveNames[f];
    const unsigned algo_mask = algorithms.empty() ? 0 : enabled_by_list(algorithms, op, false, "--algo");
    const unsigned proto_mask = protocols.empty() ? 0 : enabled_by_list(protocols, op, true, "--proto");
    TuningRow row{std::string(name), {}};
    for (int a = 0; a < algos; ++a)
      for (int p = 0; p < kProtos; ++p) {
        TuningCell cell;
        if (modeled(a, p, op, c.machine, c.library, c.table))
          cell.latency_us = latency_us(a, p, op, c.machine, c.library, c.table);
        const Evaluation e = evaluate(a, p, op, c.machine, c.library, c.table);
        if (e.applicable && enabled(algo_mask, a) && enabled(proto_mask, p))  // mask 0: no list
          cell.algbw_GBps = e.algbw_GBps;
        row.cells.push_back(cell);
      }
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string format_tuning_table(const TuningTable& table) {
  const int algos = static_cast<int>(table.algorithms.size());
  std::string out;
  char text[64];
  for (int block = 0; block * 3 < algos; ++block) {
    std::string algorithm_line = "  Algorithm   |", protocol_line = "  Protocol    |";
    for (int a = block * 3; a < block * 3 + 3; ++a) {
      if (a < algos) {
        std::snprintf(text, sizeof text, " %14s   %14s   %14s |", "", table.algorithms[a].c_str(), "");
        algorithm_line += text;
      }
      for (std::string_view protocol : kNcclProtocolNames) {  // NCCL prints three algorithms' protocols in every block
        std::snprintf(text, sizeof text, " %14s |", std::string(protocol).c_str());
        protocol_line += text;
      }
    }
    out += algorithm_line + "\n" + protocol_line + "\n";
    for (const TuningRow& row : table.rows) {
      std::snprintf(text, sizeof text, "%13s |", row.collective.c_str());
      std::string line = text;
      for (int a = block * 3; a < std::min(algos, block * 3 + 3); ++a)
        for (int p = 0; p < kProtos; ++p) {
          const TuningCell& cell = row.cells[static_cast<std::size_t>(a * kProtos + p)];
          std::snprintf(text, sizeof text, "%8.1f/%6.1f |", cell.latency_us, cell.algbw_GBps);
          line += text;
        }
      out += line + "\n";
    }
  }
  return out;
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

double launch_us_per_gpu(const Topology& topology) {
  if (topology.library().kind != LibraryKind::Nccl) return 0;
  return launch_us_of(topology.library(), table_of(topology));
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
      const Fit fit =
          fitted_scale(c.library, c.table, op, candidate.algorithm, candidate.protocol, spec.gpus_per_thread);
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
