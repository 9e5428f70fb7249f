// `commsim simulate`: predicts a training step of a scenario and prints a table; JSON result and Chrome trace.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/output_file.hpp"
#include "sim/result/kineto_export.hpp"
#include "sim/scenario/schedules.hpp"
#include "sim/step/simulation.hpp"

namespace commsim::cli {
namespace {

struct SimulateOptions {
  std::string scenario, json, trace, fidelity = "analytical", trace_format = "chrome", trace_steps, trace_ranks;
  std::vector<std::string> sets;
  int steps = 0;
};

}  // namespace

namespace {

// Why `path` cannot be written ("" if it can), on one line whatever the name holds.
std::string unwritable(const std::string& path) {
  if (path.empty()) return "names no file";
  std::error_code ec;  // a name the system cannot look up (too long) is refused below, not thrown
  if (std::filesystem::is_directory(path, ec))
    return InputError::one_line("cannot write " + path + ": it is a directory");
  const std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
  if (std::filesystem::is_directory(dir, ec) && access(dir.c_str(), W_OK) == 0) return "";
  return InputError::one_line("cannot write " + path + " (" + dir.string() + " is not a writable directory)");
}

}  // namespace

const CLI::Validator& writable_file() {
  static const CLI::Validator validator(
      [](std::string& path) -> std::string {
        if (path == "-")
          return "- (standard output) is not an output of this option: name a file (./- for one named -)";
        return unwritable(path);
      },
      "FILE");
  return validator;
}

const CLI::Validator& output_folder() {
  static const CLI::Validator validator(
      [](std::string& dir) -> std::string {
        if (dir.empty()) return "names no folder";
        return dir == "-" ? "- (standard output) is not an output of this option: name a folder (./- for one named -)"
                          : "";
      },
      "DIR");
  return validator;
}

const CLI::Validator& writable_file_or_stdout() {
  static const CLI::Validator validator(
      [](std::string& path) -> std::string { return path == "-" ? "" : unwritable(path); }, "FILE");
  return validator;
}

void write_json(const std::string& path, const nlohmann::json& doc, const std::string& flag) {
  if (path == "-") {
    std::cout << doc.dump(2) << "\n" << std::flush;
    return;
  }
  write_file(path, doc.dump(2) + "\n", flag);
}

void write_result_and_trace(const SimulationRun& run, const std::string& json, const std::string& trace,
                            const std::string& trace_format) {
  const auto trace_document = [&] {
    return trace_format == "kineto" ? kineto_trace(run.result, run.plan, run.topology->library())
                                    : chrome_trace(run.result, run.plan.streams);
  };
  std::vector<OutputText> files;
  std::string standard_output;
  for (const auto& [path, flag] : {std::pair{&json, "--json"}, std::pair{&trace, "--trace"}}) {
    if (path->empty()) continue;
    std::string text = (path == &json ? run.result.to_json() : trace_document()).dump(2) + "\n";
    if (*path == "-")
      standard_output = std::move(text);
    else
      files.push_back({*path, std::move(text), flag});
  }
  write_files(files);
  std::cout << standard_output << std::flush;
}

void check_json_and_trace(const std::string& json, const std::string& trace) {
  if (json.empty() || trace.empty()) return;
  if (json == "-" && trace == "-") throw InputError("--trace", "", "only one of --json and --trace can be -");
  std::error_code ec_json, ec_trace;
  if (json == trace ||
      std::filesystem::weakly_canonical(json, ec_json) == std::filesystem::weakly_canonical(trace, ec_trace))
    throw InputError("--trace", "", trace + " is also the --json file; give them two files");
}

void print_result(const SimulationRun& run, std::FILE* out) {
  const Result& r = run.result;
  std::fprintf(out, "%s on %s\n", run.scenario.name.c_str(), run.topology->summary().c_str());
  std::fprintf(out, "  model %s (%.1f M parameters, %zu tensors), %zu buckets, %d stream(s), fidelity %s\n",
               run.plan.model.name.c_str(), static_cast<double>(run.plan.model.parameters()) / 1e6,
               run.plan.model.tensors.size(), run.plan.buckets.size(), run.plan.streams, r.fidelity.c_str());
  const int steps = run.plan.steps();
  if (first_steady_step(run.scenario.strategy, steps) >= steps)
    std::fprintf(out, "  step time      %10.3f ms   (mean of all %d steps: the steady state is not reached)\n",
                 r.step_time_s * 1e3, steps);
  else  // the MPI backend's statistic is robust to a noisy step (step_metrics.hpp SteadyStatistic)
    std::fprintf(out, "  step time      %10.3f ms   (steady-state %s from step %d)\n", r.step_time_s * 1e3,
                 r.backend == "mpi" ? "median per step kind" : "mean", r.steady_from);
  // More steps run than asked (whole Local SGD periods) changes what was asked for: said beside the step time.
  for (const std::string& note : run.plan.notes)
    if (note.rfind("steps: ", 0) == 0) std::fprintf(out, "  note: %s\n", note.c_str());
  std::fprintf(out, "  throughput     %10.1f samples/s   scaling efficiency %.1f %%\n", r.throughput_samples_s,
               100 * r.scaling_efficiency);
  std::fprintf(out, "  compute        %10.3f ms\n  communication  %10.3f ms   exposed %.3f ms   overlap %.1f %%\n",
               r.compute_s * 1e3, r.comm_s * 1e3, r.exposed_comm_s * 1e3, 100 * r.overlap_ratio);
  std::fprintf(out, "  bytes sent     %10.2f MB per rank per step\n", r.bytes_sent_per_rank / 1e6);
  for (std::size_t s = 1; s < r.stream_busy_s.size(); ++s)
    std::fprintf(out, "  comm stream %zu busy %.3f ms\n", s, r.stream_busy_s[s] * 1e3);
  for (auto& [cls, busy] : r.link_class_busy_s)
    std::fprintf(out, "  %-8s links busy %.3f ms (summed over links)\n", cls.c_str(), busy * 1e3);
  if (r.comm_band_rel > 0)
    std::fprintf(
        out, "  error band     +-%.1f %% on communication (calibrated topology): step time in [%.3f, %.3f] ms\n",
        100 * r.comm_band_rel, (r.step_time_s - r.step_band_s()) * 1e3, (r.step_time_s + r.step_band_s()) * 1e3);
  bool varies = false;
  for (double s : r.steps_s) varies |= std::abs(s - r.steps_s.front()) > 1e-12 * s;
  if (varies) {
    std::fprintf(out, "  steps (ms):");
    for (std::size_t i = 0; i < r.steps_s.size() && i < 40; ++i) std::fprintf(out, " %.3f", r.steps_s[i] * 1e3);
    std::fprintf(out, "%s\n", r.steps_s.size() > 40 ? " ..." : "");
  }
}

void register_simulate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict a training step of a scenario");
  cmd->add_option("scenario", o->scenario, "scenario JSON file")->required();
  cmd->add_option("--steps", o->steps, "number of steps (overrides the scenario)")->check(number_in(1, kMaxSteps));
  cmd->add_option("--set", o->sets, "override a scenario field: dotted.key=value (repeatable)");
  cmd->add_option("--fidelity", o->fidelity, "analytical | flow");
  cmd->add_option("--json", o->json, "write the result JSON; - for standard output")->check(writable_file_or_stdout());
  CLI::Option* trace_file =
      cmd->add_option("--trace", o->trace, "write a Chrome trace (open in Perfetto); - for standard output")
          ->check(writable_file_or_stdout());
  CLI::Option* trace_steps =
      cmd->add_option("--trace-steps", o->trace_steps, "steps to trace: N or FIRST:LAST (default 0:2)")
          ->needs(trace_file);
  CLI::Option* trace_ranks =
      cmd->add_option("--trace-ranks", o->trace_ranks,
                      "ranks to trace, e.g. 0,5 (default: each step's critical rank, the one the simulator follows)")
          ->needs(trace_file);
  cmd->add_option("--trace-format", o->trace_format, "chrome | kineto (as PyTorch's profiler writes it)")
      ->check(CLI::IsMember({"chrome", "kineto"}))
      ->needs(trace_file);
  cmd->callback([o, trace_steps, trace_ranks, &exit_code] {
    Fidelity fidelity;
    if (!parse_fidelity(o->fidelity, fidelity))
      throw InputError("--fidelity", "", "unknown fidelity \"" + o->fidelity + "\" (analytical, flow)");
    check_json_and_trace(o->json, o->trace);
    for (const CLI::Option* given : {trace_steps, trace_ranks})
      if (given->count() > 0 && given->as<std::string>().empty())
        throw InputError(given->get_name(), "", "is empty (leave it out for the default)");
    TraceSelection trace = parse_trace_steps(o->trace_steps);
    if (!o->trace_ranks.empty()) trace.ranks = parse_trace_ranks(o->trace_ranks, kMaxRanks);
    if (o->trace_format == "kineto" && trace.ranks.size() > 1)
      throw InputError("--trace-ranks", "", "a Kineto trace is one rank's (as a profiler writes it): give one rank");
    SimulationRun run = simulate_scenario(o->scenario, o->sets, o->steps, fidelity, trace);
    check_trace_ranks(trace, run.plan);
    // A document on standard output keeps it to itself: the table goes to standard error.
    print_result(run, o->json == "-" || o->trace == "-" ? stderr : stdout);
    write_result_and_trace(run, o->json, o->trace, o->trace_format);
    exit_code = 0;
  });
}

}  // namespace commsim::cli
