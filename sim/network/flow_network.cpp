// The flow network's events: flows start on their routes, enter their links after the path latency, and leave them
// when delivered; every change marks its links for the recompute of that instant (flow_rates.cpp).
#include "sim/network/flow_network.hpp"

#include <algorithm>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"

namespace commsim {
namespace flow_detail {

// The link bookkeeping is inline: called from this file only, on every flow's every link.

FlowNetwork::FlowNetwork(const Topology& topology, EventQueue& queue, const LinkQuotient* quotient,
                         std::size_t dead_completions_kept)
    : topology_(topology), queue_(queue), quotient_(quotient), dead_completions_kept_(dead_completions_kept) {
  const std::size_t link_count = topology.link_count();
  links_.resize(link_count);
  records_.resize(link_count);
  spilled_flows_.resize(link_count);
  last_route_.resize(static_cast<std::size_t>(topology.ranks()));
  // Each link's capacity and class, read once: Topology::link() computes them from the id (a division per call).
  for (std::size_t l = 0; l < link_count; ++l) {
    const LinkParams& p = topology.link(static_cast<LinkId>(l));
    links_[l].capacity = p.effective_Bps();
    records_[l].link_class = static_cast<std::uint8_t>(p.link_class);
    if (quotient) records_[l].orbit_size = quotient->orbit_size[l];
    if (p.burst_bytes > 0) {  // the bucket starts full, as tbf's does
      COMMSIM_CHECK(!quotient, "a token-bucket link in a symmetry's quotient");
      buckets_.push_back({static_cast<LinkId>(l), p.burst_bytes, p.effective_Bps(), p.burst_Bps, p.burst_bytes});
      links_[l].capacity = p.burst_Bps;
    }
  }
}

void FlowNetwork::start(int src, int dst, double bytes, TransferListener* listener, std::uint64_t tag,
                        std::uint32_t copies) {
  const InternedRoute& route = route_from(src, dst,
                                          !quotient_   ? 1
                                          : copies > 0 ? std::int64_t{copies}
                                                       : quotient_->multiplicity);
  std::uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.route = route.offset;
  f.remaining = bytes;
  f.rate = 0;
  f.listener = listener;
  f.tag = tag;
  f.last_update = add_ps(queue_.now(), route.latency_ps);  // when it enters (reset then)
  ++f.version;
  // Every link of an orbit carries weight images of the flow: weight x orbit size crossings in all.
  const std::span<const LinkId> links = links_of(id);
  for (std::uint32_t h = 0; h < links.size(); ++h) {
    const LinkId l = links[h];
    const LinkRecord& record = records_[l];
    usage_.bytes[record.link_class] += quotient_ ? bytes * weight(id, h) * record.orbit_size : bytes;
  }
  queue_.schedule(f.last_update, this, payload(kEnter, id, f.version));
}

bool FlowNetwork::steady_state(const TransferListener* listener, std::vector<double>& state) const {
  if (!buckets_.empty()) return false;  // a bucket's tokens are state of their own
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_tag;
  for (std::uint32_t id = 0; id < flows_.size(); ++id)
    if (flows_[id].listener == listener) by_tag.emplace_back(flows_[id].tag, id);
  std::sort(by_tag.begin(), by_tag.end());
  const TimePs now = queue_.now();
  for (const auto& [tag, id] : by_tag) {
    const Flow& f = flows_[id];
    state.insert(state.end(),
                 {static_cast<double>(tag), static_cast<double>(f.last_update - now), f.remaining, f.rate});
  }
  // The order of a shared link's flows is the order progressive filling visits them in.
  for (LinkId l = 0; l < links_.size(); ++l) {
    if (links_[l].flow_count < 2) continue;
    state.insert(state.end(), {-1.0, static_cast<double>(l)});
    for (std::uint32_t id : flows_on(l)) state.push_back(static_cast<double>(flows_[id].tag));
  }
  return true;
}

void FlowNetwork::skip_periods(TimePs period_start, TimePs shift, const LinkUsage& per_period, std::uint64_t periods) {
  const auto times = static_cast<double>(periods);
  for (int c = 0; c < kLinkClassCount; ++c) {
    usage_.busy_s[c] += per_period.busy_s[c] * times;
    usage_.bytes[c] += per_period.bytes[c] * times;
  }
  // A link busy since before the period stays busy through the skipped ones: its spell, from the same start to an end
  // that comes `shift` later, already counts them. A spell that began in the period stands for the one that begins
  // `shift` later (its predecessors ended within their periods, counted in per_period).
  for (LinkId l = 0; l < links_.size(); ++l)
    if (links_[l].flow_count > 0 && records_[l].busy_since > period_start) records_[l].busy_since += shift;
  for (Flow& f : flows_)
    if (f.listener != nullptr) f.last_update += shift;
}

// A flow standing for `copies` flows whose route crosses n links of an orbit of k: each link of the orbit carries
// copies x n / k of them (a whole number, since the copies cross the orbit's links evenly).
auto FlowNetwork::intern_route(int src, int dst, std::int64_t copies) -> InternedRoute {
  const auto [it, inserted] = route_index_.try_emplace({src, dst, copies});
  if (!inserted) return it->second;
  route_.links.clear();
  topology_.route(src, dst, route_);
  if (quotient_) to_quotient(route_.links);
  InternedRoute& interned = it->second;
  interned.offset = static_cast<std::uint32_t>(route_pool_.size());
  interned.latency_ps = seconds_to_ps(route_.cost.latency_s, "path latency");
  route_pool_.push_back(static_cast<LinkId>(route_.links.size()));
  route_pool_.insert(route_pool_.end(), route_.links.begin(), route_.links.end());
  if (quotient_) {
    route_weights_.resize(route_pool_.size());
    for (std::size_t h = 0; h < route_.links.size(); ++h) {
      const std::int64_t crossings = copies * quotient_hops_[h], orbit = quotient_->orbit_size[route_.links[h]];
      COMMSIM_CHECK(crossings % orbit == 0, "flows that do not cross their links' orbit evenly");
      route_weights_[interned.offset + 1 + h] = static_cast<std::int32_t>(crossings / orbit);
    }
  }
  COMMSIM_CHECK(route_pool_.size() <= std::numeric_limits<std::uint32_t>::max(), "too many distinct routes");
  return interned;
}

void FlowNetwork::on_event(std::uint64_t p) {
  const auto kind = static_cast<EventKind>(p & 3);
  const auto id = static_cast<std::uint32_t>((p >> 2) & 0xffffffffu);
  const auto version = static_cast<std::uint32_t>(p >> 34);
  if (kind == kRecompute) return recompute();
  if (kind == kBucketEmpty) {  // id: the bucket; a later rate change may have moved the instant
    TokenBucket& b = buckets_[id];
    if ((b.version & 0x3fffffffu) != version) return;
    advance(b, queue_.now());
    // This is the instant the bucket ran down to one frame: the picosecond's rounding may leave a hair more.
    b.tokens_bytes = std::min(b.tokens_bytes, kFrameBytes);
    return mark_dirty({&b.link, 1});
  }
  Flow& f = flows_[id];
  if ((f.version & 0x3fffffffu) != version) {  // superseded completion (the rate changed since)
    --dead_completions_;
    return;
  }
  if (kind == kEnter) {
    f.last_update = queue_.now();
    if (f.remaining <= 0) return finish(id);
    const std::span<const LinkId> links = links_of(id);
    for (std::uint32_t h = 0; h < links.size(); ++h) add_flow(links[h], id, weight(id, h));
    mark_dirty(links);
    f.rate = 0;  // set by the recompute of this instant
    return;
  }
  const std::span<const LinkId> links = links_of(id);
  for (std::uint32_t h = 0; h < links.size(); ++h) remove_flow(links[h], id, weight(id, h));
  mark_dirty(links);
  finish(id);
}

inline void FlowNetwork::add_flow(LinkId l, std::uint32_t id, std::int32_t weight) {
  LinkState& link = links_[l];
  link.load += weight;
  if (link.flow_count == 0) {
    link.only_flow = id;
    records_[l].busy_since = queue_.now();
  } else {
    std::vector<std::uint32_t>& spilled = spilled_flows_[l];
    if (link.flow_count == 1) spilled.assign(1, link.only_flow);
    spilled.push_back(id);
  }
  ++link.flow_count;
}

inline void FlowNetwork::remove_flow(LinkId l, std::uint32_t id, std::int32_t weight) {
  LinkState& link = links_[l];
  link.load -= weight;
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
  if (--link.flow_count == 0) {
    const LinkRecord& record = records_[l];
    usage_.busy_s[record.link_class] += ps_to_seconds(queue_.now() - record.busy_since) * record.orbit_size;
  }
}

inline void FlowNetwork::to_quotient(std::vector<LinkId>& links) {
  quotient_hops_.clear();
  std::size_t kept = 0;
  for (LinkId l : links) {
    const LinkId r = quotient_->representative[l];
    COMMSIM_CHECK(r != kNoLinkInQuotient, "a route leaves the links of the symmetry");
    const auto seen = std::find(links.begin(), links.begin() + std::ptrdiff_t(kept), r);
    if (seen != links.begin() + std::ptrdiff_t(kept)) {
      ++quotient_hops_[std::size_t(seen - links.begin())];
    } else {
      links[kept++] = r;
      quotient_hops_.push_back(1);
    }
  }
  links.resize(kept);
}

inline void FlowNetwork::finish(std::uint32_t id) {
  Flow& f = flows_[id];
  ++f.version;
  free_.push_back(id);
  TransferListener* listener = std::exchange(f.listener, nullptr);
  const std::uint64_t tag = f.tag;  // f may move: the listener can start flows
  listener->on_transfer_done(tag);
}

inline void FlowNetwork::mark_dirty(std::span<const LinkId> links) {
  if (links.empty()) return;  // a route of no link changes no rate
  dirty_.insert(dirty_.end(), links.begin(), links.end());
  if (!recompute_pending_) {
    recompute_pending_ = true;
    queue_.schedule(queue_.now(), this, payload(kRecompute, 0, 0), 1);
  }
}

}  // namespace flow_detail

using flow_detail::FlowNetwork;

std::unique_ptr<NetworkModel> make_quotient_flow_network(const Topology& topology, EventQueue& queue,
                                                         const LinkQuotient& quotient) {
  return std::make_unique<FlowNetwork>(topology, queue, &quotient);
}

std::unique_ptr<NetworkModel> make_flow_network(const Topology& topology, EventQueue& queue) {
  check_network_size(Fidelity::Flow, topology);
  return std::make_unique<FlowNetwork>(topology, queue);
}

}  // namespace commsim
