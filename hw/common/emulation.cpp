#include "hw/common/emulation.hpp"

#include "sim/core/json_fields.hpp"

namespace commsim::hw {

namespace {
constexpr int kMaxEmulatedNodes = 64;  // hw/cluster's limit: one namespace, two veths and two qdiscs per node
}

Emulation emulation_for(const std::string& topology_path, int nodes_override) try {
  const Json topology = read_json_file(topology_path);
  auto fail = [&](const std::string& field, const std::string& what) {
    throw InputError(topology_path, field,
                     what +
                         ": this topology cannot be emulated here (emulated clusters have CPU ranks, one switch and "
                         "TCP between nodes)");
  };
  if (topology.contains("astra_sim")) fail("astra_sim", "an ASTRA-sim network has no node template");
  Emulation e;
  e.ranks_per_node = 0;
  const Json& devices = topology.at("node").at("devices");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::string kind = devices[i].value("kind", "");
    if (kind == "gpu") fail("node.devices[" + std::to_string(i) + "].kind", "a gpu");
    if (kind == "cpu_rank") ++e.ranks_per_node;
  }
  if (e.ranks_per_node == 0) fail("node.devices", "no cpu_rank device");
  const Json fabric = topology.value("fabric", Json::object());
  const std::string fabric_kind = fabric.value("kind", "none");
  if (fabric_kind != "single_switch") fail("fabric.kind", "\"" + fabric_kind + "\" (needs single_switch)");
  const std::string link_class = fabric.value("link_class", "");
  if (link_class != "tcp") fail("fabric.link_class", "\"" + link_class + "\" (needs tcp)");
  e.cluster.nodes = nodes_override > 0 ? nodes_override : topology.value("nodes", 1);
  if (e.cluster.nodes > kMaxEmulatedNodes)
    fail("nodes", std::to_string(e.cluster.nodes) + " nodes (at most " + std::to_string(kMaxEmulatedNodes) + ")");
  const Json& tcp = topology.at("link_classes").at("tcp");
  e.cluster.nic_bandwidth_Bps = tcp.at("bandwidth_Bps").get<double>();
  e.cluster.nic_burst_bytes = tcp.value("burst_bytes", 0.0);
  return e;
} catch (const nlohmann::json::exception& error) {
  throw InputError(topology_path, "", std::string("not a topology file: ") + error.what());
}

}  // namespace commsim::hw
