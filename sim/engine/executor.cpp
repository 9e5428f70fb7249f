#include "sim/engine/executor.hpp"

#include <limits>

#include "sim/core/error.hpp"

namespace commsim {

ScheduleRun::ScheduleRun(const Schedule& schedule, double reduce_Bps, NetworkModel& network, EventQueue& queue,
                         std::function<void()> on_done)
    : schedule_(schedule), reduce_Bps_(reduce_Bps), network_(network), queue_(queue), on_done_(std::move(on_done)) {
  const std::size_t n = schedule.ops.size();
  // Dependents as CSR, built in place: count, prefix-sum, then place each dependent with next_begin_[dep] as the
  // cursor, which leaves next_begin_[i] at the end of range i (the start of range i + 1); shift back by one. No
  // second array of n cursors (0.5 GB at 134 M ops), and the same order as before: ascending op id per range.
  pending_.resize(n);
  next_begin_.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    COMMSIM_CHECK(op.dep_count <= std::numeric_limits<std::uint8_t>::max(), "operation with over 255 dependencies");
    pending_[i] = static_cast<std::uint8_t>(op.dep_count);
    for (std::uint32_t d = op.dep_begin; d < op.dep_end(); ++d) ++next_begin_[schedule.deps[d] + 1];
  }
  for (std::size_t i = 0; i < n; ++i) next_begin_[i + 1] += next_begin_[i];
  next_.resize(schedule.deps.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    for (std::uint32_t d = op.dep_begin; d < op.dep_end(); ++d)
      next_[next_begin_[schedule.deps[d]]++] = static_cast<OpId>(i);
  }
  for (std::size_t i = n; i > 0; --i) next_begin_[i] = next_begin_[i - 1];
  next_begin_[0] = 0;
  remaining_ = n;
}

void ScheduleRun::start() {
  started_at_ = queue_.now();
  if (remaining_ == 0) {
    finished_at_ = started_at_;
    if (on_done_) on_done_();
    return;
  }
  for (std::size_t i = 0; i < schedule_.ops.size(); ++i)
    if (pending_[i] == 0) issue(static_cast<OpId>(i));
}

void ScheduleRun::issue(OpId id) {
  const Op& op = schedule_.ops[id];
  if (op.kind == OpKind::Transfer) {
    const double extra = extra_bytes_ != nullptr ? (*extra_bytes_)(op.src, op.dst) : 0;
    network_.start(op.src, op.dst, static_cast<double>(op.bytes) + extra, this, id,
                   schedule_.copies.empty() ? 0 : schedule_.copies[id]);
  } else if (op.kind == OpKind::Delay) {
    queue_.schedule(add_ps(queue_.now(), static_cast<TimePs>(op.bytes)), this, id);
  } else {
    const TimePs t = reduce_Bps_ > 0 ? transfer_ps(static_cast<double>(op.bytes), reduce_Bps_) : 0;
    queue_.schedule(add_ps(queue_.now(), t), this, id);
  }
}

void ScheduleRun::complete(OpId id) {
  COMMSIM_CHECK(remaining_ > 0, "operation completed twice");
  for (std::uint32_t i = next_begin_[id]; i < next_begin_[id + 1]; ++i)
    if (--pending_[next_[i]] == 0) issue(next_[i]);
  if (--remaining_ == 0) {
    finished_at_ = queue_.now();
    if (on_done_) on_done_();
  }
}

ScheduleResult simulate_schedule(const Schedule& schedule, NetworkModel& network, EventQueue& queue,
                                 double reduce_Bps) {
  ScheduleRun run(schedule, reduce_Bps, network, queue, nullptr);
  run.start();
  queue.run();
  COMMSIM_CHECK(run.done(), "schedule did not finish: a dependency cycle");
  return {ps_to_seconds(run.finished_at()), queue.processed(), network.usage()};
}

ScheduleResult simulate_schedule(const Schedule& schedule, const Topology& topology, double reduce_Bps) {
  EventQueue queue;
  const std::unique_ptr<NetworkModel> network = make_flow_network(topology, queue);
  return simulate_schedule(schedule, *network, queue, reduce_Bps);
}

}  // namespace commsim
