// Flow-level network: each transfer is a flow on its route; concurrent flows share every link max-min fairly
// (progressive filling, Bertsekas & Gallager, "Data Networks" 6.5.2; as SimGrid's lmm solver does). Rates are
// recomputed only when the set of flows changes, once per timestamp (a class-1 event batches all the changes of
// that instant), and only over the connected component of links and flows that the changes touch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/engine/network.hpp"

namespace commsim {
namespace {

// Rounds a rate to 40 significant bits. Flows that are symmetric get rates that differ only by the order of
// floating-point subtractions; snapping makes them equal, so they finish in the same picosecond and one rate update
// serves them all (a 1e-12 relative change, far below the engine's picosecond quantum for any real transfer).
// For a positive finite double this is round(ldexp(frexp(rate), 40)) scaled back, done on the bits: dropping the
// low 13 of the 53 significand bits, rounding half away from zero (a carry moves into the exponent, as it should).
double snap(double rate) {
  std::uint64_t bits;
  std::memcpy(&bits, &rate, sizeof bits);
  bits = (bits + (std::uint64_t{1} << 12)) & ~((std::uint64_t{1} << 13) - 1);
  std::memcpy(&rate, &bits, sizeof bits);
  return rate;
}

constexpr LinkId kNoLink = std::numeric_limits<LinkId>::max();

enum EventKind : std::uint64_t { kEnter = 0, kComplete = 1, kRecompute = 2 };
std::uint64_t payload(EventKind kind, std::uint32_t flow, std::uint32_t version) {
  return (static_cast<std::uint64_t>(version) << 34) | (static_cast<std::uint64_t>(flow) << 2) | kind;
}

class FlowNetwork final : public NetworkModel, public EventHandler {
 public:
  // With a quotient, flows stand for their orbits (LinkQuotient); without, for themselves.
  FlowNetwork(const Topology& topology, EventQueue& queue, const LinkQuotient* quotient = nullptr)
      : topology_(topology), queue_(queue), quotient_(quotient) {
    const std::size_t link_count = topology.link_count();
    links_.resize(link_count);
    link_class_.resize(link_count);
    busy_since_.resize(link_count);
    part_mark_.resize(link_count);
    spilled_flows_.resize(link_count);
    if (quotient_) load_.resize(link_count);
    route_cache_.resize(static_cast<std::size_t>(topology.ranks()));
    // Each link's capacity and class, read once: Topology::link() computes them from the id (a division per call).
    for (std::size_t l = 0; l < link_count; ++l) {
      const LinkParams& p = topology.link(static_cast<LinkId>(l));
      links_[l].capacity = p.effective_Bps();
      link_class_[l] = static_cast<std::uint8_t>(p.link_class);
    }
  }

  void start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag) override {
    std::uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(flows_.size());
      flows_.emplace_back();
      route_links_.resize(flows_.size() * route_stride_);
      if (quotient_) route_weights_.resize(route_links_.size());
    }
    const CachedRoute& route = route_from(src, dst);
    if (route.links.size() > route_stride_) widen_routes(route.links.size());
    Flow& f = flows_[id];
    std::copy(route.links.begin(), route.links.end(), route_links_.begin() + std::ptrdiff_t(id * route_stride_));
    if (quotient_)
      std::copy(route.weights.begin(), route.weights.end(),
                route_weights_.begin() + std::ptrdiff_t(id * route_stride_));
    f.hops = static_cast<std::uint32_t>(route.links.size());
    f.remaining = bytes;
    f.rate = 0;
    f.listener = listener;
    f.tag = tag;
    ++f.version;
    // Every link of an orbit carries weight images of the flow: weight x orbit size crossings in all.
    for (std::uint32_t h = 0; h < f.hops; ++h) {
      const LinkId l = links_of(id)[h];
      usage_.bytes[link_class_[l]] += quotient_ ? bytes * weight(id, h) * quotient_->orbit_size[l] : bytes;
    }
    queue_.schedule(add_ps(queue_.now(), route.latency_ps), this, payload(kEnter, id, f.version));
  }

  const LinkUsage& usage() const override { return usage_; }

