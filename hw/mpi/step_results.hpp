// How the MPI backend turns each rank's measured steps into the job's Result: per-step records of all ranks meet
// on rank 0 (a synchronous step is as long as its slowest rank; its breakdown is the mean over ranks) and go through
// the simulator's aggregation (step_metrics.hpp).
#pragma once

#include <vector>

#include "hw/mpi/rank_context.hpp"
#include "sim/result/step_metrics.hpp"

namespace commsim::hw {

// One measured step on one rank.
struct StepRecord {
  double seconds = 0, bytes_sent = 0;
  StepBreakdown breakdown;
};

// Collective over MPI_COMM_WORLD. On rank 0 fills run.result (backend "mpi", fidelity "measured") with `trace`
// (rank 0's first steps); every rank returns the job's check counts, `local` summed over ranks.
CheckCounts gather_results(const RankContext& context, const std::vector<StepRecord>& records, CheckCounts local,
                           const std::vector<TraceEvent>& trace, SimulationRun& run);

}  // namespace commsim::hw
