// `commsim run --backend mpi|nccl SCENARIO`: executes a scenario's Plan on real hardware and measures it; the
// Result has the simulator's schema (backend "mpi"/"nccl", fidelity "measured"), so the two compare directly.
//
// With the MPI backend the same command works in two ways (docs/hardware-mpi.md):
//   - outside mpirun it launches mpirun itself, one rank per rank of the scenario's topology, on loopback or, with
//     --cluster, inside an emulated cluster that exists for the run only;
//   - under mpirun (OMPI_COMM_WORLD_SIZE set) it is one rank of the job.
// The options become a HardwareRunRequest (hw/common/hardware_request.hpp), executed by cli/run_request.cpp. This
// file also registers `commsim bench`, `commsim cluster` and the internal `commsim hw-run` (register_hardware).
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/run_request.hpp"
#include "sim/core/error.hpp"

#ifdef COMMSIM_HAVE_NCCL_PLAN
#include "hw/nccl/launch_plan.hpp"
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

hw::HardwareRunRequest request_of(const RunCommand& o) {
  hw::HardwareRunRequest r;
  r.job = hw::HardwareJob::Run;
  r.backend = o.backend;
  r.scenario = o.scenario;
  r.sets = o.sets;
  r.steps = o.steps;
  r.warmup = o.warmup;
  r.impl = o.impl;
  r.check = o.check;
  r.trace_file = o.trace;
  r.trace_format = o.trace_format;
  r.cluster = o.cluster;
  r.timeout_s = o.timeout_s;
  r.result_file = o.json;
  return r;
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

void register_run(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunCommand>();
  CLI::App* cmd =
      app.add_subcommand("run", "Execute a scenario on real hardware and measure it (same Result schema as simulate)");
  cmd->add_option("scenario", o->scenario, "scenario JSON file")->required();
  cmd->add_option("--backend", o->backend, "mpi (CPU ranks, Open MPI) | nccl (NVIDIA GPUs)")
      ->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->add_option("--json", o->json, "write the measured result JSON; - for standard output")
      ->check(writable_file_or_stdout());
  cmd->add_option("--trace", o->trace,
                  "write a Chrome trace of the first measured steps (open in Perfetto); - for standard output")
      ->check(writable_file_or_stdout());
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
    check_json_and_trace(o->json, o->trace);
    exit_code = o->dry_run ? print_nccl_program(*o) : execute_request(request_of(*o));
  });
}

}  // namespace

void register_hardware(CLI::App& app, int& exit_code) {
  register_run(app, exit_code);
  register_bench(app, exit_code);
  register_cluster(app, exit_code);
  register_hw_run(app, exit_code);
}

}  // namespace commsim::cli
