#include "explore/sweep_run.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "reports/format.hpp"
#include "sim/core/json_document_cache.hpp"

namespace commsim::explore {

using namespace commsim::reports;  // the writers: tables, CSV, SVG, HTML, progress

namespace {

// The topology and model files the rows read (the base's, and every value an axis gives them) by their contents'
// hash: shards made before and after one of them was edited are not one sweep, though their scenario is the same.
Json referenced_files(const SweepGrid& grid, const std::string& scenario_file) {
  std::vector<std::vector<std::string>> sources = {{}};
  for (const Axis& a : grid.definition.axes)
    if (a.key == "topology" || a.key == "model")
      for (const std::string& v : a.values) sources.push_back({a.key + "=" + v});
  Json files = Json::object();
  for (const std::vector<std::string>& sets : sources) {
    try {
      const Scenario s = parse_scenario(apply_sets(grid.base, sets, scenario_file), scenario_file);
      for (const std::string& path : {s.topology_path, s.model_path})
        files[path] = fnv1a_hex(read_json_file(path).dump());
    } catch (const InputError&) {
      // A value that names no loadable file makes its rows impossible; they say why when evaluated.
    }
  }
  return files;
}

}  // namespace

SweepGrid prepare_sweep(const SweepRequest& request) {
  SweepGrid grid;
  grid.fidelity = fidelity_option(request.fidelity);
  grid.base = load_base(request.scenario_file, request.sets, request.steps);
  grid.definition.scenario_file = request.scenario_file;
  grid.definition.fidelity = request.fidelity;
  for (const std::string& spec : request.vary) grid.definition.axes.push_back(parse_axis(spec, request.scenario_file));
  for (const std::string& set : request.sets)
    for (const Axis& a : grid.definition.axes)
      if (const std::string key = set.substr(0, set.find('=')); keys_overlap(key, a.key))
        throw InputError("--set", key, "is varied by --vary " + a.key + ": one would override the other; drop one");
  grid.variants = cartesian(grid.definition.axes);
  grid.definition.grid_size = grid.variants.size();
  // Validate before spending the cores: the scenario with --set alone, then the first combination, through the
  // strict loader (unknown fields, wrong types and out-of-range values are errors naming the field).
  parse_scenario(apply_sets(grid.base, {}, request.scenario_file), request.scenario_file);
  try {
    parse_scenario(apply_sets(grid.base, grid.variants.front(), request.scenario_file), request.scenario_file);
  } catch (const InputError& e) {
    throw InputError("--vary", "", e.what());
  }
  Json axes = Json::array();
  for (const Axis& a : grid.definition.axes)
    axes.push_back({{"key", a.key}, {"values", a.values}, {"labels", a.labels}});
  const Json identity = {{"base", grid.base},
                         {"files", referenced_files(grid, request.scenario_file)},
                         {"scenario", request.scenario_file},
                         {"fidelity", request.fidelity},
                         {"vary", axes},
                         {"commsim_version", COMMSIM_VERSION}};
  grid.hash = fnv1a_hex(identity.dump());
  return grid;
}

Sweep evaluate_rows(const SweepGrid& grid, const std::vector<std::size_t>& rows, int jobs, InterruptGuard& guard,
                    const std::string& progress_label) {
  std::vector<Evaluation> evaluated(rows.size());
  std::vector<char> done(rows.size(), 0);
  ProgressBar bar(progress_label, progress_label.empty() ? 0 : rows.size());
  JsonDocumentCache documents;  // each model and topology file parsed once for the whole grid
  parallel_for(
      rows.size(), jobs,
      [&](std::size_t i) {
        UseJsonDocumentCache use(documents);
        evaluated[i] = evaluate(grid.base, grid.definition.scenario_file, grid.variants[rows[i]], grid.fidelity);
        done[i] = 1;
      },
      [&](std::size_t count) {
        bar.update(count);
        guard.item_done(count);
      },
      [&] { return guard.signal() != 0; });
  bar.finish();
  Sweep part = grid.definition;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!done[i]) continue;
    part.grid_rows.push_back(rows[i]);
    part.rows.push_back(std::move(evaluated[i]));
  }
  // A signal after the last row started cut nothing short: the run is complete.
  if (part.rows.size() < rows.size()) part.stopped_by_signal = guard.signal();
  normalise_rows(part);
  return part;
}

void normalise_rows(Sweep& part) {
  std::vector<std::size_t> order(part.rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return part.grid_row(a) < part.grid_row(b); });
  std::vector<Evaluation> rows;
  std::vector<std::size_t> grid_rows;
  for (std::size_t i : order) {
    grid_rows.push_back(part.grid_row(i));
    rows.push_back(std::move(part.rows[i]));
  }
  part.rows = std::move(rows);
  part.grid_rows = std::move(grid_rows);
  if (!part.partial() && part.rows.size() == part.grid_size) part.grid_rows.clear();
}

void create_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("-o", "", "cannot create directory " + dir + ": " + ec.message());
}

void write_sweep_outputs(const Sweep& sweep, const std::string& out) {
  std::fputs(sweep_table(sweep).c_str(), stdout);
  const std::string dir = (std::filesystem::path(out) / "").string();
  // All three or none: one that cannot be written leaves none of the others behind.
  write_files({{dir + "sweep.csv", sweep_csv(sweep), "-o"},
               {dir + "sweep.json", sweep_json(sweep).dump(2) + "\n", "-o"},
               {dir + "sweep.html", sweep_html(sweep), "-o"}});
  std::printf("%zu configurations%s, fidelity %s: wrote %ssweep.csv, %ssweep.json, %ssweep.html\n", sweep.rows.size(),
              sweep.partial() ? (" of " + std::to_string(sweep.grid_size) + " (partial)").c_str() : "",
              sweep.fidelity.c_str(), dir.c_str(), dir.c_str(), dir.c_str());
}

int sweep_exit_code(const Sweep& sweep) { return sweep.partial() ? 128 + sweep.stopped_by_signal : 0; }

}  // namespace commsim::explore