  void on_event(std::uint64_t p) override {
    const auto kind = static_cast<EventKind>(p & 3);
    const auto id = static_cast<std::uint32_t>((p >> 2) & 0xffffffffu);
    const auto version = static_cast<std::uint32_t>(p >> 34);
    if (kind == kRecompute) return recompute();
    Flow& f = flows_[id];
    if ((f.version & 0x3fffffffu) != version) return;  // superseded completion (the rate changed since)
    if (kind == kEnter) {
      f.last_update = queue_.now();
      if (f.remaining <= 0) return finish(id);
      for (std::uint32_t h = 0; h < f.hops; ++h) {
        add_flow(links_of(id)[h], id, weight(id, h));
        mark_dirty(links_of(id)[h]);
      }
      f.rate = 0;  // set by the recompute of this instant
      return;
    }
    for (std::uint32_t h = 0; h < f.hops; ++h) {
      remove_flow(links_of(id)[h], id, weight(id, h));
      mark_dirty(links_of(id)[h]);
    }
    finish(id);
  }

 private:
  // The last route from each rank: a ring sends from a rank to the same next rank at every step, so each route is
  // computed (and mapped to the quotient) once per collective rather than once per transfer.
  struct CachedRoute {
    int dst = -1;
    std::vector<LinkId> links;
    std::vector<std::int32_t> weights;  // with a quotient
    TimePs latency_ps = 0;
  };
  const CachedRoute& route_from(int src, int dst) {
    CachedRoute& cached = route_cache_[static_cast<std::size_t>(src)];
    if (cached.dst == dst) return cached;
    route_.links.clear();
    topology_.route(src, dst, route_);
    if (quotient_) to_quotient(route_.links);
    cached.dst = dst;
    cached.links = route_.links;
    cached.weights = quotient_weights_;
    cached.latency_ps = seconds_to_ps(route_.cost.latency_s, "path latency");
    return cached;
  }

  struct Flow {
    double remaining = 0;  // bytes not yet sent at last_update
    double rate = 0;       // bytes/s
    double new_rate = 0;   // scratch of recompute(): the rate being computed, < 0 while not yet frozen
    TimePs last_update = 0;
    std::uint32_t version = 0;
    std::uint32_t hops = 0;  // links of the route, in route_links_
    std::uint32_t mark = 0;  // scratch: == the mark of the component or part being gathered when it is in it
    TransferListener* listener = nullptr;
    std::uint64_t tag = 0;
  };
  // What every event reads of a link, in 32 bytes: the links that one instant touches then stay in cache (a ring
  // over 8192 GPUs moves 8192 flows at once, over ~50 000 links). The flow list is in place while the link carries
  // one flow, as most do; with more, all of them are in spilled_flows_[link], in the order they entered.
  struct LinkState {
    double capacity = 0;       // effective bandwidth, bytes/s
    double capacity_left = 0;  // scratch for progressive filling
    std::uint32_t flow_count = 0;
    std::uint32_t only_flow = 0;       // the flow, while flow_count == 1
    std::int32_t unfrozen = 0;         // scratch for progressive filling
    std::uint32_t component_mark = 0;  // scratch: == the component's mark when gathered into it
  };
  static_assert(sizeof(LinkState) == 32);

