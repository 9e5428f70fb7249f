// The one aggregation (sim/result/step_metrics.hpp): task intervals -> step breakdown -> steady state -> Result.
#include "sim/result/step_metrics.hpp"

#include <gtest/gtest.h>

namespace commsim {
namespace {

// Two streams of communication that overlap: stream 1 from 2 to 6, stream 2 from 4 to 9 and again 8 to 10 (on
// the integer clock, so every figure is exact). Communication is their union, [2, 10] = 8, not the 4 + 5 + 2 = 11
// the streams are busy; compute is the summed compute intervals, 0..3 and 3..7 = 7 on stream 0.
TEST(StepMetrics, CommunicationIsTheUnionOfIntervalsComputeTheirSum) {
  const std::vector<TaskInterval<long>> intervals = {
      {0, true, 0, 3}, {0, true, 3, 7}, {1, false, 2, 6}, {2, false, 4, 9}, {2, false, 8, 10}};
  const StepBreakdown b = step_breakdown(intervals, 2, [](long d) { return static_cast<double>(d); });
  EXPECT_EQ(b.compute_s, 7.0);
  EXPECT_EQ(b.comm_s, 8.0);
  EXPECT_EQ(b.stream_busy_s, (std::vector<double>{7.0, 4.0, 7.0}));  // stream 2: 5 + 2, its own overlap counted twice
}

// Three steps, the steady state from step 1 (Plan::steady_from): the mean is over steps 1 and 2 only,
// (4 + 8) / 2 = 6 s; their compute 3 and 5 give a mean of 4 s, and exposed communication (step time beyond compute)
// (4 - 3 + 8 - 5) / 2 = 2 s, so the overlap ratio is 1 - 2 / comm, comm = (2 + 6) / 2 = 4 s: 0.5. With 2 ranks of
// batch 16, throughput = 32 samples / 6 s. The median of the steady steps {4, 8} is also 6 s; of a third, 5 s,
// added to them it is 5 s, and half the interquartile range (quantiles 4.5 and 6.5) is 1 s.
TEST(StepMetrics, SteadyStateMeansAndMedian) {
  Plan plan;
  plan.ranks = 2;
  plan.batch_per_gpu = 16;
  plan.streams = 1;
  plan.compute_s = 3;
  plan.steady_from = 1;
  auto step = [](double seconds, double compute_s, double comm_s) {
    return StepMeasure{seconds, 0, StepBreakdown{compute_s, comm_s, {compute_s, comm_s}}, 100};
  };
  Result mean = plan_result(plan, "sim", "analytical");
  summarize_steps(plan, {step(100, 1, 1), step(4, 3, 2), step(8, 5, 6)}, SteadyStatistic::Mean, mean);
  EXPECT_EQ(mean.steps_s, (std::vector<double>{100, 4, 8}));
  EXPECT_EQ(mean.step_time_s, 6.0);
  EXPECT_EQ(mean.compute_s, 4.0);
  EXPECT_EQ(mean.comm_s, 4.0);
  EXPECT_EQ(mean.exposed_comm_s, 2.0);
  EXPECT_EQ(mean.overlap_ratio, 0.5);
  EXPECT_EQ(mean.bytes_sent_per_rank, 100.0);
  EXPECT_EQ(mean.stream_busy_s, (std::vector<double>{4.0, 4.0}));
  EXPECT_DOUBLE_EQ(mean.throughput_samples_s, 32.0 / 6.0);
  EXPECT_DOUBLE_EQ(mean.scaling_efficiency, 3.0 / 6.0);

  Result median = plan_result(plan, "mpi", "measured");
  summarize_steps(plan, {step(100, 1, 1), step(4, 3, 2), step(8, 5, 6), step(5, 3, 2)}, SteadyStatistic::KindMedian,
                  median);
  EXPECT_EQ(median.step_time_s, 5.0);  // one step kind (no step_plan_of): the plain median
  EXPECT_EQ(median.step_time_spread_s, 1.0);
}

// Local SGD k = 4 measured: steady steps 26, 26.2, 25.9 ms (local) and 41.6 ms (averaging), then the same again
// with 37.1. A plain median of the 8 steps (26.05) never sees an averaging step. Per kind: local steps {26, 26.2,
// 25.9, 26, 26.2, 25.9} have median 26 and half-IQR (26.15 - 25.925) / 2 = 0.1125; averaging steps {41.6, 37.1}
// have median 39.35 and half-IQR (40.475 - 38.225) / 2 = 1.125. Weighted 6/8 and 2/8: 0.75 x 26 + 0.25 x 39.35 =
// 29.3375 ms, spread 0.75 x 0.1125 + 0.25 x 1.125 = 0.365625 ms.
TEST(StepMetrics, KindMedianCountsEveryStepKindAsOftenAsItRuns) {
  Plan plan;
  plan.ranks = 2;
  plan.batch_per_gpu = 1;
  plan.streams = 1;
  plan.step_plan_of = {0, 0, 0, 1, 0, 0, 0, 1};
  std::vector<StepMeasure> steps;
  for (double ms : {26.0, 26.2, 25.9, 41.6, 26.0, 26.2, 25.9, 37.1})
    steps.push_back(StepMeasure{ms * 1e-3, 0, StepBreakdown{0.02, 0.005, {0.02, 0.005}}, 0});
  Result r = plan_result(plan, "mpi", "measured");
  summarize_steps(plan, steps, SteadyStatistic::KindMedian, r);
  EXPECT_NEAR(r.step_time_s, 29.3375e-3, 1e-12);
  EXPECT_NEAR(r.step_time_spread_s, 0.365625e-3, 1e-12);
}

}  // namespace
}  // namespace commsim
