#include "validate/validate_run.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "reports/format.hpp"
#include "sim/core/host.hpp"
#include "validate/calibrate_run.hpp"
#include "validate/process.hpp"
#include "validate/report.hpp"

namespace commsim::validate {
namespace {

namespace fs = std::filesystem;

std::string safe(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return s;
}

}  // namespace

ValidateOutcome run_validation(const ValidateOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ValidateOutcome out;
  Validation& v = out.validation;
  v.suite = std::make_shared<const Suite>(load_suite(o.suite));
  const Suite& suite = *v.suite;
  if (suite.needs_cluster && !o.cluster && o.measured_dir.empty())
    throw InputError(o.suite, "needs_cluster",
                     "this suite's scenarios need shaped links: run it with --cluster (emulated cluster, root)");
  const std::string dir = o.report_dir.empty() ? "validation-" + safe(suite.name) : o.report_dir;
  out.report_dir = dir;
  const std::string runs_dir = (fs::path(dir) / "runs").string(), work_dir = (fs::path(dir) / "calibration").string();
  fs::create_directories(runs_dir);
  fs::create_directories(work_dir);

  v.cluster = o.cluster;
  v.host = host_name();
  v.date = utc_timestamp();
  v.commsim_version = COMMSIM_VERSION;
  for (const std::string& file : o.calibrations) {
    CalibrationSummary c = read_calibration(file);
    if (c.cluster != o.cluster && o.measured_dir.empty())
      throw InputError(file, "sources.calibration.provenance.cluster",
                       std::string("calibrated on ") + (c.cluster ? "the emulated cluster" : "loopback") +
                           " but validating on " + (o.cluster ? "the emulated cluster (--cluster)" : "loopback") +
                           ": calibrate and validate the same way");
    for (const CalibrationSummary& other : v.calibrations)
      if (other.topology_name == c.topology_name)
        throw InputError(file, "sources.calibration.topology.name",
                         "a second calibration of topology \"" + c.topology_name + "\"");
    v.calibrations.push_back(c);
  }
  // Every topology of the suite needs a calibration: given, or measured now (a separate run from the scenarios').
  std::map<std::string, std::size_t> by_topology;
  for (const SuiteEntry& e : suite.entries) {
    if (by_topology.count(e.topology_name)) continue;
    std::size_t found = v.calibrations.size();
    for (std::size_t i = 0; i < v.calibrations.size(); ++i)
      if (v.calibrations[i].topology_name == e.topology_name) found = i;
    if (found == v.calibrations.size()) {
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
      std::fprintf(
          stderr,
          "commsim validate: no calibration given for topology %s: calibrating it now (its own run, not a scenario)\n",
          e.topology_name.c_str());
      const Calibration cal = run_calibration(co);
      std::fprintf(stderr, "%s", describe(cal).c_str());
      if (!cal.trusted()) {
        for (const ClassCalibration& c : cal.classes)
          if (!c.trusted)
            out.refusal = "commsim validate: calibration of " + e.topology_name + " refused: " + c.why_not;
        out.exit_code = 1;
        return out;
      }
      v.calibrations.push_back(read_calibration(co.out));
      found = v.calibrations.size() - 1;
    }
    by_topology[e.topology_name] = found;
  }

  // Predictions first (seconds), then the measured runs interleaved: run 1 of every scenario, then run 2, ... so
  // that a slow drift of the host's load touches every scenario alike (speedups compare runs minutes apart).
  const std::size_t n = suite.entries.size();
  v.outcomes.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    v.outcomes[i].entry = &suite.entries[i];
    v.outcomes[i].prediction =
        predict(suite, suite.entries[i], v.calibrations[by_topology[suite.entries[i].topology_name]], work_dir);
  }
  for (int run = 1; run <= suite.runs; ++run) {
    for (std::size_t i = 0; i < n; ++i) {
      const SuiteEntry& e = suite.entries[i];
      ScenarioOutcome& oc = v.outcomes[i];
      Measurement m;
      if (o.measured_dir.empty()) {
        m = measure(o.commsim, suite, e, o.cluster, runs_dir, run);
      } else {
        const std::string file = (fs::path(o.measured_dir) / measured_file_name(e.name, run)).string();
        if (fs::exists(file))
          m = read_measurement(file);
        else
          m.error = "no " + file;
      }
      if (m.ok) {
        const StepStatistic st = kind_weighted_median(m.steps_s, oc.prediction.step_kind, m.steady_from);
        std::fprintf(
            stderr,
            "[run %d/%d, %zu/%zu] %-16s predicted %9.2f ms  measured %9.2f ms (half IQR %.2f)  %+6.1f %%  (%.0f s)\n",
            run, suite.runs, i + 1, n, e.name.c_str(), oc.prediction.step_time_s * 1e3, st.step_time_s * 1e3,
            st.spread_s * 1e3, 100 * (oc.prediction.step_time_s - st.step_time_s) / st.step_time_s, m.wall_s);
      } else {
        std::fprintf(stderr, "[run %d/%d, %zu/%zu] %-16s NOT MEASURED: %s\n", run, suite.runs, i + 1, n, e.name.c_str(),
                     m.error.c_str());
      }
      std::fflush(stderr);
      oc.runs.push_back(std::move(m));
    }
  }
  for (ScenarioOutcome& oc : v.outcomes) judge(oc);
  v.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summarise(v);
  write_report(v, dir);
  const Summary& s = v.summary;
  out.exit_code = s.median_met && s.max_met && s.signs_met ? 0 : 1;
  return out;
}

}  // namespace commsim::validate
