#include "hw/mpi/bench.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hw/common/dgc.hpp"
#include "hw/common/dtype.hpp"
#include "hw/common/schedule_program.hpp"
#include "hw/common/verifiable.hpp"
#include "hw/mpi/mpi_check.hpp"
#include "hw/mpi/native_collectives.hpp"
#include "hw/mpi/schedule_executor.hpp"
#include "sim/collective/collective.hpp"
#include "sim/core/host.hpp"

namespace commsim::hw {
namespace {

constexpr std::uint64_t kMaxPingPongBytes = 64ull << 20;
constexpr std::uint64_t kReductionBytes = 64ull << 20;
constexpr std::size_t kDgcElements = std::size_t{1} << 20;  // 4 MiB of fp32 gradient, a mid-size layer's
// The validation suite's dgc099 sparsity. The rate is used at every sparsity: the passes over all elements dominate
// (the candidates of 1 % are few), and the simulator prices the per-pair work apart.
constexpr double kDgcSparsity = 0.99;
constexpr int kMaxRepetitions = 10000;
// The smallest size of the concurrent-streams sweep, and its stream count: two streams, as nccl_comm_num = 2.
constexpr std::uint64_t kConcurrentMinBytes = 64ull << 10;
constexpr int kConcurrentStreams = 2;

constexpr double kSettleSeconds = 0.02;  // untimed round trips before a ping-pong sweep (see ping_pong)

// Repetitions for a size: enough to fill `target_s` given one repetition's time, decided on rank 0 of `comm` and
// broadcast so that every rank runs the same count.
int repetitions_for(double one_s, double target_s, MPI_Comm comm) {
  int reps = static_cast<int>(std::clamp(target_s / std::max(one_s, 1e-9), 1.0, static_cast<double>(kMaxRepetitions)));
  COMMSIM_MPI_CHECK(MPI_Bcast(&reps, 1, MPI_INT, 0, comm));
  return reps;
}

// A barrier that sleeps while it waits: ranks sitting out a measurement must not take the CPU from the ranks
// measuring (ranks outnumber cores here, and a blocking MPI_Barrier polls).
void idle_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  COMMSIM_MPI_CHECK(MPI_Ibarrier(comm, &request));
  for (int done = 0;;) {
    COMMSIM_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

// One round trip between position 0 and 1 of the two-rank `pair`.
void round_trip(MPI_Comm pair, int me, std::vector<char>& buffer, int bytes) {
  if (me == 0) {
    COMMSIM_MPI_CHECK(MPI_Send(buffer.data(), bytes, MPI_BYTE, 1, 0, pair));
    COMMSIM_MPI_CHECK(MPI_Recv(buffer.data(), bytes, MPI_BYTE, 1, 0, pair, MPI_STATUS_IGNORE));
  } else {
    COMMSIM_MPI_CHECK(MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0, pair, MPI_STATUS_IGNORE));
    COMMSIM_MPI_CHECK(MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0, pair));
  }
}

// Round trips between `rank` and `partner`, 8 B up to the cap; the other ranks sleep meanwhile.
nlohmann::json ping_pong(int rank, int partner, const std::string& link_class, const BenchOptions& o) {
  int world_rank = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  const bool in_pair = world_rank == rank || world_rank == partner;
  MPI_Comm pair = MPI_COMM_NULL;
  COMMSIM_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, in_pair ? 0 : MPI_UNDEFINED, world_rank == rank ? 0 : 1, &pair));
  nlohmann::json samples = nlohmann::json::array();
  if (in_pair) {
    const int me = world_rank == rank ? 0 : 1;
    const std::uint64_t largest = std::min(o.max_bytes, kMaxPingPongBytes);
    std::vector<char> buffer(largest, 1);
    // Settle first: the ranks outside the pair are still leaving MPI_Comm_split and polling, and timing the first
    // size while they did made it 2-3x slower than the next ones (seen on the emulated cluster, 8 ranks on 2 cores).
    // About 20 ms of 8-byte round trips lets them reach their sleeping barrier.
    const double settle_start = MPI_Wtime();
    round_trip(pair, me, buffer, 8);
    for (int r = repetitions_for(MPI_Wtime() - settle_start, kSettleSeconds, pair); r > 0; --r)
      round_trip(pair, me, buffer, 8);
    for (std::uint64_t bytes = 8; bytes <= largest; bytes *= 2) {
      const int n = static_cast<int>(bytes);
      round_trip(pair, me, buffer, n);  // warm-up: connection, pages
      double start = MPI_Wtime();
      round_trip(pair, me, buffer, n);
      const int reps = repetitions_for(MPI_Wtime() - start, o.target_s, pair);
      start = MPI_Wtime();
      for (int r = 0; r < reps; ++r) round_trip(pair, me, buffer, n);
      const double per_rep_s = (MPI_Wtime() - start) / reps;
      samples.push_back({{"bytes", bytes}, {"seconds_per_repetition", per_rep_s}, {"repetitions", reps}});
    }
    MPI_Comm_free(&pair);
  }
  idle_barrier(MPI_COMM_WORLD);
  return {{"link_class", link_class},
          {"ranks", {rank, partner}},
          {"repetition", "one round trip (two messages of `bytes`)"},
          {"samples", samples}};
}

