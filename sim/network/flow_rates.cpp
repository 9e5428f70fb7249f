// Max-min fair rates of the flows an instant's changes can affect (progressive filling, per connected part), and
// their new completion events.
#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/network/flow_network.hpp"

namespace commsim::flow_detail {

// The pieces of recompute() are inline: each is called from one place in this file, on every instant.

void FlowNetwork::recompute() {
  recompute_pending_ = false;
  gather_component();
  fill_shared_parts();
  apply_new_rates();
}

inline void FlowNetwork::gather_component() {
  const std::uint32_t mark = next_mark();
  component_links_.clear();
  component_flows_.clear();
  shared_flows_.clear();
  // The dirty links in order, as seeds: a link that carries one flow now stands for that flow (all it would yield),
  // without joining the component (gather_flow would not join it either), a link left with no flow has nothing to
  // re-solve, and a shared link joins. Flows are then found in the order a walk over the joined links would find them.
  dirty_seeds_.clear();
  for (LinkId l : dirty_) {
    const LinkState& link = links_[l];
    if (link.flow_count == 1) {
      dirty_seeds_.push_back(kFlowSeed | link.only_flow);
    } else if (link.flow_count > 1 && join(l, mark)) {
      dirty_seeds_.push_back(l);
    }
  }
  dirty_.clear();
  const std::size_t joined_from_dirty = component_links_.size();
  for (std::uint64_t seed : dirty_seeds_) {
    if (seed & kFlowSeed) {
      visit_flow(static_cast<std::uint32_t>(seed), mark);
    } else {
      for (std::uint32_t id : flows_on(static_cast<LinkId>(seed))) visit_flow(id, mark);
    }
  }
  for (std::size_t i = joined_from_dirty; i < component_links_.size(); ++i)
    for (std::uint32_t id : flows_on(component_links_[i])) visit_flow(id, mark);
}

inline void FlowNetwork::visit_flow(std::uint32_t id, std::uint32_t mark) {
  Flow& f = flows_[id];
  if (f.mark == mark) return;
  f.mark = mark;
  f.new_rate = -1;
  component_flows_.push_back(id);
  if (gather_flow(id, mark)) {
    shared_flows_.push_back(id);
    return;
  }
  // Alone on every link of its route: no other flow reads those links' scratch, so it is left as it is.
  f.new_rate = snap(links_[f.own_link].capacity);
}

inline bool FlowNetwork::join(LinkId l, std::uint32_t mark) {
  if (component_mark_[l] == mark) return false;
  component_mark_[l] = mark;
  reset_scratch(l);
  component_links_.push_back(l);
  return true;
}

inline bool FlowNetwork::gather_flow(std::uint32_t id, std::uint32_t mark) {
  LinkId own = kNoLink;
  bool shares = false;
  for (LinkId l : links_of(id)) {
    if (links_[l].flow_count != 1) join(l, mark);
    if (load(l) != 1) {
      shares = true;
    } else if (own == kNoLink || links_[l].capacity < links_[own].capacity ||
               (links_[l].capacity == links_[own].capacity && l < own)) {
      own = l;
    }
  }
  flows_[id].own_link = own;
  return shares;
}

inline void FlowNetwork::fill_shared_parts() {
  for (std::uint32_t seed : shared_flows_) {
    if (flows_[seed].new_rate >= 0) continue;
    const std::uint32_t part = next_mark();
    part_links_.clear();
    std::size_t part_flows = 0;
    take_into_part(seed, part, part_flows);
    for (std::size_t i = 0; i < part_links_.size(); ++i)
      for (std::uint32_t id : flows_on(part_links_[i]))
        if (flows_[id].new_rate < 0 && flows_[id].mark != part) take_into_part(id, part, part_flows);
    fill(part_flows);
  }
}

inline void FlowNetwork::take_into_part(std::uint32_t id, std::uint32_t part, std::size_t& part_flows) {
  flows_[id].mark = part;
  ++part_flows;
  for (LinkId l : links_of(id)) {
    if (links_[l].flow_count == 1) reset_scratch(l);  // it carries this flow alone: reset once, here
    if (load(l) != 1 && part_mark_[l] != part) {
      part_mark_[l] = part;
      part_links_.push_back(l);
    }
  }
  if (flows_[id].own_link != kNoLink) part_links_.push_back(flows_[id].own_link);
}

inline void FlowNetwork::apply_new_rates() {
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

inline void FlowNetwork::fill(std::size_t part_flows) {
  heap_.clear();
  for (LinkId l : part_links_) heap_.push_back({links_[l].capacity_left / links_[l].unfrozen, l});
  // A part of a few links keeps its entries unordered and takes the smallest by a scan: each link has at most one
  // entry and (share, link) orders them strictly, so the scan takes them in exactly the heap's order.
  const bool scan = heap_.size() <= kScannedPartLinks;
  if (!scan) std::make_heap(heap_.begin(), heap_.end(), later_entry);
  std::size_t frozen = 0;
  while (frozen < part_flows) {
    COMMSIM_CHECK(!heap_.empty(), "unfrozen flow without a link");
    const auto [share, bottleneck] = scan ? take_smallest_entry() : take_heap_top();
    const LinkState& link = links_[bottleneck];
    if (link.unfrozen == 0) continue;
    const double current = link.capacity_left / link.unfrozen;
    if (current > share * (1 + 1e-12)) {
      heap_.push_back({current, bottleneck});
      if (!scan) std::push_heap(heap_.begin(), heap_.end(), later_entry);
      continue;
    }
    frozen += freeze_flows_on(bottleneck, snap(std::max(current, 0.0)));
  }
}

inline auto FlowNetwork::take_smallest_entry() -> ShareEntry {
  std::size_t smallest = 0;
  for (std::size_t i = 1; i < heap_.size(); ++i)
    if (later_entry(heap_[smallest], heap_[i])) smallest = i;
  const ShareEntry top = heap_[smallest];
  heap_[smallest] = heap_.back();
  heap_.pop_back();
  return top;
}

inline auto FlowNetwork::take_heap_top() -> ShareEntry {
  std::pop_heap(heap_.begin(), heap_.end(), later_entry);
  const ShareEntry top = heap_.back();
  heap_.pop_back();
  return top;
}

inline std::size_t FlowNetwork::freeze_flows_on(LinkId bottleneck, double rate) {
  std::size_t frozen = 0;
  for (std::uint32_t id : flows_on(bottleneck)) {
    if (flows_[id].new_rate >= 0) continue;
    flows_[id].new_rate = rate;
    ++frozen;
    for (std::uint32_t h = 0; h < flows_[id].hops; ++h) {
      const std::int32_t w = weight(id, h);
      LinkState& l = links_[links_of(id)[h]];
      l.capacity_left -= w == 1 ? rate : rate * w;  // the images' share of the link
      l.unfrozen -= w;
    }
  }
  return frozen;
}

}  // namespace commsim::flow_detail
