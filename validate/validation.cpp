#include "validate/validation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "sim/core/data_path.hpp"
#include "sim/core/statistics.hpp"
#include "sim/result/result.hpp"
#include "sim/step/simulation.hpp"
#include "sim/topology/topology_document.hpp"
#include "validate/hardware_run.hpp"

namespace commsim::validate {
namespace {

namespace fs = std::filesystem;

std::string safe_name(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return s;
}

// The scenario (with its overrides) on an in-memory topology, its device at the calibrated local rates: memory_Bps
// = 3 x reduce_Bps (the simulator reduces at memory_Bps / 3), dgc_Bps as measured. `topology_name` names it in
// errors.
SimulationRun simulate_with(const Json& document, const std::string& scenario_file, const Json& topology,
                            const std::string& topology_name, const CalibrationSummary& calibration) {
  SimulationRun run;
  run.scenario = parse_scenario(document, scenario_file);
  if (calibration.reduce_Bps > 0) run.scenario.device.memory_Bps = 3 * calibration.reduce_Bps;
  if (calibration.dgc_Bps > 0) run.scenario.device.dgc_Bps = calibration.dgc_Bps;
  run.topology = load_topology_document(topology, topology_name, run.scenario.nodes);
  use_scenario_release(run.scenario, *run.topology);
  run.plan = build_plan(run.scenario, *run.topology, load_model(run.scenario.model_path));
  try {
    run.result = simulate_plan(run.plan, *run.topology, Fidelity::Flow);
  } catch (const TimeRangeError& e) {  // a rate out of proportion: name both documents
    throw InputError(scenario_file, e.quantity(), e.detail() + " (topology " + topology_name + ")");
  }
  return run;
}

// What the run of a scenario asks the hardware: its Plan on the MPI backend with the simulator's schedules.
hw::HardwareRunRequest measure_request(const Suite& suite, const SuiteEntry& entry, bool cluster,
                                       const std::string& json) {
  hw::HardwareRunRequest r;
  r.job = hw::HardwareJob::Run;
  r.backend = "mpi";
  r.scenario = fs::absolute(entry.scenario).string();
  r.sets = Suite::set_arguments(entry, suite.steps);
  r.impl = "schedule";
  r.warmup = suite.warmup;
  r.timeout_s = suite.timeout_s;
  r.cluster = cluster;
  r.result_file = fs::absolute(json).string();
  return r;
}

Measurement measurement_of(const Result& r, const std::string& json_file) {
  Measurement m;
  m.json_file = json_file;
  m.steps_s = r.steps_s;
  m.steady_from = r.steady_from;
  m.backend_step_time_s = r.step_time_s;
  m.backend_spread_s = r.step_time_spread_s;
  m.ok = !m.steps_s.empty();
  if (!m.ok) m.error = json_file + ": no measured steps";
  return m;
}

std::string without_json_extension(const std::string& file) {
  return file.size() > 5 && file.ends_with(".json") ? file.substr(0, file.size() - 5) : file;
}

Sign sign_of(double speedup, double no_change) {
  if (std::abs(speedup - 1) < no_change) return Sign::Same;
  return speedup > 1 ? Sign::Faster : Sign::Slower;
}

}  // namespace

std::string measured_file_name(const std::string& name, int run) {
  return "measured-" + safe_name(name) + (run > 1 ? ".run" + std::to_string(run) : "") + ".json";
}

Prediction predict(const Suite& suite, const SuiteEntry& entry, const CalibrationSummary& calibration) {
  const Json document = suite.document(entry);
  Prediction p;
  p.calibration_file = calibration.file;
  const SimulationRun nominal =
      simulate_with(document, entry.scenario, calibration.topology, calibration.file, calibration);
  p.step_time_s = nominal.result.step_time_s;
  p.step_kind = nominal.plan.step_plan_of;
  p.steady_from = nominal.result.steady_from;
  p.ranks = nominal.plan.ranks;
  p.fast_s = simulate_with(document, entry.scenario, scale_link_classes(calibration.topology, calibration, -1),
                           calibration.file + " (band, faster)", calibration)
                 .result.step_time_s;
  p.slow_s = simulate_with(document, entry.scenario, scale_link_classes(calibration.topology, calibration, +1),
                           calibration.file + " (band, slower)", calibration)
                 .result.step_time_s;
  return p;
}

Measurement read_measurement(const std::string& json_file) {
  Measurement m = measurement_of(Result::from_json(read_json_file(json_file), json_file), json_file);
  const std::string response = without_json_extension(json_file) + ".response.json";
  if (path_exists(response)) m.network = hw::read_hardware_response(read_json_file(response), response).network;
  return m;
}

Measurement measure(const std::string& commsim, const Suite& suite, const SuiteEntry& entry, bool cluster,
                    const std::string& out_dir, int run) {
  const std::string json = (fs::path(out_dir) / measured_file_name(entry.name, run)).string();
  const HardwareRun hw_run = run_on_hardware(commsim, measure_request(suite, entry, cluster, json),
                                             without_json_extension(json), suite.timeout_s + 60);
  Measurement m;
  if (hw_run.ok()) m = measurement_of(*hw_run.result, json);
  if (!hw_run.ok()) m.error = hw_run.error;
  m.network = hw_run.response.network;
  m.log_file = hw_run.log_file;
  m.wall_s = hw_run.wall_s;
  return m;
}

StepStatistic kind_weighted_median(const std::vector<RunSteps>& runs, const std::vector<int>& step_kind) {
  std::map<int, std::vector<double>> by_kind;
  std::size_t n = 0;
  for (const RunSteps& run : runs)
    for (std::size_t s = static_cast<std::size_t>(std::max(0, run.steady_from)); s < run.steps_s.size(); ++s) {
      const int kind = s < step_kind.size() ? step_kind[s] : 0;
      by_kind[kind].push_back(run.steps_s[s]);
      ++n;
    }
  StepStatistic st;
  st.steps = static_cast<int>(n);
  if (n == 0) return st;
  double var = 0;
  for (const auto& [kind, times] : by_kind) {
    const double w = static_cast<double>(times.size()) / static_cast<double>(n);
    const double half_iqr = (quantile(times, 0.75) - quantile(times, 0.25)) / 2;
    st.step_time_s += w * quantile(times, 0.5);
    st.spread_s += w * half_iqr;
    const double se = 1.2533141373155001 * (half_iqr / kHalfIqrPerSigma) / std::sqrt(static_cast<double>(times.size()));
    var += w * w * se * se;
  }
  st.median_se_s = std::sqrt(var);
  return st;
}

StepStatistic kind_weighted_median(const std::vector<double>& steps_s, const std::vector<int>& step_kind,
                                   int steady_from) {
  return kind_weighted_median(std::vector<RunSteps>{{steps_s, steady_from}}, step_kind);
}

void judge(ScenarioOutcome& o) {
  std::vector<RunSteps> ok;
  o.measurement = Measurement{};
  for (const Measurement& m : o.runs) {
    o.measurement.wall_s += m.wall_s;
    if (m.ok)
      ok.push_back({m.steps_s, m.steady_from});
    else if (o.measurement.error.empty())
      o.measurement.error = m.error;
    if (o.measurement.network.empty()) o.measurement.network = m.network;
  }
  o.measurement.ok = !ok.empty();
  if (!o.measurement.ok) return;
  o.measured = kind_weighted_median(ok, o.prediction.step_kind);
  o.band = prediction_band(o.prediction.step_time_s, o.prediction.fast_s, o.prediction.slow_s, o.measured.spread_s);
  o.error_rel =
      o.measured.step_time_s > 0 ? (o.prediction.step_time_s - o.measured.step_time_s) / o.measured.step_time_s : 0;
  o.inside = o.band.contains(o.measured.step_time_s);
}

SpeedupOutcome compare_speedup(const Comparison& c, const ScenarioOutcome& v, const ScenarioOutcome& b) {
  SpeedupOutcome s;
  s.technique = c.technique;
  s.variant = c.variant;
  s.baseline = c.baseline;
  s.note = c.note;
  s.predicted = b.prediction.step_time_s / v.prediction.step_time_s;
  s.measured = b.measured.step_time_s / v.measured.step_time_s;
  s.predicted_sign = sign_of(s.predicted, kNoChange);
  s.resolved = std::abs(b.measured.step_time_s - v.measured.step_time_s) >
               kBandSigmas * std::hypot(b.measured.median_se_s, v.measured.median_se_s);
  // The same "no change" on both sides: a prediction within 1 % could never match a measured direction of any size.
  s.measured_sign = s.resolved ? sign_of(s.measured, kNoChange) : Sign::Same;
  s.sign_right = s.measured_sign == s.predicted_sign;
  return s;
}

void summarise(Validation& v) {
  v.speedups.clear();
  std::map<std::string, const ScenarioOutcome*> by_name;
  for (const ScenarioOutcome& o : v.outcomes)
    if (o.measurement.ok) by_name[o.entry->name] = &o;
  for (const Comparison& c : v.suite->comparisons) {
    auto variant = by_name.find(c.variant), baseline = by_name.find(c.baseline);
    if (variant == by_name.end() || baseline == by_name.end()) continue;  // not measured: counted in the summary
    v.speedups.push_back(compare_speedup(c, *variant->second, *baseline->second));
  }
  Summary& s = v.summary;
  s = Summary{};
  s.scenarios = static_cast<int>(v.outcomes.size());
  std::vector<double> errors;
  for (const ScenarioOutcome& o : v.outcomes) {
    if (!o.measurement.ok) continue;
    ++s.measured;
    s.inside += o.inside;
    errors.push_back(std::abs(o.error_rel));
    if (std::abs(o.error_rel) >= s.max_abs_error) {
      s.max_abs_error = std::abs(o.error_rel);
      s.max_error_scenario = o.entry->name;
    }
  }
  s.median_abs_error = quantile(errors, 0.5);
  for (const SpeedupOutcome& sp : v.speedups) {
    if (!sp.resolved) s.unresolved.push_back(&sp);
    if (!sp.sign_right) s.wrong_signs.push_back(&sp);
  }
  const bool all_measured = s.measured == s.scenarios && s.measured > 0;
  s.median_met = all_measured && s.median_abs_error <= s.target_median;
  s.max_met = all_measured && s.max_abs_error <= s.target_max;
  s.inside_met = all_measured && s.inside >= s.target_inside * s.measured;
  s.signs_met = all_measured && s.wrong_signs.empty() && v.speedups.size() == v.suite->comparisons.size();
}

}  // namespace commsim::validate
