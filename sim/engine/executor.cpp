#include "sim/engine/executor.hpp"

#include "sim/core/error.hpp"

namespace commsim {

ScheduleRun::ScheduleRun(const Schedule& schedule, double reduce_Bps, NetworkModel& network, EventQueue& queue,
                         std::function<void()> on_done)
    : schedule_(schedule), reduce_Bps_(reduce_Bps), network_(network), queue_(queue), on_done_(std::move(on_done)) {
  const std::size_t n = schedule.ops.size();
  pending_.assign(n, 0);
  next_begin_.assign(n + 1, 0);
  for (const Op& op : schedule.ops)
    for (std::uint32_t d = op.dep_begin; d < op.dep_end; ++d) ++next_begin_[schedule.deps[d] + 1];
  for (std::size_t i = 0; i < n; ++i) next_begin_[i + 1] += next_begin_[i];
  next_.resize(schedule.deps.size());
  std::vector<std::uint32_t> fill(next_begin_.begin(), next_begin_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    pending_[i] = op.dep_end - op.dep_begin;
    for (std::uint32_t d = op.dep_begin; d < op.dep_end; ++d) next_[fill[schedule.deps[d]]++] = static_cast<OpId>(i);
  }
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
    network_.start(op.src, op.dst, static_cast<double>(op.bytes), this, id);
  } else if (op.kind == OpKind::Delay) {
    queue_.schedule(queue_.now() + static_cast<TimePs>(op.bytes), this, id);
  } else {
    const TimePs t = reduce_Bps_ > 0 ? transfer_ps(static_cast<double>(op.bytes), reduce_Bps_) : 0;
    queue_.schedule(queue_.now() + t, this, id);
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

ScheduleResult simulate_schedule(const Schedule& schedule, const Topology& topology, Fidelity fidelity,
                                 double reduce_Bps) {
  EventQueue queue;
  auto network = make_network(fidelity, topology, queue);
  ScheduleRun run(schedule, reduce_Bps, *network, queue, nullptr);
  run.start();
  queue.run();
  COMMSIM_CHECK(run.done(), "schedule did not finish: a dependency cycle");
  return {ps_to_seconds(run.finished_at()), queue.processed(), network->usage()};
}

}  // namespace commsim
