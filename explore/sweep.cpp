#include "explore/sweep.hpp"

#include <map>

#include "explore/interrupt.hpp"
#include "reports/format.hpp"
#include "reports/html.hpp"
#include "reports/svg.hpp"

namespace commsim::explore {

using namespace commsim::reports;  // the writers: tables, CSV, SVG, HTML, progress

std::vector<std::size_t> coordinates(const std::vector<Axis>& axes, std::size_t row) {
  std::vector<std::size_t> at(axes.size());
  for (std::size_t a = axes.size(); a-- > 0;) {
    at[a] = row % axes[a].values.size();
    row /= axes[a].values.size();
  }
  return at;
}

namespace {

std::string short_key(const std::string& key) { return key.substr(key.rfind('.') + 1); }

// "nodes=2, size_mb=25" from the labels of the axes in `which`.
std::string label(const Sweep& s, std::size_t row, const std::vector<std::size_t>& which) {
  const std::vector<std::size_t> at = coordinates(s.axes, s.grid_row(row));
  std::string out;
  for (std::size_t a : which)
    out += (out.empty() ? "" : ", ") + short_key(s.axes[a].key) + "=" + s.axes[a].labels[at[a]];
  return out.empty() ? "all" : out;
}

std::vector<std::size_t> all_axes_but(const Sweep& s, std::size_t skip) {
  std::vector<std::size_t> out;
  for (std::size_t a = 0; a < s.axes.size(); ++a)
    if (a != skip) out.push_back(a);
  return out;
}

bool numeric_axis(const Axis& a, std::vector<double>& values) {
  values.clear();
  for (const std::string& v : a.values) {
    const std::optional<Json> j = parse_json_value(v, "--vary " + a.key);
    if (!j || !j->is_number()) return false;
    values.push_back(j->get<double>());
  }
  return true;
}

std::string ms(double seconds) { return fixed(seconds * 1e3, 3); }

// Whether a variant ran on a calibrated topology: then the tables carry the step time's error band.
bool any_band(const Sweep& s) {
  for (const Evaluation& e : s.rows)
    if (e.ok() && e.result.comm_band_rel > 0) return true;
  return false;
}

// The axes' names, and row i's value on each: the first columns of every table.
std::vector<std::string> axis_keys(const Sweep& s) {
  std::vector<std::string> keys;
  for (const Axis& a : s.axes) keys.push_back(a.key);
  return keys;
}
std::vector<std::string> axis_cells(const Sweep& s, std::size_t i) {
  std::vector<std::string> cells;
  const std::vector<std::size_t> at = coordinates(s.axes, s.grid_row(i));
  for (std::size_t a = 0; a < s.axes.size(); ++a) cells.push_back(s.axes[a].labels[at[a]]);
  return cells;
}

// Header and rows for the terminal and HTML tables (units in the header, numbers formatted for reading).
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> display_rows(const Sweep& s) {
  std::vector<std::string> header = axis_keys(s);
  for (const char* h : {"step ms", "samples/s", "scaling", "compute ms", "comm ms", "exposed ms", "overlap", "MB/rank"})
    header.emplace_back(h);
  const bool banded = any_band(s);
  if (banded) header.emplace_back("band ms");
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    std::vector<std::string> row = axis_cells(s, i);
    const Evaluation& e = s.rows[i];
    if (!e.ok()) {
      row.push_back("impossible: " + e.error);
    } else {
      const Result& r = e.result;
      for (const std::string& cell :
           {ms(r.step_time_s), fixed(r.throughput_samples_s, 1), percent(r.scaling_efficiency), ms(r.compute_s),
            ms(r.comm_s), ms(r.exposed_comm_s), percent(r.overlap_ratio), fixed(r.bytes_sent_per_rank / 1e6, 2)})
        row.push_back(cell);
      if (banded) row.push_back(r.comm_band_rel > 0 ? "+-" + ms(r.step_band_s()) : "-");
    }
    rows.push_back(row);
  }
  return {header, rows};
}

}  // namespace

std::string partial_note(const Sweep& s) {
  return "partial: " + std::to_string(s.rows.size()) + " of " + std::to_string(s.grid_size) +
         " configurations (stopped by " + signal_name(s.stopped_by_signal) + ")";
}

std::string sweep_table(const Sweep& s) {
  auto [header, rows] = display_rows(s);
  TextTable table(header);
  for (auto& r : rows) table.add(r);
  return (s.partial() ? "# " + partial_note(s) + "\n" : "") + table.str();
}

std::string sweep_csv(const Sweep& s) {
  std::vector<std::string> header = axis_keys(s);
  for (const char* h : {"step_time_s", "throughput_samples_s", "scaling_efficiency", "compute_s", "comm_s",
                        "exposed_comm_s", "overlap_ratio", "bytes_sent_per_rank", "buckets", "streams", "error"})
    header.emplace_back(h);
  const bool banded = any_band(s);
  if (banded) header.emplace_back("step_time_band_s");
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    std::vector<std::string> row = axis_cells(s, i);
    const Evaluation& e = s.rows[i];
    const Result& r = e.result;
    for (double v : {r.step_time_s, r.throughput_samples_s, r.scaling_efficiency, r.compute_s, r.comm_s,
                     r.exposed_comm_s, r.overlap_ratio, r.bytes_sent_per_rank})
      row.push_back(e.ok() ? number(v) : "");
    row.push_back(e.ok() ? std::to_string(e.buckets) : "");
    row.push_back(e.ok() ? std::to_string(e.streams) : "");
    row.push_back(e.error);
    if (banded) row.push_back(e.ok() ? number(r.step_band_s()) : "");
    rows.push_back(row);
  }
  return (s.partial() ? "# " + partial_note(s) + "\n" : "") + csv(header, rows);
}

