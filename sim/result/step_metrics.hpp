// One aggregation from task intervals to a Result, shared by the simulator and both hardware backends:
//   task intervals of a step -> its breakdown (step_breakdown) -> the steady-state means and step time
//   (summarize_steps, from Plan::steady_from) -> the derived figures (finish_result).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"

namespace commsim {

// What a step's breakdown is made of: one interval on a stream, compute or not.
template <typename Time>
struct TaskInterval {
  int stream = 0;
  bool compute = false;
  Time start{}, end{};
};

// One step's breakdown: compute = the summed time of compute intervals; communication = the union of the other
// intervals (overlapping communication counted once); each stream's busy time.
struct StepBreakdown {
  double compute_s = 0, comm_s = 0;
  std::vector<double> stream_busy_s;
};

// `seconds` converts a Time difference (the simulator's picoseconds, the backends' seconds) to seconds; the union is
// taken in Time, so an integer clock stays exact.
template <typename Time, typename ToSeconds>
StepBreakdown step_breakdown(const std::vector<TaskInterval<Time>>& intervals, int streams, ToSeconds seconds) {
  StepBreakdown b;
  b.stream_busy_s.assign(static_cast<std::size_t>(streams + 1), 0.0);
  std::vector<std::pair<Time, Time>> comm;
  for (const TaskInterval<Time>& i : intervals) {
    const double d = seconds(i.end - i.start);
    b.stream_busy_s[static_cast<std::size_t>(i.stream)] += d;
    if (i.compute)
      b.compute_s += d;
    else
      comm.push_back({i.start, i.end});
  }
  std::sort(comm.begin(), comm.end());
  Time covered{}, reach{};
  for (auto [a, e] : comm) {
    if (e <= reach) continue;
    covered += e - std::max(a, reach);
    reach = e;
  }
  b.comm_s = seconds(covered);
  return b;
}

// The intervals of a step of `step`'s tasks, from their start and end times.
template <typename Time>
std::vector<TaskInterval<Time>> task_intervals(const StepPlan& step, const std::vector<Time>& start,
                                               const std::vector<Time>& end) {
  std::vector<TaskInterval<Time>> out;
  for (std::size_t i = 0; i < step.tasks.size(); ++i)
    out.push_back({step.tasks[i].stream, step.tasks[i].kind == TaskKind::Compute, start[i], end[i]});
  return out;
}

// The bytes a rank sends in a step, as the Plan prices them.
double plan_bytes_sent(const StepPlan& step);

// One step as measured or simulated: its time (the slowest rank's), its breakdown (one rank's, or the mean over
// ranks), the bytes a rank sent, and the spread of its time over repeats where it was repeated.
struct StepMeasure {
  double seconds = 0, spread_s = 0;
  StepBreakdown breakdown;
  double bytes_sent = 0;
};

// How the steady steps' times make the step time: their mean (the simulator; the NCCL backend, whose steps are each
// a median over repeats), or per step kind (the Plan's step_plan_of: Local SGD's local and averaging steps, DGC's
// sparse and dense ones) the median with half the interquartile range as spread, weighted by the kind's share of the
// steady steps (the MPI backend: robust to a noisy step, yet every kind counts as often as it runs; a plain median
// of Local SGD k = 4 would never see an averaging step).
enum class SteadyStatistic : std::uint8_t { Mean, KindMedian };

// A Result naming the plan's scenario, ranks and batch, for `backend` at `fidelity`.
Result plan_result(const Plan& plan, const std::string& backend, const std::string& fidelity);

// steps_s, steady_from (the Plan's), the step time and spread, the means per steady step of compute,
// communication, exposed communication (step time beyond compute), bytes and stream busy time; then finish_result.
void summarize_steps(const Plan& plan, const std::vector<StepMeasure>& steps, SteadyStatistic statistic, Result& r);

// Throughput, scaling efficiency and overlap ratio from the step time and breakdown.
void finish_result(const Plan& plan, Result& r);

}  // namespace commsim
