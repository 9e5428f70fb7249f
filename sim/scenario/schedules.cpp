// Sources (PaddlePaddle/Paddle, read at the commits named; line numbers are those of that commit):
//
// DGC: paddle/phi/kernels/gpu/dgc_kernel.cu @ 2c8abd87b4a232e3fc8278c31ff24410f46254cf
//   - get_period_sparcity (lines 31-54): idx = static_cast<int>(cur_step * sparsity.size() / rampup_steps), in
//     float, then clamped to sparsity.size() - 1.
//   - DGCKernel (lines 117-127): dense while int(current_step) < int(rampup_begin_step); otherwise the sparsity of
//     get_period_sparcity(sparsity, current_step - rampup_begin_step, rampup_step). The same function and test are
//     in the older paddle/fluid/operators/dgc_op.h.
//   - current_step is DGCMomentumOptimizer's counter, _add_auto_increment_var(kDGCCounterName(), begin=0)
//     (python/paddle/fluid/optimizer.py): initialised to begin - 1 with an increment prepended to the program, so
//     the first step sees 0. Paddle's current_step is therefore commsim's 0-based step.
//
// Local SGD: python/paddle/distributed/fleet/meta_optimizers/localsgd_optimizer.py @
//   02a032c59ce6a75b1cdf357472bca0a1d1eabf5c
//   - both optimizers count steps with layers.autoincreased_step_counter(begin=1) (lines 107, 310): Paddle's step p
//     is commsim's step s + 1.
//   - plain (lines 107-127, 184-189): last_step starts at begin_step; `communicate` (average the parameters, then
//     last_step = step) runs when step <= begin_step, and afterwards when step - last_step == k_steps.
//   - adaptive: read at f8704b39a102f809fddd7cf3086722cefa8fa542 (AdaptiveLocalSGDOptimizer.minimize_impl), the
//     revision that reads adaptive_localsgd_configs as the seed document sets them (02a032c reads init_k_steps from
//     localsgd_configs, which has none): k_steps starts at init_k_steps and last_step at 0; `communicate` (average,
//     last_step = step) at every step <= begin_step, k unchanged; after begin_step, when step - last_step ==
//     k_steps, `communicate_avg_loss` averages and then sets k_steps = ceil(sqrt(lr_0 * avg_loss / (global_lr *
//     loss_0) * init_k_steps)), min 16, max 1. So init_k_steps is the first interval after begin_step, not clamped,
//     and k changes only at an averaging after begin_step.
#include "sim/scenario/schedules.hpp"

#include <algorithm>
#include <cmath>

namespace commsim {

namespace {

// get_period_sparcity's index, in float as Paddle computes it, before the clamp.
int dgc_ramp_index(const Dgc& dgc, int steps_into_ramp) {
  const float ratio = static_cast<float>(steps_into_ramp) * static_cast<float>(dgc.sparsity.size()) /
                      static_cast<float>(dgc.rampup_step);
  return static_cast<int>(ratio);
}

}  // namespace

double dgc_sparsity(const Dgc& dgc, int step) {
  if (step < dgc.rampup_begin_step) return 0;
  const int last = static_cast<int>(dgc.sparsity.size()) - 1;
  return dgc.sparsity[std::min(last, dgc_ramp_index(dgc, step - dgc.rampup_begin_step))];
}

int dgc_final_sparsity_step(const Dgc& dgc) {
  const int last = static_cast<int>(dgc.sparsity.size()) - 1;
  // In exact arithmetic the index reaches `last` after ceil(last * rampup_step / len) steps; the float division
  // is checked around that estimate so that the answer is the one the formula above gives.
  const std::int64_t len = static_cast<std::int64_t>(dgc.sparsity.size());
  int into = static_cast<int>((last * static_cast<std::int64_t>(dgc.rampup_step) + len - 1) / len);
  while (into > 0 && dgc_ramp_index(dgc, into - 1) >= last) --into;
  while (dgc_ramp_index(dgc, into) < last) ++into;
  return dgc.rampup_begin_step + into;
}

int adaptive_k(const LocalSgd& l, int step) {
  const double lr =
      l.lr_initial * (l.lr_decay_every_steps > 0 ? std::pow(l.lr_decay_factor, step / l.lr_decay_every_steps) : 1);
  // The loss decays exponentially from loss_initial towards loss_final with the given half-life (a stated input).
  const double loss = l.loss_half_life_steps > 0
                          ? l.loss_final + (l.loss_initial - l.loss_final) *
                                               std::exp2(-static_cast<double>(step) / l.loss_half_life_steps)
                          : l.loss_initial;
  // lr_0 and loss_0 are those of Paddle's step 1 (commsim's step 0): lr_initial and loss_initial.
  const double k = std::ceil(std::sqrt(l.lr_initial * loss / (lr * l.loss_initial) * l.init_k_steps));
  return static_cast<int>(std::clamp(k, 1.0, 16.0));
}

std::vector<bool> localsgd_averaging_steps(const LocalSgd& l, int steps) {
  std::vector<bool> average(static_cast<std::size_t>(std::max(0, steps)), false);
  int k = l.adaptive ? l.init_k_steps : l.k_steps;
  std::int64_t last_step = l.adaptive ? 0 : l.begin_step;  // Paddle's 1-based counter
  for (int s = 0; s < steps; ++s) {
    const std::int64_t step = s + 1;
    if (step > l.begin_step && step - last_step != k) continue;
    average[s] = true;
    last_step = step;
    if (l.adaptive && step > l.begin_step) k = adaptive_k(l, s);
  }
  return average;
}

int first_steady_step(const Strategy& st, int steps) {
  int start = 0;
  if (st.dgc) start = dgc_final_sparsity_step(*st.dgc);
  if (st.localsgd && !st.localsgd->adaptive) start = st.localsgd->begin_step;
  if (st.localsgd && st.localsgd->adaptive) {
    // After the first averaging past begin_step (Paddle's 1-based step > begin_step: s >= begin_step), every interval
    // is one the formula chose.
    const std::vector<bool> average = localsgd_averaging_steps(*st.localsgd, steps);
    start = steps;
    for (int s = st.localsgd->begin_step; s < steps; ++s)
      if (average[s]) {
        start = s + 1;
        break;
      }
  }
  return start;
}

std::int64_t whole_period_steps(const Strategy& st, int steps) {
  // Adaptive intervals follow the run; a begin_step past the run leaves no steady state to complete.
  if (!st.localsgd || st.localsgd->adaptive || st.localsgd->begin_step >= steps) return steps;
  // From begin_step on, Paddle averages after every k-th step: commsim's steps begin + j k - 1 (j = 1, 2, ...).
  const std::int64_t begin = st.localsgd->begin_step, k = st.localsgd->k_steps;
  return begin + (steps - begin + k - 1) / k * k;
}

int steady_state_start(const Strategy& st, int steps) {
  const int start = first_steady_step(st, steps);
  return start >= steps ? 0 : start;
}

}  // namespace commsim
