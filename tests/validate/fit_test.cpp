// Fits, bands and the measured statistic, on synthetic data whose answer is known.
#include "validate/fit.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "validate/band.hpp"
#include "validate/validation.hpp"

using namespace commsim::validate;

namespace {

// Ping-pong sizes as `commsim bench` measures them: 8 B, 16 B, ... doubling up to `largest`.
std::vector<Sample> line_samples(double alpha_s, double beta_Bps, double largest = 64.0 * 1024 * 1024) {
  std::vector<Sample> s;
  for (double b = 8; b <= largest; b *= 2) s.push_back({b, alpha_s + b / beta_Bps});
  return s;
}

}  // namespace

// Exact alpha-beta data: the weighted normal equations must return the generating values (to rounding), with zero
// residuals and R^2 = 1.
TEST(Fit, RecoversAlphaBetaFromExactSamples) {
  const LineFit f = fit_line(line_samples(20e-6, 100e6));
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.alpha_s, 20e-6, 20e-6 * 1e-9);
  EXPECT_NEAR(f.beta_Bps, 100e6, 100e6 * 1e-9);
  EXPECT_LT(f.max_abs_rel, 1e-9);
  EXPECT_EQ(f.samples, 24u);  // 8 B .. 64 MiB: 2^3 .. 2^26
}

// Multiplicative noise of +-2 % alternating by size: small sizes (time ~ alpha) pin alpha, large sizes (time ~
// bytes/beta) pin beta, each to within the noise; the RMS relative residual is about the noise.
TEST(Fit, RecoversAlphaBetaWithinNoise) {
  std::vector<Sample> s = line_samples(50e-6, 118e6);
  for (std::size_t i = 0; i < s.size(); ++i) s[i].seconds *= i % 2 ? 1.02 : 0.98;
  const LineFit f = fit_line(s);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.alpha_s, 50e-6, 50e-6 * 0.03);
  EXPECT_NEAR(f.beta_Bps, 118e6, 118e6 * 0.03);
  EXPECT_NEAR(f.rms_rel, 0.02, 0.005);
  EXPECT_GT(f.alpha_se_s, 0);
}

// A negative intercept is not a latency: data through the origin (t = bytes / beta) with the two smallest sizes
// measured 0.5x and 0.7x as long would give alpha < 0; the fit clamps alpha to 0 and refits g = 1/beta alone,
// minimising sum (1 - g v_i)^2 with v_i = bytes_i / t_i = beta / f_i (f_i the factor): g = sum v / sum v^2, so
//   beta_fit = beta (22 + 1/0.5^2 + 1/0.7^2) / (22 + 1/0.5 + 1/0.7)   (22 unbiased sizes of 24)
TEST(Fit, ClampsNegativeLatencyToZero) {
  std::vector<Sample> s = line_samples(0, 1e9);
  s[0].seconds *= 0.5;
  s[1].seconds *= 0.7;
  const LineFit f = fit_line(s);
  ASSERT_TRUE(f.valid);
  EXPECT_EQ(f.alpha_s, 0);
  EXPECT_NEAR(f.beta_Bps, 1e9 * (22 + 4 + 1 / 0.49) / (22 + 2 + 1 / 0.7), 1e-3);
}

// Times that do not grow with the size have no bandwidth term.
TEST(Fit, FlatDataIsInvalid) {
  std::vector<Sample> s;
  for (double b = 8; b <= 1024; b *= 2) s.push_back({b, b < 100 ? 2e-5 : 1.9e-5});
  EXPECT_FALSE(fit_line(s).valid);
}

//   time
//    |                          /  rendezvous: alpha 80 us, beta 110 MB/s
//    |                     ___/
//    |   eager: alpha 10 us, beta 50 MB/s
//    +---------------------|------------ bytes
//                        64 KiB
// The best split (least total squared relative error) falls exactly at the regime change, and each segment
// recovers its own line.
TEST(Fit, PiecewiseFindsTheBreakpoint) {
  std::vector<Sample> s;
  for (double b = 8; b <= 64.0 * 1024 * 1024; b *= 2)
    s.push_back({b, b < 65536 ? 10e-6 + b / 50e6 : 80e-6 + b / 110e6});
  const PiecewiseFit f = fit_piecewise(s);
  ASSERT_EQ(f.segments.size(), 2u);
  ASSERT_EQ(f.breakpoints_bytes.size(), 1u);
  EXPECT_EQ(f.breakpoints_bytes[0], 65536);
  EXPECT_NEAR(f.segments[0].alpha_s, 10e-6, 1e-12);
  EXPECT_NEAR(f.segments[0].beta_Bps, 50e6, 50e6 * 1e-6);
  EXPECT_NEAR(f.segments[1].alpha_s, 80e-6, 1e-10);
  EXPECT_NEAR(f.segments[1].beta_Bps, 110e6, 110e6 * 1e-6);
  EXPECT_LT(f.max_abs_rel, 1e-6);
  EXPECT_NEAR(f.r2, 1, 1e-9);
}

