#include "sim/engine/ring_run.hpp"

#include <algorithm>

#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/representatives.hpp"
#include "sim/core/error.hpp"

namespace commsim {

RingRun::RingRun(const CollectiveSpec& spec, const Topology& topology, int positions, NetworkModel& network,
                 EventQueue& queue, bool fast_forward, int channel)
    : network_(network), queue_(queue) {
  COMMSIM_CHECK(spec.algorithm == Algorithm::Ring && !spec.aggregate &&
                    (spec.op == Collective::AllReduce || spec.op == Collective::ReduceScatter ||
                     spec.op == Collective::AllGather),
                "ring run of a ring allreduce, reduce-scatter or allgather only");
  COMMSIM_CHECK(channel >= 0 && channel < spec.channels, "ring run of a channel the spec does not have");
  order_ = ring_channel_orders(spec, topology)[static_cast<std::size_t>(channel)];
  p_ = static_cast<std::uint32_t>(order_.size());
  COMMSIM_CHECK(p_ >= 2 && positions >= 1 && static_cast<std::uint32_t>(positions) <= p_, "ring run positions");
  n_ = static_cast<std::uint32_t>(positions);
  bytes_ =
      schedule_parts::piece(spec.bytes, static_cast<std::uint64_t>(spec.channels), static_cast<std::uint64_t>(channel));
  chunks_ = static_cast<std::uint32_t>(schedule_parts::default_chunks(spec, false, bytes_));
  reduce_scatter_ = spec.op != Collective::AllGather;
  const bool all_gather = spec.op != Collective::ReduceScatter;
  steps_ = (reduce_scatter_ ? p_ - 1 : 0) + (all_gather ? p_ - 1 : 0);
  first_step_ = reduce_scatter_ ? 0 : p_ - 1;
  reduce_Bps_ = spec.reduce_Bps;
  if (bytes_ % p_ == 0 && bytes_ / p_ % chunks_ == 0) uniform_piece_bytes_ = bytes_ / p_ / chunks_;
  next_.assign(n_, 0);
  received_.assign(n_, 0);
  received_early_.assign(n_, {});
  sending_.assign(n_, 0);
  const std::uint64_t reduces = reduce_scatter_ && reduce_Bps_ > 0 ? std::uint64_t{n_} * (p_ - 1) * chunks_ : 0;
  remaining_ = transfers() + reduces;
  fast_forward_ = fast_forward && uniform_piece_bytes_ >= 0;
  if (fast_forward_) {
    last_issue_at_.assign(n_, 0);
    pending_reduces_.assign(n_, {});
    start_watching();
  }
}

void RingRun::start_watching() {
  intervals_.assign(std::size_t{n_} * kMaxPeriodPieces, -1);
  repeated_issues_.fill(0);
  checks_left_ = kSteadyStateChecks;
  checked_.clear();
}

std::uint32_t RingRun::kind_last_piece(std::uint32_t piece) const {
  const bool reduce_kinds = reduce_scatter_ && reduce_Bps_ > 0;
  return reduce_kinds && piece / chunks_ < p_ - 1 ? (p_ - 1) * chunks_ - 1 : steps_ * chunks_ - 1;
}

void RingRun::start() {
  // Every position's first transfer waits for nothing (ScheduleRun::start issues them in id order).
  for (std::uint32_t i = 0; i < n_; ++i) try_issue(i);
}

Bytes RingRun::piece_bytes(std::uint32_t i, std::uint32_t piece) const {
  if (uniform_piece_bytes_ >= 0) return static_cast<Bytes>(uniform_piece_bytes_);
  const std::int64_t step = piece / chunks_, p = p_;
  const std::uint64_t block = schedule_parts::ring_block(i, step, first_step_, p);
  return schedule_parts::piece(schedule_parts::piece(bytes_, p_, block), chunks_, piece % chunks_);
}

void RingRun::try_issue(std::uint32_t i) {
  const std::uint32_t piece = next_[i];
  if (sending_[i] || piece >= steps_ * chunks_) return;
  // After step 0 it forwards what it received: piece (s - 1, k).
  if (piece >= chunks_ && !has_received(i, piece - chunks_)) return;
  issue(i);
}

void RingRun::issue(std::uint32_t i) {
  const std::uint32_t piece = next_[i]++;
  sending_[i] = 1;
  if (fast_forward_) note_issue(i);
  network_.start(order_[i], order_[(i + 1) % p_], static_cast<double>(piece_bytes(i, piece)), this, i);
}

void RingRun::on_transfer_done(std::uint64_t position) {
  const auto i = static_cast<std::uint32_t>(position);
  const std::uint32_t piece = next_[i] - 1, step = piece / chunks_, j = (i + 1) % n_;
  sending_[i] = 0;
  if (reduce_scatter_ && step < p_ - 1 && reduce_Bps_ > 0) {
    // Its reduce comes first (its id follows the transfer's), then position i's next transfer.
    const TimePs due = add_ps(queue_.now(), transfer_ps(static_cast<double>(piece_bytes(i, piece)), reduce_Bps_));
    queue_.schedule(due, this, (std::uint64_t{piece} << 32) | j);
    if (!pending_reduces_.empty()) pending_reduces_[j].push_back({due, piece});
    try_issue(i);
  } else {
    deliver(j, piece);
    // Dependents in id order, (step, position, chunk): position i's next transfer comes first unless it belongs to
    // the next step and the receiver's (the next step's) has a smaller position (the ring wraps at n).
    const bool receiver_first = (piece + 1) % chunks_ == 0 && j < i;
    if (receiver_first) try_issue(j);
    try_issue(i);
    if (!receiver_first) try_issue(j);
  }
  finish_one();
}

void RingRun::on_event(std::uint64_t reduce) {
  if (reduce == kSteadyStateCheck) return check_steady_state();
  const auto j = static_cast<std::uint32_t>(reduce & 0xffffffffu);
  auto piece = static_cast<std::uint32_t>(reduce >> 32);
  if (!pending_reduces_.empty()) {
    // The list says which piece: a skip renumbers the pieces, not the payloads already queued. Reductions due at one
    // instant run in the order scheduled, the list's.
    std::vector<PendingReduce>& pending = pending_reduces_[j];
    const auto it =
        std::find_if(pending.begin(), pending.end(), [&](const PendingReduce& r) { return r.due == queue_.now(); });
    COMMSIM_CHECK(it != pending.end(), "a reduction finished that was not pending");
    piece = it->piece;
    pending.erase(it);
  }
  deliver(j, piece);
  try_issue(j);
  finish_one();
}

bool RingRun::received_early(std::uint32_t i, std::uint32_t piece) const {
  const std::vector<std::uint32_t>& early = received_early_[i];
  return std::find(early.begin(), early.end(), piece) != early.end();
}

void RingRun::deliver(std::uint32_t j, std::uint32_t piece) {
  if (piece != received_[j]) {
    received_early_[j].push_back(piece);
    return;
  }
  ++received_[j];
  // Pieces that arrived early now extend the prefix.
  std::vector<std::uint32_t>& early = received_early_[j];
  while (!early.empty()) {
    const auto it = std::find(early.begin(), early.end(), received_[j]);
    if (it == early.end()) break;
    *it = early.back();
    early.pop_back();
    ++received_[j];
  }
}

void RingRun::note_issue(std::uint32_t i) {
  const std::uint32_t piece = next_[i] - 1;
  const TimePs now = queue_.now(), interval = now - last_issue_at_[i];
  last_issue_at_[i] = now;
  TimePs* history = &intervals_[std::size_t{i} * kMaxPeriodPieces];
  bool check = false;
  for (std::uint32_t q = 1; q <= kMaxPeriodPieces; ++q) {
    const bool repeats = history[(piece + kMaxPeriodPieces - q) % kMaxPeriodPieces] == interval;  // -1: none yet
    repeated_issues_[q] = repeats ? repeated_issues_[q] + 1 : 0;
    check = check || repeated_issues_[q] >= q * n_;
  }
  history[piece % kMaxPeriodPieces] = interval;
  // The last event class of the instant: after the network's rate update, so each check sees the same point of it.
  if (i == 0 && check) queue_.schedule(now, this, kSteadyStateCheck, 255);
}

// Position 0's next piece, and per position relative to it and to now: its next piece, the pieces it has received
// (the prefix and any early ones), whether it is sending, its reductions pending; then the network's state of the
// run's flows.
std::vector<double> RingRun::relative_state() const {
  const auto base = static_cast<double>(next_[0]);
  const TimePs now = queue_.now();
  std::vector<double> state;
  for (std::uint32_t i = 0; i < n_; ++i) {
    state.insert(state.end(),
                 {next_[i] - base, received_[i] - base, static_cast<double>(sending_[i]),
                  static_cast<double>(received_early_[i].size()), static_cast<double>(pending_reduces_[i].size())});
    for (std::uint32_t piece : received_early_[i]) state.push_back(piece - base);
    for (const PendingReduce& r : pending_reduces_[i])
      state.insert(state.end(), {static_cast<double>(r.due - now), r.piece - base});
  }
  if (!network_.steady_state(this, state)) state.clear();
  return state;
}

void RingRun::check_steady_state() {
  if (!fast_forward_) return;
  if (--checks_left_ == 0) fast_forward_ = false;
  Instant now{next_[0],         queue_.now(), relative_state(),
              network_.usage(), remaining_,   *std::min_element(received_.begin(), received_.end())};
  if (now.state.empty()) {
    fast_forward_ = false;
    return;
  }
  const std::uint32_t furthest = *std::max_element(next_.begin(), next_.end());  // one past the furthest issued piece
  for (const Instant& then : checked_) {
    const std::uint32_t q = now.piece - then.piece;
    if (q == 0 || q > kMaxPeriodPieces || then.state != now.state) continue;
    // Every piece worked on since `then`, and in the periods skipped, of one kind.
    const std::uint32_t kind_last = kind_last_piece(furthest - 1);
    if (kind_last_piece(then.lowest_piece) != kind_last) break;
    const std::uint32_t periods = (kind_last + 1 - furthest) / q;
    if (periods == 0) break;
    const TimePs shift = times_ps(periods, now.at - then.at);
    add_ps(now.at, shift);  // throws past the time range, as the steps run one by one would
    const std::uint64_t operations_per_period = then.remaining - remaining_;
    COMMSIM_CHECK(operations_per_period * periods < remaining_, "steady state skips past the run's end");
    LinkUsage per_period;
    for (int c = 0; c < kLinkClassCount; ++c) {
      per_period.busy_s[c] = now.usage.busy_s[c] - then.usage.busy_s[c];
      per_period.bytes[c] = now.usage.bytes[c] - then.usage.bytes[c];
    }
    network_.skip_periods(then.at, shift, per_period, periods);
    queue_.shift(shift);
    remaining_ -= operations_per_period * periods;
    const std::uint32_t pieces = periods * q;
    for (std::uint32_t i = 0; i < n_; ++i) {
      next_[i] += pieces;
      received_[i] += pieces;
      for (std::uint32_t& piece : received_early_[i]) piece += pieces;
      for (PendingReduce& r : pending_reduces_[i]) r.due += shift, r.piece += pieces;
      last_issue_at_[i] += shift;
    }
    skipped_steps_ += pieces / chunks_;
    // Another kind may follow (the allgather after a reduce-scatter whose reductions take time): watch it afresh.
    if (kind_last + 1 < steps_ * chunks_) {
      start_watching();
    } else {
      fast_forward_ = false;  // what is left is the drain of the last steps
    }
    return;
  }
  if (checked_.size() == kMaxPeriodPieces) checked_.erase(checked_.begin());
  checked_.push_back(std::move(now));
}

void RingRun::finish_one() {
  COMMSIM_CHECK(remaining_ > 0, "operation completed twice");
  if (--remaining_ == 0) finished_at_ = queue_.now();
}

}  // namespace commsim
