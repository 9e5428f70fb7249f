// What every part of one rank's run of the MPI backend reads: the Plan, this rank's place in the job, and the run's
// options. The parts (prepared_tasks, rank_buffers, task_executor, step_results) each own one concern and share it.
#pragma once

#include <cstdint>

#include "hw/common/verifiable.hpp"
#include "hw/mpi/mpi_backend.hpp"

namespace commsim::hw {

// Local SGD's step size: a power of two, so updates of integer check values stay exact.
constexpr float kLocalSgdLearningRate = 1.0f / 16;

struct RankContext {
  const Plan& plan;
  const Topology& topology;
  const RunOptions& options;
  int rank = 0, ranks = 1;
  CommDtype dtype = CommDtype::Fp32;
  int total_steps = 0;  // warm-up and measured steps

  // The verifiable inputs of --check, bounded for what a run adds up.
  Verifiable verifiable() const {
    Verifiable v{ranks, dtype, 1};
    // Local SGD sums ranks x (p x a gradient) per step over the whole run; DGC residuals add up to a run's steps.
    if (plan.local_sgd) v.accumulate = ranks * total_steps;
    if (plan.dgc) v.accumulate = total_steps;
    return v;
  }
};

}  // namespace commsim::hw