// The simulator's ring allreduce of `count` floats, compiled for `rank`.
RankProgram ring_allreduce_program(const Topology& topology, std::uint64_t count, int rank) {
  CollectiveSpec spec;
  spec.algorithm = Algorithm::Ring;
  spec.bytes = count;
  spec.unit_bytes = sizeof(float);
  spec.reduce_Bps = 1;
  spec.ranks_per_node = topology.ranks_per_node();
  Schedule schedule;
  std::vector<OpId> frontier(topology.ranks(), kNoOp);
  generate(spec, topology, schedule, frontier);
  return rank_program(schedule, rank);
}

void print_allreduce_header(const BenchOptions& o, int ranks, int streams) {
  std::printf("# allreduce (%s)%s, nccl-tests format; busbw = algbw x 2(n-1)/n, n = %d\n",
              o.impl == CollectiveImpl::Native ? "Open MPI's MPI_Allreduce" : "the simulator's ring schedule",
              streams == 1 ? "" : (" on " + std::to_string(streams) + " streams at once, size per stream").c_str(),
              ranks);
  std::printf("#%12s %13s %9s %7s %11s %8s %8s %7s\n", "size", "count", "type", "redop", "time", "algbw", "busbw",
              "#wrong");
  std::printf("#%12s %13s %9s %7s %11s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
}

// One size of the sweep: its wrong elements (summed over ranks) and the slowest rank's time, on rank 0.
struct AllreduceMeasure {
  std::uint64_t wrong = 0;
  double slowest_s = 0;
  int repetitions = 0;
};

// The first run checks verifiable inputs (and warms up); the second times one repetition to choose the count.
AllreduceMeasure measure_allreduce(const std::function<void()>& once, std::vector<std::vector<float>>& vectors,
                                   std::uint64_t count, std::uint64_t bytes, int rank, int ranks, double target_s) {
  const Verifiable v{ranks, CommDtype::Fp32, 1};
  AllreduceMeasure m;
  for (std::vector<float>& vector : vectors)
    for (std::uint64_t i = 0; i < count; ++i) vector[i] = v.value(rank, i, bytes);
  once();
  std::uint64_t wrong = 0;
  for (const std::vector<float>& vector : vectors)
    for (std::uint64_t i = 0; i < count; ++i) wrong += static_cast<double>(vector[i]) != v.sum(i, bytes);
  COMMSIM_MPI_CHECK(MPI_Reduce(&wrong, &m.wrong, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
  COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  double start = MPI_Wtime();
  once();
  m.repetitions = repetitions_for(MPI_Wtime() - start, target_s, MPI_COMM_WORLD);
  COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  start = MPI_Wtime();
  for (int r = 0; r < m.repetitions; ++r) once();
  double mine_s = (MPI_Wtime() - start) / m.repetitions;
  COMMSIM_MPI_CHECK(MPI_Reduce(&mine_s, &m.slowest_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  return m;
}

// Rank 0: prints one size's line and returns its sample.
nlohmann::json allreduce_sample(std::uint64_t bytes, std::uint64_t count, const AllreduceMeasure& m, int ranks) {
  const double algbw = static_cast<double>(bytes) / m.slowest_s,
               busbw = algbw * busbw_factor(Collective::AllReduce, ranks);
  std::printf(" %12llu %13llu %9s %7s %11.2f %8.3f %8.3f %7llu\n", static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(count), "float", "sum", m.slowest_s * 1e6, algbw / 1e9, busbw / 1e9,
              static_cast<unsigned long long>(m.wrong));
  std::fflush(stdout);
  return {{"bytes", bytes},
          {"count", count},
          {"seconds_per_repetition", m.slowest_s},
          {"repetitions", m.repetitions},
          {"algbw_Bps", algbw},
          {"busbw_Bps", busbw},
          {"wrong", m.wrong}};
}

// Allreduce over all ranks on `streams` communication streams at once, each its own communicator and thread as the
// MPI executor runs a step's streams: a repetition is one allreduce of the size on every stream, from 8 B (one
// stream) or kConcurrentMinBytes (several: a thread is started and joined per repetition, 52-57 us on the 2-vCPU
// development VM, measured 2026-11-28 over 10 000 of them; one 64 KiB allreduce takes ~1 ms on the emulated
// cluster) up to the cap; each size checked once, then timed (slowest rank).
nlohmann::json allreduce_sweep(const Topology& topology, const BenchOptions& o, int rank, int ranks, int streams) {
  std::vector<StreamComms> comms;
  for (int s = 0; s < streams; ++s)
    comms.push_back(StreamComms::create(MPI_COMM_WORLD, topology.ranks_per_node()));  // the default groups: nodes
  const std::uint64_t largest = std::max<std::uint64_t>(8, o.max_bytes);
  std::vector<std::vector<float>> vectors(static_cast<std::size_t>(streams),
                                          std::vector<float>(largest / sizeof(float))),
      staging(static_cast<std::size_t>(streams));
  nlohmann::json samples = nlohmann::json::array();
  if (rank == 0) print_allreduce_header(o, ranks, streams);
  for (std::uint64_t bytes = streams == 1 ? 8 : kConcurrentMinBytes; bytes <= largest; bytes *= 2) {
    const std::uint64_t count = bytes / sizeof(float);
    RankProgram program;
    if (o.impl == CollectiveImpl::Schedule) {
      program = ring_allreduce_program(topology, count, rank);
      for (std::vector<float>& s : staging) s.resize(program.staging_elements);
    }
    auto on_stream = [&](std::size_t s) {
      if (o.impl == CollectiveImpl::Schedule) {
        execute_program(program, comms[s].world, CommDtype::Fp32, vectors[s].data(), staging[s].data());
      } else {
        native_allreduce(comms[s], CommDtype::Fp32, vectors[s].data(), count, false);
      }
    };
    auto once = [&] {
      std::vector<std::thread> others;
      for (std::size_t s = 1; s < comms.size(); ++s) others.emplace_back(on_stream, s);
      on_stream(0);
      for (std::thread& t : others) t.join();
    };
    const AllreduceMeasure m = measure_allreduce(once, vectors, count, bytes, rank, ranks, o.target_s);
    if (rank == 0) samples.push_back(allreduce_sample(bytes, count, m, ranks));
  }
  for (StreamComms& c : comms) c.free();
  nlohmann::json sweep = {{"op", "allreduce"},
                          {"impl", o.impl == CollectiveImpl::Native ? "native" : "schedule"},
                          {"type", "float"},
                          {"redop", "sum"},
                          {"repetition", streams == 1 ? "one allreduce; time = slowest rank"
                                                      : "one allreduce on each stream at once; time = slowest rank"},
                          {"samples", samples}};
  if (streams > 1) sweep["streams"] = streams;
  return sweep;
}

// How long `work` takes a rank when every rank runs it at the same time, as in a training step: on a host whose
// ranks share cores and memory (the emulated cluster runs 8 ranks on 2 cores) that is what each rank gets. Rank 0
// times it alone first (kept for reference) and sets the repetitions; the slowest rank's time per repetition counts.
struct AllAtOnce {
  double slowest_s = 0, alone_s = 0;
  int repetitions = 0;
};
AllAtOnce time_all_at_once(const BenchOptions& o, const std::function<void()>& work) {
  work();  // warm-up: pages
  int rank = 0, reps = 3;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  AllAtOnce t;
  if (rank == 0) {
    const double start = MPI_Wtime();
    work();
    t.alone_s = MPI_Wtime() - start;
    reps = static_cast<int>(std::clamp(o.target_s * 4 / std::max(t.alone_s, 1e-9), 3.0, 1000.0));
  }
  COMMSIM_MPI_CHECK(MPI_Bcast(&reps, 1, MPI_INT, 0, MPI_COMM_WORLD));
  COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  const double start = MPI_Wtime();
  for (int r = 0; r < reps; ++r) work();
  const double mine_s = (MPI_Wtime() - start) / reps;
  COMMSIM_MPI_CHECK(MPI_Reduce(&mine_s, &t.slowest_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  t.repetitions = reps;
  return t;
}

// Gamma: how fast a rank adds two float vectors (the Reduce op of a schedule, and the unit of every rank's local
// memory-bound work: casts), in bytes of the vector per second, every rank at once.
nlohmann::json reduction(const BenchOptions& o) {
  const std::size_t count = kReductionBytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f);
  const AllAtOnce t = time_all_at_once(o, [&] { sum_into(CommDtype::Fp32, a.data(), b.data(), count); });
  return {{"dtype", "float32"},
          {"bytes", kReductionBytes},
          {"seconds_per_repetition", t.slowest_s},
          {"repetitions", t.repetitions},
          {"reduce_Bps", static_cast<double>(kReductionBytes) / t.slowest_s},
          {"reduce_alone_Bps", static_cast<double>(kReductionBytes) / t.alone_s},
          {"repetition", "a[i] += b[i] over the whole vector, every rank at once; time = slowest rank"}};
}

// A rank's DGC work on one fp32 gradient, as the backend does it (TaskExecutor::select_top_k and gather_sparse):
// add the gradient to the residual, select the top (1 - sparsity) by magnitude (top_k_indices: a sampled threshold,
// one pass, an exact pick among the candidates), take the picked entries out of the residual, clear the dense sum
// and average it into the gradient. The scattered adds of every rank's pairs are left out (the simulator prices
// them per pair). Its rate, in bytes of gradient per second every rank at once, is what the simulator's device
// dgc_Bps stands for: the selection's compare-and-branch pass is not memory-bound, so memory passes misprice it.
nlohmann::json dgc_local_work(const BenchOptions& o, int ranks) {
  std::vector<float> gradient(kDgcElements), residual(kDgcElements, 0.0f), dense(kDgcElements), averaged(kDgcElements);
  std::mt19937 random(1);  // gradient-like values: spread magnitudes, no ties at the threshold
  std::normal_distribution<float> normal;
  for (float& g : gradient) g = normal(random);
  const auto kept = static_cast<std::size_t>(std::ceil((1 - kDgcSparsity) * kDgcElements));
  std::vector<float> values(kept);
  const AllAtOnce t = time_all_at_once(o, [&] {
    for (std::size_t j = 0; j < kDgcElements; ++j) residual[j] += gradient[j];
    take_chosen(residual.data(), top_k_indices(residual.data(), kDgcElements, kept), values.data());
    std::fill(dense.begin(), dense.end(), 0.0f);
    for (std::size_t j = 0; j < kDgcElements; ++j) averaged[j] = dense[j] / static_cast<float>(ranks);
  });
  const double bytes = 4.0 * kDgcElements;
  return {{"elements", kDgcElements},
          {"sparsity", kDgcSparsity},
          {"seconds_per_repetition", t.slowest_s},
          {"repetitions", t.repetitions},
          {"dgc_Bps", bytes / t.slowest_s},
          {"dgc_alone_Bps", bytes / t.alone_s},
          {"repetition",
           "residual += gradient, top-k selection, picked entries cleared, dense sum cleared and averaged into the "
           "gradient, every rank at once; time = slowest rank"}};
}

// The class of the slowest link between two ranks, as the topology names it (tcp across emulated nodes).
std::string bottleneck_class(const Topology& topology, int from, int to) {
  Route route;
  topology.route(from, to, route);
  std::string name = "fabric";
  for (LinkId id : route.links)
    if (topology.link(id).effective_Bps() <= route.cost.bottleneck_Bps)
      name = std::string(to_string(topology.link(id).link_class));
  return name;
}

// The first rank after 0 on rank 0's host and the first on another host (-1: none). Which ranks share a host MPI
// knows (shared memory), whatever the topology file says.
std::pair<int, int> ping_partners(int rank, int ranks) {
  MPI_Comm node = MPI_COMM_NULL;
  COMMSIM_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_rank = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(node, &node_rank));
  std::vector<int> host_leader(ranks);  // world rank of each rank's node rank 0
  int my_leader = node_rank == 0 ? rank : -1;
  COMMSIM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &my_leader, 1, MPI_INT, MPI_MAX, node));
  COMMSIM_MPI_CHECK(MPI_Allgather(&my_leader, 1, MPI_INT, host_leader.data(), 1, MPI_INT, MPI_COMM_WORLD));
  MPI_Comm_free(&node);
  int same = -1, across = -1;
  for (int r = 1; r < ranks; ++r) {
    if (host_leader[r] == host_leader[0] && same < 0) same = r;
    if (host_leader[r] != host_leader[0] && across < 0) across = r;
  }
  return {same, across};
}

// Rank 0: prints one ping-pong sweep.
void print_ping_pong(const nlohmann::json& ping, const std::string& link_class, int partner) {
  std::printf("# %-5s ranks 0-%-3d %12s %14s %12s %12s\n", link_class.c_str(), partner, "size (B)", "round trip(us)",
              "one-way(us)", "MB/s");
  for (const auto& s : ping["samples"]) {
    const double rt = s["seconds_per_repetition"].get<double>();
    std::printf("  %-5s %9s %12llu %14.2f %12.2f %12.1f\n", link_class.c_str(), "",
                static_cast<unsigned long long>(s["bytes"].get<std::uint64_t>()), rt * 1e6, rt / 2 * 1e6,
                s["bytes"].get<double>() / (rt / 2) / 1e6);
  }
  std::fflush(stdout);
}

// Ping-pong from rank 0 to a rank on its host (shm) and to one on another host, where there are such ranks.
nlohmann::json ping_pongs(const Topology& topology, const BenchOptions& options, int rank, int ranks) {
  const auto [same, across] = ping_partners(rank, ranks);
  nlohmann::json pings = nlohmann::json::array();
  if (rank == 0) std::printf("# ping-pong: one repetition = one round trip; one-way = round trip / 2\n");
  struct Pair {
    int partner;
    std::string link_class;
  };
  std::vector<Pair> pairs;
  if (same >= 0) pairs.push_back({same, "shm"});
  if (across >= 0) pairs.push_back({across, bottleneck_class(topology, 0, across)});
  for (const auto& [partner, link_class] : pairs) {
    nlohmann::json ping = ping_pong(0, partner, link_class, options);
    if (rank == 0) print_ping_pong(ping, link_class, partner);
    pings.push_back(ping);
  }
  return pings;
}

}  // namespace

nlohmann::json run_bench(const Topology& topology, const BenchOptions& options) {
  int rank = 0, ranks = 1;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  nlohmann::json report = {{"backend", "mpi"}, {"ranks", ranks}, {"topology", topology.name()}};
  report["pingpong"] = ping_pongs(topology, options, rank, ranks);
  report["allreduce"] = allreduce_sweep(topology, options, rank, ranks, 1);
  if (options.max_bytes >= kConcurrentMinBytes)
    report["allreduce_concurrent"] = allreduce_sweep(topology, options, rank, ranks, kConcurrentStreams);
  nlohmann::json gamma = reduction(options);  // every rank takes part
  nlohmann::json dgc = dgc_local_work(options, ranks);
  if (rank == 0) {
    report["reduction"] = gamma;
    report["dgc"] = dgc;
    std::printf("# local reduction (gamma): %.3g GB/s of float vector summed (a[i] += b[i], %llu MiB)\n",
                gamma["reduce_Bps"].get<double>() / 1e9, static_cast<unsigned long long>(kReductionBytes >> 20));
    std::printf("# DGC local work: %.3g GB/s of fp32 gradient (residual, top-k at sparsity %.2f, clear, average)\n",
                dgc["dgc_Bps"].get<double>() / 1e9, kDgcSparsity);
  }
  idle_barrier(MPI_COMM_WORLD);
  if (rank != 0) return nullptr;
  report["host"] = host_name();
  report["commsim_version"] = COMMSIM_VERSION;
  if (!options.network.empty()) report["network"] = options.network;
  return report;
}

}  // namespace commsim::hw