// Three regimes (eager, a copy-in/copy-out middle, single-copy rendezvous) give three segments.
TEST(Fit, PiecewiseFindsTwoBreakpoints) {
  std::vector<Sample> s;
  for (double b = 8; b <= 64.0 * 1024 * 1024; b *= 2)
    s.push_back({b, b < 4096 ? 1e-6 + b / 1e9 : b < 1048576 ? 8e-6 + b / 2e9 : 60e-6 + b / 6e9});
  const PiecewiseFit f = fit_piecewise(s);
  ASSERT_EQ(f.segments.size(), 3u);
  EXPECT_EQ(f.breakpoints_bytes[0], 4096);
  EXPECT_EQ(f.breakpoints_bytes[1], 1048576);
}

// One regime with +-1 % noise: one line explains the data (RMS residual below the 3 % floor), so no breakpoint is
// invented.
TEST(Fit, PiecewiseKeepsOneLineForOneRegime) {
  std::vector<Sample> s = line_samples(15e-6, 120e6);
  for (std::size_t i = 0; i < s.size(); ++i) s[i].seconds *= (i % 3 == 0) ? 1.01 : (i % 3 == 1 ? 0.99 : 1.0);
  const PiecewiseFit f = fit_piecewise(s);
  EXPECT_EQ(f.segments.size(), 1u);
  EXPECT_TRUE(f.breakpoints_bytes.empty());
}

// R^2 = 1 - SSE_rel / SST_rel; a model predicting the weighted mean everywhere explains nothing (R^2 = 0).
TEST(Fit, RSquaredOfTheWeightedMeanIsZero) {
  const std::vector<Sample> s = {{1, 1}, {2, 2}, {4, 4}};
  // weighted mean with weights 1/t^2: sum(1/t) / sum(1/t^2) = (1 + 0.5 + 0.25) / (1 + 0.25 + 0.0625) = 4/3
  const double mean = 1.75 / 1.3125;
  EXPECT_NEAR(r_squared(s, {mean, mean, mean}), 0, 1e-12);
  EXPECT_NEAR(r_squared(s, {1, 2, 4}), 1, 1e-12);
}

// Band: predicted 100 ms, re-simulated 95 ms (fast links) and 106 ms (slow links); the measurement's half IQR is
// 0.6745 ms, so sigma = 1 ms and the measurement half-width is 2 sigma = 2 ms.
//   low  = 100 - sqrt(5^2 + 2^2) = 100 - 5.385 = 94.615 ms
//   high = 100 + sqrt(6^2 + 2^2) = 100 + 6.325 = 106.325 ms
TEST(Band, CombinesModelAndMeasurementInQuadrature) {
  const Band b = prediction_band(0.100, 0.095, 0.106, 0.6744897501960817e-3);
  EXPECT_NEAR(b.low_s, 0.100 - std::sqrt(25e-6 + 4e-6), 1e-12);
  EXPECT_NEAR(b.high_s, 0.100 + std::sqrt(36e-6 + 4e-6), 1e-12);
  EXPECT_TRUE(b.contains(0.0947));
  EXPECT_FALSE(b.contains(0.0945));
  EXPECT_NEAR(measurement_half_width(0.6744897501960817e-3), 2e-3, 1e-12);
}

// Without model uncertainty and measurement noise the band is the prediction itself.
TEST(Band, CollapsesWithoutUncertainty) {
  const Band b = prediction_band(0.05, 0.05, 0.05, 0);
  EXPECT_EQ(b.low_s, 0.05);
  EXPECT_EQ(b.high_s, 0.05);
}

// Local SGD k = 4: three local steps of 10 ms and one averaging step of 40 ms per period. The simulator's steady
// mean is (3 x 10 + 40) / 4 = 17.5 ms; the backend's median of all steps would say 10 ms. The kind-weighted
// median: kind 1 median 10 ms x 3/4 + kind 2 median 40 ms x 1/4 = 17.5 ms.
TEST(Statistic, KindWeightedMedianMatchesTheMeanOfAlternatingSteps) {
  const std::vector<double> steps = {0.050, 0.010, 0.010, 0.010, 0.040, 0.010, 0.010, 0.010, 0.040};
  const std::vector<int> kinds = {0, 1, 1, 1, 2, 1, 1, 1, 2};
  const StepStatistic st = kind_weighted_median(steps, kinds, 1);  // step 0 (synchronous) is before steady_from
  EXPECT_NEAR(st.step_time_s, 0.0175, 1e-12);
  EXPECT_NEAR(st.spread_s, 0, 1e-12);
}

// Two runs of the same scenario pool their steady steps: runs {10, 12, 14} and {20, 22, 24} ms give the median of
// the six, (14 + 20) / 2 = 17 ms; the quartiles (type 7) 12.5 and 21.5 give a half IQR of 4.5 ms, which now holds
// the run-to-run difference.
TEST(Statistic, RunsArePooled) {
  const StepStatistic st =
      kind_weighted_median({RunSteps{{0.010, 0.012, 0.014}, 0}, RunSteps{{0.020, 0.022, 0.024}, 0}}, {0, 0, 0});
  EXPECT_NEAR(st.step_time_s, 0.017, 1e-12);
  EXPECT_NEAR(st.spread_s, 0.0045, 1e-12);
  EXPECT_EQ(st.steps, 6);
}

