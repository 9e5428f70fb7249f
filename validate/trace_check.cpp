#include "validate/trace_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace commsim::validate {
namespace {

// The predicted collectives of each traced step, in start order: durations and sizes in elements.
struct PredictedCollective {
  double start_s, duration_s;
  std::uint64_t elements;
};

// A collective as the trace times it: its task (record_param_comms spans); with NCCL kernels, its kernel, the
// transfers without the fixed costs around them, which the kernel spans do not hold either; with a process group's
// work spans, from when it was issued (which may wait for its stream) to its end.
enum class Timed { Task, Kernel, SinceIssued };
std::vector<std::vector<PredictedCollective>> predicted_collectives(const SimulationRun& run, Timed timed) {
  const Result& r = run.result;
  const Plan& plan = run.plan;
  const auto elem_bytes = static_cast<Bytes>(dtype_bytes(plan.comm_dtype));
  std::vector<std::vector<PredictedCollective>> steps;
  std::size_t next = 0;
  for (std::size_t s = 0; s < r.steps_s.size() && next < r.trace.size(); ++s) {
    const StepPlan& kind = plan.step_plans[static_cast<std::size_t>(plan.step_plan_of[s])];
    std::vector<PredictedCollective> step;
    for (std::size_t i = 0; i < kind.tasks.size() && next < r.trace.size(); ++i, ++next)
      if (kind.tasks[i].kind == TaskKind::Collective) {
        const TraceEvent& e = r.trace[next];
        double start_s = e.start_s, end_s = e.start_s + e.duration_s;
        if (timed == Timed::Kernel && e.kernel_start_s >= 0) start_s = e.kernel_start_s, end_s = e.kernel_end_s;
        if (timed == Timed::SinceIssued && e.issued_s >= 0) start_s = e.issued_s;
        step.push_back({start_s, end_s - start_s, kind.tasks[i].collective.bytes / elem_bytes});
      }
    // The trace's order: by start, the longer first at a tie (as read_kineto_trace orders spans), then plan order.
    std::stable_sort(step.begin(), step.end(), [](auto& a, auto& b) {
      return a.start_s != b.start_s ? a.start_s < b.start_s : a.start_s + a.duration_s > b.start_s + b.duration_s;
    });
    steps.push_back(std::move(step));
  }
  return steps;
}

// The predicted mean of the steps the trace holds (ProfilerStep#N is the N-th step since the profiler started, which
// the scenario counts from 0 too): a trace of Local SGD's local steps compares with those, not with the steady
// state's mix of local and averaging steps. Without step numbers, or beyond the scenario's steps, the steady state.
double predicted_traced_steps_s(const KinetoTrace& trace, const SimulationRun& run, std::vector<std::string>& notes) {
  double sum = 0;
  for (const TracedStep& s : trace.steps) {
    const std::size_t at = s.name.rfind('#');
    const std::string digits = at == std::string::npos ? "" : s.name.substr(at + 1);
    const auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
    if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), digit) ||
        std::stoul(digits) >= run.result.steps_s.size()) {
      notes.push_back("step time predicted as the steady-state mean: " + s.name + " is not a step of the scenario's " +
                      std::to_string(run.result.steps_s.size()));
      return run.result.step_time_s;
    }
    sum += run.result.steps_s[std::stoul(digits)];
  }
  return trace.steps.empty() ? run.result.step_time_s : sum / static_cast<double>(trace.steps.size());
}

}  // namespace

TraceComparison compare_with_trace(const KinetoTrace& trace, const SimulationRun& run) {
  TraceComparison c;
  c.rows.push_back({"step time", trace.mean_step_s(), predicted_traced_steps_s(trace, run, c.notes)});
  c.rows.push_back({"exposed communication", trace.mean_exposed_comm_s(), run.result.exposed_comm_s});
  const auto predicted = predicted_collectives(run, trace.collective_source == "nccl kernels" ? Timed::Kernel
                                                    : trace.collective_source == "work spans" ? Timed::SinceIssued
                                                                                              : Timed::Task);
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
    std::snprintf(line, sizeof line, "%-34s %12.3f %12.3f %8.1f%%\n", r.what.c_str(), r.measured_s * 1e3,
                  r.predicted_s * 1e3, 100 * r.error());
    out += line;
  }
  for (const std::string& n : comparison.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace commsim::validate
