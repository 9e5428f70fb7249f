#include "sim/step/unrolled_steps.hpp"

#include "sim/core/error.hpp"

namespace commsim {

namespace {

// Tasks of all unrolled steps together; steps x tasks per step beyond this are refused, not swapped.
constexpr std::size_t kMaxUnrolledTasks = std::size_t{1} << 20;  // ~200 B each: a few hundred MB at most

// Per layer: the collectives of a step (offset `first` in the unrolled tasks) that carry its gradients.
std::vector<std::vector<int>> collectives_of_layers(const StepPlan& step, const Model& model, std::size_t first) {
  std::vector<std::vector<int>> of_layer(model.layers.size());
  for (std::size_t i = 0; i < step.tasks.size(); ++i) {
    const Task& t = step.tasks[i];
    if (t.kind != TaskKind::Collective) continue;
    std::vector<bool> seen(model.layers.size(), false);
    for (int tensor : t.tensors) {
      const int layer = model.tensors[static_cast<std::size_t>(tensor)].layer;
      if (!seen[static_cast<std::size_t>(layer)])
        of_layer[static_cast<std::size_t>(layer)].push_back(static_cast<int>(first + i));
      seen[static_cast<std::size_t>(layer)] = true;
    }
  }
  return of_layer;
}

}  // namespace

UnrolledSteps unroll_steps(const Plan& plan) {
  const int steps = plan.steps() + 1;
  std::size_t total = 0;
  for (int s = 0; s < steps; ++s) total += plan.step_plan(std::min(s, plan.steps() - 1)).tasks.size();
  if (total > kMaxUnrolledTasks)
    throw InputError(plan.scenario_file, "steps",
                     "priority forward_order simulates the steps as one timeline of " + std::to_string(total) +
                         " tasks, more than the " + std::to_string(kMaxUnrolledTasks) +
                         " the simulator keeps: fewer steps or larger partitions");
  UnrolledSteps u;
  std::vector<std::vector<int>> previous;  // the previous step's collectives per layer
  for (int s = 0; s < steps; ++s) {
    const bool extra = s == plan.steps();
    const StepPlan& step = plan.step_plan(extra ? s - 1 : s);
    const double factor = extra ? 1.0 : plan.compute_factor[static_cast<std::size_t>(s)];
    const std::size_t first = u.tasks.tasks.size();
    u.first_task.push_back(first);
    for (const Task& t : step.tasks) {
      Task copy = t;
      for (int& d : copy.deps) d += static_cast<int>(first);
      if (copy.prepares >= 0) copy.prepares += static_cast<int>(first);
      if (copy.kind == TaskKind::Compute) copy.seconds *= factor;
      if (copy.forward_layer >= 0 && !previous.empty())
        for (int c : previous[static_cast<std::size_t>(copy.forward_layer)]) copy.deps.push_back(c);
      u.tasks.tasks.push_back(std::move(copy));
      u.step_of.push_back(s);
      u.layer_of.push_back(t.stream > 0 ? earliest_layer(t, plan.model) : -1);
    }
    previous = collectives_of_layers(step, plan.model, first);
  }
  u.first_task.push_back(u.tasks.tasks.size());
  return u;
}

}  // namespace commsim