// Steps all alike: the statistic is the plain median (one slow step does not move it).
TEST(Statistic, PlainMedianForUniformSteps) {
  const StepStatistic st = kind_weighted_median({0.010, 0.011, 0.012, 0.100, 0.013}, {0, 0, 0, 0, 0}, 0);
  EXPECT_NEAR(st.step_time_s, 0.012, 1e-12);
  // quartiles (type 7) of {10, 11, 12, 13, 100}: 11 and 13 -> half IQR 1 ms
  EXPECT_NEAR(st.spread_s, 0.001, 1e-12);
  // standard error of the median: sqrt(pi/2) x (1 ms / 0.6745) / sqrt(5)
  EXPECT_NEAR(st.median_se_s, 1.2533141373155001 * (0.001 / kHalfIqrPerSigma) / std::sqrt(5.0), 1e-12);
  EXPECT_EQ(st.steps, 5);
}

namespace {
ScenarioOutcome outcome(double predicted_s, double measured_s, double median_se_s) {
  ScenarioOutcome o;
  o.prediction.step_time_s = predicted_s;
  o.measured.step_time_s = measured_s;
  o.measured.median_se_s = median_se_s;
  return o;
}
}  // namespace

// Speedup = baseline / variant. Baseline measured 100 ms, variant 80 ms, each median with a standard error of 1 ms:
// the difference's standard error is sqrt(2) ms, 2 of them 2.83 ms < 20 ms -> resolved; both faster -> right.
TEST(Speedup, SignRightWhenBothFaster) {
  const Comparison e{"fusion", "v", "b", ""};
  const SpeedupOutcome s = compare_speedup(e, outcome(0.07, 0.08, 0.001), outcome(0.1, 0.1, 0.001));
  EXPECT_NEAR(s.predicted, 0.1 / 0.07, 1e-12);
  EXPECT_NEAR(s.measured, 1.25, 1e-12);
  EXPECT_TRUE(s.resolved);
  EXPECT_TRUE(s.sign_right);
}

// Predicted faster, measured slower by more than the noise: wrong. Measured 2 ms apart with 1 ms standard errors:
// within noise (2 < 2.83), so the measurement says no change, and the predicted 2x speedup is wrong.
TEST(Speedup, WrongAndUnresolvedSigns) {
  const Comparison e{"dgc", "v", "b", ""};
  const SpeedupOutcome wrong = compare_speedup(e, outcome(0.05, 0.12, 0.001), outcome(0.1, 0.1, 0.001));
  EXPECT_TRUE(wrong.resolved);
  EXPECT_FALSE(wrong.sign_right);
  EXPECT_EQ(wrong.measured_sign, Sign::Slower);
  const SpeedupOutcome noise = compare_speedup(e, outcome(0.05, 0.098, 0.001), outcome(0.1, 0.1, 0.001));
  EXPECT_FALSE(noise.resolved);
  EXPECT_EQ(noise.measured_sign, Sign::Same);
  EXPECT_FALSE(noise.sign_right);
}

// "No change" is one rule for both sides: |speedup - 1| < 1 %, or for the measurement also a difference within
// noise. Standard errors of 0.1 ms, so 2 x sqrt(2) x 0.1 = 0.28 ms resolves every difference below.
TEST(Speedup, NoChangeIsTheSameThresholdPredictedAndMeasured) {
  const Comparison e{"fusion", "v", "b", ""};
  // Predicted 100 / 100.6 = 0.994x and measured the same 0.994x (0.6 ms, resolved): both "no change", right. (The
  // rule before held the prediction to 1 % and the measurement to none, and called this pair wrong.)
  const SpeedupOutcome same = compare_speedup(e, outcome(0.1006, 0.1006, 1e-4), outcome(0.1, 0.1, 1e-4));
  EXPECT_TRUE(same.resolved);
  EXPECT_EQ(same.predicted_sign, Sign::Same);
  EXPECT_EQ(same.measured_sign, Sign::Same);
  EXPECT_TRUE(same.sign_right);
  // Predicted 100 / 99.5 = 1.005x (no change), measured 100 / 98.8 = 1.012x (faster, beyond 1 %): wrong.
  const SpeedupOutcome missed = compare_speedup(e, outcome(0.0995, 0.0988, 1e-4), outcome(0.1, 0.1, 1e-4));
  EXPECT_EQ(missed.measured_sign, Sign::Faster);
  EXPECT_FALSE(missed.sign_right);
  // Within noise and predicted within 1 %: both say no change, right.
  const SpeedupOutcome quiet = compare_speedup(e, outcome(0.1005, 0.10002, 1e-4), outcome(0.1, 0.1, 1e-4));
  EXPECT_FALSE(quiet.resolved);
  EXPECT_TRUE(quiet.sign_right);
}
