#include "validate/trace_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace commsim::validate {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The predicted collectives of each traced step, in start order: durations and sizes in elements.
struct PredictedCollective {
  double start_s, duration_s;
  std::uint64_t elements;
};

// A collective as the trace times it: its task (record_param_comms spans); with NCCL kernels, its kernel, the
// transfers without the fixed costs around them, which the kernel spans do not hold either; with a process group's
// work spans, from when it was issued (which may wait for its stream) to its end.
enum class Timed { Task, Kernel, SinceIssued };

// The prediction's events of step `step` (the simulator names each event's step and task), in task order.
std::vector<const TraceEvent*> events_of(const SimulationRun& run, int step) {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : run.result.trace)
    if (e.step == step && e.task >= 0 && (out.empty() || e.rank == out.front()->rank)) out.push_back(&e);
  return out;
}

// The step numbers of the traced steps (ProfilerStep#N is the N-th step since the profiler started, which the
// scenario counts from 0 too); empty, with a note, where one is not a step of the scenario's.
std::vector<int> traced_step_numbers(const KinetoTrace& trace, const SimulationRun& run,
                                     std::vector<std::string>& notes) {
  std::vector<int> numbers;
  for (const TracedStep& s : trace.steps) {
    const std::optional<int> n = s.number();
    if (!n || static_cast<std::size_t>(*n) >= run.result.steps_s.size()) {
      notes.push_back("predicted as the steady state: " + s.name + " is not a step of the scenario's " +
                      std::to_string(run.result.steps_s.size()));
      return {};
    }
    numbers.push_back(*n);
  }
  return numbers;
}

// A traced step's collectives as the trace reads them: those issued from its first backward op on (the reader sets
// the earlier ones apart, as no gradients: DDP's broadcasts of buffers, sharded training's gathers of parameters).
std::vector<PredictedCollective> predicted_collectives(const SimulationRun& run, int step, Timed timed) {
  const StepPlan& kind = run.plan.step_plan(step);
  const auto elem_bytes = static_cast<Bytes>(dtype_bytes(run.plan.comm_dtype));
  const std::vector<const TraceEvent*> events = events_of(run, step);
  double backward_start_s = -1;
  for (const TraceEvent* e : events) {
    const Task& t = kind.tasks[static_cast<std::size_t>(e->task)];
    if (t.kind == TaskKind::Compute && t.label.rfind("bwd ", 0) == 0 &&
        (backward_start_s < 0 || e->start_s < backward_start_s))
      backward_start_s = e->start_s;
  }
  std::vector<PredictedCollective> out;
  for (const TraceEvent* e : events) {
    const Task& t = kind.tasks[static_cast<std::size_t>(e->task)];
    if (t.kind != TaskKind::Collective) continue;
    const double issued_s = e->issued_s >= 0 ? e->issued_s : e->start_s;
    if (backward_start_s >= 0 && issued_s < backward_start_s) continue;
    double start_s = e->start_s, end_s = e->start_s + e->duration_s;
    if (timed == Timed::Kernel && e->kernel_start_s >= 0) start_s = e->kernel_start_s, end_s = e->kernel_end_s;
    if (timed == Timed::SinceIssued) start_s = issued_s;
    out.push_back({start_s, end_s - start_s, t.collective.bytes / elem_bytes});
  }
  // The trace's order: by start, the longer first at a tie (as read_kineto_trace orders spans), then plan order.
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) {
    return a.start_s != b.start_s ? a.start_s < b.start_s : a.start_s + a.duration_s > b.start_s + b.duration_s;
  });
  return out;
}

// A predicted step's communication beyond compute, as the trace counts compute: on a GPU every kernel but NCCL's
// (the union of the other tasks' intervals: casts and DGC's work are kernels too), else the compute ops' time
// (Result's definition, compute summed).
double predicted_exposed_s(const SimulationRun& run, int step, bool gpu) {
  const StepPlan& kind = run.plan.step_plan(step);
  std::vector<std::pair<double, double>> busy;
  double compute_s = 0;
  for (const TraceEvent* e : events_of(run, step)) {
    const Task& t = kind.tasks[static_cast<std::size_t>(e->task)];
    if (t.kind == TaskKind::Compute) compute_s += e->duration_s;
    if (t.kind != TaskKind::Collective) busy.push_back({e->start_s, e->start_s + e->duration_s});
  }
  if (gpu) compute_s = covered_s(std::move(busy), -kInfinity, kInfinity);
  return std::max(0.0, run.result.steps_s[static_cast<std::size_t>(step)] - compute_s);
}

}  // namespace

