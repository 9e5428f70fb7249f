// Network models: they deliver transfers along topology routes and tell a listener when each is done. Registered
// by name with a description and the model's source (as SimGrid registers its network models).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/event_queue.hpp"
#include "sim/topology/topology.hpp"

namespace commsim {

class TransferListener {
 public:
  virtual ~TransferListener() = default;
  virtual void on_transfer_done(std::uint64_t tag) = 0;
};

// Busy time and bytes per directed link class, for reports.
struct LinkUsage {
  double busy_s[kLinkClassCount] = {};  // summed over directed links of the class: time with >= 1 flow
  double bytes[kLinkClassCount] = {};   // bytes that crossed links of the class (counted per link)
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  // Starts moving `bytes` from rank src to rank dst now; calls listener->on_transfer_done(tag) when delivered.
  // `copies`: over a quotient (LinkQuotient), the flows this one stands for; 0 = the quotient's multiplicity.
  virtual void start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag,
                     std::uint32_t copies = 0) = 0;
  virtual const LinkUsage& usage() const = 0;
  // Steady state (RingRun). `steady_state` appends, relative to now, everything of `listener`'s flows in flight that
  // their future depends on (per flow, in tag order: tag, when it last changed rate or will reach its links, bytes
  // left then, rate; then each shared link's flows in their order), so that two instants whose states are equal are
  // followed by the same events, shifted; false when the model cannot tell. `skip_periods` then moves every time the
  // network holds `shift` later and counts `periods` more periods of `per_period` usage (the period began at
  // `period_start`).
  virtual bool steady_state(const TransferListener* listener, std::vector<double>& state) const;
  virtual void skip_periods(TimePs period_start, TimePs shift, const LinkUsage& per_period, std::uint64_t periods);
};

enum class Fidelity : std::uint8_t {
  Analytical,  // closed-form alpha-beta per operation; links are never shared (no contention)
  Flow,        // every transfer is a flow on its route; links shared max-min fairly among concurrent flows
};
struct FidelityInfo {
  Fidelity fidelity;
  std::string_view name;
  std::string_view description;
};
const std::vector<FidelityInfo>& fidelities();
bool parse_fidelity(std::string_view name, Fidelity& out);
std::string_view to_string(Fidelity f);

// The flow network runs every transfer of a collective: more than kMaxFlowRanks ranks (sim/core/limits.hpp) is an
// InputError, raised by make_flow_network and by whoever generates a schedule for it, before allocating it.
void check_network_size(Fidelity fidelity, const Topology& topology);
std::unique_ptr<NetworkModel> make_flow_network(const Topology& topology, EventQueue& queue);

// The links of a topology in the orbits of a symmetry of order `multiplicity` (sim/network/symmetry.hpp). A flow
// network over the quotient takes each flow started as the representative of `multiplicity` flows, its images, and
// each link as its orbit: a link of an orbit of k links that the representative's route crosses n times (counting
// the route's links of that orbit) carries multiplicity x n / k of the images, all at the representative's rate.
// The classes of an equitable partition (flow_partition.hpp) are such orbits too, with a flow's class size in place
// of the multiplicity (NetworkModel::start's `copies`).
struct LinkQuotient {
  int multiplicity = 1;
  std::vector<LinkId> representative;     // per link: its orbit's representative; kNoLinkInQuotient if not in one
  std::vector<std::uint32_t> orbit_size;  // per link: the size of its orbit (it divides multiplicity)
};
inline constexpr LinkId kNoLinkInQuotient = 0xffffffffu;
// The flow network over the quotient; `quotient` must outlive it.
std::unique_ptr<NetworkModel> make_quotient_flow_network(const Topology& topology, EventQueue& queue,
                                                         const LinkQuotient& quotient);

}  // namespace commsim
