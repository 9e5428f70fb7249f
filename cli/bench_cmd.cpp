// `commsim bench --backend mpi|nccl`: microbenchmarks for calibration. With MPI (hw/mpi/bench.hpp): ping-pong per
// link class present, an allreduce size sweep printed as nccl-tests prints it, and the local reduction rate; every
// sample goes to --json. Like `run`, it launches mpirun itself (loopback, or --cluster) unless already under it.
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "hw/common/emulation.hpp"
#include "sim/core/error.hpp"
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

struct BenchCommand {
  std::string backend = "mpi", topology = "topologies/emulated-cpu-cluster.json", json, max_bytes = "256M",
              impl = "native";
  int nodes = 0;
  bool cluster = false;
  double timeout_s = 0;
};

int bench_mpi(const BenchCommand& o) {
#ifdef COMMSIM_HAVE_MPI
  const std::uint64_t max_bytes = parse_byte_size(o.max_bytes);
  if (!hw::under_mpirun()) {
    const std::unique_ptr<Topology> topology = load_topology(o.topology, o.nodes);
    hw::Launch launch;
    launch.ranks = topology->ranks();
    launch.timeout_s = o.timeout_s;
    if (o.cluster) launch.cluster = hw::emulation_for(o.topology, o.nodes);
    launch.worker_args = {"bench",       "--backend", "mpi",    std::filesystem::absolute(o.topology).string(),
                          "--max-bytes", o.max_bytes, "--impl", o.impl};
    if (o.nodes > 0) launch.worker_args.insert(launch.worker_args.end(), {"--nodes", std::to_string(o.nodes)});
    if (!o.json.empty())
      launch.worker_args.insert(launch.worker_args.end(), {"--json", std::filesystem::absolute(o.json).string()});
    return hw::launch_mpi_job(launch);
  }
  hw::MpiSession session(nullptr, nullptr);
  return hw::run_on_rank(session, [&] {
    const std::unique_ptr<Topology> topology = load_topology(o.topology, o.nodes);
    if (topology->ranks() != session.size())
      throw InputError(o.topology, "nodes",
                       "the topology has " + std::to_string(topology->ranks()) + " ranks but the MPI job has " +
                           std::to_string(session.size()));
    hw::BenchOptions options;
    options.max_bytes = max_bytes;
    options.impl = o.impl == "schedule" ? hw::CollectiveImpl::Schedule : hw::CollectiveImpl::Native;
    const nlohmann::json report = hw::run_bench(*topology, options);
    if (session.rank() == 0 && !o.json.empty()) write_json(o.json, report, "--json");
    return 0;
  });
#else
  (void)o;
  return missing_mpi_backend();
#endif
}

int bench_nccl(const BenchCommand& o) {
#ifdef COMMSIM_HAVE_NCCL
  nccl::BenchOptions options;
  options.max_bytes = parse_byte_size(o.max_bytes);
  nccl::validate(options);
  const nccl::BenchResult result = nccl::bench_nccl(options);
  if (!result.root) return 0;
  nccl::print_bench_table(result, stdout);
  if (!o.json.empty()) write_json(o.json, result.to_json(), "--json");
  return 0;
#else
  (void)o;
  return missing_nccl_backend();
#endif
}

}  // namespace

void register_bench(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchCommand>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Microbenchmarks for calibration: ping-pong per link class, allreduce sweep, reduction rate");
  cmd->add_option("--backend", o->backend, "mpi | nccl")->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->add_option("topology", o->topology,
                  "topology JSON (mpi: one rank per rank; default topologies/emulated-cpu-cluster.json)");
  cmd->add_option("--topology", o->topology, "the same, as an option");
  cmd->add_option("--nodes", o->nodes, "override the topology's node count")->check(number_in(1, kMaxNodes));
  cmd->add_flag("--cluster", o->cluster, "mpi: run inside an emulated cluster of the topology (needs CAP_NET_ADMIN)");
  cmd->add_option("--max-bytes", o->max_bytes, "largest size, e.g. 64M (default 256M)")->check(byte_size());
  cmd->add_option("--impl", o->impl, "mpi allreduce: native (MPI_Allreduce) | schedule (the simulator's ring)")
      ->check(CLI::IsMember({"native", "schedule"}));
  cmd->add_option("--json", o->json, "write every sample as JSON (for calibration)")->check(writable_file());
  cmd->add_option("--timeout-s", o->timeout_s, "mpi: stop the job after this many seconds (0 = no limit)")
      ->check(number_in(0));
  cmd->callback([o, &exit_code] { exit_code = o->backend == "nccl" ? bench_nccl(*o) : bench_mpi(*o); });
}

}  // namespace commsim::cli
