// Under strategy.priority forward_order the steps of a run are one timeline, as ByteScheduler runs them (Peng et al.,
// SOSP 2019, sec. 3.2 "crossing the global barrier"): step k+1's forward of layer i waits for the collectives of
// step k that carry layer i's gradients (and the layer's update, which the Plan does not price), not for all of
// step k. The simulator runs the steps unrolled into one task graph (step_simulator.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "sim/plan/plan.hpp"

namespace commsim {

struct UnrolledSteps {
  // The run's steps, then one step more, so that the last step's end (the next forward's start) is known; each
  // step's compute is scaled by its straggler factor.
  StepPlan tasks;
  std::vector<std::size_t> first_task;  // per unrolled step: its first task (its first forward); then tasks.size()
  std::vector<int> step_of;             // per task: its step
  std::vector<int> layer_of;            // per task off the compute stream: the earliest layer it carries, else -1
};

// Throws InputError naming `steps` when the unrolled graph would exceed the tasks the simulator keeps.
UnrolledSteps unroll_steps(const Plan& plan);

}  // namespace commsim
