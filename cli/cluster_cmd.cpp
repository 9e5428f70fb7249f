// `commsim cluster up TOPOLOGY` / `commsim cluster down [PREFIX | --all]`: an emulated cluster (hw/cluster) that
// outlives the command, for running mpirun by hand (docs/hardware-mpi.md). `up` prints the prefix and the mpirun
// command prefix that starts ranks inside it; `down` removes it (namespaces, links, qdiscs, state and launch files).
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "hw/common/emulation.hpp"
#include "sim/core/error.hpp"
#include "sim/topology/topology.hpp"

namespace commsim::cli {
namespace {

struct ClusterCommand {
  std::string topology, prefix;
  int nodes = 0;
  bool all = false;
};

std::string launch_dir(const std::string& prefix) {
  return (std::filesystem::temp_directory_path() / ("commsim-" + prefix)).string();
}

int cluster_up(const ClusterCommand& o) {
  load_topology(o.topology, o.nodes);  // a malformed file fails here, with its field named
  const hw::Emulation emulation = hw::emulation_for(o.topology, o.nodes);
  std::string why;
  if (!hw::has_net_admin(&why)) {
    std::fprintf(stderr, "commsim: %s\n", why.c_str());
    return 2;
  }
  try {
    const hw::EmulatedCluster cluster = hw::EmulatedCluster::up(emulation.cluster, /*persistent=*/true);
    const std::string mpirun = cluster.write_mpi_launch_files(launch_dir(cluster.prefix()), emulation.ranks_per_node);
    const int ranks = emulation.cluster.nodes * emulation.ranks_per_node;
    std::printf("emulated cluster %s: %d nodes x %d ranks, NIC %.4g MB/s (tc tbf), addresses 198.18.0.1-%d\n",
                cluster.prefix().c_str(), emulation.cluster.nodes, emulation.ranks_per_node,
                emulation.cluster.nic_bandwidth_Bps / 1e6, emulation.cluster.nodes);
    std::printf("run ranks inside it:\n  %s -np %d commsim run --backend mpi SCENARIO\n", mpirun.c_str(), ranks);
    std::printf("remove it:\n  commsim cluster down %s\n", cluster.prefix().c_str());
    return 0;
  } catch (const hw::ClusterError& e) {
    std::fprintf(stderr, "commsim: emulated cluster: %s\n", e.what());
    return 3;
  }
}

int cluster_down(const ClusterCommand& o) {
  if (o.all == !o.prefix.empty())
    throw InputError("cluster down", "", "give either a cluster prefix (csXXXXXX) or --all");
  try {
    if (o.all) {
      std::error_code ignored;
      for (const auto& entry : std::filesystem::directory_iterator("/run/commsim", ignored)) {
        const std::string prefix = entry.path().stem().string();
        std::filesystem::remove_all(launch_dir(prefix), ignored);
      }
      hw::EmulatedCluster::down_all();
    } else {
      hw::EmulatedCluster::down(o.prefix);
      std::error_code ignored;
      std::filesystem::remove_all(launch_dir(o.prefix), ignored);
    }
    return 0;
  } catch (const hw::ClusterError& e) {
    std::fprintf(stderr, "commsim: %s\n", e.what());
    return 2;
  }
}

}  // namespace

void register_cluster(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ClusterCommand>();
  CLI::App* cmd =
      app.add_subcommand("cluster", "Bring an emulated cluster up or down (network namespaces, veth, bridge, tc)");
  cmd->require_subcommand(1);
  CLI::App* up =
      cmd->add_subcommand("up", "Create an emulated cluster for a topology and keep it until `cluster down`");
  up->add_option("topology", o->topology,
                 "topology JSON: cpu_rank devices, single_switch fabric of class tcp, <= 64 nodes")
      ->required();
  up->add_option("--nodes", o->nodes, "override the topology's node count")->check(number_in(1, kMaxNodes));
  up->callback([o, &exit_code] { exit_code = cluster_up(*o); });
  CLI::App* down = cmd->add_subcommand("down", "Remove an emulated cluster (or all of them)");
  down->add_option("prefix", o->prefix, "the cluster's prefix, as `cluster up` printed it");
  down->add_flag("--all", o->all, "remove every emulated cluster of this machine");
  down->callback([o, &exit_code] { exit_code = cluster_down(*o); });
}

}  // namespace commsim::cli
