// Max-min fair rates of the flows an instant's changes can affect (progressive filling, per connected part), and
// their new completion events.
#include <algorithm>
#include <limits>

#include "sim/core/error.hpp"
#include "sim/network/flow_network.hpp"

namespace commsim::flow_detail {

// The pieces of recompute() are inline: each is called from one place in this file, on every instant.

void FlowNetwork::recompute() {
  recompute_pending_ = false;
  if (!buckets_.empty()) refill_buckets();
  const std::uint32_t mark = next_mark();
  solved_flows_.clear();
  // The flows on each link that a flow entered or left, in the order of the changes, seed the parts.
  for (LinkId l : dirty_)
    for (std::uint32_t id : flows_on(l))
      if (flows_[id].mark != mark) solve_part(id, mark);
  dirty_.clear();
  apply_new_rates();
  if (!buckets_.empty()) schedule_bucket_events();
}

void FlowNetwork::advance(TokenBucket& b, TimePs now) {
  const double elapsed_s = ps_to_seconds(now - b.updated);
  b.tokens_bytes = std::clamp(b.tokens_bytes + (b.sustained_Bps - b.carried_Bps) * elapsed_s, 0.0, b.depth_bytes);
  b.updated = now;
}

void FlowNetwork::refill_buckets() {
  const TimePs now = queue_.now();
  for (TokenBucket& b : buckets_) {
    advance(b, now);
    const double capacity = b.tokens_bytes > kFrameBytes ? b.burst_Bps : b.sustained_Bps;
    if (links_[b.link].capacity == capacity) continue;
    links_[b.link].capacity = capacity;
    dirty_.push_back(b.link);
  }
}

void FlowNetwork::schedule_bucket_events() {
  const TimePs now = queue_.now();
  for (std::uint32_t i = 0; i < buckets_.size(); ++i) {
    TokenBucket& b = buckets_[i];
    double carried_Bps = 0;
    for (std::uint32_t id : flows_on(b.link)) carried_Bps += flows_[id].rate;
    if (carried_Bps == b.carried_Bps) continue;  // the pending event, if any, still holds
    b.carried_Bps = carried_Bps;
    ++b.version;
    if (carried_Bps <= b.sustained_Bps || b.tokens_bytes <= kFrameBytes) continue;
    // At burst_Bps until a frame's tokens are left. Flows held just above the sustained rate elsewhere may drain a
    // bucket so slowly that it lasts past the end of simulated time: then it never runs down, and no event is due.
    const double drain_s = (b.tokens_bytes - kFrameBytes) / (carried_Bps - b.sustained_Bps);
    if (drain_s < kMaxSimulatedSeconds - ps_to_seconds(now) - 1)
      queue_.schedule(add_ps(now, transfer_ps(b.tokens_bytes - kFrameBytes, carried_Bps - b.sustained_Bps)), this,
                      payload(kBucketEmpty, i, b.version & 0x3fffffffu));
  }
}

inline void FlowNetwork::solve_part(std::uint32_t seed, std::uint32_t mark) {
  part_links_.clear();
  std::size_t part_flows = 0;
  if (!take_into_part(seed, mark, part_flows)) {
    // Alone on every link of its route: progressive filling would give it its own link's capacity.
    flows_[seed].new_rate = snap(links_[flows_[seed].own_link].capacity);
    return;
  }
  for (std::size_t i = 0; i < part_links_.size(); ++i)
    for (std::uint32_t id : flows_on(part_links_[i]))
      if (flows_[id].mark != mark) take_into_part(id, mark, part_flows);
  fill(part_flows);
}

inline bool FlowNetwork::take_into_part(std::uint32_t id, std::uint32_t mark, std::size_t& part_flows) {
  Flow& f = flows_[id];
  f.mark = mark;
  f.new_rate = -1;
  solved_flows_.push_back(id);
  ++part_flows;
  LinkId own = kNoLink;
  double own_capacity = std::numeric_limits<double>::infinity();
  bool shares = false;
  for (LinkId l : links_of(id)) {
    const LinkState& link = links_[l];
    if (link.load != 1) {
      shares = true;
      if (records_[l].part_mark != mark) {
        records_[l].part_mark = mark;
        reset_scratch(l);
        part_links_.push_back(l);
      }
      continue;
    }
    if (link.capacity < own_capacity || (link.capacity == own_capacity && l < own)) {
      own = l;
      own_capacity = link.capacity;
    }
  }
  f.own_link = own;
  if (shares && own != kNoLink) {
    reset_scratch(own);
    part_links_.push_back(own);
  }
  return shares;
}

inline void FlowNetwork::apply_new_rates() {
  const TimePs now = queue_.now();
  for (std::uint32_t id : solved_flows_) {
    Flow& f = flows_[id];
    if (f.new_rate == f.rate) continue;   // unchanged: its completion event stands, exactly
    if (f.rate > 0) ++dead_completions_;  // it had a completion event: superseded now
    f.remaining -= f.rate * ps_to_seconds(now - f.last_update);
    f.last_update = now;
    f.rate = f.new_rate;
    ++f.version;
    queue_.schedule(add_ps(now, transfer_ps(f.remaining, f.rate)), this,
                    payload(kComplete, id, f.version & 0x3fffffffu));
  }
  // Where many flows share links, each instant supersedes the completions of all of them: drop the dead ones once
  // they outnumber the flows (amortised O(1) per event) instead of letting the queue grow with every instant.
  const std::size_t flows = flows_.size() - free_.size();
  if (dead_completions_ > dead_completions_kept_ && dead_completions_ > 2 * flows) {
    queue_.drop([this](const EventHandler* handler, std::uint64_t p) {
      return handler == this && (p & 3) == kComplete &&
             (flows_[(p >> 2) & 0xffffffffu].version & 0x3fffffffu) != (p >> 34);
    });
    dead_completions_ = 0;
  }
}

inline void FlowNetwork::fill(std::size_t part_flows) {
  heap_.resize(part_links_.size());
  for (std::size_t i = 0; i < part_links_.size(); ++i) {
    const LinkState& link = links_[part_links_[i]];
    heap_[i] = {link.capacity_left / link.unfrozen, part_links_[i], link.unfrozen};
  }
  std::size_t frozen = 0;
  if (heap_.size() > kScannedPartLinks) {
    std::make_heap(heap_.begin(), heap_.end(), later_entry);
    while (frozen < part_flows) {
      COMMSIM_CHECK(!heap_.empty(), "unfrozen flow without a link");
      std::pop_heap(heap_.begin(), heap_.end(), later_entry);
      const ShareEntry top = heap_.back();
      heap_.pop_back();
      const double current = current_share(top);
      if (current > top.share * (1 + 1e-12)) {
        heap_.push_back({current, top.link, links_[top.link].unfrozen});
        std::push_heap(heap_.begin(), heap_.end(), later_entry);
      } else if (current != kNoShare) {
        frozen += freeze_flows_on(top.link, snap(std::max(current, 0.0)));
      }
    }
    return;
  }
  // A part of a few links keeps its entries unordered and takes the smallest by a scan: each link has at most one
  // entry and (share, link) orders them strictly, so the scan takes them in exactly the heap's order, and an entry
  // whose share grew is updated where it is.
  while (frozen < part_flows) {
    COMMSIM_CHECK(!heap_.empty(), "unfrozen flow without a link");
    std::size_t smallest = 0;
    for (std::size_t i = 1; i < heap_.size(); ++i)
      if (later_entry(heap_[smallest], heap_[i])) smallest = i;
    ShareEntry& entry = heap_[smallest];
    const double current = current_share(entry);
    if (current > entry.share * (1 + 1e-12)) {
      entry = {current, entry.link, links_[entry.link].unfrozen};
      continue;
    }
    const LinkId bottleneck = entry.link;
    entry = heap_.back();
    heap_.pop_back();
    if (current != kNoShare) frozen += freeze_flows_on(bottleneck, snap(std::max(current, 0.0)));
  }
}

inline double FlowNetwork::current_share(const ShareEntry& entry) const {
  const LinkState& link = links_[entry.link];
  if (link.unfrozen == 0) return kNoShare;
  return link.unfrozen == entry.unfrozen ? entry.share : link.capacity_left / link.unfrozen;
}

inline std::size_t FlowNetwork::freeze_flows_on(LinkId bottleneck, double rate) {
  std::size_t frozen = 0;
  for (std::uint32_t id : flows_on(bottleneck)) {
    if (flows_[id].new_rate >= 0) continue;
    flows_[id].new_rate = rate;
    ++frozen;
    // Only its shared links and its own link are read again; the others carry it alone and stay out of the heap.
    const std::span<const LinkId> links = links_of(id);
    for (std::uint32_t h = 0; h < links.size(); ++h) {
      LinkState& l = links_[links[h]];
      if (l.load == 1) continue;
      const std::int32_t w = weight(id, h);
      l.capacity_left -= w == 1 ? rate : rate * w;  // the images' share of the link
      l.unfrozen -= w;
    }
    if (flows_[id].own_link != kNoLink) links_[flows_[id].own_link].unfrozen = 0;
  }
  return frozen;
}

}  // namespace commsim::flow_detail
