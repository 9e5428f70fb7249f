// The flow network's state (sim/network/flow_network.cpp: flows entering and leaving links; flow_rates.cpp: their
// max-min rates), internal to sim/engine: the rest of the program reaches it through make_flow_network (network.hpp).
// Each transfer is a flow on its route; concurrent flows share every link max-min fairly (progressive filling,
// Bertsekas & Gallager, "Data Networks" 6.5.2; as SimGrid's lmm solver does). Rates are recomputed only when the set
// of flows changes, once per timestamp (a class-1 event batches all the changes of that instant), and only over the
// connected component of links and flows that the changes touch.
#pragma once

#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/network/network.hpp"

namespace commsim::flow_detail {

// Rounds a rate to 40 significant bits. Flows that are symmetric get rates that differ only by the order of
// floating-point subtractions; snapping makes them equal, so they finish in the same picosecond and one rate update
// serves them all (a 1e-12 relative change, far below the engine's picosecond quantum for any real transfer).
// For a positive finite double this is round(ldexp(frexp(rate), 40)) scaled back, done on the bits: dropping the
// low 13 of the 53 significand bits, rounding half away from zero (a carry moves into the exponent, as it should).
inline double snap(double rate) {
  std::uint64_t bits;
  std::memcpy(&bits, &rate, sizeof bits);
  bits = (bits + (std::uint64_t{1} << 12)) & ~((std::uint64_t{1} << 13) - 1);
  std::memcpy(&rate, &bits, sizeof bits);
  return rate;
}

constexpr LinkId kNoLink = std::numeric_limits<LinkId>::max();

enum EventKind : std::uint64_t { kEnter = 0, kComplete = 1, kRecompute = 2, kBucketEmpty = 3 };
inline std::uint64_t payload(EventKind kind, std::uint32_t flow, std::uint32_t version) {
  return (static_cast<std::uint64_t>(version) << 34) | (static_cast<std::uint64_t>(flow) << 2) | kind;
}

class FlowNetwork final : public NetworkModel, public EventHandler {
 public:
  // With a quotient, flows stand for their orbits (LinkQuotient); without, for themselves. Superseded completion
  // events are dropped from the queue once more than `dead_completions_kept` of them outnumber the flows twice
  // (tests lower it to drive the dropping on small cases).
  static constexpr std::size_t kDeadCompletionsKept = 1 << 16;
  FlowNetwork(const Topology& topology, EventQueue& queue, const LinkQuotient* quotient = nullptr,
              std::size_t dead_completions_kept = kDeadCompletionsKept);

  void start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag,
             std::uint32_t copies = 0) override;

  const LinkUsage& usage() const override { return usage_; }
  bool steady_state(const TransferListener* listener, std::vector<double>& state) const override;
  void skip_periods(TimePs period_start, TimePs shift, const LinkUsage& per_period, std::uint64_t periods) override;

  void on_event(std::uint64_t p) override;

 private:
  // Routes are interned: each distinct (source, destination, copies) is stored once in route_pool_ as its link count
  // followed by its links (with a quotient, each link's weight sits at the same index of route_weights_), and a flow
  // keeps its route's offset. A ring sends from each rank to the same next rank at every step, so a route is computed
  // (and mapped to the quotient) once per collective, and a transfer copies nothing. The last route taken from each
  // rank is looked up without the map.
  struct InternedRoute {
    std::uint32_t offset = 0;  // of its link count in route_pool_
    TimePs latency_ps = 0;
  };
  struct LastRoute {
    int dst = -1;
    std::int64_t copies = -1;
    InternedRoute route;
  };
  const InternedRoute& route_from(int src, int dst, std::int64_t copies) {
    LastRoute& last = last_route_[static_cast<std::size_t>(src)];
    if (last.dst != dst || last.copies != copies) {
      last.dst = dst;
      last.copies = copies;
      last.route = intern_route(src, dst, copies);
    }
    return last.route;
  }
  InternedRoute intern_route(int src, int dst, std::int64_t copies);

