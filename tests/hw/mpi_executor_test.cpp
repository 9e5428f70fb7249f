// The schedule executor on real MPI ranks (this binary runs under mpirun -np 4; each case uses the first 2, 3 or 4
// ranks). Inputs are verifiable (hw/common/verifiable.hpp), so every result is compared exactly and every wrong
// element counted: the expected count is 0. Counts are summed over ranks before asserting, so all ranks agree on
// each verdict and none is left waiting in a collective. Only rank 0 prints.
//
// Topology of every case (topologies/emulated-cpu-cluster.json with 2 nodes; ranks are node-major):
//   node0: r0 r1 | node1: r2 r3          (p = 3 uses r0 r1 r2)
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "hw/common/dtype.hpp"
#include "hw/common/schedule_program.hpp"
#include "hw/common/verifiable.hpp"
#include "hw/mpi/mpi_check.hpp"
#include "hw/mpi/native_collectives.hpp"
#include "hw/mpi/schedule_executor.hpp"
#include "sim/collective/collective.hpp"
#include "sim/step/simulation.hpp"

namespace {

using namespace commsim;
using namespace commsim::hw;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// The sum over all ranks of the world (ranks outside a case contribute 0).
std::uint64_t world_sum(std::uint64_t mine) {
  std::uint64_t total = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
  return total;
}

struct Case {
  Collective op = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  int ranks = 4;
  std::uint64_t elements = 1000;
  CommDtype dtype = CommDtype::Fp32;
  int channels = 1;
  int chunks = 0;
};

std::string describe(const Case& c) {
  return std::string(to_string(c.op)) + "/" + std::string(to_string(c.algorithm)) + " p=" + std::to_string(c.ranks) +
         " n=" + std::to_string(c.elements) + " " + std::string(to_string(c.dtype)) +
         " channels=" + std::to_string(c.channels);
}

// Runs one collective from the simulator's schedule on the first c.ranks ranks and returns this rank's wrong
// elements; ranks outside the case return 0.
std::uint64_t wrong_elements_of(const Case& c) {
  const int rank = world_rank();
  MPI_Comm comm = MPI_COMM_NULL;
  COMMSIM_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank < c.ranks ? 0 : MPI_UNDEFINED, rank, &comm));
  if (comm == MPI_COMM_NULL) return 0;
  const auto topology = load_topology("topologies/emulated-cpu-cluster.json", 2);
  CollectiveSpec spec;
  spec.op = c.op;
  spec.algorithm = c.algorithm;
  spec.bytes = c.elements;
  spec.unit_bytes = dtype_bytes(c.dtype);
  spec.reduce_Bps = 1;
  spec.channels = c.channels;
  spec.chunks = c.chunks;
  spec.ranks_per_node = topology->ranks_per_node();
  for (int r = 0; r < c.ranks; ++r) spec.ranks.push_back(r);
  Schedule schedule;
  std::vector<OpId> frontier(topology->ranks(), kNoOp);
  generate(spec, *topology, schedule, frontier);
  const RankProgram program = rank_program(schedule, rank);

  const Verifiable v{c.ranks, c.dtype, 1};
  const std::size_t element = element_bytes(c.dtype);
  std::vector<float> input(c.elements), output(c.elements);
  for (std::uint64_t i = 0; i < c.elements; ++i) input[i] = v.value(rank, i, 7);
  std::vector<std::byte> vector(c.elements * element), staging(program.staging_elements * element);
  cast_from_float(c.dtype, input.data(), vector.data(), c.elements);
  execute_program(program, comm, c.dtype, vector.data(), staging.data());
  cast_to_float(c.dtype, vector.data(), output.data(), c.elements);

  std::uint64_t wrong = 0;
  if (c.op == Collective::AllReduce) {
    for (std::uint64_t i = 0; i < c.elements; ++i) wrong += output[i] != v.sum(i, 7);
  } else if (c.op == Collective::ReduceScatter) {
    for (const Range& r : program.reduced)
      for (std::uint64_t i = r.offset; i < r.offset + r.count; ++i) wrong += output[i] != v.sum(i, 7);
  } else {  // allgather: every element is its owner's input; owners from every rank's program
    for (int owner = 0; owner < c.ranks; ++owner)
      for (const Range& r : rank_program(schedule, owner).contributed)
        for (std::uint64_t i = r.offset; i < r.offset + r.count; ++i) wrong += output[i] != v.value(owner, i, 7);
  }
  MPI_Comm_free(&comm);
  return wrong;
}

