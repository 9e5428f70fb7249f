#include "validate/validate_run.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "reports/format.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/host.hpp"
#include "validate/calibrate_run.hpp"
#include "validate/report.hpp"

namespace commsim::validate {
namespace {

namespace fs = std::filesystem;

std::string safe(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return s;
}

// The given calibrated topologies, each checked against the run (same network) and the others (one per topology).
std::vector<CalibrationSummary> given_calibrations(const ValidateOptions& o) {
  std::vector<CalibrationSummary> out;
  for (const std::string& file : o.calibrations) {
    CalibrationSummary c = read_calibration(file);
    if (c.cluster != o.cluster && o.measured_dir.empty())
      throw InputError(file, "sources.calibration.provenance.cluster",
                       std::string("calibrated on ") + (c.cluster ? "the emulated cluster" : "loopback") +
                           " but validating on " + (o.cluster ? "the emulated cluster (--cluster)" : "loopback") +
                           ": calibrate and validate the same way");
    for (const CalibrationSummary& other : out)
      if (other.topology_name == c.topology_name)
        throw InputError(file, "sources.calibration.topology.name",
                         "a second calibration of topology \"" + c.topology_name + "\"");
    out.push_back(std::move(c));
  }
  return out;
}

// Calibrates the topology of `e` now (its own run, not a scenario's): the calibration in memory, also written to
// `work_dir` as an output. nullopt, with the refusal in `out`, when a fit cannot be trusted.
std::optional<CalibrationSummary> calibrate_now(const ValidateOptions& o, const Suite& suite, const SuiteEntry& e,
                                                const std::string& work_dir, ValidateOutcome& out) {
  if (!o.measured_dir.empty())
    throw InputError(o.suite, "scenarios",
                     "no --calibration given for topology \"" + e.topology_name + "\" (needed with --measured)");
  CalibrateOptions co;
  co.commsim = o.commsim;
  co.topology = e.topology_path;
  co.cluster = o.cluster;
  const auto size = suite.bench_max_bytes_by_topology.find(e.topology_name);
  co.max_bytes = size == suite.bench_max_bytes_by_topology.end() ? suite.bench_max_bytes : size->second;
  co.repeats = suite.bench_repeats;
  co.out = (fs::path(work_dir) / (safe(e.topology_name) + "-calibrated.json")).string();
  std::fprintf(stderr,
               "commsim validate: no calibration given for topology %s: calibrating it now (its own run, not a "
               "scenario)\n",
               e.topology_name.c_str());
  const Calibration cal = run_calibration(co);
  std::fprintf(stderr, "%s", describe(cal).c_str());
  if (cal.trusted()) return summarise_calibration(cal.calibrated_topology, co.out);
  for (const ClassCalibration& c : cal.classes)
    if (!c.trusted) out.refusal = "commsim validate: calibration of " + e.topology_name + " refused: " + c.why_not;
  out.exit_code = 1;
  return std::nullopt;
}

// Every topology of the suite needs a calibration: given, or measured now. Returns the index of each topology's in
// v.calibrations, or an empty map when a calibration was refused (out says why).
std::map<std::string, std::size_t> calibrations_by_topology(const ValidateOptions& o, const std::string& work_dir,
                                                            ValidateOutcome& out) {
  Validation& v = out.validation;
  std::map<std::string, std::size_t> by_topology;
  for (const SuiteEntry& e : v.suite->entries) {
    if (by_topology.count(e.topology_name)) continue;
    std::size_t found = v.calibrations.size();
    for (std::size_t i = 0; i < v.calibrations.size(); ++i)
      if (v.calibrations[i].topology_name == e.topology_name) found = i;
    if (found == v.calibrations.size()) {
      std::optional<CalibrationSummary> made = calibrate_now(o, *v.suite, e, work_dir, out);
      if (!made) return {};
      v.calibrations.push_back(std::move(*made));
    }
    by_topology[e.topology_name] = found;
  }
  return by_topology;
}

void print_progress(int run, const Suite& suite, std::size_t i, const ScenarioOutcome& oc, const Measurement& m) {
  const std::size_t n = suite.entries.size();
  const char* name = oc.entry->name.c_str();
  if (m.ok) {
    const StepStatistic st = kind_weighted_median(m.steps_s, oc.prediction.step_kind, m.steady_from);
    std::fprintf(
        stderr,
        "[run %d/%d, %zu/%zu] %-16s predicted %9.2f ms  measured %9.2f ms (half IQR %.2f)  %+6.1f %%  (%.0f s)\n", run,
        suite.runs, i + 1, n, name, oc.prediction.step_time_s * 1e3, st.step_time_s * 1e3, st.spread_s * 1e3,
        100 * (oc.prediction.step_time_s - st.step_time_s) / st.step_time_s, m.wall_s);
  } else {
    std::fprintf(stderr, "[run %d/%d, %zu/%zu] %-16s NOT MEASURED: %s\n", run, suite.runs, i + 1, n, name,
                 m.error.c_str());
  }
  std::fflush(stderr);
}

Measurement measure_or_read(const ValidateOptions& o, const Suite& suite, const SuiteEntry& e,
                            const std::string& runs_dir, int run) {
  if (o.measured_dir.empty()) return measure(o.commsim, suite, e, o.cluster, runs_dir, run);
  const std::string file = (fs::path(o.measured_dir) / measured_file_name(e.name, run)).string();
  if (path_exists(file)) return read_measurement(file);
  Measurement m;
  m.error = "no " + file;
  return m;
}

// Predictions first (seconds), then the measured runs interleaved: run 1 of every scenario, then run 2, ... so
// that a slow drift of the host's load touches every scenario alike (speedups compare runs minutes apart).
void predict_and_measure(const ValidateOptions& o, const std::map<std::string, std::size_t>& by_topology,
                         const std::string& runs_dir, Validation& v) {
  const Suite& suite = *v.suite;
  const std::size_t n = suite.entries.size();
  v.outcomes.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const SuiteEntry& e = suite.entries[i];
    v.outcomes[i].entry = &e;
    v.outcomes[i].prediction = predict(suite, e, v.calibrations[by_topology.at(e.topology_name)]);
  }
  for (int run = 1; run <= suite.runs; ++run)
    for (std::size_t i = 0; i < n; ++i) {
      Measurement m = measure_or_read(o, suite, suite.entries[i], runs_dir, run);
      print_progress(run, suite, i, v.outcomes[i], m);
      v.outcomes[i].runs.push_back(std::move(m));
    }
}

// The run after its folders exist: calibrations, predictions, measurements, judgement and the report.
void validate_into(const ValidateOptions& o, const std::string& runs_dir, const std::string& work_dir,
                   std::chrono::steady_clock::time_point start, ValidateOutcome& out) {
  Validation& v = out.validation;
  v.cluster = o.cluster;
  v.host = host_name();
  v.date = utc_timestamp();
  v.commsim_version = COMMSIM_VERSION;
  v.calibrations = given_calibrations(o);
  const std::map<std::string, std::size_t> by_topology = calibrations_by_topology(o, work_dir, out);
  if (!out.refusal.empty()) return;
  predict_and_measure(o, by_topology, runs_dir, v);
  for (ScenarioOutcome& oc : v.outcomes) judge(oc);
  v.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summarise(v);
  write_report(v, out.report_dir);
  const Summary& s = v.summary;
  out.exit_code = s.median_met && s.max_met && s.inside_met && s.signs_met ? 0 : 1;
}

}  // namespace

