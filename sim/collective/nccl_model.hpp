// NCCL's collective model: its algorithms (ring, tree, NVLS, NVLS-tree, CollNet direct/chain, PAT), protocols (LL,
// LL128, Simple) and channels, with the constants of NCCL's own tuning model (src/graph/tuning.cc) read from the
// versioned table libraries/nccl.json, and the machine's bandwidths taken from the topology's links.
//
// For one collective of n bytes, algorithm a and protocol p (NCCL's ncclTopoTuneModel / ncclTopoGetAlgoTime):
//   time(a, p) = latency(a, p) * plateau + n / (algbw(a, p) * correction(n))
//   latency    = base[a][p] + (intra steps) * hwLat[intra link][a][p] + (inter steps) * (hwLat[net][a][p] + transport)
//   algbw      = busBw(a, p) * ratio(a),  busBw = graph bandwidth capped per protocol and channel
//   plateau    = 1.4 (1.9 before Ampere) for a ring Simple allreduce across nodes of at least 64 bytes a channel
//                and rank, correction = tree's factor by log2(n / 64) (from 2.29 NVLS-tree's too on Blackwell, x86)
// NCCL picks the (a, p) of least estimated time; that is `choose`. What the collective then takes (`predict`) is
// that formula, size factors included (NCCL's own measured corrections), with the fitted per-(collective, a, p)
// scales of the GPU generation (libraries/nccl.json "fitted", or the topology's own from calibration); it reports the
// channels NCCL launches for the size (fewer for small messages), which leave the bandwidth term as it is (small sizes
// are latency-bound: published curves keep the all-channel slope there). The prediction's bandwidth term also carries
// what NCCL's estimate leaves out: NVLS and NVLS-tree drain their last chunk through the kernel's stages, n + fill
// bytes (nccl_tuning.hpp, nvls_chunking), and where a fit found one, a cost per round of chunks of those kernels.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collective/collective.hpp"

