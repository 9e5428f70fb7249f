// What each task of a step plan does on a rank of the MPI backend, read from the task's kind and purpose. Free of
// MPI, so the preparation is tested beside the NCCL backend's translation without either library running.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/common/plan_buffers.hpp"
#include "sim/plan/plan.hpp"

namespace commsim::hw {

enum class Work : std::uint8_t {
  Compute,       // wait the task's time (the GPU's compute, emulated)
  Cast,          // pack the collective `target` into its vector, cast to the comm dtype
  TopK,          // DGC: add the gradients to the residual and pack the top `kept` pairs of `target`
  Dense,         // a collective on the flat buffer's ranges; sums become averages
  SparseGather,  // DGC: all-gather every rank's pairs, then add them into the dense gradients
};

struct TaskWork {
  Work work = Work::Compute;
  int target = -1;              // Cast / TopK: the collective task it prepares
  bool prepared_early = false;  // Dense / SparseGather: a Cast or TopK task packs it
  Collective op = Collective::AllReduce;
  std::uint64_t elements = 0;                 // of the collective's vector (SparseGather: of the sparse gradients)
  std::vector<Range> ranges;                  // where the vector's elements live in the flat buffer, in order
  Purpose purpose = Purpose::DenseGradients;  // Dense / SparseGather
  Buffer buffer = Buffer::Gradients;          // buffer_of(purpose)
  double plan_bytes_sent = 0;                 // the plan's figure, used for native collectives
  std::uint64_t kept = 0;                     // SparseGather: pairs each rank sends
};

// The work of every task of `step`, in task order.
std::vector<TaskWork> task_work(const Plan& plan, const StepPlan& step, const GradientLayout& layout);

}  // namespace commsim::hw