  std::span<const std::uint32_t> flows_on(LinkId l) const {
    const LinkState& link = links_[l];
    return {link.flow_count <= 1 ? &link.only_flow : spilled_flows_[l].data(), link.flow_count};
  }
  void add_flow(LinkId l, std::uint32_t id, std::int32_t weight) {
    LinkState& link = links_[l];
    if (quotient_) load_[l] += weight;
    if (link.flow_count == 0) {
      link.only_flow = id;
      busy_since_[l] = queue_.now();
    } else {
      std::vector<std::uint32_t>& spilled = spilled_flows_[l];
      if (link.flow_count == 1) spilled.assign(1, link.only_flow);
      spilled.push_back(id);
    }
    ++link.flow_count;
  }
  // Removes by moving the last flow into the gap (the order progressive filling then visits them in).
  void remove_flow(LinkId l, std::uint32_t id, std::int32_t weight) {
    LinkState& link = links_[l];
    if (quotient_) load_[l] -= weight;
    if (link.flow_count == 1) {
      COMMSIM_CHECK(link.only_flow == id, "flow missing from its link");
    } else {
      std::vector<std::uint32_t>& spilled = spilled_flows_[l];
      auto it = std::find(spilled.begin(), spilled.end(), id);
      COMMSIM_CHECK(it != spilled.end(), "flow missing from its link");
      *it = spilled.back();
      spilled.pop_back();
      if (spilled.size() == 1) link.only_flow = spilled.front();
    }
    if (--link.flow_count == 0)
      usage_.busy_s[link_class_[l]] +=
          ps_to_seconds(queue_.now() - busy_since_[l]) * (quotient_ ? quotient_->orbit_size[l] : 1);
  }

  // A flow's route, stored inline in route_links_ (route_stride_ links per flow slot) rather than in a vector per
  // flow: recompute() walks the routes of thousands of flows per instant, and this saves a pointer chase each.
  std::span<const LinkId> links_of(std::uint32_t id) const {
    return {route_links_.data() + std::size_t{id} * route_stride_, flows_[id].hops};
  }
  void widen_routes(std::size_t stride) {
    std::vector<LinkId> wider(flows_.size() * stride);
    std::vector<std::int32_t> wider_weights(quotient_ ? wider.size() : 0);
    for (std::size_t id = 0; id < flows_.size(); ++id) {
      const auto from = std::ptrdiff_t(id * route_stride_), to = std::ptrdiff_t(id * stride);
      std::copy_n(route_links_.begin() + from, flows_[id].hops, wider.begin() + to);
      if (quotient_) std::copy_n(route_weights_.begin() + from, flows_[id].hops, wider_weights.begin() + to);
    }
    route_links_.swap(wider);
    route_weights_.swap(wider_weights);
    route_stride_ = stride;
  }
  // Flows on the link, counting each representative as the images it stands for on this link.
  std::int32_t load(LinkId l) const { return quotient_ ? load_[l] : static_cast<std::int32_t>(links_[l].flow_count); }
  // How many images of the flow cross each link of the orbit of its h-th link (1 without a quotient).
  std::int32_t weight(std::uint32_t id, std::uint32_t h) const {
    return quotient_ ? route_weights_[std::size_t{id} * route_stride_ + h] : 1;
  }
  // Replaces a route by its orbits' representatives, each once, with its weight in quotient_weights_.
  void to_quotient(std::vector<LinkId>& links) {
    quotient_weights_.clear();
    std::size_t kept = 0;
    for (LinkId l : links) {
      const LinkId r = quotient_->representative[l];
      COMMSIM_CHECK(r != kNoLinkInQuotient, "a route leaves the links of the symmetry");
      const auto seen = std::find(links.begin(), links.begin() + std::ptrdiff_t(kept), r);
      const std::int32_t images = quotient_->multiplicity / static_cast<std::int32_t>(quotient_->orbit_size[l]);
      if (seen != links.begin() + std::ptrdiff_t(kept)) {
        quotient_weights_[std::size_t(seen - links.begin())] += images;
      } else {
        links[kept++] = r;
        quotient_weights_.push_back(images);
      }
    }
    links.resize(kept);
  }

  // Marks tell gathered links and flows from the others without a pass that clears flags afterwards.
  std::uint32_t next_mark() {
    if (++mark_ == 0) {  // wrapped: clear the old marks once
      for (Flow& f : flows_) f.mark = 0;
      for (LinkState& l : links_) l.component_mark = 0;
      std::fill(part_mark_.begin(), part_mark_.end(), 0);
      mark_ = 1;
    }
    return mark_;
  }

  // A link may be listed twice in an instant; recompute() gathers it once.
  void mark_dirty(LinkId l) {
    dirty_.push_back(l);
    if (!recompute_pending_) {
      recompute_pending_ = true;
      queue_.schedule(queue_.now(), this, payload(kRecompute, 0, 0), 1);
    }
  }

