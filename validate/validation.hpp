// Validation: every scenario of a suite measured on the MPI backend (a `commsim run` child process) and predicted
// by the simulator with the calibrated topology; per scenario the error and whether the measurement lies in the
// prediction's band (validate/band.hpp); per technique the predicted and measured speedup over its baseline.
// The microbenchmarks the calibration was fitted to and the scenario runs judged here are different runs; the
// report names both (docs/calibration.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "validate/band.hpp"
#include "validate/calibration.hpp"
#include "validate/suite.hpp"

namespace commsim::validate {

struct Prediction {
  double step_time_s = 0;         // steady-state mean, nominal calibrated links
  double fast_s = 0, slow_s = 0;  // every calibrated link class faster / slower by its band_rel
  std::vector<int> step_kind;     // the Plan's kind of each step (the measured statistic weighs kinds alike)
  int steady_from = 0;
  int ranks = 0;
  std::string calibration_file;
};

// Simulates `entry` with its topology replaced by the calibrated one (same node count; the document in memory), the
// device's memory_Bps set to 3 x the calibrated reduction rate, flow fidelity; and twice more for the band, on the
// calibrated topology scaled in memory (scale_link_classes).
Prediction predict(const Suite& suite, const SuiteEntry& entry, const CalibrationSummary& calibration);

struct Measurement {
  bool ok = false;
  std::string error;  // one line when !ok
  std::vector<double> steps_s;
  int steady_from = 0;
  double backend_step_time_s = 0, backend_spread_s = 0;  // as the backend reported them (median, half IQR)
  std::string network;  // what the job ran on (the hardware run's response; empty when unknown)
  std::string json_file, log_file;
  double wall_s = 0;
};

// The file name of run `run` of scenario `name` in a runs folder: measured-NAME.json, measured-NAME.runK.json (K > 1),
// NAME with every character but [A-Za-z0-9._-] replaced by '_'.
std::string measured_file_name(const std::string& name, int run);

// Runs the entry's Plan on the MPI backend (the simulator's schedules, the entry's overrides) through
// run_on_hardware (validate/hardware_run.hpp): measured-NAME.json, its log, request and response in `out_dir`; run
// k > 1 writes measured-NAME.runK.*. Asked for the emulated cluster, a run that ran elsewhere is not ok.
Measurement measure(const std::string& commsim, const Suite& suite, const SuiteEntry& entry, bool cluster,
                    const std::string& out_dir, int run = 1);
// Reads a measured Result JSON (for tests and re-analysis); the network from its .response.json when there is one.
Measurement read_measurement(const std::string& json_file);

// The measured step time comparable to the simulator's steady-state mean: the steady steps of every run of the
// scenario pooled, grouped by the Plan's step kind, the median of each kind (robust to one slow step), weighted by
// how often the kind occurs. For a scenario whose steps are all alike this is the plain median. `spread_s` is
// weighted alike from each kind's half interquartile range (a step's spread, run-to-run variation included when
// there are several runs); `median_se_s` is the standard error of the weighted median,
// sqrt(sum_k w_k^2 (1.2533 sigma_k)^2 / n_k) with sigma_k = half IQR_k / 0.6745 (the median of n normal samples
// has a standard error of sqrt(pi/2) sigma / sqrt(n)).
struct StepStatistic {
  double step_time_s = 0, spread_s = 0, median_se_s = 0;
  int steps = 0;
};
struct RunSteps {
  std::vector<double> steps_s;
  int steady_from = 0;
};
StepStatistic kind_weighted_median(const std::vector<RunSteps>& runs, const std::vector<int>& step_kind);
StepStatistic kind_weighted_median(const std::vector<double>& steps_s, const std::vector<int>& step_kind,
                                   int steady_from);

struct ScenarioOutcome {
  const SuiteEntry* entry = nullptr;
  Prediction prediction;
  std::vector<Measurement> runs;  // one per measured run (the suite's "runs"), interleaved with the other scenarios
  Measurement measurement;        // summary: ok when at least one run succeeded; the first failure's error otherwise
  StepStatistic measured;
  Band band;
  double error_rel = 0;  // (predicted - measured) / measured
  bool inside = false;
};

enum class Sign : int { Slower = -1, Same = 0, Faster = 1 };

struct SpeedupOutcome {
  std::string technique, variant, baseline, note;
  double predicted = 0, measured = 0;  // baseline time / variant time (> 1: the technique helps)
  Sign predicted_sign = Sign::Same, measured_sign = Sign::Same;
  bool resolved = false;    // the measured medians differ by more than 2 standard errors of their difference
  bool sign_right = false;  // the same sign measured and predicted ("no change" being one of them)
};

// |speedup - 1| below this counts as "no change", predicted or measured (a measured speedup also counts as "no
// change" while its medians are not resolved).
inline constexpr double kNoChange = 0.01;

SpeedupOutcome compare_speedup(const Comparison& c, const ScenarioOutcome& v, const ScenarioOutcome& b);

struct Summary {
  int scenarios = 0, measured = 0, inside = 0;
  double median_abs_error = 0, max_abs_error = 0;
  std::string max_error_scenario;
  std::vector<const SpeedupOutcome*> wrong_signs, unresolved;
  // Targets on the emulated cluster (issue 18): median and maximum |error|, the share of measurements inside their
  // band, every speedup sign right.
  double target_median = 0.05, target_max = 0.12, target_inside = 0.90;
  bool median_met = false, max_met = false, inside_met = false, signs_met = false;
};

struct Validation {
  std::shared_ptr<const Suite> suite;  // shared: outcomes point into its entries, so it never moves
  std::vector<CalibrationSummary> calibrations;
  std::vector<ScenarioOutcome> outcomes;
  std::vector<SpeedupOutcome> speedups;
  Summary summary;
  bool cluster = false;
  std::string host, date, commsim_version;
  double wall_s = 0;
};

// Pools the successful runs into `measurement` (ok, wall time) and, when any succeeded, computes the statistic,
// error, band and inside.
void judge(ScenarioOutcome& outcome);
// Speedups and summary from judged outcomes.
void summarise(Validation& v);

}  // namespace commsim::validate
