// The commsim subcommands. Each registers itself on the app and returns the exit code through `exit_code`.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/limits.hpp"
#include "sim/core/units.hpp"
#include "sim/step/simulation.hpp"

namespace commsim::cli {

void register_collective(CLI::App& app, int& exit_code);
void register_simulate(CLI::App& app, int& exit_code);
void register_compare(CLI::App& app, int& exit_code);
void register_hardware(CLI::App& app, int& exit_code);   // cli/run_cmd.cpp: run, bench, cluster
void register_sweep(CLI::App& app, int& exit_code);      // cli/sweep_cmd.cpp
void register_recommend(CLI::App& app, int& exit_code);  // cli/recommend_cmd.cpp
void register_regress(CLI::App& app, int& exit_code);    // cli/regress_cmd.cpp
void register_report(CLI::App& app, int& exit_code);     // cli/report_cmd.cpp
void register_calibrate(CLI::App& app, int& exit_code);  // cli/calibrate_cmd.cpp
void register_validate(CLI::App& app, int& exit_code);   // cli/validate_cmd.cpp
void register_model(CLI::App& app, int& exit_code);      // cli/model_cmd.cpp: model from-hf, from-trace

void print_result(const SimulationRun& run, std::FILE* out = stdout);
// Writes `doc` to `path` (indented), to standard output when `path` is "-"; a path that cannot be written is bad
// input of the option `flag`.
void write_json(const std::string& path, const nlohmann::json& doc, const std::string& flag);
// simulate / run: --json and --trace name two different files (at most one of them standard output, -).
void check_json_and_trace(const std::string& json, const std::string& trace);
// simulate / run: the run's result to `json` and its trace (chrome or kineto) to `trace` (either empty: not written;
// "-": standard output), both files or neither.
void write_result_and_trace(const SimulationRun& run, const std::string& json, const std::string& trace,
                            const std::string& trace_format);
// For options that name a file to write: not a directory, and its directory must exist and be writable. Checked when
// the command line is parsed, so a bad path is reported (exit 2, one line naming the option) before anything runs.
// "-" is refused there (it would be a file named -); writable_file_or_stdout takes it as standard output.
const CLI::Validator& writable_file();
const CLI::Validator& writable_file_or_stdout();
// For options that name a folder to write into (sweep -o, validate --report): "-" is refused (it would be a folder
// named -), and so is an empty name (which would silently become the default folder).
const CLI::Validator& output_folder();
// "8", "64K", "256M", "1G" (binary multiples, as nccl-tests reads -e; a fraction such as "0.5M" too) -> bytes, in
// [8, kMaxBytes]; otherwise an InputError naming --max-bytes. byte_size() checks an option with it at parse time.
std::uint64_t parse_byte_size(const std::string& text);
CLI::Validator byte_size();
// An NCCL release with a constants table (libraries/nccl.json), e.g. 2.26.2.
CLI::Validator nccl_release();
// For numeric options: finite and in [min, max]; the message states the bound ("--groups: must be >= 0, got -5").
CLI::Validator number_in(double min, double max = std::numeric_limits<double>::infinity());
// A hardware command on a build without that backend: says so on stderr and returns exit code 2.
int missing_mpi_backend();
int missing_nccl_backend();

}  // namespace commsim::cli
