// `commsim validate SUITE [--calibration FILE]... [--report DIR] [--cluster]`: measures every scenario of a suite on
// the MPI backend (`commsim run` child processes), predicts it with the calibrated topology, and reports errors,
// bands and speedup signs (validate/validate_run.hpp, docs/calibration.md). Exit 0 when the targets are met, 1 when
// not (or a calibration was refused), 2 bad input.
#include <cstdio>

#include "cli/commands.hpp"
#include "sim/core/error.hpp"
#include "validate/calibrate_run.hpp"
#include "validate/process.hpp"
#include "validate/report.hpp"
#include "validate/validate_run.hpp"

namespace commsim::cli {
namespace {

int validate_suite(const validate::ValidateOptions& options) {
  validate::ValidateOptions o = options;
  o.commsim = validate::self_executable();
  validate::ValidateOutcome outcome;
  try {
    outcome = validate::run_validation(o);
  } catch (const validate::MeasurementFailed& e) {
    std::fprintf(stderr, "commsim: %s\n", e.what());
    return 3;
  }
  if (!outcome.refusal.empty()) {
    std::fprintf(stderr, "%s\n", outcome.refusal.c_str());
    return outcome.exit_code;
  }
  std::printf("%s", validate::terminal_table(outcome.validation).c_str());
  const std::string& dir = outcome.report_dir;
  std::printf("report: %s/index.html, %s/validation.json\n", dir.c_str(), dir.c_str());
  return outcome.exit_code;
}

}  // namespace

void register_validate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<validate::ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Measure a suite of scenarios, predict them with a calibrated topology, report errors and speedup signs");
  cmd->add_option("suite", o->suite, "validation suite JSON (validate/suites/*.json)")->required();
  cmd->add_option("--calibration", o->calibrations, "calibrated topology from `commsim calibrate` (repeatable; missing ones are calibrated now)");
  cmd->add_option("--report", o->report_dir, "report folder (default: validation-SUITE)");
  cmd->add_flag("--cluster", o->cluster, "run on the emulated cluster (network namespaces, tc; needs CAP_NET_ADMIN)");
  cmd->add_option("--measured", o->measured_dir, "re-judge earlier runs: read measured-SCENARIO.json from this folder instead of running");
  cmd->callback([o, &exit_code] { exit_code = validate_suite(*o); });
}

}  // namespace commsim::cli
