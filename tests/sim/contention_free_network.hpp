// A test oracle, not a fidelity: the schedule executed with no contention, each transfer taking its path's latency
// plus bytes / bottleneck bandwidth as if it had its links alone. The product's analytical fidelity is the closed
// form (sim/collective/cost_model); the tests hold the closed forms to this execution of the same schedule (equal on
// uniform rings, never below it) and the flow network to never being faster than it.
#pragma once

#include <utility>
#include <vector>

#include "sim/network/network.hpp"

namespace commsim::test {

class ContentionFreeNetwork final : public NetworkModel, public EventHandler {
 public:
  ContentionFreeNetwork(const Topology& topology, EventQueue& queue) : topology_(topology), queue_(queue) {}
  // Never over a quotient: `copies` is always 0.
  void start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag,
             std::uint32_t /*copies*/ = 0) override {
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

}  // namespace commsim::test