  void finish(std::uint32_t id) {
    Flow& f = flows_[id];
    ++f.version;
    free_.push_back(id);
    f.listener->on_transfer_done(f.tag);
  }

  void recompute() {
    recompute_pending_ = false;
    // Gather the component reachable from the dirty links through shared flows; reset each link's scratch for
    // progressive filling as it joins.
    const std::uint32_t mark = next_mark();
    component_links_.clear();
    component_flows_.clear();
    shared_flows_.clear();
    const auto join = [&](LinkId l) {
      LinkState& link = links_[l];
      if (link.component_mark == mark) return;
      link.component_mark = mark;
      link.capacity_left = link.capacity;
      link.unfrozen = load(l);
      component_links_.push_back(l);
    };
    for (LinkId l : dirty_) join(l);
    dirty_.clear();
    // Progressive filling starts here: a flow alone on every link of its route gets its route's bottleneck, as
    // progressive filling would give it, without the heap (the common case: a collective's flows rarely share links).
    // Its links carry nothing else, so it is frozen as soon as it is gathered.
    for (std::size_t i = 0; i < component_links_.size(); ++i) {
      for (std::uint32_t id : flows_on(component_links_[i])) {
        Flow& f = flows_[id];
        if (f.mark == mark) continue;
        f.mark = mark;
        f.new_rate = -1;
        component_flows_.push_back(id);
        double alone = std::numeric_limits<double>::infinity();
        bool lone = true;
        for (LinkId l : links_of(id)) {
          join(l);
          if (load(l) != 1) lone = false;
          alone = std::min(alone, links_[l].capacity_left);
        }
        if (!lone) {
          shared_flows_.push_back(id);
          continue;
        }
        f.new_rate = snap(alone);
        for (LinkId l : links_of(id)) {
          links_[l].capacity_left -= f.new_rate;  // a lone flow's weight is 1
          --links_[l].unfrozen;
        }
      }
    }
    // The flows left share links. Fill one connected part of them at a time: the component gathered above is the
    // union of every part that the changes of this instant touched (thousands of links when a collective's flows
    // change in step), and a heap per part costs O(log part) per pop instead of O(log union). Parts share no link,
    // so each part sees the same sequence of saturations, and every rate comes out the same, as with one heap over
    // the union. A part starts from a flow that no earlier part froze.
    for (std::uint32_t seed : shared_flows_) {
      if (flows_[seed].new_rate >= 0) continue;
      const std::uint32_t part = next_mark();
      part_links_.clear();
      std::size_t part_flows = 0;
      const auto take = [&](std::uint32_t id) {
        flows_[id].mark = part;
        ++part_flows;
        // Of the links that carry this flow alone, only the one with the smallest (capacity, id) can saturate:
        // the heap pops it before the others (their shares never change), and it freezes the flow if nothing
        // did before. The others would only be popped and dropped, so they stay out of the heap.
        LinkId own = kNoLink;
        for (LinkId l : links_of(id)) {
          if (load(l) == 1) {
            if (own == kNoLink || links_[l].capacity < links_[own].capacity ||
                (links_[l].capacity == links_[own].capacity && l < own))
              own = l;
          } else if (part_mark_[l] != part) {
            part_mark_[l] = part;
            part_links_.push_back(l);
          }
        }
        if (own != kNoLink) part_links_.push_back(own);
      };
      take(seed);
      for (std::size_t i = 0; i < part_links_.size(); ++i)
        for (std::uint32_t id : flows_on(part_links_[i]))
          if (flows_[id].new_rate < 0 && flows_[id].mark != part) take(id);  // neither frozen nor in the part yet
      fill(part_flows);
    }
    const TimePs now = queue_.now();
    for (std::uint32_t id : component_flows_) {
      Flow& f = flows_[id];
      if (f.new_rate == f.rate) continue;  // unchanged: its completion event stands, exactly
      f.remaining -= f.rate * ps_to_seconds(now - f.last_update);
      f.last_update = now;
      f.rate = f.new_rate;
      ++f.version;
      queue_.schedule(add_ps(now, transfer_ps(f.remaining, f.rate)), this,
                      payload(kComplete, id, f.version & 0x3fffffffu));
    }
  }

