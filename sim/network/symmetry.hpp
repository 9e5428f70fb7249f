// Flow simulation of ring collectives once per orbit of a symmetry. A ring where every rank does the same thing,
// shifted, is invariant under a rank permutation sigma of order m: rotating the ring by `positions`, or mapping each
// channel's ring onto the next channel's. When sigma also maps every flow's route onto its image's route, link for
// link with equal capacities and latencies (checked here on every flow, else no symmetry), the full simulation stays
// invariant under sigma: the m images of a flow start, share and finish alike. The representatives then run alone on
// the quotient network (LinkQuotient), m times fewer flows; the test compares the result with the full schedule.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "sim/collective/representatives.hpp"
#include "sim/network/network.hpp"

namespace commsim {

struct RingSymmetry {
  RingRepresentatives representatives;
  LinkQuotient quotient;  // multiplicity = m, the order of sigma
};

// The largest symmetry of the kinds above under which all `specs` (run at once, from time 0) are invariant, or none:
// every spec a ring allreduce, reduce-scatter or allgather (algorithm Ring, Auto resolved, not aggregated) over the
// same participants, channels and ranks per node, with every channel's share and ring piece dividing evenly.
// `channel_map_only` leaves rotations of the ring out (for the test of links that the channel map fixes).
std::optional<RingSymmetry> find_ring_symmetry(const std::vector<CollectiveSpec>& specs, const Topology& topology,
                                               bool channel_map_only = false);

struct FlowCollectivesResult {
  std::vector<double> seconds;       // per collective: time from 0 to its last operation
  std::uint64_t events = 0;          // events the engine processed
  std::uint64_t transfers = 0;       // transfers simulated
  std::uint64_t full_transfers = 0;  // transfers of the full schedules (= transfers without a symmetry)
  int multiplicity = 1;              // the symmetry's order; 1 = the full schedules ran
  std::uint64_t skipped_steps = 0;   // ring steps a steady state repeated, not simulated (RingRun)
  LinkUsage usage;
  // False when `progress` stopped the run: then a collective not yet done has, in `seconds`, the simulated time the
  // run reached (a lower bound of its time).
  bool complete = true;
};

// Progress and cancellation of a long run (EventQueue::run_checked): keep_going is called every `every_events`
// events; returning false stops the run. Empty: no checks.
struct FlowProgress {
  std::uint64_t every_events = 1 << 20;
  std::function<bool(const EventQueue&)> keep_going;
};

// Runs `specs` at once on the flow network from time 0: on the quotient when find_ring_symmetry finds a symmetry
// and `use_symmetry` (a lone one-channel ring without one as its own representative, generated as it runs), else
// every operation of the full schedules (generate(): the reference the tests compare with). A ring alone on its
// network skips the steps its steady state repeats when `skip_steady_state` (RingRun; off: every step simulated).
FlowCollectivesResult simulate_flow_collectives(const std::vector<CollectiveSpec>& specs, const Topology& topology,
                                                bool use_symmetry = true, const FlowProgress& progress = {},
                                                bool skip_steady_state = true);

}  // namespace commsim
