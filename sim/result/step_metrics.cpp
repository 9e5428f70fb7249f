#include "sim/result/step_metrics.hpp"

#include <map>

#include "sim/core/statistics.hpp"

namespace commsim {

double plan_bytes_sent(const StepPlan& step) {
  double bytes = 0;
  for (const Task& t : step.tasks) bytes += t.bytes_sent_per_rank;
  return bytes;
}

Result plan_result(const Plan& plan, const std::string& backend, const std::string& fidelity) {
  Result r;
  r.scenario = plan.scenario_name;
  r.backend = backend;
  r.fidelity = fidelity;
  r.ranks = plan.ranks;
  r.batch_per_gpu = plan.batch_per_gpu;
  return r;
}

void summarize_steps(const Plan& plan, const std::vector<StepMeasure>& steps, SteadyStatistic statistic, Result& r) {
  r.steady_from = plan.steady_from;
  const double steady = static_cast<double>(steps.size()) - r.steady_from;
  r.stream_busy_s.assign(static_cast<std::size_t>(plan.streams + 1), 0.0);
  std::map<int, std::vector<double>> steady_by_kind;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const StepMeasure& m = steps[s];
    r.steps_s.push_back(m.seconds);
    if (static_cast<int>(s) < r.steady_from) continue;
    steady_by_kind[s < plan.step_plan_of.size() ? plan.step_plan_of[s] : 0].push_back(m.seconds);
    if (statistic == SteadyStatistic::Mean) {
      r.step_time_s += m.seconds / steady;
      r.step_time_spread_s += m.spread_s / steady;
    }
    r.compute_s += m.breakdown.compute_s / steady;
    r.comm_s += m.breakdown.comm_s / steady;
    r.exposed_comm_s += std::max(0.0, m.seconds - m.breakdown.compute_s) / steady;
    r.bytes_sent_per_rank += m.bytes_sent / steady;
    for (std::size_t k = 0; k < r.stream_busy_s.size() && k < m.breakdown.stream_busy_s.size(); ++k)
      r.stream_busy_s[k] += m.breakdown.stream_busy_s[k] / steady;
  }
  if (statistic == SteadyStatistic::KindMedian)
    for (const auto& [kind, times] : steady_by_kind) {
      const double share = static_cast<double>(times.size()) / steady;
      r.step_time_s += share * median(times);
      r.step_time_spread_s += share * half_interquartile_range(times);
    }
  finish_result(plan, r);
}

void finish_result(const Plan& plan, Result& r) {
  r.throughput_samples_s = r.step_time_s > 0 ? plan.ranks * static_cast<double>(plan.batch_per_gpu) / r.step_time_s : 0;
  r.scaling_efficiency = r.step_time_s > 0 ? plan.compute_s / r.step_time_s : 0;
  r.overlap_ratio = r.comm_s > 0 ? std::clamp(1 - r.exposed_comm_s / r.comm_s, 0.0, 1.0) : 0;
}

}  // namespace commsim
