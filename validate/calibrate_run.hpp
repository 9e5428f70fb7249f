// `commsim calibrate` as a library call (the CLI and `commsim validate` both use it): run the microbenchmarks with
// the `commsim` executable as a child process (or read an earlier bench JSON), fit, and write the calibrated
// topology when every class's fit can be trusted.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "validate/calibration.hpp"

namespace commsim::validate {

struct CalibrateOptions {
  std::string commsim;                // path of the commsim executable (runs `commsim bench`)
  std::string topology;               // topology JSON to calibrate
  bool cluster = false;               // bench inside the emulated cluster
  std::vector<std::string> bench_in;  // non-empty: fit these bench JSONs (merged) instead of measuring
  std::string bench_out;  // where the merged bench JSON goes (default: OUT with .bench.json; runs .run1.json ...)
  std::string max_bytes = "16M";
  int repeats = 3;  // bench runs; per size the median is fitted
  CalibrationModel model = CalibrationModel::Collective;
  double timeout_s = 900;
  std::string out;  // calibrated topology to write
};

// The microbenchmark child failed (exit code 3 at the CLI, like a failed `commsim run`).
class MeasurementFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Returns the calibration; writes `out` only when calibration.trusted(). InputError for bad files or options.
Calibration run_calibration(const CalibrateOptions& options);

// The fits as a terminal table: per class and segment alpha, beta, R^2, residuals; the topology line; refusals.
std::string describe(const Calibration& calibration);

}  // namespace commsim::validate