  struct Flow {
    double remaining = 0;    // bytes not yet sent at last_update
    double rate = 0;         // bytes/s
    double new_rate = 0;     // scratch of recompute(): the rate being computed, < 0 while not yet frozen
    TimePs last_update = 0;  // until the flow reaches its links: when it will
    std::uint32_t version = 0;
    std::uint32_t route = 0;  // offset of its route's link count in route_pool_
    std::uint32_t mark = 0;   // scratch: == the instant's mark once gathered into a part
    LinkId own_link = 0;      // scratch: the link that carries it alone with the smallest (capacity, id), if any
    TransferListener* listener = nullptr;  // null once delivered
    std::uint64_t tag = 0;
  };
  static_assert(sizeof(Flow) == 64);
  // What every event reads of a link, in 32 bytes: the links that one instant touches then stay in cache (a ring
  // over 8192 GPUs moves 8192 flows at once, over ~50 000 links). The flow list is in place while the link carries
  // one flow, as most do; with more, all of them are in spilled_flows_[link], in the order they entered.
  struct LinkState {
    double capacity = 0;       // effective bandwidth, bytes/s
    double capacity_left = 0;  // scratch for progressive filling
    std::uint32_t flow_count = 0;
    std::uint32_t only_flow = 0;  // the flow, while flow_count == 1
    std::int32_t unfrozen = 0;    // scratch for progressive filling
    std::int32_t load = 0;        // flows on it, a representative counting as the images it stands for here
  };
  static_assert(sizeof(LinkState) == 32);
  // What is read of a link only when it turns busy or idle, when a flow starts on it or when flows share it: together,
  // so that such an event misses once, not once per field.
  struct LinkRecord {
    TimePs busy_since = 0;         // when it last turned busy
    std::uint32_t part_mark = 0;   // scratch: == the instant's mark when gathered into a part
    std::uint32_t orbit_size = 1;  // with a quotient: the links it stands for
    std::uint8_t link_class = 0;
  };

  std::span<const std::uint32_t> flows_on(LinkId l) const {
    const LinkState& link = links_[l];
    return {link.flow_count <= 1 ? &link.only_flow : spilled_flows_[l].data(), link.flow_count};
  }
  void add_flow(LinkId l, std::uint32_t id, std::int32_t weight);
  // Removes by moving the last flow into the gap (the order progressive filling then visits them in).
  void remove_flow(LinkId l, std::uint32_t id, std::int32_t weight);

  // A flow's route: its links in one pool rather than in a vector per flow (recompute() walks the routes of thousands
  // of flows per instant, and this saves a pointer chase each).
  std::span<const LinkId> links_of(std::uint32_t id) const {
    const LinkId* route = route_pool_.data() + flows_[id].route;
    return {route + 1, *route};
  }
  // Flows on the link, counting each representative as the images it stands for on this link.
  std::int32_t load(LinkId l) const { return links_[l].load; }
  // How many images of the flow cross each link of the orbit of its h-th link (1 without a quotient).
  std::int32_t weight(std::uint32_t id, std::uint32_t h) const {
    return quotient_ ? route_weights_[std::size_t{flows_[id].route} + 1 + h] : 1;
  }
  // Replaces a route by its orbits' representatives, each once, with its links in that orbit in quotient_hops_.
  void to_quotient(std::vector<LinkId>& links);

  // Marks tell gathered links and flows from the others without a pass that clears flags afterwards.
  std::uint32_t next_mark() {
    if (++mark_ == 0) {  // wrapped: clear the old marks once
      for (Flow& f : flows_) f.mark = 0;
      for (LinkRecord& r : records_) r.part_mark = 0;
      mark_ = 1;
    }
    return mark_;
  }

  void reset_scratch(LinkId l) {
    links_[l].capacity_left = links_[l].capacity;
    links_[l].unfrozen = load(l);
  }

  // A link may be listed twice in an instant; recompute() gathers it once.
  void mark_dirty(std::span<const LinkId> links);

  // A link shaped by a token bucket (LinkParams::burst_bytes, tc tbf): its tokens fill at the sustained rate r while
  // its flows carry less than r, up to the depth, and drain at (carried - r) while they carry more. It offers
  // burst_Bps while more than one Ethernet frame's tokens are left (tbf sends a packet only when its tokens cover
  // it), r otherwise. Rates change only at recomputes, so the tokens follow a straight line between them; the
  // instant they run out is an event of its own that makes the link's flows recompute at r.
  struct TokenBucket {
    LinkId link = 0;
    double depth_bytes = 0, sustained_Bps = 0, burst_Bps = 0;
    double tokens_bytes = 0;  // at `updated`
    double carried_Bps = 0;   // the sum of its flows' rates since `updated`
    TimePs updated = 0;
    std::uint32_t version = 0;  // of its pending empty event
  };
  static constexpr double kFrameBytes = 1514;  // one full Ethernet frame, what tbf charges per 1448-byte segment
  // The tokens at `now`, from those at b.updated and what the flows carried since.
  static void advance(TokenBucket& b, TimePs now);
  // Before an instant's rates: each bucket's tokens brought up to now, its link's capacity set from them, and a link
  // whose capacity changed marked dirty (its flows' rates depend on it).
  void refill_buckets();
  // After them: what each bucket's flows carry now, and when its tokens run out at that rate.
  void schedule_bucket_events();

