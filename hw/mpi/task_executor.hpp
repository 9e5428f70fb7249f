// What a rank does for each kind of communication task of the MPI backend, on real data: a dense collective (pack
// to the comm dtype, communicate, unpack as an average), DGC (top-k selection, the gather of every rank's pairs and
// their sparse accumulation) and Local SGD's own update. With --check every result is compared element by element
// with what verifiable inputs must give. Called from several stream threads at once: each task touches its own
// ranges, and the check counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "hw/mpi/mpi_backend.hpp"
#include "hw/mpi/rank_buffers.hpp"

namespace commsim::hw {

class TaskExecutor {
 public:
  // `corrupt`: the test hook COMMSIM_TEST_CORRUPT_RANK chose this rank.
  TaskExecutor(const RankContext& context, RankBuffers& buffers, bool corrupt)
      : context_(context), buffers_(buffers), corrupt_(corrupt) {}

  // ---- dense collectives (dense_task.cpp) ----
  // Copies the task's tensors into the stream's vector, cast to the communication dtype. With --check the
  // gradients first get verifiable values: element j of the vector holds value(rank, j, salt).
  void pack(const PreparedTask& p, Stream& stream, std::uint64_t salt);
  // The collective itself: the simulator's schedule, or Open MPI's collective.
  void communicate(const PreparedTask& p, Stream& stream);
  // Reads the result back to fp32, checks it, and writes it where it came from: sums become averages (DDP divides
  // by the ranks, Local SGD averages parameters); an allgather's blocks are copied as they are.
  void unpack(const PreparedTask& p, Stream& stream, std::uint64_t salt);
  // Local SGD: every rank takes its own step, parameters -= lr x gradients. With --check the gradients are
  // ranks x value(rank, j, salt), so that the average over ranks stays an exact multiple of lr.
  void local_update(std::uint64_t salt);

  // ---- DGC (sparse_gather_task.cpp) ----
  // Adds the gradients to the residual, selects the top-k of it, packs (value in the comm dtype, int32 index)
  // pairs into the stream's vector and clears what was sent from the residual.
  void select_top_k(const PreparedTask& p, Stream& stream, std::uint64_t salt);
  // The all-gather of every rank's pairs, then the real sparse accumulation into a dense gradient, averaged.
  void gather_sparse(const PreparedTask& p, Stream& stream);

  // This rank's check counts so far.
  CheckCounts counts() const { return {wrong_, checked_, collectives_checked_}; }

 private:
  std::vector<Range> result_ranges(const PreparedTask& p) const;
  void check_dense(const PreparedTask& p, const float* result, const std::vector<Range>& mine, std::uint64_t salt);
  void check_parameter_average(const PreparedTask& p, const float* result);
  int owner(const PreparedTask& p, std::uint64_t j) const;
  void expect_sparse(const PreparedTask& p, std::uint64_t salt);
  void count_check(std::uint64_t wrong, std::uint64_t checked);

  const RankContext& context_;
  RankBuffers& buffers_;
  bool corrupt_ = false;
  std::atomic<bool> corrupted_{false};
  std::atomic<std::uint64_t> wrong_{0}, checked_{0}, collectives_checked_{0};
};

}  // namespace commsim::hw
