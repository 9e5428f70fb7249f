// TaskExecutor's dense collectives and Local SGD's update (task_executor.hpp).
#include <algorithm>

#include "hw/common/dtype.hpp"
#include "hw/mpi/schedule_executor.hpp"
#include "hw/mpi/task_executor.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {

void TaskExecutor::pack(const PreparedTask& p, Stream& stream, std::uint64_t salt) {
  float* data = buffers_.source(p.buffer);
  if (context_.options.check && p.purpose != Purpose::ParameterAverage) {
    const Verifiable v = context_.verifiable();
    std::uint64_t j = 0;
    for (const Range& r : p.ranges)
      for (std::uint64_t e = 0; e < r.count; ++e) data[r.offset + e] = v.value(context_.rank, j++, salt);
  }
  const std::size_t element = element_bytes(context_.dtype);
  std::uint64_t at = 0;
  for (const Range& r : p.ranges) {
    cast_from_float(context_.dtype, data + r.offset, stream.vector.data() + at * element, r.count);
    at += r.count;
  }
}

void TaskExecutor::communicate(const PreparedTask& p, Stream& stream) {
  if (p.compiled) {
    stream.bytes_sent += static_cast<double>(execute_program(p.compiled->program, stream.comms.world, context_.dtype,
                                                             stream.vector.data(), stream.staging.data()));
    return;
  }
  switch (p.op) {
    case Collective::AllReduce:
      native_allreduce(stream.comms, context_.dtype, stream.vector.data(), p.elements, p.hierarchical);
      break;
    case Collective::ReduceScatter:
      native_reduce_scatter(stream.comms, context_.dtype, stream.vector.data(), p.elements, stream.staging.data());
      break;
    case Collective::AllGather:
      native_allgather(stream.comms, context_.dtype, stream.vector.data(), p.elements);
      break;
    default:
      COMMSIM_CHECK(false, "the plan asks for a collective the MPI backend does not run on its own");
  }
  stream.bytes_sent += p.plan_bytes_sent;
}

// This rank's ranges of the result: everything for an allreduce or allgather; its block of a reduce-scatter.
std::vector<Range> TaskExecutor::result_ranges(const PreparedTask& p) const {
  if (p.op != Collective::ReduceScatter) return {{0, p.elements}};
  if (p.compiled) return p.compiled->program.reduced;
  return {
      {block_first(p.elements, context_.ranks, context_.rank), block_size(p.elements, context_.ranks, context_.rank)}};
}

// The result back into the gradients, divided by the ranks (the average). Timed runs do it in one pass over this
// rank's result ranges, reading the communication vector and writing the gradients once (2 memory passes: the
// commsim_mpi framework of libraries/overheads.json prices exactly these); a checked run first widens the whole
// vector into stream.floats to check it, then copies from there.
void TaskExecutor::unpack(const PreparedTask& p, Stream& stream, std::uint64_t salt) {
  const std::vector<Range> mine = result_ranges(p);
  // Divided, not multiplied by 1/ranks: an exact sum of ranks x an average gives the average back exactly.
  const float divisor = p.op == Collective::AllGather ? 1.0f : static_cast<float>(context_.ranks);
  const bool checked = context_.options.check || corrupt_;
  const float* result = nullptr;
  if (checked) {
    float* widened = stream.floats.data();
    cast_to_float(context_.dtype, stream.vector.data(), widened, p.elements);
    if (corrupt_ && p.elements > 0 && !corrupted_.exchange(true)) widened[0] += 1;  // tests: one wrong element
    if (context_.options.check) check_dense(p, widened, mine, salt);
    result = widened;
  }
  const std::size_t element = element_bytes(context_.dtype);
  float* data = buffers_.source(p.buffer);
  // Walk the flat ranges and the vector together; copy back only this rank's result ranges.
  for (const Range& want : mine) {
    std::uint64_t at = 0;
    for (const Range& r : p.ranges) {
      const std::uint64_t lo = std::max(at, want.offset), hi = std::min(at + r.count, want.offset + want.count);
      if (lo < hi) {
        float* out = data + r.offset + (lo - at);
        if (checked)
          cast_to_float_divided(CommDtype::Fp32, result + lo, out, hi - lo, divisor);
        else
          cast_to_float_divided(context_.dtype, stream.vector.data() + lo * element, out, hi - lo, divisor);
      }
      at += r.count;
    }
  }
}

void TaskExecutor::check_dense(const PreparedTask& p, const float* result, const std::vector<Range>& mine,
                               std::uint64_t salt) {
  if (p.purpose == Purpose::ParameterAverage) return check_parameter_average(p, result);
  const Verifiable v = context_.verifiable();
  std::uint64_t wrong = 0, checked = 0;
  for (const Range& want : mine)
    for (std::uint64_t j = want.offset; j < want.offset + want.count; ++j) {
      double expected = 0;
      if (p.op == Collective::AllGather) {
        expected = v.value(owner(p, j), j, salt);
      } else {
        expected = v.sum(j, salt);
      }
      wrong += static_cast<double>(result[j]) != expected;
      ++checked;
    }
  count_check(wrong, checked);
}

// Sum over ranks of the parameters: each rank holds A - lr x sum over the window of (ranks x value(r, j, s)), A the
// last average (the same everywhere). This rank's own parameters give A back.
void TaskExecutor::check_parameter_average(const PreparedTask& p, const float* result) {
  const Verifiable v = context_.verifiable();
  const int ranks = context_.ranks;
  std::uint64_t wrong = 0, checked = 0;
  std::uint64_t j = 0;
  for (const Range& r : p.ranges)
    for (std::uint64_t e = 0; e < r.count; ++e, ++j) {
      const std::uint64_t flat = r.offset + e;
      double own_steps = 0, all_steps = 0;
      for (std::uint64_t s : buffers_.window_salts) {
        own_steps += static_cast<double>(ranks) * v.value(context_.rank, flat, s);
        all_steps += static_cast<double>(ranks) * v.sum(flat, s);
      }
      const double common = buffers_.parameters[flat] + kLocalSgdLearningRate * own_steps;
      const double expected = ranks * common - kLocalSgdLearningRate * all_steps;
      wrong += static_cast<double>(result[j]) != expected;
      ++checked;
    }
  count_check(wrong, checked);
}

// The rank whose input fills element j of an allgather.
int TaskExecutor::owner(const PreparedTask& p, std::uint64_t j) const {
  const int ranks = context_.ranks;
  if (!p.compiled) {
    for (int r = 0; r < ranks; ++r)
      if (j < block_first(p.elements, ranks, r) + block_size(p.elements, ranks, r)) return r;
    return ranks - 1;
  }
  for (int r = 0; r < ranks; ++r)
    for (const Range& range : p.compiled->contributed[r])
      if (j >= range.offset && j < range.offset + range.count) return r;
  return -1;
}

void TaskExecutor::count_check(std::uint64_t wrong, std::uint64_t checked) {
  wrong_ += wrong;
  checked_ += checked;
  ++collectives_checked_;
}

void TaskExecutor::local_update(std::uint64_t salt) {
  std::vector<float>& gradients = buffers_.gradients;
  std::vector<float>& parameters = buffers_.parameters;
  if (context_.options.check) {
    const Verifiable v = context_.verifiable();
    for (std::size_t j = 0; j < gradients.size(); ++j)
      gradients[j] = static_cast<float>(context_.ranks) * v.value(context_.rank, j, salt);
    buffers_.window_salts.push_back(salt);
  }
  for (std::size_t j = 0; j < parameters.size(); ++j) parameters[j] -= kLocalSgdLearningRate * gradients[j];
}

}  // namespace commsim::hw