ValidateOutcome run_validation(const ValidateOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ValidateOutcome out;
  Validation& v = out.validation;
  v.suite = std::make_shared<const Suite>(load_suite(o.suite));
  if (v.suite->needs_cluster && !o.cluster && o.measured_dir.empty())
    throw InputError(o.suite, "needs_cluster",
                     "this suite's scenarios need shaped links: run it with --cluster (emulated cluster, root)");
  out.report_dir = o.report_dir.empty() ? "validation-" + safe(v.suite->name) : o.report_dir;
  const std::string runs_dir = (fs::path(out.report_dir) / "runs").string();
  const std::string work_dir = (fs::path(out.report_dir) / "calibration").string();
  // The folders this run makes, removed again if it ends in an error: bad input leaves nothing behind.
  std::vector<std::string> made;
  for (const std::string& dir : {out.report_dir, runs_dir, work_dir})
    if (std::error_code ec; !fs::exists(dir, ec)) made.push_back(dir);
  try {
    reports::create_directories(runs_dir, "--report");
    reports::create_directories(work_dir, "--report");
    validate_into(o, runs_dir, work_dir, start, out);
  } catch (...) {
    std::error_code ec;
    for (const std::string& dir : made) fs::remove_all(dir, ec);
    throw;
  }
  return out;
}

}  // namespace commsim::validate