namespace commsim::nccl {

// NCCL's names of its protocols (ncclProtoStr) and collectives (ncclFuncStr), in NCCL's order (src/init.cc at
// v2.26.2-1): the columns and the rows of its tuning table, and the names NCCL_PROTO and NCCL_ALGO's prefixes take.
inline constexpr std::array<std::string_view, 3> kNcclProtocolNames = {"LL", "LL128", "Simple"};
inline constexpr std::array<std::string_view, 5> kNcclCollectiveNames = {"Broadcast", "Reduce", "AllGather",
                                                                         "ReduceScatter", "AllReduce"};
inline constexpr std::array<Collective, 5> kNcclCollectives = {
    Collective::Broadcast, Collective::Reduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce};
// NCCL's name of one of its algorithms (ncclAlgoStr: "Ring", "NVLSTree", ...).
std::string_view nccl_algorithm_name(Algorithm algorithm);

struct Estimate {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 0;      // channels launched for this size
  double latency_s = 0;  // fixed part
  double algbw_Bps = 0;  // bytes of the user buffer per second, at `channels` channels
  // The most algbw the links allow this algorithm (each GPU's and each node's share of the vector over its links'
  // effective rates, nccl_tuning.cpp): a fitted bandwidth scale never lifts algbw_Bps above it.
  double ceiling_algbw_Bps = 0;
  // (bytes + the pipeline's fill) / algbw_Bps: NVLS on one node drains its last chunk through the stages of its
  // kernel after the user buffer's bytes have streamed (nccl_tuning.cpp, nvls_chunking); 0 fill elsewhere.
  double bandwidth_s = 0;
  // The rounds of chunks an NVLS / NVLS-tree kernel runs (nvls_chunking; 0 elsewhere) and what they cost at the
  // fitted time per round (ModelScale::chunk_round_us; 0 in NCCL's own model).
  double chunk_rounds = 0;
  double chunk_rounds_s = 0;
  // spec.gpus_per_thread x the host's issue time per GPU: back-to-back operations cannot run faster than one thread
  // issues them (0 without gpus_per_thread).
  double host_floor_s = 0;
  double seconds = 0;   // max(latency_s + bandwidth_s + chunk_rounds_s, host_floor_s)
  double band_rel = 0;  // +- relative error band of the fitted scales used (0: NCCL's own constants, no band)
};

// The machine as NCCL's topology search sees it, derived from a topology.
struct Machine {
  int ranks = 0, nodes = 0;
  bool nvlink_intra = false;       // GPUs of a node talk over NVLink (else PCI)
  double intra_GBps = 0;           // per-GPU bandwidth of the intra-node ring (slowest local hop), GB/s
  double inter_GBps = 0;           // per-node network bandwidth (sum over the node's distinct NICs), GB/s; 0 on 1 node
  double nvlink_GBps = 0;          // per-GPU NVLink/NVSwitch bandwidth (NVLS), GB/s
  bool gpudirect_network = false;  // the network is reached without the CPU (RDMA/EFA/TCPX, not sockets)
  Topology::NicPath nic_path = Topology::NicPath::Pix;  // the worst rank -> NIC path (NCCL's graph typeInter)
  double nic_path_GBps = 0;  // the slowest rank -> NIC path, the NIC's link included (NCCL's comm->minNetBw), GB/s
  double transport_latency_us = 0;  // the network transport's latency beyond InfiniBand's (EFA, TCPX, sockets)
  int channels = 0;                 // NCCL's ring/tree channel count
  // Whether NCCL's ring search keeps every channel a replay of its first (graph sameChannels, src/graph/search.cc:
  // tried first, given up when the replay cannot reach the bandwidth): assumed on one node and with one NIC per node,
  // not with several NICs per node, where each channel's ring leaves through another NIC.
  bool same_channels = true;
};
// `ranks`: the communicator (empty = every rank of the topology). A communicator with a different number of ranks
// on its nodes is not a machine NCCL's model describes: ranks = 0.
Machine machine_of(const Topology& topology, const std::vector<int>& ranks = {});

// Every (algorithm, protocol) NCCL would consider for this collective, with NCCL's own estimate of its time
// (the library's default constants, all channels), in registry order. Empty when the topology's library is not NCCL.
std::vector<Estimate> candidates(const CollectiveSpec& spec, const Topology& topology);

// A list in the syntax of NCCL_ALGO (`protocols` false) or NCCL_PROTO (true), as NCCL parses it (NVIDIA/nccl
// src/graph/tuning.cc parseList, v2.26.2-1:34-116): entries separated by ';', each a comma-separated list of names,
// which enables those and disables the rest, or with a leading '^' disables those and enables the rest; every entry
// but the first starts with a collective and ':' and applies to that collective only; later entries override earlier
// ones. Names ignore case and are NCCL's (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT; LL, LL128,
// Simple) or commsim's (collnet_direct, nvlstree, ...). Returns the set it enables for `op` (bit i: NCCL's i-th
// algorithm or protocol; 0 when it enables none); throws InputError(file, field) naming what NCCL would refuse.
unsigned parse_nccl_list(std::string_view text, Collective op, bool protocols, const std::string& file,
                         const std::string& field = "");
// The same set as a CollectiveSpec's nccl_algorithms / nccl_protocols: a list that enables nothing for `op` is bad
// input as well (NCCL would find no algorithm to run).
unsigned enabled_by_list(std::string_view text, Collective op, bool protocols, const std::string& file,
                         const std::string& field = "");
// Whether an --algo / --proto value is such a list rather than one name.
bool is_nccl_list(std::string_view text);

// NCCL's choice: the candidate of least estimated time among those allowed by spec.algorithm / spec.protocol
// (Auto = any) and spec.nccl_algorithms / spec.nccl_protocols. Throws InputError naming `field` when the forced
// algorithm or protocol cannot run. `schedulable_only` keeps to ring and tree, the algorithms with schedules (the flow
// fidelity).
Estimate choose(const CollectiveSpec& spec, const Topology& topology, const std::string& field = "collective",
                bool schedulable_only = false);

// The host time one thread spends issuing one GPU's collective: the topology's calibration, else the library
// table's fit (libraries/nccl.json "fitted"."host"); 0 when neither has one.
double launch_us_per_gpu(const Topology& topology);

// The predicted time of the collective NCCL would run (choose), with the fitted scales and the channels launched.
Estimate predict(const CollectiveSpec& spec, const Topology& topology, const std::string& field = "collective");

// The same prediction for a given (algorithm, protocol), with explicit scales: what calibration fits.
Estimate predict_with(const CollectiveSpec& spec, const Topology& topology, Algorithm algorithm, Protocol protocol,
                      ModelScale scale);

// Where the fitted model says another (algorithm, protocol) than NCCL's own choice is faster: a rule of NCCL's
// example tuner plugin (plugins/tuner/example: collective, size range, algorithm, protocol). Sizes are sampled at
// powers of two from 1 KiB to 4 GiB; a sample (s/2, s] gets a rule where the best candidate among those with
// fitted scales (measured, not NCCL's constants alone) beats NCCL's choice by more than `min_gain`.
struct TunerRule {
  Collective op = Collective::AllReduce;
  Bytes min_bytes = 0, max_bytes = 0;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  double gain = 0;  // predicted time of NCCL's choice / predicted time of the rule's, minus 1 (largest in the range)
};
std::vector<TunerRule> tuner_rules(Collective op, const Topology& topology, double min_gain = 0.05);
// One line of the example tuner plugin's nccl_tuner.conf.
std::string tuner_line(const TunerRule& rule, const Topology& topology);

// NCCL's tuning table, as NCCL prints it at init under NCCL_DEBUG_SUBSYS=TUNING (src/graph/tuning.cc,
// ncclTopoTuneModel, v2.18.6-1:300-336 and v2.26.2-1:445-485): for each collective in NCCL's order (Broadcast, Reduce,
// AllGather, ReduceScatter, AllReduce), each algorithm of the release (PAT from 2.23) and each protocol, the latency
// (us) and the algorithm bandwidth (GB/s) NCCL's model gives on this machine. As NCCL prints them: a combination its
// loop does not model for the collective is 0/0 (and NVLS without NVLink SHARP, which has no NVLS graph); one it
// models and then disables (LL128 without NVLink, CollNet without SHARP, NCCL_ALGO / NCCL_PROTO) keeps its latency
// with bandwidth 0.
struct TuningCell {
  double latency_us = 0;
  double algbw_GBps = 0;
};
struct TuningRow {
  std::string collective;         // NCCL's name (ncclFuncStr)
  std::vector<TuningCell> cells;  // algorithm-major: cells[a * 3 + p], p = LL, LL128, Simple
};
struct TuningTable {
  std::vector<std::string> algorithms;  // NCCL's names (ncclAlgoStr), in its order
  std::vector<TuningRow> rows;
  int channels = 0;  // the ring and tree channels NCCL runs (as its "N coll channels" init line counts them)
};
// `algorithms` / `protocols`: lists in NCCL_ALGO / NCCL_PROTO syntax ("" = all), applied per collective as NCCL
// applies them; `channels` > 0 sets the channel count as NCCL_MIN/MAX_NCHANNELS do.
TuningTable tuning_table(const Topology& topology, const std::string& algorithms = "",
                         const std::string& protocols = "", int channels = 0);
// The table in NCCL's layout: blocks of three algorithms, each an "Algorithm" and a "Protocol" header line and one
// line per collective with NCCL's "%8.1f/%6.1f" cells. NCCL's "Max NThreads" line is left out: thread counts are not
// part of the model.
std::string format_tuning_table(const TuningTable& table);

// "allreduce/ring/ll128": the key of a (collective, algorithm, protocol) in fitted tables. Scales are per collective:
// NCCL's latency and bandwidth formulas differ by collective, and so do their errors.
std::string scale_key(Collective op, Algorithm algorithm, Protocol protocol);

// Versions present in libraries/nccl.json, newest last; and whether `version` selects one of them.
std::vector<std::string> table_versions();
bool known_version(std::string_view version);
// The constants table `version` is priced with ("2.24.9" -> "2.24", "2.28" -> "2.28.9"), "" when none.
std::string table_for(std::string_view version);
// Why `version` cannot be priced (no constants table for it), or "" when it can.
std::string release_problem(const std::string& version);

// Prices `topology`'s machine with NCCL release `version` (a measurement's release, or an upgrade) in place of its
// library.version. Throws InputError(file, field) when the topology names no NCCL library or the release has no
// constants table.
void use_release(Topology& topology, const std::string& version, const std::string& file, const std::string& field);

}  // namespace commsim::nccl
