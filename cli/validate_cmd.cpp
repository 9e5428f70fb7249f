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
#include "validate/trace_check.hpp"
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

// `--trace`: the positional argument is a scenario, predicted and compared with the traced steps.
int validate_trace(const std::string& scenario, const std::string& trace_path) {
  const KinetoTrace trace = read_kineto_trace(trace_path);
  const SimulationRun run =
      simulate_scenario(scenario, {}, 0, Fidelity::Analytical, validate::trace_selection_for(trace));
  std::printf("%s against %s (%zu traced steps, collectives from %s)\n", run.scenario.name.c_str(), trace_path.c_str(),
              trace.steps.size(), std::string(to_string(trace.collective_source)).c_str());
  std::printf("%s", validate::trace_table(validate::compare_with_trace(trace, run)).c_str());
  return 0;
}

}  // namespace

void register_validate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<validate::ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Measure a suite of scenarios, predict them with a calibrated topology, report errors and speedup signs");
  // Not CLI11's required(): its line would say "suite is required" where --trace wants a scenario.
  cmd->add_option("suite", o->suite, "validation suite JSON (validate/suites/*.json); with --trace, a scenario");
  auto trace = std::make_shared<std::string>();
  CLI::Option* trace_option =
      cmd->add_option("--trace", *trace, "PyTorch profiler (Kineto) trace: compare the scenario's prediction with it");
  // A trace comparison measures and writes nothing: the suite's options would be ignored beside it.
  trace_option->excludes(
      cmd->add_option("--calibration", o->calibrations,
                      "calibrated topology from `commsim calibrate` (repeatable; missing ones are calibrated now)"));
  trace_option->excludes(
      cmd->add_option("--report", o->report_dir, "report folder (default: validation-SUITE)")->check(output_folder()));
  trace_option->excludes(cmd->add_flag("--cluster", o->cluster,
                                       "run on the emulated cluster (network namespaces, tc; needs CAP_NET_ADMIN)"));
  trace_option->excludes(
      cmd->add_option("--measured", o->measured_dir,
                      "re-judge earlier runs: read measured-SCENARIO.json from this folder instead of running"));
  cmd->callback([o, trace, &exit_code] {
    if (o->suite.empty())
      throw InputError(
          "validate", "",
          trace->empty() ? "names no suite: validate SUITE" : "names no scenario: validate --trace TRACE SCENARIO");
    exit_code = trace->empty() ? validate_suite(*o) : validate_trace(o->suite, *trace);
  });
}

}  // namespace commsim::cli
