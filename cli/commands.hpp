// The commsim subcommands. Each registers itself on the app and returns the exit code through `exit_code`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <memory>

#include "sim/core/units.hpp"
#include "sim/training/simulation.hpp"

namespace commsim::cli {

void register_collective(CLI::App& app, int& exit_code);
void register_simulate(CLI::App& app, int& exit_code);

void print_result(const SimulationRun& run);

}  // namespace commsim::cli