TraceSelection trace_selection_for(const KinetoTrace& trace) {
  TraceSelection selection;
  std::optional<int> first, last;
  for (const TracedStep& s : trace.steps) {
    const std::optional<int> n = s.number();
    if (!n) return {};
    first = std::min(first.value_or(*n), *n);
    last = std::max(last.value_or(*n), *n);
  }
  if (first) selection.first_step = *first, selection.last_step = *last;
  return selection;
}

TraceComparison compare_with_trace(const KinetoTrace& trace, const SimulationRun& run) {
  TraceComparison c;
  const std::vector<int> numbers = traced_step_numbers(trace, run, c.notes);
  // Every traced step's prediction needs its events: the run must trace those steps (trace_selection_for).
  const bool have_events = !numbers.empty() && std::all_of(numbers.begin(), numbers.end(),
                                                           [&](int n) { return !events_of(run, n).empty(); });
  double step_s = 0, exposed_s = 0;
  for (int n : numbers) {
    step_s += run.result.steps_s[static_cast<std::size_t>(n)] / static_cast<double>(numbers.size());
    if (have_events)
      exposed_s += predicted_exposed_s(run, n, trace.compute_on_gpu) / static_cast<double>(numbers.size());
  }
  c.rows.push_back({"step time", trace.mean_step_s(), numbers.empty() ? run.result.step_time_s : step_s});
  c.rows.push_back(
      {"exposed communication", trace.mean_exposed_comm_s(), have_events ? exposed_s : run.result.exposed_comm_s});
  const Timed timed = trace.collective_source == CollectiveSource::NcclKernels ? Timed::Kernel
                      : trace.collective_source == CollectiveSource::WorkSpans ? Timed::SinceIssued
                                                                               : Timed::Task;
  std::vector<std::vector<PredictedCollective>> predicted;
  for (int n : have_events ? numbers : std::vector<int>{}) predicted.push_back(predicted_collectives(run, n, timed));
  const std::size_t measured_count = trace.collectives_per_step();
  const std::size_t predicted_count = predicted.empty() ? 0 : predicted.front().size();
  if (measured_count != predicted_count)
    c.notes.push_back("the trace has " + std::to_string(measured_count) + " collectives per step, the prediction " +
                      std::to_string(predicted_count) + ": compared in start order up to the fewer");
  for (std::size_t k = 0; k < std::min(measured_count, predicted_count); ++k) {
    double sum = 0;
    int n = 0;
    for (const auto& step : predicted)
      if (k < step.size()) sum += step[k].duration_s, ++n;
    std::uint64_t first_elements = 0;
    std::size_t seen = 0;
    for (const TracedCollective& t : trace.collectives)
      if (t.step == 0 && seen++ == k) first_elements = t.elements;
    const std::uint64_t predicted_elements = predicted.front()[k].elements;
    if (first_elements != 0 && first_elements != predicted_elements)
      c.notes.push_back("collective " + std::to_string(k) + ": " + std::to_string(first_elements) +
                        " elements traced, " + std::to_string(predicted_elements) + " predicted");
    const std::string size = first_elements ? std::to_string(first_elements) + " elements" : "size not traced";
    c.rows.push_back({"collective " + std::to_string(k) + " (" + size + ")", trace.mean_collective_s(k), sum / n});
  }
  // On a GPU, step minus compute is communication only if the host kept the GPU fed: the time neither compute nor a
  // collective covers is the GPU waiting for launches (eager frameworks, the profiler's own overhead), which no
  // prediction has.
  if (trace.compute_on_gpu && !trace.steps.empty()) {
    double idle_s = 0;
    for (const TracedStep& s : trace.steps)
      idle_s += (s.duration_s - s.busy_s) / static_cast<double>(trace.steps.size());
    if (idle_s > 0.1 * trace.mean_step_s()) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "the GPU idles %.3f ms per step (%.0f %% of the step) outside its compute and the traced "
                    "collectives: the host did not keep it fed (launches, Python, the profiler itself); the "
                    "prediction has no such time",
                    idle_s * 1e3, 100 * idle_s / trace.mean_step_s());
      c.notes.push_back(line);
    }
  }
  return c;
}

std::string trace_table(const TraceComparison& comparison) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %12s %12s %9s\n", "", "traced (ms)", "predicted", "error");
  out += line;
  for (const TraceRow& r : comparison.rows) {
    const double error = r.error();
    if (std::isnan(error))
      std::snprintf(line, sizeof line, "%-34s %12.3f %12.3f %9s\n", r.what.c_str(), r.measured_s * 1e3,
                    r.predicted_s * 1e3, "n/a");
    else
      std::snprintf(line, sizeof line, "%-34s %12.3f %12.3f %8.1f%%\n", r.what.c_str(), r.measured_s * 1e3,
                    r.predicted_s * 1e3, 100 * error);
    out += line;
  }
  for (const std::string& n : comparison.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace commsim::validate
