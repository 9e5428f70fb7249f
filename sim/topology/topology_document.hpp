// Loading a topology from a document already in memory (a calibrated topology that validation simulates without
// writing it to disk first). load_topology(path) reads the file and calls this.
#pragma once

#include <memory>
#include <string>

#include "sim/core/json_fields.hpp"
#include "sim/topology/topology.hpp"

namespace commsim {

// As load_topology, from `document`; `file` names it in errors.
std::unique_ptr<Topology> load_topology_document(const Json& document, const std::string& file, int nodes_override = 0);

}  // namespace commsim
