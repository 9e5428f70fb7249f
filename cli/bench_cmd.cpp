// `commsim bench --backend mpi|nccl`: microbenchmarks for calibration. With MPI (hw/mpi/bench.hpp): ping-pong per
// link class present, an allreduce size sweep printed as nccl-tests prints it, and the local reduction rate; every
// sample goes to --json. Like `run`, it launches mpirun itself (loopback, or --cluster) unless already under it.
#include "cli/commands.hpp"
#include "cli/run_request.hpp"

namespace commsim::cli {
namespace {

struct BenchCommand {
  std::string backend = "mpi", topology = "topologies/emulated-cpu-cluster.json", json, max_bytes = "256M",
              impl = "native";
  int nodes = 0;
  bool cluster = false;
  double timeout_s = 0;
};

hw::HardwareRunRequest request_of(const BenchCommand& o) {
  hw::HardwareRunRequest r;
  r.job = hw::HardwareJob::Bench;
  r.backend = o.backend;
  r.topology = o.topology;
  r.nodes = o.nodes;
  r.max_bytes = o.max_bytes;
  r.impl = o.impl;
  r.cluster = o.cluster;
  r.timeout_s = o.timeout_s;
  r.result_file = o.json;
  return r;
}

}  // namespace

void register_bench(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchCommand>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Microbenchmarks for calibration: ping-pong per link class, allreduce sweep, reduction and DGC rates");
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
  cmd->callback([o, &exit_code] { exit_code = execute_request(request_of(*o)); });
}

}  // namespace commsim::cli
