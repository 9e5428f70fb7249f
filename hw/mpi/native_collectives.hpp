// Open MPI's own collectives (`--impl native`), for comparison with the simulator's schedules: MPI_Allreduce,
// MPI_Reduce_scatter(_block), MPI_Allgather(v), and a hierarchical allreduce over the Plan's groups.
// fp16, bf16 and fp8 have no MPI datatype: they travel as 2- or 1-byte integers with a user-defined sum that widens
// to float, adds and rounds back (hw/common/dtype.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "sim/scenario/scenario.hpp"

namespace commsim::hw {

// Communicators of one communication stream: its own duplicate of the world (so streams never match each other's
// messages) and, for the hierarchical allreduce, the Plan's groups (hierarchy_group_size) and their leaders.
struct StreamComms {
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm group = MPI_COMM_NULL;    // the group_size consecutive ranks this rank's group holds
  MPI_Comm leaders = MPI_COMM_NULL;  // the first rank of every group; MPI_COMM_NULL on the others
  // Collective over `parent`: every rank must create its streams' communicators in the same order.
  static StreamComms create(MPI_Comm parent, int group_size);
  void free();
};

// The MPI datatype and sum operation that carry `dtype`.
MPI_Datatype mpi_type(CommDtype dtype);
MPI_Op mpi_sum(CommDtype dtype);

void native_allreduce(const StreamComms& comms, CommDtype dtype, void* vector, std::uint64_t count, bool hierarchical);
// Rank-major blocks: rank r's block is piece r of `count` (sizes differ by at most one element).
void native_reduce_scatter(const StreamComms& comms, CommDtype dtype, void* vector, std::uint64_t count, void* scratch);
void native_allgather(const StreamComms& comms, CommDtype dtype, void* vector, std::uint64_t count);

// Rank r's block of a rank-major layout of `count` elements over `ranks` ranks: [first, first + size).
std::uint64_t block_first(std::uint64_t count, int ranks, int rank);
std::uint64_t block_size(std::uint64_t count, int ranks, int rank);

}  // namespace commsim::hw