nlohmann::json sweep_json(const Sweep& s) {
  Json axes = Json::array(), rows = Json::array();
  for (const Axis& a : s.axes) axes.push_back({{"key", a.key}, {"values", a.labels}});
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const Evaluation& e = s.rows[i];
    Json settings = Json::object();
    const std::vector<std::size_t> at = coordinates(s.axes, s.grid_row(i));
    for (std::size_t a = 0; a < s.axes.size(); ++a) settings[s.axes[a].key] = s.axes[a].labels[at[a]];
    Json row = {{"settings", settings}, {"sets", e.sets}};
    if (e.ok()) {
      row["result"] = e.result.to_json();
      row["buckets"] = e.buckets;
      row["streams"] = e.streams;
    } else {
      row["error"] = e.error;
    }
    rows.push_back(row);
  }
  Json out = {{"scenario", s.scenario_file},
              {"fidelity", s.fidelity},
              {"commsim_version", COMMSIM_VERSION},
              {"vary", axes},
              {"rows", rows}};
  if (s.partial()) {
    out["partial"] = true;
    out["rows_done"] = s.rows.size();
    out["rows_total"] = s.grid_size;
    out["note"] = partial_note(s);
  }
  return out;
}

std::string sweep_html(const Sweep& s) {
  HtmlPage page("commsim sweep: " + s.scenario_file);
  std::size_t impossible = 0;
  for (const Evaluation& e : s.rows) impossible += e.ok() ? 0 : 1;
  std::string varied;
  for (const Axis& a : s.axes) varied += (varied.empty() ? "" : ", ") + a.key;
  page.paragraph(std::to_string(s.rows.size()) + " configurations (" + varied + "), fidelity " + s.fidelity +
                 (impossible ? ", " + std::to_string(impossible) + " impossible (see the table)" : "") + ".");
  if (s.partial()) page.paragraph("Incomplete sweep: " + partial_note(s) + ".");

  std::vector<double> xs;
  for (std::size_t a = 0; a < s.axes.size(); ++a) {
    if (!numeric_axis(s.axes[a], xs)) continue;
    // one line per combination of the other axes, keyed by its label, in row order
    std::map<std::string, std::size_t> index;
    std::vector<Series> step, efficiency;
    for (std::size_t i = 0; i < s.rows.size(); ++i) {
      if (!s.rows[i].ok()) continue;
      const std::string name = label(s, i, all_axes_but(s, a));
      auto [it, added] = index.emplace(name, step.size());
      if (added) step.push_back({name, {}, {}}), efficiency.push_back({name, {}, {}});
      const double x = xs[coordinates(s.axes, s.grid_row(i))[a]];
      step[it->second].x.push_back(x);
      step[it->second].y.push_back(s.rows[i].result.step_time_s * 1e3);
      efficiency[it->second].x.push_back(x);
      efficiency[it->second].y.push_back(s.rows[i].result.scaling_efficiency * 100);
    }
    const std::string key = s.axes[a].key;
    const bool nodes = key == "nodes", bucket = key == "strategy.fusion.size_mb";
    const std::string x_label = nodes ? "nodes" : bucket ? "bucket size (MB)" : key;
    const double lo = *std::min_element(xs.begin(), xs.end()), hi = *std::max_element(xs.begin(), xs.end());
    const bool log_x = lo > 0 && hi / lo >= 8;
    page.heading("Step time against " + x_label);
    page.figure(
        svg(LineChart{"step-time-vs-" + key, "Step time against " + x_label, x_label, "step time (ms)", log_x, step}));
    if (nodes) {
      page.heading("Scaling efficiency against nodes");
      page.figure(svg(LineChart{"scaling-efficiency-vs-nodes", "Scaling efficiency against nodes", x_label,
                                "scaling efficiency (%)", log_x, efficiency}));
    }
  }

  StackedBars bars{
      "breakdown", "Step time: compute and exposed communication", "ms", {"compute", "exposed communication"}, {}, {}};
  std::vector<std::size_t> every(s.axes.size());
  for (std::size_t a = 0; a < every.size(); ++a) every[a] = a;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    if (!s.rows[i].ok()) continue;
    bars.labels.push_back(label(s, i, every));
    bars.values.push_back({s.rows[i].result.compute_s * 1e3, s.rows[i].result.exposed_comm_s * 1e3});
  }
  page.heading("Breakdown per configuration");
  page.figure(svg(bars));
  page.heading("All configurations");
  auto [header, rows] = display_rows(s);
  page.table(header, rows);
  return page.str();
}

}  // namespace commsim::explore
