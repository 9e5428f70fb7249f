// TaskExecutor's DGC tasks (task_executor.hpp): top-k selection, the gather of every rank's (value, index) pairs
// and their sparse accumulation.
#include <climits>
#include <cstring>

#include "hw/common/dgc.hpp"
#include "hw/common/dtype.hpp"
#include "hw/mpi/mpi_check.hpp"
#include "hw/mpi/schedule_executor.hpp"
#include "hw/mpi/task_executor.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {

void TaskExecutor::select_top_k(const PreparedTask& p, Stream& stream, std::uint64_t salt) {
  std::vector<float>& residual = buffers_.residuals[p.residual];
  std::vector<float>& gradients = buffers_.gradients;
  const Verifiable v = context_.verifiable();
  std::uint64_t j = 0;
  for (const Range& r : p.ranges)
    for (std::uint64_t e = 0; e < r.count; ++e, ++j) {
      if (context_.options.check) gradients[r.offset + e] = v.value(context_.rank, j, salt);
      residual[j] += gradients[r.offset + e];
    }
  const std::vector<std::uint32_t> chosen = top_k_indices(residual.data(), residual.size(), p.kept);
  std::vector<float> values(chosen.size());
  take_chosen(residual.data(), chosen, values.data());
  const std::size_t element = element_bytes(context_.dtype);
  cast_from_float(context_.dtype, values.data(), stream.vector.data(), values.size());
  std::memcpy(stream.vector.data() + chosen.size() * element, chosen.data(), chosen.size() * sizeof(std::uint32_t));
  if (context_.options.check) expect_sparse(p, salt);
}

// --check: every rank replays every rank's residual and selection (the inputs are known), so it knows the exact
// sparse sum it must receive, added in the same rank order as the real accumulation.
void TaskExecutor::expect_sparse(const PreparedTask& p, std::uint64_t salt) {
  const Verifiable v = context_.verifiable();
  std::vector<float>& expected = buffers_.expected_sparse[p.residual];
  expected.assign(p.elements, 0.0f);
  for (int r = 0; r < context_.ranks; ++r) {
    std::vector<float>& shadow = buffers_.shadows[p.residual][r];
    for (std::uint64_t j = 0; j < p.elements; ++j) shadow[j] += v.value(r, j, salt);
    for (std::uint32_t j : top_k_indices(shadow.data(), shadow.size(), p.kept)) {
      expected[j] += round_to(context_.dtype, shadow[j]);
      shadow[j] = 0;
    }
  }
}

void TaskExecutor::gather_sparse(const PreparedTask& p, Stream& stream) {
  const CommDtype dtype = context_.dtype;
  const int ranks = context_.ranks;
  const std::size_t element = element_bytes(dtype);
  const std::size_t pair_bytes = p.kept * (element + sizeof(std::uint32_t));
  COMMSIM_CHECK(pair_bytes <= static_cast<std::size_t>(INT32_MAX), "DGC pairs of more than 2 GiB");
  // Where rank r's pairs land: block r with MPI_Allgather, the block the ring gives r's position with the schedule.
  auto block_of = [&](int r) {
    return stream.staging.data() +
           (p.compiled ? p.compiled->contributed[r].front().offset : static_cast<std::size_t>(r) * pair_bytes);
  };
  if (p.compiled) {  // the plan's ring schedule, in place: this rank's pairs go to its block first
    std::memcpy(block_of(context_.rank), stream.vector.data(), pair_bytes);
    stream.bytes_sent += static_cast<double>(
        execute_program(p.compiled->program, stream.comms.world, CommDtype::Fp8, stream.staging.data(), nullptr));
  } else {
    COMMSIM_MPI_CHECK(MPI_Allgather(stream.vector.data(), static_cast<int>(pair_bytes), MPI_BYTE, stream.staging.data(),
                                    static_cast<int>(pair_bytes), MPI_BYTE, stream.comms.world));
    stream.bytes_sent += p.plan_bytes_sent;
  }
  float* dense = stream.floats.data();
  std::fill(dense, dense + p.elements, 0.0f);
  std::vector<float> values(p.kept);
  for (int r = 0; r < ranks; ++r) {
    const std::byte* block = block_of(r);
    cast_to_float(dtype, block, values.data(), p.kept);
    std::vector<std::uint32_t> indices(p.kept);
    std::memcpy(indices.data(), block + p.kept * element, p.kept * sizeof(std::uint32_t));
    accumulate_sparse(dense, values.data(), indices.data(), p.kept);
  }
  if (context_.options.check) {
    const std::vector<float>& expected = buffers_.expected_sparse[p.residual];
    std::uint64_t wrong = 0;
    for (std::uint64_t j = 0; j < p.elements; ++j) wrong += dense[j] != expected[j];
    count_check(wrong, p.elements);
  }
  std::uint64_t j = 0;
  for (const Range& r : p.ranges)
    for (std::uint64_t e = 0; e < r.count; ++e, ++j)
      buffers_.gradients[r.offset + e] = dense[j] / static_cast<float>(ranks);
}

}  // namespace commsim::hw
