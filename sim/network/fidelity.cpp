// The registry of fidelities: analytical is the closed form (sim/collective/cost_model), flow the flow network.
#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/network/network.hpp"

namespace commsim {

const std::vector<FidelityInfo>& fidelities() {
  static const std::vector<FidelityInfo> list = {
      {Fidelity::Analytical, "analytical",
       "closed-form alpha-beta per operation, no contention (Hockney 1994; NCCL tuning model)"},
      {Fidelity::Flow, "flow",
       "flows on routes sharing links max-min fairly, rates updated per change (Bertsekas & Gallager 6.5; SimGrid "
       "LMM)"}};
  return list;
}

bool parse_fidelity(std::string_view name, Fidelity& out) {
  for (const FidelityInfo& f : fidelities())
    if (f.name == name) return (out = f.fidelity), true;
  return false;
}

std::string_view to_string(Fidelity f) { return fidelities()[static_cast<int>(f)].name; }

bool NetworkModel::steady_state(const TransferListener*, std::vector<double>&) const { return false; }

void NetworkModel::skip_periods(TimePs, TimePs, const LinkUsage&, std::uint64_t) {
  COMMSIM_CHECK(false, "periods skipped on a network model that has no steady state");
}

void check_network_size(Fidelity fidelity, const Topology& topology) {
  if (topology.ranks() > kMaxFlowRanks)
    throw InputError(
        "fidelity " + std::string(to_string(fidelity)), "",
        std::to_string(topology.ranks()) + " ranks exceed the limit of " + std::to_string(kMaxFlowRanks) +
            " for a simulation of every transfer (the closed form, fidelity analytical, has no such limit)");
}

}  // namespace commsim
