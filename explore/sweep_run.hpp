// Running `commsim sweep`: the grid prepared and validated once, any subset of its rows evaluated (all of them, a
// shard's, an MPI rank's), and the outputs written. Shards and MPI ranks evaluate rows exactly as one process does,
// so the rows they return combine into outputs byte-identical to an unsharded run.
#pragma once

#include <string>
#include <vector>

#include "explore/interrupt.hpp"
#include "explore/sweep.hpp"

namespace commsim::explore {

struct SweepRequest {
  std::string scenario_file;
  std::string fidelity = "analytical";
  std::vector<std::string> vary, sets;
  int steps = 0;  // > 0 overrides the scenario's step count
};

struct SweepGrid {
  Json base;  // the scenario with --set and --steps applied
  Fidelity fidelity{};
  Sweep definition;                                // scenario, fidelity and axes; no rows
  std::vector<std::vector<std::string>> variants;  // the overrides of every grid row
  std::string hash;  // FNV-1a of what defines the rows' results: base document, file name, fidelity, axes, version
};

// Parses the axes and checks, before any core is spent, the scenario with --set alone and the first combination
// through the strict loader. Throws InputError naming the option or field.
SweepGrid prepare_sweep(const SweepRequest& request);

// Evaluates the grid rows `rows` (ascending) on `jobs` threads (0: all cores). When `guard` records a signal, no
// further row starts and the returned Sweep holds the rows done, marked partial. A complete run of every row returns
// the plain whole-grid Sweep (grid_rows empty). `progress_label` non-empty: a progress bar on a terminal.
Sweep evaluate_rows(const SweepGrid& grid, const std::vector<std::size_t>& rows, int jobs, InterruptGuard& guard,
                    const std::string& progress_label);

// Orders `part`'s rows by grid row and, when they are the whole grid and nothing stopped them, makes it the plain
// whole-grid Sweep (so that its outputs are those of a one-process run).
void normalise_rows(Sweep& part);

// Creates DIR (InputError naming -o when it cannot).
void create_output_dir(const std::string& dir);
// The table on stdout and DIR/sweep.csv, sweep.json, sweep.html (each replaced atomically), then a summary line.
void write_sweep_outputs(const Sweep& sweep, const std::string& dir);
// 0, or 128 + the signal that cut the sweep short (the shell's convention: 130 for SIGINT, 143 for SIGTERM).
int sweep_exit_code(const Sweep& sweep);

}  // namespace commsim::explore