  void finish(std::uint32_t id);

  // Max-min rates of the flows that the changes of this instant can affect, then their completion events.
  void recompute();

  // Solves the part of the seed: the flows connected to it through links that carry more than one flow (counting a
  // representative's images), and the links they cross. Parts share no link, so each is filled on its own, with a
  // heap per part (O(log part) per pop, not O(log) of all that the instant touched), and every rate comes out as
  // one filling over the union would give it. A flow alone on every link of its route is a part of its own and gets
  // its route's bottleneck, as progressive filling would give it, without the heap (the common case: a collective's
  // flows rarely share links).
  void solve_part(std::uint32_t seed, std::uint32_t mark);
  // Adds an unfrozen flow to the part: lists its shared links (once each, their scratch reset) and finds its own link,
  // of the links that carry it alone the one with the smallest (capacity, id). Of those, only its own link can
  // saturate: the heap pops it before the others (their shares never change), and it freezes the flow if nothing did
  // before, so only the own link joins the part (reset) and the others are left untouched. Returns whether the flow
  // shares a link.
  bool take_into_part(std::uint32_t id, std::uint32_t mark, std::size_t& part_flows);

  // New rates take effect now: each flow whose rate changed gets a new completion event (the old one is superseded).
  void apply_new_rates();

  // Progressive filling over the part in part_links_ (every link of it has an unfrozen flow; part_flows of them):
  // repeatedly saturate the link with the smallest fair share. A min-heap of links by fair share; a link's share only
  // grows as flows elsewhere freeze (max-min), so an entry whose share has grown since it was pushed is pushed again
  // with the new value instead of being used (in a small part, updated where it is).
  void fill(std::size_t part_flows);

  // A link's fair share when pushed, and its unfrozen count then: while that count is unchanged no flow on it froze,
  // so neither did its capacity left change (each freeze takes one or more flows off the count) and the share is
  // still exact without dividing again.
  struct ShareEntry {
    double share;
    LinkId link;
    std::int32_t unfrozen;
  };
  static constexpr std::size_t kScannedPartLinks = 16;
  static bool later_entry(const ShareEntry& a, const ShareEntry& b) {
    return a.share > b.share || (a.share == b.share && a.link > b.link);
  }
  // The entry's fair share now, kNoShare when its link has no unfrozen flow left.
  static constexpr double kNoShare = -std::numeric_limits<double>::infinity();
  double current_share(const ShareEntry& entry) const;
  // Freezes the unfrozen flows on the bottleneck at `rate`; returns how many.
  std::size_t freeze_flows_on(LinkId bottleneck, double rate);

  const Topology& topology_;
  EventQueue& queue_;
  const LinkQuotient* quotient_;
  std::vector<LinkId> route_pool_;           // interned routes: link count, then the links
  std::vector<std::int32_t> route_weights_;  // with a quotient: the weight of route_pool_'s link at the same index
  std::map<std::tuple<int, int, std::int64_t>, InternedRoute> route_index_;  // (source, destination, copies)
  std::vector<LastRoute> last_route_;                                        // per source rank
  std::vector<std::int32_t> quotient_hops_;                                  // scratch of to_quotient()
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_;
  Route route_;  // scratch for Topology::route
  std::vector<LinkState> links_;
  std::vector<LinkRecord> records_;
  std::vector<std::vector<std::uint32_t>> spilled_flows_;
  std::vector<LinkId> dirty_;
  std::vector<std::uint32_t> solved_flows_;  // of this instant, in the order their parts were found
  std::vector<LinkId> part_links_;
  std::vector<ShareEntry> heap_;  // progressive filling's entries: a heap, or unordered in a small part
  // Completion events superseded by a rate change and still in the queue; dropped from it past
  // dead_completions_kept_ when they outnumber the flows twice.
  std::size_t dead_completions_ = 0;
  std::size_t dead_completions_kept_;
  std::uint32_t mark_ = 0;
  bool recompute_pending_ = false;
  std::vector<TokenBucket> buckets_;  // the shaped links, usually none
  LinkUsage usage_;
};

}  // namespace commsim::flow_detail
