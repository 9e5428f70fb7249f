// The step schedules of Paddle's DGC and (adaptive) Local SGD, computed as Paddle computes them, and the step from
// which a run's steps repeat (the steady state). Step numbers here are commsim's, 0-based; the Paddle counters they
// correspond to are named in schedules.cpp beside each formula.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace commsim {

// DGC's sparsity at `step`; 0 for a dense step (before rampup_begin_step).
double dgc_sparsity(const Dgc& dgc, int step);
// The first step that uses the last sparsity of the list (from then on every step is the same).
int dgc_final_sparsity_step(const Dgc& dgc);

// Adaptive Local SGD's next interval when it averages at `step`, from the learning rate and loss at that step:
// ceil(sqrt(lr_0 * loss / (lr * loss_0) * init_k_steps)) clamped to [1, 16].
int adaptive_k(const LocalSgd& l, int step);

// For each of `steps` steps, whether Local SGD averages the parameters after it (Paddle's `communicate`).
std::vector<bool> localsgd_averaging_steps(const LocalSgd& l, int steps);

// The first step of the steady state: DGC at its final sparsity, Local SGD past begin_step (plain) or past its first
// dynamically chosen interval (adaptive; `steps` when none is within `steps`). It may lie beyond the run.
int first_steady_step(const Strategy& strategy, int steps);
// The steps to run for `steps` asked: with plain Local SGD whose begin_step is within them, rounded up so that the
// steady state (from begin_step) holds whole k-step periods: a mean over part of a period counts its averaging step
// too often or never (k = 16 in 12 steps from step 0 would price no averaging at all). Otherwise `steps`. It may
// exceed what a run may have (kMaxSteps), which the plan refuses.
std::int64_t whole_period_steps(const Strategy& strategy, int steps);
// The first step counted in the steady-state mean: first_steady_step, or 0 when that is not within `steps` (the
// mean is then over every step, and the plan's notes say the steady state was not reached).
int steady_state_start(const Strategy& strategy, int steps);

}  // namespace commsim
