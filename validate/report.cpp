#include "validate/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "reports/format.hpp"
#include "reports/html.hpp"

namespace commsim::validate {
namespace {

using reports::escape_xml;
using reports::fixed;

std::string ms(double s) { return fixed(s * 1e3, 2); }
std::string pct(double f) { return (f >= 0 ? "+" : "") + fixed(100 * f, 1) + " %"; }
std::string sign_word(Sign s) { return s == Sign::Faster ? "faster" : s == Sign::Slower ? "slower" : "same"; }

std::string speedup_verdict(const SpeedupOutcome& s) {
  return std::string(s.sign_right ? "right" : "WRONG") + (s.resolved ? "" : " (within noise)");
}

std::string summary_line(const Validation& v) {
  const Summary& s = v.summary;
  return "median |error| " + fixed(100 * s.median_abs_error, 1) + " % (target <= " + fixed(100 * s.target_median, 0) +
         " %: " + (s.median_met ? "met" : "missed") + "), max |error| " + fixed(100 * s.max_abs_error, 1) + " % on " +
         s.max_error_scenario + " (target <= " + fixed(100 * s.target_max, 0) +
         " %: " + (s.max_met ? "met" : "missed") + "), measurement inside the band " + std::to_string(s.inside) + "/" +
         std::to_string(s.measured) + " (target >= " + fixed(100 * s.target_inside, 0) +
         " %: " + (s.inside_met ? "met" : "missed") + "), speedup signs right " +
         std::to_string(v.speedups.size() - s.wrong_signs.size()) + "/" + std::to_string(v.speedups.size()) +
         (s.unresolved.empty() ? "" : " (" + std::to_string(s.unresolved.size()) + " measured within noise)") +
         " (target all: " + (s.signs_met ? "met" : "missed") + ")";
}

// One scenario: its prediction, its measured statistic (or why there is none) and each run; each run's files are
// added to `judging`.
Json scenario_json(const ScenarioOutcome& o, Json& judging) {
  const SuiteEntry& e = *o.entry;
  Json j = {{"name", e.name},
            {"scenario", e.scenario},
            {"set", e.set},
            {"note", e.note},
            {"topology", e.topology_name},
            {"ranks", e.ranks},
            {"calibration", o.prediction.calibration_file},
            {"predicted_s", o.prediction.step_time_s},
            {"predicted_fast_s", o.prediction.fast_s},
            {"predicted_slow_s", o.prediction.slow_s},
            {"measured_ok", o.measurement.ok}};
  if (o.measurement.ok) {
    j.update({{"measured_s", o.measured.step_time_s},
              {"measured_spread_s", o.measured.spread_s},
              {"measured_median_se_s", o.measured.median_se_s},
              {"measured_steps", o.measured.steps},
              {"band_low_s", o.band.low_s},
              {"band_high_s", o.band.high_s},
              {"error_rel", o.error_rel},
              {"inside_band", o.inside},
              {"network", o.measurement.network}});
  } else {
    j["error"] = o.measurement.error;
  }
  Json runs = Json::array();
  for (std::size_t r = 0; r < o.runs.size(); ++r) {
    const Measurement& m = o.runs[r];
    runs.push_back({{"run", r + 1},
                    {"ok", m.ok},
                    {"median_s", m.backend_step_time_s},
                    {"half_iqr_s", m.backend_spread_s},
                    {"steps_s", m.steps_s},
                    {"steady_from", m.steady_from}});
    if (!m.ok) runs.back()["error"] = m.error;
    judging.push_back(
        {{"scenario", e.name}, {"run", r + 1}, {"result", m.json_file}, {"log", m.log_file}, {"wall_s", m.wall_s}});
  }
  j["runs"] = runs;
  return j;
}

Json speedup_json(const SpeedupOutcome& s) {
  return {{"technique", s.technique},
          {"variant", s.variant},
          {"baseline", s.baseline},
          {"note", s.note},
          {"predicted", s.predicted},
          {"measured", s.measured},
          {"predicted_sign", sign_word(s.predicted_sign)},
          {"measured_sign", sign_word(s.measured_sign)},
          {"resolved", s.resolved},
          {"sign_right", s.sign_right}};
}

Json summary_json(const Validation& v) {
  const Summary& s = v.summary;
  Json wrong = Json::array(), unresolved = Json::array();
  for (const auto* w : s.wrong_signs) wrong.push_back(w->variant + " vs " + w->baseline);
  for (const auto* u : s.unresolved) unresolved.push_back(u->variant + " vs " + u->baseline);
  return {{"scenarios", s.scenarios},
          {"measured", s.measured},
          {"inside_band", s.inside},
          {"median_abs_error", s.median_abs_error},
          {"max_abs_error", s.max_abs_error},
          {"max_error_scenario", s.max_error_scenario},
          {"wrong_signs", wrong},
          {"unresolved_signs", unresolved},
          {"targets",
           {{"median_abs_error", s.target_median},
            {"max_abs_error", s.target_max},
            {"inside_band_share", s.target_inside},
            {"median_met", s.median_met},
            {"max_met", s.max_met},
            {"inside_met", s.inside_met},
            {"signs_met", s.signs_met}}},
          {"line", summary_line(v)}};
}

Json method_json() {
  return {{"prediction",
           "commsim simulate, flow fidelity, the scenario's topology replaced by the calibrated one, device "
           "memory_Bps = 3 x the calibrated reduction rate, dgc_Bps = the calibrated DGC rate"},
          {"measured_statistic",
           "steady steps grouped by the Plan's step kind; median per kind, weighted by the kind's share "
           "of steps (= the backend's median when all steps are alike)"},
          {"band",
           "predicted -/+ sqrt(model^2 + (2 sigma)^2): model = re-simulation with every calibrated link class "
           "slower/faster by 2 x its RMS relative fit residual; sigma = measured half-IQR / 0.6745"},
          {"sign",
           "faster, slower or no change, the same rule for the prediction and the measurement: |speedup - 1| "
           "< 1 % is no change, and so is a measured speedup whose two medians differ by no more than 2 standard "
           "errors of their difference (standard error of a median = 1.2533 sigma / sqrt(steps)); a sign is "
           "right when both agree"}};
}

}  // namespace

Json to_json(const Validation& v) {
  Json scenarios = Json::array(), judging = Json::array(), fitting = Json::array(), speedups = Json::array();
  for (const ScenarioOutcome& o : v.outcomes) scenarios.push_back(scenario_json(o, judging));
  for (const CalibrationSummary& c : v.calibrations)
    fitting.push_back({{"calibrated_topology", c.file},
                       {"topology", c.topology_name},
                       {"host", c.host},
                       {"date", c.date},
                       {"cluster", c.cluster}});
  for (const SpeedupOutcome& s : v.speedups) speedups.push_back(speedup_json(s));
  return {{"suite", {{"name", v.suite->name}, {"file", v.suite->file}, {"description", v.suite->description}}},
          {"provenance",
           {{"host", v.host},
            {"date", v.date},
            {"commsim_version", v.commsim_version},
            {"backend", "mpi"},
            {"impl", "schedule (the simulator's own collective schedules executed with MPI point-to-point)"},
            {"cluster", v.cluster},
            {"wall_s", v.wall_s}}},
          {"method", method_json()},
          {"fitting_runs", fitting},
          {"judging_runs", judging},
          {"scenarios", scenarios},
          {"speedups", speedups},
          {"summary", summary_json(v)}};
}

std::string terminal_table(const Validation& v) {
  reports::TextTable t({"scenario", "predicted ms", "band ms", "measured ms", "spread ms", "error", "in band"});
  for (const ScenarioOutcome& o : v.outcomes) {
    const SuiteEntry& e = *o.entry;
    if (!o.measurement.ok) {
      t.add({e.name, ms(o.prediction.step_time_s), "", "FAILED", "", "", ""});
      continue;
    }
    t.add({e.name, ms(o.prediction.step_time_s), ms(o.band.low_s) + "-" + ms(o.band.high_s), ms(o.measured.step_time_s),
           ms(o.measured.spread_s), pct(o.error_rel), o.inside ? "yes" : "NO"});
  }
  reports::TextTable sp({"technique", "variant", "baseline", "predicted x", "measured x", "sign"});
  for (const SpeedupOutcome& s : v.speedups)
    sp.add({s.technique, s.variant, s.baseline, fixed(s.predicted, 3), fixed(s.measured, 3), speedup_verdict(s)});
  std::string out = "validation of suite " + v.suite->name + " (" + (v.cluster ? "emulated cluster" : "loopback") +
                    ")\n" + t.str() + "\nspeedup = baseline step time / variant step time\n" + sp.str() + "\n" +
                    summary_line(v) + "\n";
  for (const auto* w : v.summary.wrong_signs)
    out += "wrong sign: " + w->variant + " vs " + w->baseline + " predicted " + fixed(w->predicted, 3) +
           "x, measured " + fixed(w->measured, 3) + "x\n";
  for (const ScenarioOutcome& o : v.outcomes)
    if (!o.measurement.ok) out += "not measured: " + o.entry->name + ": " + o.measurement.error + "\n";
  return out;
}

std::string band_chart_svg(const Validation& v) {
  std::vector<const ScenarioOutcome*> rows;
  double hi = 0;
  for (const ScenarioOutcome& o : v.outcomes) {
    if (!o.measurement.ok) continue;
    rows.push_back(&o);
    hi = std::max({hi, o.band.high_s, o.measured.step_time_s, o.prediction.step_time_s});
  }
  const double left = 190, width = 560, row_h = 18, top = 30;
  const double height = top + row_h * static_cast<double>(rows.size()) + 40;
  hi = hi > 0 ? hi * 1.05 : 1;
  auto x = [&](double s) { return left + width * s / hi; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fixed(left + width + 30, 0) +
                    "\" height=\"" + fixed(height, 0) +
                    "\" data-chart=\"validation-bands\" font-family=\"sans-serif\" font-size=\"11\">";
  svg += "<text x=\"" + fixed(left, 0) +
         "\" y=\"16\" font-size=\"13\">Predicted step time with its band (bar), measured (dot: green inside, red "
         "outside), ms</text>";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ScenarioOutcome& o = *rows[i];
    const double y = top + row_h * static_cast<double>(i);
    const std::string name = escape_xml(o.entry->name);
    svg +=
        "<text x=\"" + fixed(left - 6, 0) + "\" y=\"" + fixed(y + 12, 1) + "\" text-anchor=\"end\">" + name + "</text>";
    svg += "<rect x=\"" + fixed(x(o.band.low_s), 1) + "\" y=\"" + fixed(y + 4, 1) + "\" width=\"" +
           fixed(std::max(1.0, x(o.band.high_s) - x(o.band.low_s)), 1) +
           "\" height=\"10\" fill=\"#a6c8e8\" data-low=\"" + reports::number(o.band.low_s) + "\" data-high=\"" +
           reports::number(o.band.high_s) + "\"><title>" + name + " band " + ms(o.band.low_s) + "-" +
           ms(o.band.high_s) + " ms</title></rect>";
    svg += "<line x1=\"" + fixed(x(o.prediction.step_time_s), 1) + "\" x2=\"" + fixed(x(o.prediction.step_time_s), 1) +
           "\" y1=\"" + fixed(y + 2, 1) + "\" y2=\"" + fixed(y + 16, 1) +
           "\" stroke=\"#1f4e79\" stroke-width=\"2\" data-value=\"" + reports::number(o.prediction.step_time_s) +
           "\"><title>" + name + " predicted " + ms(o.prediction.step_time_s) + " ms</title></line>";
    svg += "<circle cx=\"" + fixed(x(o.measured.step_time_s), 1) + "\" cy=\"" + fixed(y + 9, 1) + "\" r=\"4\" fill=\"" +
           (o.inside ? "#2e8b57" : "#c0392b") + "\" data-value=\"" + reports::number(o.measured.step_time_s) +
           "\"><title>" + name + " measured " + ms(o.measured.step_time_s) + " ms (" + pct(o.error_rel) +
           ")</title></circle>";
  }
  const double axis_y = top + row_h * static_cast<double>(rows.size()) + 6;
  svg += "<line x1=\"" + fixed(left, 0) + "\" x2=\"" + fixed(left + width, 0) + "\" y1=\"" + fixed(axis_y, 1) +
         "\" y2=\"" + fixed(axis_y, 1) + "\" stroke=\"#444444\"/>";
  for (int k = 0; k <= 5; ++k) {
    const double s = hi * k / 5;
    svg += "<text x=\"" + fixed(x(s), 1) + "\" y=\"" + fixed(axis_y + 14, 1) + "\" text-anchor=\"middle\">" + ms(s) +
           "</text>";
  }
  svg += "</svg>";
  return svg;
}

namespace {

using Rows = std::vector<std::vector<std::string>>;

// What the calibrations put in the topologies: per class latency, effective bandwidth, fit, band; the sweep's line.
Rows calibration_rows(const Validation& v) {
  Rows line_rows;
  for (const CalibrationSummary& c : v.calibrations) {
    for (const auto& l : c.lines) {
      std::string bp;
      for (double b : l.breakpoints_bytes) bp += (bp.empty() ? "" : ", ") + fixed(b, 0) + " B";
      double band = 0;
      for (const auto& [name, rel] : c.band_rel)
        if (name == l.link_class) band = rel;
      line_rows.push_back({c.topology_name, l.link_class, fixed(l.latency_s * 1e6, 1), fixed(l.effective_Bps / 1e6, 1),
                           fixed(l.pingpong_r2, 4), bp.empty() ? "-" : bp, "+-" + fixed(100 * band, 1) + " %"});
    }
    if (c.collective_step_latency_s > 0)
      line_rows.push_back({c.topology_name, "allreduce sweep",
                           fixed(c.collective_step_latency_s * 1e6, 1) + " per ring step",
                           fixed(c.collective_beta_Bps / 1e6, 1), fixed(c.collective_r2, 4),
                           c.collective_used ? "used (model collective)" : "not used", ""});
    if (c.concurrent_step_delay_s > 0)
      line_rows.push_back({c.topology_name, "two-stream sweep",
                           fixed(c.concurrent_step_delay_s * 1e6, 1) + " per transfer beside another", "-", "-",
                           c.concurrent_used ? "used (library.concurrent_step_delay_us)" : "not used",
                           "predicted sizes' median error " + fixed(100 * c.concurrent_predicted_error, 1) + " %"});
  }
  return line_rows;
}

// Per scenario: predicted, band, measured, error, inside or not (or why not measured).
Rows scenario_rows(const Validation& v) {
  Rows rows;
  for (const ScenarioOutcome& o : v.outcomes) {
    const SuiteEntry& e = *o.entry;
    if (!o.measurement.ok) {
      rows.push_back(
          {e.name, e.note, ms(o.prediction.step_time_s), "", "not measured: " + o.measurement.error, "", "", "", ""});
      continue;
    }
    rows.push_back({e.name, e.note, ms(o.prediction.step_time_s), ms(o.band.low_s) + " - " + ms(o.band.high_s),
                    ms(o.measured.step_time_s), ms(o.measured.spread_s), pct(o.error_rel), o.inside ? "yes" : "no",
                    std::to_string(o.runs.size()) + " run(s), " + std::to_string(o.measured.steps) + " steps"});
  }
  return rows;
}

}  // namespace

std::string to_html(const Validation& v) {
  reports::HtmlPage page("commsim validation: suite " + v.suite->name);
  page.paragraph(v.suite->description);
  page.paragraph(summary_line(v));
  page.paragraph("Measured on " + v.host + " at " + v.date + " with the MPI backend (" +
                 (v.cluster ? std::string("emulated cluster: network namespaces, tc tbf") : std::string("loopback")) +
                 "), collectives as the simulator's own schedules (--impl schedule). Whole validation took " +
                 fixed(v.wall_s, 0) + " s.");
  page.heading("Which runs fitted the model, which judged it");
  std::vector<std::vector<std::string>> fit_rows;
  for (const CalibrationSummary& c : v.calibrations)
    fit_rows.push_back({c.topology_name, c.file, c.host, c.date, c.cluster ? "emulated cluster" : "loopback"});
  page.paragraph(
      "Fitting: the microbenchmarks (ping-pong per link class, reduction and DGC rates) of `commsim bench`, fitted by "
      "`commsim calibrate` into these calibrated topologies. Judging: one `commsim run` per scenario below, separate "
      "runs "
      "that the fit never saw.");
  page.table({"topology", "calibrated topology (fitting run)", "host", "date", "network"}, fit_rows);
  const Rows line_rows = calibration_rows(v);
  page.paragraph(
      "What the calibration put in the topologies (latency and effective bandwidth = bandwidth x efficiency per class; "
      "R^2 "
      "and regime breakpoints of the ping-pong fit; the band's relative half-width per class):");
  page.table({"topology", "link class", "latency (us)", "bandwidth (MB/s)", "R^2", "regime breakpoints", "band"},
             line_rows);
  page.heading("Step time: predicted vs measured");
  page.figure(band_chart_svg(v));
  const Rows rows = scenario_rows(v);
  page.table({"scenario", "what it is", "predicted (ms)", "band (ms)", "measured (ms)", "spread (ms)", "error",
              "inside band", "judging runs"},
             rows);
  page.heading("Techniques: speedup over the baseline (baseline time / variant time)");
  std::vector<std::vector<std::string>> sp_rows;
  for (const SpeedupOutcome& s : v.speedups)
    sp_rows.push_back(
        {s.technique, s.variant, s.baseline, fixed(s.predicted, 3), fixed(s.measured, 3), speedup_verdict(s), s.note});
  page.table({"technique", "variant", "baseline", "predicted", "measured", "sign", "what it compares"}, sp_rows);
  std::string wrong;
  for (const auto* w : v.summary.wrong_signs) wrong += w->variant + " vs " + w->baseline + "; ";
  page.paragraph(wrong.empty() ? "No speedup has the wrong sign." : "Wrong signs: " + wrong);
  page.heading("Method");
  page.paragraph(
      "Prediction: the simulator (flow fidelity) with the scenario's topology replaced by the calibrated one and the "
      "device's memory_Bps set to 3 x the calibrated reduction rate and its dgc_Bps to the calibrated DGC rate. "
      "Measured value: steady steps grouped by the "
      "Plan's step kind, the median of each kind weighted by its share of steps. Band: predicted -/+ sqrt(model^2 + "
      "(2 sigma)^2), model = re-simulation with every calibrated link class slower/faster by 2 x its RMS relative fit "
      "residual, sigma = the measured half interquartile range / 0.6745. A speedup's measured sign counts only when "
      "the two measured medians differ by more than 2 standard errors of their difference. See docs/calibration.md.");
  return page.str();
}

void write_report(const Validation& v, const std::string& dir) {
  reports::create_directories(dir, "--report");
  write_file((std::filesystem::path(dir) / "validation.json").string(), to_json(v).dump(2) + "\n", "--report");
  write_file((std::filesystem::path(dir) / "index.html").string(), to_html(v), "--report");
  write_file((std::filesystem::path(dir) / "table.txt").string(), terminal_table(v), "--report");
}

}  // namespace commsim::validate
