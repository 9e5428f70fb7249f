// `commsim cluster up TOPOLOGY` / `commsim cluster down [PREFIX | --all] [--force]`: an emulated cluster
// (hw/cluster) that outlives the command, for running mpirun by hand (docs/hardware-mpi.md). `up` prints the prefix
// and the mpirun command prefix that starts ranks inside it; `down` removes it (processes inside, namespaces, links,
// qdiscs, state, launch and shared-memory files), refusing one whose run is alive unless --force.
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
  bool all = false, force = false;
};

int cluster_up(const ClusterCommand& o) {
  load_topology(o.topology, o.nodes);  // a malformed file fails here, with its field named
  const hw::Emulation emulation = hw::emulation_for(o.topology, o.nodes);
  std::string why;
  if (!hw::has_net_admin(&why)) {
    std::fprintf(stderr, "commsim: %s\n", why.c_str());
    return 2;
  }
  try {
    // Until persist(), a signal or an error removes the cluster and its launch files, never a half-made one.
    hw::EmulatedCluster cluster = hw::EmulatedCluster::up(emulation.cluster);
    const std::string mpirun = cluster.write_mpi_launch_files(cluster.launch_dir(), emulation.ranks_per_node);
    cluster.persist();
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

// Clusters left by a dead owner are removed by either form; one whose run is alive only with --force.
int cluster_down(const ClusterCommand& o) {
  if (o.all == !o.prefix.empty())
    throw InputError("cluster down", "", "give either a cluster prefix (csXXXXXX) or --all");
  try {
    if (o.all) {
      for (const std::string& prefix : hw::EmulatedCluster::down_all(o.force))
        std::printf("removed emulated cluster %s\n", prefix.c_str());
    } else {
      hw::EmulatedCluster::down(o.prefix, o.force);
      std::printf("removed emulated cluster %s\n", o.prefix.c_str());
      hw::EmulatedCluster::remove_stale();
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
  down->add_flag("--force", o->force, "also a cluster whose run is alive: end that run first");
  down->callback([o, &exit_code] { exit_code = cluster_down(*o); });
}

}  // namespace commsim::cli
