#include "hw/mpi/step_results.hpp"

#include <string>

#include "hw/mpi/mpi_check.hpp"

namespace commsim::hw {
namespace {

// Columns of one step's row: compute, communication, bytes sent, a spare 0, then each stream's busy time.
constexpr int kStreamColumn = 4;

// The notes of a measured Result: how it was measured, how its step time is read.
void add_notes(const RankContext& context, const CheckCounts& check, Result& r) {
  const Plan& plan = context.plan;
  const RunOptions& options = context.options;
  r.notes.push_back(
      "measured with Open MPI: GPU compute is emulated by waiting for each layer's scenario time (a GPU computes "
      "without the CPU)");
  r.notes.push_back(std::string("collectives: ") +
                    (options.impl == CollectiveImpl::Schedule
                         ? "the simulator's schedules, executed with MPI_Isend/MPI_Irecv and real reductions; DGC "
                           "pairs with its ring all-gather"
                         : "Open MPI's own (MPI_Allreduce, MPI_Reduce_scatter, MPI_Allgather; hierarchical over "
                           "the Plan's groups); DGC "
                           "pairs with MPI_Allgather"));
  r.notes.push_back("step time: per step kind the median of steps " + std::to_string(r.steady_from) + ".." +
                    std::to_string(plan.steps() - 1) +
                    " (slowest rank per step), weighted by the kind's share of those steps; spread = half the "
                    "interquartile range, weighted alike; " +
                    std::to_string(options.warmup) + " warm-up step(s) not counted");
  if (!plan.symmetric_ranks)
    r.notes.push_back("stragglers: every rank waits the plan's critical-rank compute factor of each step");
  if (!options.network.empty()) r.notes.push_back("network: " + options.network);
  if (options.check)
    r.notes.push_back("check: " + std::to_string(check.wrong_elements) + " wrong of " +
                      std::to_string(check.checked_elements) + " elements checked in " +
                      std::to_string(check.collectives) +
                      " collective results (verifiable inputs; timings include the checking)");
}

// The Result in the simulator's schema, from the slowest rank's step times and the ranks' summed breakdown rows.
void fill_result(const RankContext& context, const std::vector<double>& slowest, const std::vector<double>& sums,
                 int columns, const CheckCounts& check, const std::vector<TraceEvent>& trace, Result& r) {
  const Plan& plan = context.plan;
  const int ranks = context.ranks;
  r.scenario = plan.scenario_name;
  r.backend = "mpi";
  r.fidelity = "measured";
  r.ranks = plan.ranks;
  r.batch_per_gpu = plan.batch_per_gpu;
  // Each step as long as its slowest rank; its breakdown the mean over ranks.
  std::vector<StepMeasure> steps(slowest.size());
  for (std::size_t s = 0; s < slowest.size(); ++s) {
    const double* row = sums.data() + s * static_cast<std::size_t>(columns);
    steps[s].seconds = slowest[s];
    steps[s].breakdown = {row[0] / ranks, row[1] / ranks, {}};
    steps[s].bytes_sent = row[2] / ranks;
    for (int k = 0; k <= plan.streams; ++k) steps[s].breakdown.stream_busy_s.push_back(row[kStreamColumn + k] / ranks);
  }
  summarize_steps(plan, steps, SteadyStatistic::KindMedian, r);
  r.trace = trace;
  r.notes = plan.notes;
  add_notes(context, check, r);
}

}  // namespace

CheckCounts gather_results(const RankContext& context, const std::vector<StepRecord>& records, CheckCounts local,
                           const std::vector<TraceEvent>& trace, SimulationRun& run) {
  const int steps = static_cast<int>(records.size());
  const int columns = kStreamColumn + context.plan.streams + 1;
  std::vector<double> mine(static_cast<std::size_t>(steps) * columns), sums(mine.size());
  std::vector<double> seconds(steps), slowest(steps);
  for (int s = 0; s < steps; ++s) {
    const StepRecord& r = records[s];
    seconds[s] = r.seconds;
    double* row = mine.data() + static_cast<std::size_t>(s) * columns;
    row[0] = r.breakdown.compute_s;
    row[1] = r.breakdown.comm_s;
    row[2] = r.bytes_sent;
    row[3] = 0;
    for (int k = 0; k <= context.plan.streams; ++k) row[kStreamColumn + k] = r.breakdown.stream_busy_s[k];
  }
  // A synchronous step is as long as its slowest rank; the breakdown is the mean over ranks.
  COMMSIM_MPI_CHECK(MPI_Reduce(seconds.data(), slowest.data(), steps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  COMMSIM_MPI_CHECK(
      MPI_Reduce(mine.data(), sums.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
  std::uint64_t counts[3] = {local.wrong_elements, local.checked_elements, local.collectives}, total[3] = {0, 0, 0};
  COMMSIM_MPI_CHECK(MPI_Allreduce(counts, total, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
  const CheckCounts job{total[0], total[1], total[2]};
  if (context.rank == 0) fill_result(context, slowest, sums, columns, job, trace, run.result);
  return job;
}

}  // namespace commsim::hw
