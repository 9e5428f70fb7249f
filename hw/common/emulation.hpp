// Which topologies this machine can emulate (hw/cluster: a namespace per node, a bridge as the switch, tc on each
// NIC) and the cluster that emulates one: CPU ranks only, one switch, TCP between nodes, at most 64 nodes.
#pragma once

#include <string>

#include "hw/cluster/emulated_cluster.hpp"

namespace commsim::hw {

struct Emulation {
  EmulatedClusterSpec cluster;  // nodes and NIC rate (the fabric link class's bandwidth_Bps)
  int ranks_per_node = 1;       // the node template's cpu_rank devices
};

// Reads the topology file; `nodes_override` > 0 replaces its node count (a scenario's "nodes"). Throws InputError
// naming the file and the field that makes it impossible to emulate.
Emulation emulation_for(const std::string& topology_path, int nodes_override = 0);

}  // namespace commsim::hw
