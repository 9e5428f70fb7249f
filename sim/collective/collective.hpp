// Collectives, algorithms and their parameters; the generators that expand them into Schedules; and the
// closed-form alpha-beta-gamma cost of each (the `analytical` fidelity, and the basis of `auto`).
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collective/schedule.hpp"
#include "sim/topology/topology.hpp"

namespace commsim {

enum class Collective : std::uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
};

enum class Algorithm : std::uint8_t {
  Ring,             // ring (pipelined chain for broadcast/reduce); Patarasuk & Yuan 2009
  Tree,             // NCCL's double binary tree: two complementary trees, half the data each (Sanders et al. 2009)
  HalvingDoubling,  // Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather (Thakur 2005)
  Hierarchical,     // Paddle use_hierarchical_allreduce: group allreduce, leaders allreduce, group broadcast
  Ring2D,           // intra-node ring reduce-scatter, inter-node ring allreduce, intra-node ring allgather
  // NCCL's own algorithms (priced by sim/collective/nccl_model on topologies whose library is NCCL):
  Nvls,           // NVLink SHARP: the NVSwitch reduces and multicasts (NVSwitch gen3+, sm90+)
  NvlsTree,       // NVLS inside the node, a tree across nodes
  CollNetDirect,  // SHARP in the network switches, every GPU to its NIC
  CollNetChain,   // SHARP in the network switches, a chain inside the node
  Pat,            // Parallel Aggregated Trees: allgather / reduce-scatter at one GPU per node
  Auto,           // the library's own choice: NCCL's tuner on NCCL topologies, else the cheapest closed form
};

// NCCL's protocols (src/include/device.h): LL sends 8 bytes of data in each 16-byte line with a flag, LL128 120
// of every 128 bytes, Simple whole buffers with a fence per step.
enum class Protocol : std::uint8_t { LL, LL128, Simple, Auto };
std::string_view to_string(Protocol p);
bool parse_protocol(std::string_view s, Protocol& out);

std::string_view to_string(Collective c);
std::string_view to_string(Algorithm a);
bool parse_collective(std::string_view s, Collective& out);
bool parse_algorithm(std::string_view s, Algorithm& out);

struct CollectiveSpec {
  Collective op = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Auto;  // NCCL topologies only (NCCL_PROTO); Auto = NCCL's choice
  // Size of the full vector in bytes: the per-rank buffer for allreduce/broadcast/reduce, the output of allgather
  // and the input of reduce-scatter (as nccl-tests reports sizes).
  Bytes bytes = 0;
  std::vector<int> ranks;    // participants in ring order; empty = all ranks of the topology
  int channels = 1;          // independent rings/trees, each carrying 1/channels of the data (NCCL channels)
  int chunks = 0;            // pipeline pieces per step; 0 = 1 for rings, ceil(bytes / 512 KiB) (<= 64) for pipelines
  int root = 0;              // broadcast / reduce root (position in ranks)
  int hierarchy_groups = 0;  // Hierarchical: number of groups = leaders (ranks / Paddle's inter_nranks);
                             // 0 = one group per node
  double reduce_Bps = 0;     // gamma: local reduction rate in bytes/s; 0 = reductions take no time
  int ranks_per_node = 1;    // for node-aware ring orders, Ring2D and the default hierarchy
  Bytes offset = 0;          // where this collective's vector starts in each rank's buffer (Op::offset)
  int unit_bytes = 1;        // bytes per unit of `bytes`/`offset`: a backend that generates in elements (so no piece
                             // splits one) gives the element size, and pipelines are cut as they would be in bytes
  // Rings only: one flow per ring edge carrying all of its steps' bytes, after a delay of the other steps'
  // latencies, instead of one transfer per step. Same time on an uncontended network (the slowest edge sets both),
  // contention still shared by the flows; p x channels transfers instead of 2(p-1) x p x channels.
  bool aggregate = false;
  int nccl_channels = 0;  // NCCL topologies: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS; 0 = NCCL's own count
  // NCCL topologies, back-to-back operations as nccl-tests runs them: one host thread issues the kernels of this
  // many GPUs per operation (nccl-tests -g), so an operation takes at least that many kernel issues. 0 = no such
  // floor (a training step's launches are priced by libraries/overheads.json).
  int gpus_per_thread = 0;
  // NCCL topologies: the algorithms and protocols a list in NCCL_ALGO / NCCL_PROTO's syntax leaves enabled for this
  // collective (bit i: NCCL's i-th algorithm or protocol; nccl::parse_nccl_list); 0 = all of them. They narrow
  // what `algorithm` / `protocol` = Auto may choose.
  unsigned nccl_algorithms = 0, nccl_protocols = 0;
  // Closed forms: every hop also carries what its path moves in this time (the step simulator's price of a
  // collective that runs beside another, CommLibrary::concurrent_step_delay_s, as its flow fidelity prices it).
  double hop_delay_s = 0;
};

