// The outputs of `commsim sweep`: terminal table, CSV, JSON and a self-contained HTML page with SVG charts.
#pragma once

#include <string>
#include <vector>

#include "explore/grid.hpp"

namespace commsim::explore {

struct Sweep {
  std::string scenario_file;
  std::string fidelity;
  std::vector<Axis> axes;
  std::vector<Evaluation> rows;  // the cartesian product, first axis slowest (as cartesian() returns it)
  // Set when only some rows were evaluated (a shard, or a run stopped by a signal): the grid row of each of `rows`,
  // ascending. Empty: `rows` is the whole grid.
  std::vector<std::size_t> grid_rows{};
  std::size_t grid_size = 0;  // rows in the whole grid (only read when grid_rows is set)
  int stopped_by_signal = 0;  // SIGINT or SIGTERM when the run was cut short: the outputs say they are partial
  std::size_t grid_row(std::size_t i) const { return grid_rows.empty() ? i : grid_rows[i]; }
  bool partial() const { return stopped_by_signal != 0; }
};

// "partial: 3 of 16 configurations (stopped by SIGINT)", the line the outputs of a cut-short sweep carry.
std::string partial_note(const Sweep& s);

// The value index on each axis of row `row` (mixed radix, first axis slowest).
std::vector<std::size_t> coordinates(const std::vector<Axis>& axes, std::size_t row);

std::string sweep_table(const Sweep& s);
std::string sweep_csv(const Sweep& s);
nlohmann::json sweep_json(const Sweep& s);
// Charts: for every axis whose values are all numbers, step time against it (one line per combination of the other
// axes), and for `nodes` also scaling efficiency; then compute / exposed communication bars per configuration.
std::string sweep_html(const Sweep& s);

}  // namespace commsim::explore