void expect_exact(const Case& c) {
  SCOPED_TRACE(describe(c));
  EXPECT_EQ(world_sum(wrong_elements_of(c)), 0u);
}

// Ring, double binary tree, halving-doubling (with the non-power-of-two fold at p = 3), hierarchical (groups = nodes
// of 2 ranks) and 2d-ring on 2-4 ranks, sizes that do and do not divide by the ranks: each rank must hold the exact
// sum of all ranks' inputs (the inputs are small integers, so the sum is exact in any order).
TEST(MpiScheduleExecutor, AllreduceAlgorithmsGiveTheExactSum) {
  for (Algorithm a :
       {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical, Algorithm::Ring2D})
    for (int p : {2, 3, 4})
      for (std::uint64_t n : {1ull, 1001ull, 65536ull}) {
        if (a == Algorithm::Ring2D && p == 3) continue;  // whole nodes only
        expect_exact({Collective::AllReduce, a, p, n});
      }
}

// Two channels split the vector into two independent rings/trees; pipelined chunks cut each piece further (8 here):
// still exact, and the executor's buffer-hazard ordering does not deadlock.
TEST(MpiScheduleExecutor, ChannelsAndPipelineChunksStayExact) {
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling}) {
    expect_exact({Collective::AllReduce, a, 4, 100003, CommDtype::Fp32, 2, 0});
    expect_exact({Collective::AllReduce, a, 4, 100003, CommDtype::Fp32, 1, 8});
  }
}

// fp16, bf16 and fp8 e4m3: values are cast for real and summed in the narrow type at every hop; the verifiable
// bound keeps every partial sum an exact small integer in that type, so the result must be exact too.
TEST(MpiScheduleExecutor, LowPrecisionSumsAreExact) {
  for (CommDtype d : {CommDtype::Fp16, CommDtype::Bf16, CommDtype::Fp8})
    for (Algorithm a : {Algorithm::Ring, Algorithm::Tree}) expect_exact({Collective::AllReduce, a, 4, 4097, d});
}

// Reduce-scatter leaves each rank its block reduced; allgather gives every rank every owner's block.
TEST(MpiScheduleExecutor, ReduceScatterAndAllgatherAreExact) {
  for (Collective op : {Collective::ReduceScatter, Collective::AllGather})
    for (int p : {2, 3, 4}) expect_exact({op, Algorithm::Ring, p, 10007});
}

// Open MPI's own collectives through the backend's wrappers, fp32 and fp16 (a user-defined MPI_Op), including the
// hierarchical allreduce over groups of 2 (ranks {0,1} and {2,3}, leaders 0 and 2): every phase has more than one
// member, so a wrong group, leader or broadcast root leaves some element off the full sum.
TEST(MpiNativeCollectives, MatchTheVerifiableSums) {
  const int rank = world_rank();
  StreamComms comms = StreamComms::create(MPI_COMM_WORLD, 2);
  std::uint64_t wrong = 0;
  const std::uint64_t n = 10001;
  for (CommDtype d : {CommDtype::Fp32, CommDtype::Fp16})
    for (int variant = 0; variant < 4; ++variant) {
      const Verifiable v{4, d, 1};
      const std::size_t element = element_bytes(d);
      std::vector<float> values(n);
      for (std::uint64_t i = 0; i < n; ++i) values[i] = v.value(rank, i, 5);
      std::vector<std::byte> vector(n * element), scratch(n * element);
      cast_from_float(d, values.data(), vector.data(), n);
      if (variant < 2) native_allreduce(comms, d, vector.data(), n, variant == 1);
      if (variant == 2) native_reduce_scatter(comms, d, vector.data(), n, scratch.data());
      if (variant == 3) native_allgather(comms, d, vector.data(), n);
      cast_to_float(d, vector.data(), values.data(), n);
      for (std::uint64_t i = 0; i < n; ++i) {
        int owner = 0;
        while (i >= block_first(n, 4, owner) + block_size(n, 4, owner)) ++owner;
        if (variant < 2) wrong += values[i] != v.sum(i, 5);
        if (variant == 2 && owner == rank) wrong += values[i] != v.sum(i, 5);
        if (variant == 3) wrong += values[i] != v.value(owner, i, 5);
      }
    }
  comms.free();
  EXPECT_EQ(world_sum(wrong), 0u);
}

}  // namespace

// MPI for all tests; only rank 0 reports (so test discovery under mpirun lists each test once).
int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (world_rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  MPI_Finalize();
  return failed;
}