// Every field of a CollectiveSpec, in one ordered value: the key of any cache of what a spec costs or generates
// (closed forms, auto's choice, schedules), so that no cache forgets a field that changes its answer.
struct CollectiveKey {
  Collective op;
  Algorithm algorithm;
  Protocol protocol;
  Bytes bytes;
  std::vector<int> ranks;
  int channels, chunks, root, hierarchy_groups;
  double reduce_Bps;
  int ranks_per_node;
  Bytes offset;
  int unit_bytes;
  bool aggregate;
  int nccl_channels;
  int gpus_per_thread;
  unsigned nccl_algorithms, nccl_protocols;
  double hop_delay_s;
  auto operator<=>(const CollectiveKey&) const = default;
};
CollectiveKey collective_key(const CollectiveSpec& spec);

// The smallest pipeline piece --chunks may make: NCCL never cuts a channel's share finer (NVIDIA/nccl
// src/collectives/device/all_reduce.h runRing, 2022 releases: a Simple chunk is rounded up to (nthreads - WARP_SIZE) x
// 8 B, an LL chunk is whole grains of nthreads x 8 B; 3.75-4 KiB at 512 threads).
inline constexpr Bytes kMinPieceBytes = 4096;
// `chunks` (--chunks; 0 = the algorithm's default, kept) for a collective of `bytes`: at most as many as keep each
// piece of the ring's share, bytes / (channels x ranks), at kMinPieceBytes or more; at least 1.
int floored_chunks(int chunks, Bytes bytes, int channels, int ranks);

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor.
double busbw_factor(Collective op, int ranks);

// Paddle's hierarchical allreduce over `ranks`: the number of groups (one leader each) the spec asks for, else one
// group per node.
int hierarchy_group_count(const CollectiveSpec& spec, int ranks);
// The largest power of two <= p (p >= 1): the core of halving-doubling, the rest folded in and out.
int largest_power_of_two_at_most(int p);

// Checks that the algorithm supports the collective and the rank count; throws InputError naming `field`.
void check_supported(const CollectiveSpec& spec, int ranks, const std::string& field);

// Appends the collective's operations to `schedule`. frontier[r] (indexed by global rank, kNoOp = nothing) is the
// operation rank r waits for before it takes part; on return it is the operation after which r holds its result.
void generate(const CollectiveSpec& spec, const Topology& topology, Schedule& schedule, std::vector<OpId>& frontier);

// Closed-form time in seconds of the algorithm's schedule on an uncontended network (engine quantum included, so it
// matches the engine exactly on uniform topologies). Resolves Auto first. NCCL's algorithms without a schedule
// (nvls, nvlstree, collnet_*, pat) are priced by the NCCL model.
double closed_form_seconds(const CollectiveSpec& spec, const Topology& topology);
// The step-by-step part alone: each step priced by its slowest hop as if its transfers had their links to
// themselves (what the Analytical engine, which shares nothing, runs). closed_form_seconds is the larger of this and
// the busiest link's load over its rate (tree, halving-doubling, hierarchical, 2D ring up to 1024 ranks), so that
// where transfers share a link (a node's NIC) the closed form is not faster than any execution of the schedule.
double step_closed_form_seconds(const CollectiveSpec& spec, const Topology& topology);

// The `analytical` fidelity: the topology's library model (NCCL's protocols, channels and algorithms on a topology
// whose library is NCCL, for collectives over all its ranks), otherwise the schedule's closed form.
double predict_seconds(const CollectiveSpec& spec, const Topology& topology);
bool uses_library_model(const CollectiveSpec& spec, const Topology& topology);
// The library model's fixed part and total (Paddle's hierarchical allreduce: the sum of its three NCCL collectives).
struct LibraryPrediction {
  double latency_s = 0, seconds = 0;
};
LibraryPrediction library_prediction(const CollectiveSpec& spec, const Topology& topology);

// Auto resolved: the library's own choice on an NCCL topology (restricted to algorithms with a schedule when
// `need_schedule`, as the flow fidelity runs schedules), otherwise the cheapest closed form.
Algorithm choose_algorithm(const CollectiveSpec& spec, const Topology& topology, bool need_schedule = false);
// Whether the algorithm is one of NCCL's with no schedule generator here.
bool library_only(Algorithm a);

// Bytes the schedule of a (resolved, non-auto) collective moves over the network in total, summed over ranks:
// equal to Schedule::bytes_transferred() of generate() when the size divides evenly.
double total_transfer_bytes(const CollectiveSpec& spec, int ranks);

}  // namespace commsim