  // Progressive filling over the part in part_links_ (every link of it has an unfrozen flow; part_flows of them):
  // repeatedly saturate the link with the smallest fair share. A min-heap of links by fair share; a link's share only
  // grows as flows elsewhere freeze (max-min), so an entry whose share has grown since it was pushed is pushed again
  // with the new value instead of being used.
  void fill(std::size_t part_flows) {
    heap_.clear();
    const auto later = [](const std::pair<double, LinkId>& a, const std::pair<double, LinkId>& b) {
      return a.first > b.first || (a.first == b.first && a.second > b.second);
    };
    for (LinkId l : part_links_) heap_.push_back({links_[l].capacity_left / links_[l].unfrozen, l});
    std::make_heap(heap_.begin(), heap_.end(), later);
    std::size_t frozen = 0;
    while (frozen < part_flows) {
      COMMSIM_CHECK(!heap_.empty(), "unfrozen flow without a link");
      std::pop_heap(heap_.begin(), heap_.end(), later);
      auto [share, bottleneck] = heap_.back();
      heap_.pop_back();
      const LinkState& link = links_[bottleneck];
      if (link.unfrozen == 0) continue;
      const double current = link.capacity_left / link.unfrozen;
      if (current > share * (1 + 1e-12)) {
        heap_.push_back({current, bottleneck});
        std::push_heap(heap_.begin(), heap_.end(), later);
        continue;
      }
      for (std::uint32_t id : flows_on(bottleneck)) {
        double& rate = flows_[id].new_rate;
        if (rate >= 0) continue;
        rate = snap(std::max(current, 0.0));
        ++frozen;
        for (std::uint32_t h = 0; h < flows_[id].hops; ++h) {
          const std::int32_t w = weight(id, h);
          LinkState& l = links_[links_of(id)[h]];
          l.capacity_left -= w == 1 ? rate : rate * w;  // the images' share of the link
          l.unfrozen -= w;
        }
      }
    }
  }

  const Topology& topology_;
  EventQueue& queue_;
  const LinkQuotient* quotient_;
  std::vector<std::int32_t> load_;              // with a quotient: load(l)
  std::vector<std::int32_t> route_weights_;     // with a quotient: weight of route_links_'s entry
  std::vector<std::int32_t> quotient_weights_;  // scratch of to_quotient()
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_;
  std::vector<LinkId> route_links_;  // route of flow id at [id * route_stride_, + hops)
  std::size_t route_stride_ = 0;
  Route route_;                           // scratch for Topology::route
  std::vector<CachedRoute> route_cache_;  // per source rank
  std::vector<LinkState> links_;
  // Read only when a link turns busy or idle, when its flows are counted, or when flows share it.
  std::vector<std::uint8_t> link_class_;
  std::vector<TimePs> busy_since_;
  std::vector<std::uint32_t> part_mark_;  // scratch: == the part's mark when gathered into it
  std::vector<std::vector<std::uint32_t>> spilled_flows_;
  std::vector<LinkId> dirty_;
  std::vector<LinkId> component_links_;
  std::vector<std::uint32_t> component_flows_;
  std::vector<std::uint32_t> shared_flows_;  // flows of the component that share a link
  std::vector<LinkId> part_links_;
  std::vector<std::pair<double, LinkId>> heap_;
  std::uint32_t mark_ = 0;
  bool recompute_pending_ = false;
  LinkUsage usage_;
};

}  // namespace

std::unique_ptr<NetworkModel> make_quotient_flow_network(const Topology& topology, EventQueue& queue,
                                                         const LinkQuotient& quotient) {
  return std::make_unique<FlowNetwork>(topology, queue, &quotient);
}

std::unique_ptr<NetworkModel> make_network(Fidelity fidelity, const Topology& topology, EventQueue& queue) {
  check_network_size(fidelity, topology);
  if (fidelity == Fidelity::Flow) return std::make_unique<FlowNetwork>(topology, queue);
  return make_analytical_network(topology, queue);
}

}  // namespace commsim
