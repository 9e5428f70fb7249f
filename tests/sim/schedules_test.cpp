// DGC's ramp-up and (adaptive) Local SGD's averaging schedule, step by step, as Paddle computes them. Each expected
// step is derived in the comment above it from the formulas in sim/scenario/schedules.cpp, which cite the Paddle
// source they were read from:
//   DGC (paddle/phi/kernels/gpu/dgc_kernel.cu, get_period_sparcity): dense while step < rampup_begin_step, then
//     sparsity[min(len - 1, int((step - rampup_begin_step) * len / rampup_step))]; Paddle's DGC counter starts at 0.
//   Local SGD (python/paddle/distributed/fleet/meta_optimizers/localsgd_optimizer.py): Paddle step p = s + 1;
//     average when p <= begin_step or p - last_step == k; last_step starts at begin_step (plain) or 0 (adaptive);
//     adaptive k starts at init_k_steps and is recomputed, clamped to [1, 16], only when it averages after begin_step.
#include "sim/scenario/schedules.hpp"

#include <gtest/gtest.h>

namespace commsim {
namespace {

Dgc ramp(int begin, int rampup_step, std::vector<double> sparsity) {
  Dgc d;
  d.rampup_begin_step = begin;
  d.rampup_step = rampup_step;
  d.sparsity = std::move(sparsity);
  return d;
}

std::vector<int> averaging_steps(const LocalSgd& l, int steps) {
  std::vector<int> out;
  const std::vector<bool> average = localsgd_averaging_steps(l, steps);
  for (int s = 0; s < steps; ++s)
    if (average[s]) out.push_back(s);
  return out;
}

TEST(DgcSchedule, RampUpNotAMultipleOfTheListLength) {
  // rampup_step 10, 3 sparsities: idx = int(s * 3 / 10): s = 3 -> 0.9 -> 0; s = 4 -> 1.2 -> 1; s = 6 -> 1.8 -> 1;
  // s = 7 -> 2.1 -> 2. So steps 0-3 / 4-6 / 7+ (a period of 10 / 3 = 3 steps would give 0-2 / 3-5 / 6+).
  const Dgc d = ramp(0, 10, {0.9, 0.99, 0.999});
  for (int s = 0; s <= 3; ++s) EXPECT_EQ(dgc_sparsity(d, s), 0.9) << s;
  for (int s = 4; s <= 6; ++s) EXPECT_EQ(dgc_sparsity(d, s), 0.99) << s;
  for (int s = 7; s <= 40; ++s) EXPECT_EQ(dgc_sparsity(d, s), 0.999) << s;
  EXPECT_EQ(dgc_final_sparsity_step(d), 7);
  // rampup_begin_step 5 shifts the same ramp: dense 0-4, then 5-8 / 9-11 / 12+.
  const Dgc late = ramp(5, 10, {0.9, 0.99, 0.999});
  EXPECT_EQ(dgc_sparsity(late, 4), 0.0);
  EXPECT_EQ(dgc_sparsity(late, 8), 0.9);
  EXPECT_EQ(dgc_sparsity(late, 9), 0.99);
  EXPECT_EQ(dgc_sparsity(late, 12), 0.999);
  EXPECT_EQ(dgc_final_sparsity_step(late), 12);
}

TEST(DgcSchedule, RampShorterThanTheList) {
  // rampup_step 1, 3 sparsities: s = 0 -> int(0) = 0, the first value; s = 1 -> int(3 / 1) = 3, clamped to 2: the
  // last value from step 1 on (the middle value is never used).
  const Dgc d = ramp(0, 1, {0.75, 0.9375, 0.999});
  EXPECT_EQ(dgc_sparsity(d, 0), 0.75);
  EXPECT_EQ(dgc_sparsity(d, 1), 0.999);
  EXPECT_EQ(dgc_sparsity(d, 2), 0.999);
  EXPECT_EQ(dgc_final_sparsity_step(d), 1);
  // One sparsity: idx = int(s / rampup_step) is clamped to 0, so it is final from rampup_begin_step.
  EXPECT_EQ(dgc_final_sparsity_step(ramp(3, 100, {0.999})), 3);
}

TEST(DgcSchedule, SteadyStateStartsAtTheFinalSparsity) {
  // The ramp above ends at step 7, not at rampup_begin_step + rampup_step = 10.
  Strategy st;
  st.dgc = ramp(0, 10, {0.9, 0.99, 0.999});
  EXPECT_EQ(steady_state_start(st, 20), 7);
  EXPECT_EQ(steady_state_start(st, 7), 0);  // a run that never reaches it averages all its steps
  EXPECT_EQ(first_steady_step(st, 7), 7);   // and first_steady_step says so (the plan's notes and simulate print it)
}

TEST(LocalSgdSchedule, PlainAveragesEveryStepUpToBeginStepThenEveryK) {
  // k 4, begin_step 2: p = 1, 2 <= 2 average (s = 0, 1), last_step = 2; then p - 2 == 4 at p = 6 (s = 5), p = 10
  // (s = 9).
  LocalSgd l;
  l.k_steps = 4;
  l.begin_step = 2;
  EXPECT_EQ(averaging_steps(l, 12), (std::vector<int>{0, 1, 5, 9}));
  // begin_step 0: last_step = 0, so p = 4, 8 (s = 3, 7).
  l.begin_step = 0;
  EXPECT_EQ(averaging_steps(l, 8), (std::vector<int>{3, 7}));
}

TEST(LocalSgdSchedule, AdaptiveTakesInitKStepsAsTheFirstIntervalUncapped) {
  // init_k_steps 16, begin_step 0, constant lr and loss: k = 16 and last_step = 0, so the first average is at
  // p = 16 (s = 15); there k = ceil(sqrt(1 x 16)) = 4: p = 20, 24 (s = 19, 23).
  LocalSgd l;
  l.adaptive = true;
  l.init_k_steps = 16;
  l.begin_step = 0;
  EXPECT_EQ(averaging_steps(l, 25), (std::vector<int>{15, 19, 23}));
  // init_k_steps 20 (more than the cap of 16 on the recomputed k): first average at p = 20 (s = 19), then
  // ceil(sqrt(20)) = 5: p = 25 (s = 24).
  l.init_k_steps = 20;
  EXPECT_EQ(averaging_steps(l, 26), (std::vector<int>{19, 24}));
}

TEST(LocalSgdSchedule, AdaptiveCountsInitKStepsFromBeginStep) {
  // Paddle's default begin_step 1: p = 1 <= 1 averages (s = 0) with k unchanged and last_step = 1; the first interval
  // after it is init_k_steps 16: p = 17 (s = 16), where k = ceil(sqrt(16)) = 4: p = 21 (s = 20).
  LocalSgd l;
  l.adaptive = true;
  l.init_k_steps = 16;
  l.begin_step = 1;
  EXPECT_EQ(averaging_steps(l, 22), (std::vector<int>{0, 16, 20}));
  // begin_step 3: p = 1, 2, 3 average (s = 0, 1, 2), then p = 3 + 16 = 19 (s = 18).
  l.begin_step = 3;
  EXPECT_EQ(averaging_steps(l, 20), (std::vector<int>{0, 1, 2, 18}));
}

TEST(LocalSgdSchedule, AdaptiveKChangesOnlyAtAnAveraging) {
  // init_k 4, begin 0, lr x 0.1 every 3 steps: first average at s = 3 (p = 4). There lr = 0.1 lr_0, so
  // k = ceil(sqrt(10 x 4)) = ceil(6.32) = 7: next at s = 10, although lr drops again at s = 6 and 9. At s = 10
  // lr = 0.1^3 lr_0: k = ceil(sqrt(1000 x 4)) = 64, capped at 16: next at s = 26.
  LocalSgd l;
  l.adaptive = true;
  l.init_k_steps = 4;
  l.begin_step = 0;
  l.lr_decay_factor = 0.1;
  l.lr_decay_every_steps = 3;
  EXPECT_EQ(averaging_steps(l, 30), (std::vector<int>{3, 10, 26}));
}

TEST(LocalSgdSchedule, SteadyStateStartsWhereTheChosenIntervalsBegin) {
  Strategy st;
  st.localsgd = LocalSgd{};
  st.localsgd->k_steps = 4;
  st.localsgd->begin_step = 2;
  EXPECT_EQ(steady_state_start(st, 20), 2);  // plain: periodic from begin_step
  st.localsgd->adaptive = true;
  st.localsgd->init_k_steps = 16;
  st.localsgd->begin_step = 0;
  EXPECT_EQ(steady_state_start(st, 30), 16);  // after the first (init_k_steps) interval, averaged at s = 15
  st.localsgd->begin_step = 1;
  EXPECT_EQ(steady_state_start(st, 30), 17);  // the first interval after begin_step is init_k_steps: s = 16
}

}  // namespace
}  // namespace commsim
