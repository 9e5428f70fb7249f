// The analytical network model (no contention) and the registry of fidelities.
#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/engine/network.hpp"

namespace commsim {
namespace {

// No contention: each transfer takes latency + bytes / bottleneck bandwidth of its path.
class AnalyticalNetwork final : public NetworkModel, public EventHandler {
 public:
  AnalyticalNetwork(const Topology& topology, EventQueue& queue) : topology_(topology), queue_(queue) {}
  void start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag) override {
    route_.links.clear();
    topology_.route(src, dst, route_);
    const TimePs drain = transfer_ps(bytes, route_.cost.bottleneck_Bps);
    for (LinkId l : route_.links) {
      const int c = static_cast<int>(topology_.link(l).link_class);
      usage_.bytes[c] += bytes;
      usage_.busy_s[c] += ps_to_seconds(drain);
    }
    pending_.push_back({listener, tag});
    queue_.schedule(add_ps(queue_.now(), add_ps(seconds_to_ps(route_.cost.latency_s, "path latency"), drain)), this,
                    pending_.size() - 1);
  }
  const LinkUsage& usage() const override { return usage_; }
  void on_event(std::uint64_t index) override {
    auto [listener, tag] = pending_[index];
    listener->on_transfer_done(tag);
  }

 private:
  const Topology& topology_;
  EventQueue& queue_;
  Route route_;
  std::vector<std::pair<TransferListener*, std::uint64_t>> pending_;
  LinkUsage usage_;
};

}  // namespace

std::unique_ptr<NetworkModel> make_analytical_network(const Topology& topology, EventQueue& queue) {
  return std::make_unique<AnalyticalNetwork>(topology, queue);
}

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

void check_network_size(Fidelity fidelity, const Topology& topology) {
  if (topology.ranks() > kMaxFlowRanks)
    throw InputError(
        "fidelity " + std::string(to_string(fidelity)), "",
        std::to_string(topology.ranks()) + " ranks exceed the limit of " + std::to_string(kMaxFlowRanks) +
            " for a simulation of every transfer (the closed form, fidelity analytical, has no such limit)");
}

}  // namespace commsim
