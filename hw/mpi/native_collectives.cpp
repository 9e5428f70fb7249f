#include "hw/mpi/native_collectives.hpp"

#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

#include "hw/common/dtype.hpp"
#include "hw/mpi/mpi_check.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {
namespace {

template <CommDtype D>
void sum_function(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(D, inout, in, static_cast<std::size_t>(*len));
}

int as_int(std::uint64_t count) {
  COMMSIM_CHECK(count <= static_cast<std::uint64_t>(INT_MAX), "a native collective of more than 2^31 elements");
  return static_cast<int>(count);
}

}  // namespace

StreamComms StreamComms::create(MPI_Comm parent, int group_size) {
  StreamComms c;
  COMMSIM_MPI_CHECK(MPI_Comm_dup(parent, &c.world));
  int rank = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(c.world, &rank));
  COMMSIM_MPI_CHECK(MPI_Comm_split(c.world, rank / group_size, rank, &c.group));
  COMMSIM_MPI_CHECK(MPI_Comm_split(c.world, rank % group_size == 0 ? 0 : MPI_UNDEFINED, rank, &c.leaders));
  return c;
}

void StreamComms::free() {
  for (MPI_Comm* comm : {&leaders, &group, &world})
    if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
}

MPI_Datatype mpi_type(CommDtype dtype) {
  switch (dtype) {
    case CommDtype::Fp32:
      return MPI_FLOAT;
    case CommDtype::Fp16:
    case CommDtype::Bf16:
      return MPI_UINT16_T;
    case CommDtype::Fp8:
      return MPI_UINT8_T;
  }
  return MPI_FLOAT;
}

MPI_Op mpi_sum(CommDtype dtype) {
  static MPI_Op ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static std::once_flag once;
  std::call_once(once, [] {
    COMMSIM_MPI_CHECK(MPI_Op_create(&sum_function<CommDtype::Fp16>, 1, &ops[0]));
    COMMSIM_MPI_CHECK(MPI_Op_create(&sum_function<CommDtype::Bf16>, 1, &ops[1]));
    COMMSIM_MPI_CHECK(MPI_Op_create(&sum_function<CommDtype::Fp8>, 1, &ops[2]));
  });
  switch (dtype) {
    case CommDtype::Fp32:
      return MPI_SUM;
    case CommDtype::Fp16:
      return ops[0];
    case CommDtype::Bf16:
      return ops[1];
    case CommDtype::Fp8:
      return ops[2];
  }
  return MPI_SUM;
}

std::uint64_t block_size(std::uint64_t count, int ranks, int rank) {
  const auto p = static_cast<std::uint64_t>(ranks), r = static_cast<std::uint64_t>(rank);
  return count / p + (r < count % p ? 1 : 0);
}
std::uint64_t block_first(std::uint64_t count, int ranks, int rank) {
  const auto p = static_cast<std::uint64_t>(ranks), r = static_cast<std::uint64_t>(rank);
  return r * (count / p) + std::min(r, count % p);
}

// Paddle's hierarchical allreduce with MPI's collectives: allreduce inside the group, allreduce among the group
// leaders, broadcast from the leader inside the group (the Plan's three phases, as the simulator's schedule).
void native_allreduce(const StreamComms& comms, CommDtype dtype, void* vector, std::uint64_t count, bool hierarchical) {
  const int n = as_int(count);
  if (!hierarchical) {
    COMMSIM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, vector, n, mpi_type(dtype), mpi_sum(dtype), comms.world));
    return;
  }
  COMMSIM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, vector, n, mpi_type(dtype), mpi_sum(dtype), comms.group));
  if (comms.leaders != MPI_COMM_NULL)
    COMMSIM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, vector, n, mpi_type(dtype), mpi_sum(dtype), comms.leaders));
  COMMSIM_MPI_CHECK(MPI_Bcast(vector, n, mpi_type(dtype), 0, comms.group));
}

void native_reduce_scatter(const StreamComms& comms, CommDtype dtype, void* vector, std::uint64_t count,
                           void* scratch) {
  int ranks = 0, rank = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_size(comms.world, &ranks));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comms.world, &rank));
  const std::size_t element = element_bytes(dtype);
  if (count % static_cast<std::uint64_t>(ranks) == 0) {
    COMMSIM_MPI_CHECK(
        MPI_Reduce_scatter_block(vector, scratch, as_int(count / ranks), mpi_type(dtype), mpi_sum(dtype), comms.world));
  } else {
    std::vector<int> counts(ranks);
    for (int r = 0; r < ranks; ++r) counts[r] = as_int(block_size(count, ranks, r));
    COMMSIM_MPI_CHECK(MPI_Reduce_scatter(vector, scratch, counts.data(), mpi_type(dtype), mpi_sum(dtype), comms.world));
  }
  std::memcpy(static_cast<std::byte*>(vector) + block_first(count, ranks, rank) * element, scratch,
              block_size(count, ranks, rank) * element);
}

void native_allgather(const StreamComms& comms, CommDtype dtype, void* vector, std::uint64_t count) {
  int ranks = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_size(comms.world, &ranks));
  std::vector<int> counts(ranks), displacements(ranks);
  for (int r = 0; r < ranks; ++r) {
    counts[r] = as_int(block_size(count, ranks, r));
    displacements[r] = as_int(block_first(count, ranks, r));
  }
  COMMSIM_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, vector, counts.data(), displacements.data(),
                                   mpi_type(dtype), comms.world));
}

}  // namespace commsim::hw
