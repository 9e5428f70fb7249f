#include "cli/run_request.hpp"

#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "hw/common/emulation.hpp"
#include "hw/common/plan_buffers.hpp"
#include "sim/core/error.hpp"
#include "sim/result/kineto_export.hpp"
#include "sim/topology/topology.hpp"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include "hw/mpi/bench.hpp"
#include "hw/mpi/launcher.hpp"
#include "hw/mpi/mpi_backend.hpp"
#endif
#ifdef COMMSIM_HAVE_NCCL
#include "hw/nccl/nccl_backend.hpp"
#endif

namespace commsim::cli {
namespace {

using hw::HardwareJob;
using hw::HardwareRunRequest;
using hw::HardwareRunResponse;

// The measured result's JSON and trace, as `commsim simulate` writes a prediction's (the trace: the first steps of
// rank 0, one thread per stream, so the two open side by side in Perfetto).
void write_measured(const HardwareRunRequest& r, const SimulationRun& run) {
  write_result_and_trace(run, r.result_file, r.trace_file, r.trace_format);
}

// Where the table goes: standard error when --json or --trace writes its document to standard output.
FILE* table_stream(const HardwareRunRequest& r) {
  return r.result_file == "-" || r.trace_file == "-" ? stderr : stdout;
}

// The measured result as `commsim simulate` prints a prediction, plus its spread and notes.
void print_measured(const SimulationRun& run, FILE* out) {
  print_result(run, out);
  const Result& result = run.result;
  std::fprintf(out, "  step spread    %10.3f ms   (half the interquartile range)\n", result.step_time_spread_s * 1e3);
  for (const std::string& note : result.notes) std::fprintf(out, "  note: %s\n", note.c_str());
  std::fflush(out);
}

#ifdef COMMSIM_HAVE_MPI
// A path as the launched job sees it ("-", standard output, stays "-").
std::string absolute(const std::string& path) {
  return path.empty() || path == "-" ? path : std::filesystem::absolute(path).string();
}

hw::RunOptions run_options(const HardwareRunRequest& r) {
  hw::RunOptions options;
  options.scenario = r.scenario;
  options.sets = r.sets;
  options.steps = r.steps;
  options.json = r.result_file;
  options.check = r.check;
  options.impl = r.impl == "native" ? hw::CollectiveImpl::Native : hw::CollectiveImpl::Schedule;
  options.warmup = r.warmup;
  options.network = r.job_context.network;
  return options;
}

// One rank of the job: the body's exit code, reported to the launcher by rank 0 (errors: hw::run_on_rank).
int on_rank(const HardwareRunRequest& r, const std::function<int(const hw::MpiSession&)>& body) {
  hw::MpiSession session(nullptr, nullptr);
  const int code = hw::run_on_rank(session, [&] { return body(session); });
  if (session.rank() == 0) hw::report_job_status(r.job_context, code);
  return code;
}

int run_rank(const HardwareRunRequest& r) {
  return on_rank(r, [&](const hw::MpiSession& session) {
    const hw::RunOptions options = run_options(r);
    SimulationRun run = hw::load_run(options);
    const hw::CheckCounts check = hw::measure_plan(run, options);
    if (session.rank() == 0) {
      print_measured(run, table_stream(r));
      if (r.check)
        std::fprintf(table_stream(r), "check: %llu wrong of %llu elements in %llu collective results: %s\n",
                     static_cast<unsigned long long>(check.wrong_elements),
                     static_cast<unsigned long long>(check.checked_elements),
                     static_cast<unsigned long long>(check.collectives),
                     check.wrong_elements == 0 ? "all exact" : "FAILED");
      write_measured(r, run);
      std::fflush(stdout);
    }
    return r.check && check.wrong_elements > 0 ? 1 : 0;
  });
}

int bench_rank(const HardwareRunRequest& r) {
  const std::uint64_t max_bytes = parse_byte_size(r.max_bytes);
  return on_rank(r, [&](const hw::MpiSession& session) {
    const std::unique_ptr<Topology> topology = load_topology(r.topology, r.nodes);
    if (topology->ranks() != session.size())
      throw InputError(r.topology, "nodes",
                       "the topology has " + std::to_string(topology->ranks()) + " ranks but the MPI job has " +
                           std::to_string(session.size()));
    hw::BenchOptions options;
    options.max_bytes = max_bytes;
    options.impl = r.impl == "schedule" ? hw::CollectiveImpl::Schedule : hw::CollectiveImpl::Native;
    options.network = r.job_context.network;
    const nlohmann::json report = hw::run_bench(*topology, options);
    if (session.rank() == 0 && !r.result_file.empty()) write_json(r.result_file, report, "--json");
    return 0;
  });
}

// Outside mpirun: checks what can be checked here (scenario, plan, memory, emulation; the topology of a bench),
// then starts the job with the request, its paths absolute.
HardwareRunResponse launch(const HardwareRunRequest& r) {
  hw::Launch job;
  job.timeout_s = r.timeout_s;
  if (r.job == HardwareJob::Run) {
    const SimulationRun run = hw::load_run(run_options(r));
    hw::check_memory(run.plan, hw::available_memory_bytes());
    job.ranks = run.plan.ranks;
    if (r.cluster) job.cluster = hw::emulation_for(run.scenario.topology_path, run.scenario.nodes);
  } else {
    parse_byte_size(r.max_bytes);
    job.ranks = load_topology(r.topology, r.nodes)->ranks();
    if (r.cluster) job.cluster = hw::emulation_for(r.topology, r.nodes);
  }
  job.request = r;
  for (std::string* path :
       {&job.request.scenario, &job.request.topology, &job.request.result_file, &job.request.trace_file})
    *path = absolute(*path);
  return hw::launch_mpi_job(job);
}
#endif

HardwareRunResponse execute_mpi(const HardwareRunRequest& r) {
#ifdef COMMSIM_HAVE_MPI
  if (!hw::under_mpirun()) return launch(r);
  return {r.job == HardwareJob::Run ? run_rank(r) : bench_rank(r), r.job_context.network, false};
#else
  (void)r;
  return {missing_mpi_backend(), "", false};
#endif
}

int run_nccl(const HardwareRunRequest& r) {
#ifdef COMMSIM_HAVE_NCCL
  SimulationRun run = prepare_run(r.scenario, r.sets, r.steps);
  nccl::NcclOptions options;
  options.check = r.check;
  options.warmup_steps = r.warmup;
  nccl::validate(options);
  nccl::NcclRun measured = nccl::run_nccl(run.plan, *run.topology, options);
  const int code = measured.checked && measured.wrong_elements > 0 ? 1 : 0;
  if (!measured.root) return code;
  measured.result.scenario_hash = run.result.scenario_hash;
  measured.result.settings = run.result.settings;
  run.result = measured.result;
  print_measured(run, table_stream(r));
  if (measured.checked)
    std::fprintf(table_stream(r), "check: %llu wrong elements: %s\n",
                 static_cast<unsigned long long>(measured.wrong_elements), code ? "FAILED" : "all exact");
  write_measured(r, run);
  return code;
#else
  (void)r;
  return missing_nccl_backend();
#endif
}

int bench_nccl(const HardwareRunRequest& r) {
#ifdef COMMSIM_HAVE_NCCL
  nccl::BenchOptions options;
  options.max_bytes = parse_byte_size(r.max_bytes);
  nccl::validate(options);
  const nccl::BenchResult result = nccl::bench_nccl(options);
  if (!result.root) return 0;
  nccl::print_bench_table(result, stdout);
  if (!r.result_file.empty()) write_json(r.result_file, result.to_json(), "--json");
  return 0;
#else
  (void)r;
  return missing_nccl_backend();
#endif
}

HardwareRunResponse execute_nccl(const HardwareRunRequest& r) {
  return {r.job == HardwareJob::Run ? run_nccl(r) : bench_nccl(r), "", false};
}

}  // namespace

int execute_request(const HardwareRunRequest& request) {
  const HardwareRunResponse response = request.backend == "nccl" ? execute_nccl(request) : execute_mpi(request);
  if (!request.response_file.empty()) hw::write_request_json(request.response_file, hw::to_json(response));
  return response.exit_code;
}

namespace {

// The request file, strictly read, with what the reader cannot know checked too: a size that parses, output files
// that can be written (before any job starts, as `commsim run` checks its options).
hw::HardwareRunRequest checked_request(const std::string& file) {
  hw::HardwareRunRequest request = hw::read_hardware_request_file(file);
  try {
    parse_byte_size(request.max_bytes);
  } catch (const InputError&) {
    throw InputError(file, "max_bytes", "\"" + request.max_bytes + "\" is not a size (8, 64K, 256M, 1G)");
  }
  for (auto [field, path] : {std::pair{"result_file", request.result_file}, std::pair{"trace_file", request.trace_file},
                             std::pair{"response_file", request.response_file}}) {
    if (path.empty() || path == "-") continue;
    if (const std::string why = writable_file()(path); !why.empty()) throw InputError(file, field, why);
  }
  return request;
}

}  // namespace

void register_hw_run(CLI::App& app, int& exit_code) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("hw-run",
                                     "Execute a hardware request JSON (what calibrate, validate, regress "
                                     "and the MPI launcher start; its response goes to response_file)");
  cmd->group("");  // internal: not listed in --help
  cmd->add_option("request", *file, "hardware request JSON (hw/common/hardware_request.hpp)")->required();
  cmd->callback([file, &exit_code] { exit_code = execute_request(checked_request(*file)); });
}

}  // namespace commsim::cli
