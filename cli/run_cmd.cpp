// `commsim run --backend mpi|nccl SCENARIO`: executes a scenario's Plan on real hardware and measures it; the
// Result has the simulator's schema (backend "mpi"/"nccl", fidelity "measured"), so the two compare directly.
//
// With the MPI backend the same command works in two ways (docs/hardware-mpi.md):
//   - outside mpirun it launches mpirun itself, one rank per rank of the scenario's topology, on loopback or, with
//     --cluster, inside an emulated cluster that exists for the run only;
//   - under mpirun (OMPI_COMM_WORLD_SIZE set) it is one rank of the job.
// This file also registers `commsim bench` and `commsim cluster` (register_hardware).
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "hw/common/emulation.hpp"
#include "hw/common/plan_buffers.hpp"
#include "sim/core/error.hpp"
#include "sim/training/kineto_export.hpp"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include "hw/mpi/launcher.hpp"
#include "hw/mpi/mpi_backend.hpp"
#endif
#ifdef COMMSIM_HAVE_NCCL_PLAN
#include "hw/nccl/launch_plan.hpp"
#endif
#ifdef COMMSIM_HAVE_NCCL
#include "hw/nccl/nccl_backend.hpp"
#endif

namespace commsim::cli {

void register_bench(CLI::App& app, int& exit_code);    // cli/bench_cmd.cpp
void register_cluster(CLI::App& app, int& exit_code);  // cli/cluster_cmd.cpp

namespace {

struct RunCommand {
  std::string scenario, json, trace, backend = "mpi", impl = "schedule", trace_format = "chrome";
  std::vector<std::string> sets;
  int steps = 0, warmup = 2;
  bool check = false, cluster = false, dry_run = false;
  double timeout_s = 0;
};

// An output path as the launched job sees it ("-", standard output, stays "-").
std::string absolute(const std::string& path) {
  return path.empty() || path == "-" ? path : std::filesystem::absolute(path).string();
}

// The measured result's JSON and trace, as `commsim simulate` writes a prediction's (the trace: the first steps of
// rank 0, one thread per stream, so the two open side by side in Perfetto).
void write_measured(const RunCommand& o, const SimulationRun& run) {
  if (!o.json.empty()) write_json(o.json, run.result.to_json(), "--json");
  if (o.trace.empty()) return;
  write_json(
      o.trace,
      o.trace_format == "kineto" ? kineto_trace(run.result, run.plan) : chrome_trace(run.result, run.plan.streams),
      "--trace");
}

// The measured result as `commsim simulate` prints a prediction, plus its spread, notes and the check's outcome.
// Where the table goes: standard error when --json or --trace writes its document to standard output.
FILE* table_stream(const RunCommand& o) { return o.json == "-" || o.trace == "-" ? stderr : stdout; }

void print_measured(const SimulationRun& run, FILE* out) {
  print_result(run, out);
  const Result& r = run.result;
  std::fprintf(out, "  step spread    %10.3f ms   (half the interquartile range)\n", r.step_time_spread_s * 1e3);
  for (const std::string& note : r.notes) std::fprintf(out, "  note: %s\n", note.c_str());
  std::fflush(out);
}

#ifdef COMMSIM_HAVE_MPI
hw::RunOptions run_options(const RunCommand& o) {
  hw::RunOptions options;
  options.scenario = o.scenario;
  options.sets = o.sets;
  options.steps = o.steps;
  options.json = o.json;
  options.check = o.check;
  options.impl = o.impl == "native" ? hw::CollectiveImpl::Native : hw::CollectiveImpl::Schedule;
  options.warmup = o.warmup;
  return options;
}

// One rank of the job (errors: hw::run_on_rank).
int run_rank(const RunCommand& o) {
  hw::MpiSession session(nullptr, nullptr);
  return hw::run_on_rank(session, [&] {
    const hw::RunOptions options = run_options(o);
    SimulationRun run = hw::load_run(options);
    const hw::CheckCounts check = hw::measure_plan(run, options);
    if (session.rank() == 0) {
      print_measured(run, table_stream(o));
      if (o.check)
        std::fprintf(table_stream(o), "check: %llu wrong of %llu elements in %llu collective results: %s\n",
                     static_cast<unsigned long long>(check.wrong_elements),
                     static_cast<unsigned long long>(check.checked_elements),
                     static_cast<unsigned long long>(check.collectives),
                     check.wrong_elements == 0 ? "all exact" : "FAILED");
      write_measured(o, run);
      std::fflush(stdout);
    }
    return o.check && check.wrong_elements > 0 ? 1 : 0;
  });
}

// Outside mpirun: checks everything that can be checked here (scenario, plan, memory, emulation), then starts the
// job with this same command line, absolute paths, under mpirun.
int launch_run(const RunCommand& o) {
  const SimulationRun run = hw::load_run(run_options(o));
  hw::check_memory(run.plan, hw::available_memory_bytes());
  hw::Launch launch;
  launch.ranks = run.plan.ranks;
  launch.timeout_s = o.timeout_s;
  if (o.cluster) launch.cluster = hw::emulation_for(run.scenario.topology_path, run.scenario.nodes);
  std::vector<std::string>& a = launch.worker_args;
  a = {"run", "--backend", "mpi", absolute(o.scenario), "--impl", o.impl, "--warmup", std::to_string(o.warmup)};
  if (o.steps > 0) a.insert(a.end(), {"--steps", std::to_string(o.steps)});
  for (const std::string& s : o.sets) a.insert(a.end(), {"--set", s});
  if (o.check) a.push_back("--check");
  if (!o.json.empty()) a.insert(a.end(), {"--json", absolute(o.json)});
  if (!o.trace.empty()) a.insert(a.end(), {"--trace", absolute(o.trace), "--trace-format", o.trace_format});
  return hw::launch_mpi_job(launch);
}
#endif

int run_mpi(const RunCommand& o) {
#ifdef COMMSIM_HAVE_MPI
  return hw::under_mpirun() ? run_rank(o) : launch_run(o);
#else
  (void)o;
  return missing_mpi_backend();
#endif
}

// --dry-run: the NCCL calls of each step kind, as every rank would make them; needs no GPU.
int print_nccl_program(const RunCommand& o) {
#ifdef COMMSIM_HAVE_NCCL_PLAN
  const SimulationRun run = prepare_run(o.scenario, o.sets, o.steps);
  std::fputs(nccl::format_program(run.plan, nccl::translate_plan(run.plan, run.topology->ranks_per_node())).c_str(),
             stdout);
  return 0;
#else
  (void)o;
  std::fprintf(stderr, "commsim: this build has no NCCL backend (COMMSIM_NCCL=OFF), so no --dry-run\n");
  return 2;
#endif
}

int run_nccl(const RunCommand& o) {
  if (o.dry_run) return print_nccl_program(o);
#ifdef COMMSIM_HAVE_NCCL
  SimulationRun run = prepare_run(o.scenario, o.sets, o.steps);
  nccl::NcclOptions options;
  options.check = o.check;
  options.warmup_steps = o.warmup;
  nccl::validate(options);
  nccl::NcclRun measured = nccl::run_nccl(run.plan, *run.topology, options);
  const int code = measured.checked && measured.wrong_elements > 0 ? 1 : 0;
  if (!measured.root) return code;
  measured.result.scenario_hash = run.result.scenario_hash;
  measured.result.settings = run.result.settings;
  run.result = measured.result;
  print_measured(run, table_stream(o));
  if (measured.checked)
    std::fprintf(table_stream(o), "check: %llu wrong elements: %s\n",
                 static_cast<unsigned long long>(measured.wrong_elements), code ? "FAILED" : "all exact");
  write_measured(o, run);
  return code;
#else
  (void)o;
  return missing_nccl_backend();
#endif
}

void register_run(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunCommand>();
  CLI::App* cmd =
      app.add_subcommand("run", "Execute a scenario on real hardware and measure it (same Result schema as simulate)");
  cmd->add_option("scenario", o->scenario, "scenario JSON file")->required();
  cmd->add_option("--backend", o->backend, "mpi (CPU ranks, Open MPI) | nccl (NVIDIA GPUs)")
      ->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->add_option("--json", o->json, "write the measured result JSON; - for standard output")->check(writable_file());
  cmd->add_option("--trace", o->trace,
                  "write a Chrome trace of the first measured steps (open in Perfetto); - for standard output")
      ->check(writable_file());
  cmd->add_option("--trace-format", o->trace_format,
                  "chrome (one thread per stream) | kineto (as PyTorch's profiler writes it; commsim model from-trace)")
      ->check(CLI::IsMember({"chrome", "kineto"}));
  cmd->add_flag("--check", o->check, "verifiable inputs; count wrong elements after every collective (exit 1 if any)");
  cmd->add_option("--impl", o->impl,
                  "mpi: schedule (the simulator's schedules, point-to-point) | native (Open MPI's collectives)")
      ->check(CLI::IsMember({"schedule", "native"}));
  cmd->add_flag("--cluster", o->cluster,
                "mpi: run inside an emulated cluster of the topology (namespaces, tc); needs CAP_NET_ADMIN");
  cmd->add_option("--warmup", o->warmup, "steps run first and not counted")->check(number_in(0));
  cmd->add_option("--steps", o->steps, "number of measured steps (overrides the scenario)")
      ->check(number_in(1, kMaxSteps));
  cmd->add_option("--set", o->sets, "override a scenario field: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--dry-run", o->dry_run,
                "nccl: print the NCCL calls each step makes (communicators, counts, streams, the Plan task of each) "
                "and exit, without a GPU");
  cmd->add_option("--timeout-s", o->timeout_s, "mpi: stop the job after this many seconds (0 = no limit)")
      ->check(number_in(0));
  cmd->callback([o, &exit_code] {
    if (o->dry_run && o->backend != "nccl") throw InputError("--dry-run: only with --backend nccl");
    if (o->json == "-" && o->trace == "-") throw InputError("--trace", "", "only one of --json and --trace can be -");
    exit_code = o->backend == "nccl" ? run_nccl(*o) : run_mpi(*o);
  });
}

}  // namespace

void register_hardware(CLI::App& app, int& exit_code) {
  register_run(app, exit_code);
  register_bench(app, exit_code);
  register_cluster(app, exit_code);
}

}  // namespace commsim::cli
