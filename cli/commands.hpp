// The commsim subcommands. Each registers itself on the app and returns the exit code through `exit_code`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sim/core/units.hpp"

namespace commsim::cli {

void register_collective(CLI::App& app, int& exit_code);

// "8:1G" (doubling range) or "1K,4M,1G": sizes in bytes with optional K/M/G (powers of 1024) suffixes.
std::vector<Bytes> parse_sizes(const std::string& text);

}  // namespace commsim::cli
