// `commsim validate` as a library call: load the suite, find (or make) a calibration for each of its topologies,
// predict and measure every scenario, judge, summarise and write the report.
#pragma once

#include <string>
#include <vector>

#include "validate/validation.hpp"

namespace commsim::validate {

struct ValidateOptions {
  std::string commsim;  // path of the commsim executable (runs `commsim run` / `commsim bench`)
  std::string suite;
  std::vector<std::string> calibrations;  // calibrated topologies; a suite topology without one is calibrated here
  std::string report_dir;                 // validation.json, index.html, table.txt, runs/, calibration/
  bool cluster = false;
  std::string measured_dir;  // non-empty: read measured-<scenario>.json from here instead of running
};

struct ValidateOutcome {
  Validation validation;
  int exit_code = 0;       // 0 targets met, 1 missed (or a calibration refused, or a run failed)
  std::string refusal;     // a calibration that could not be trusted
  std::string report_dir;  // where the report was written
};

// Throws InputError for bad input (suite, calibration files, options); progress goes to stderr.
ValidateOutcome run_validation(const ValidateOptions& options);

}  // namespace commsim::validate
