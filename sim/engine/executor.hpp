// Executes Schedules on a network model: an operation starts when all its dependencies are done; transfers go to
// the network, reductions take bytes / gamma on their rank. Several schedules may run at once on one network
// (several communication streams); each reports its completion to its listener.
#pragma once

#include <functional>
#include <memory>

#include "sim/collective/schedule.hpp"
#include "sim/network/network.hpp"

namespace commsim {

class ScheduleRun final : public TransferListener, public EventHandler {
 public:
  // `on_done` is called (from inside the event loop) when the last operation finishes.
  ScheduleRun(const Schedule& schedule, double reduce_Bps, NetworkModel& network, EventQueue& queue,
              std::function<void()> on_done);
  void start();
  bool done() const { return remaining_ == 0; }
  TimePs started_at() const { return started_at_; }
  TimePs finished_at() const { return finished_at_; }

  // From now on, every transfer this run issues from src to dst carries (*extra_bytes)(src, dst) bytes beside its
  // own (the step simulator's price of a collective running beside another: CommLibrary::concurrent_step_delay_s);
  // nullptr = none. The function must outlive the run's transfers.
  using ExtraBytes = std::function<double(int src, int dst)>;
  void set_extra_bytes(const ExtraBytes* extra_bytes) { extra_bytes_ = extra_bytes; }

  void on_transfer_done(std::uint64_t op) override { complete(static_cast<OpId>(op)); }
  void on_event(std::uint64_t op) override { complete(static_cast<OpId>(op)); }

 private:
  void issue(OpId op);
  void complete(OpId op);

  const Schedule& schedule_;
  double reduce_Bps_;
  NetworkModel& network_;
  EventQueue& queue_;
  std::function<void()> on_done_;
  std::vector<std::uint8_t> pending_;      // unfinished dependencies per op (a byte: ops have a handful)
  std::vector<std::uint32_t> next_begin_;  // dependents of each op (CSR)
  std::vector<OpId> next_;
  std::size_t remaining_ = 0;
  TimePs started_at_ = 0;
  TimePs finished_at_ = 0;
  const ExtraBytes* extra_bytes_ = nullptr;
};

// Convenience: simulate one schedule alone from time 0; returns its duration in seconds.
struct ScheduleResult {
  double seconds = 0;
  std::uint64_t events = 0;
  LinkUsage usage;
};
// On the given network (made on `queue`, whose time is 0).
ScheduleResult simulate_schedule(const Schedule& schedule, NetworkModel& network, EventQueue& queue, double reduce_Bps);
// On the flow network.
ScheduleResult simulate_schedule(const Schedule& schedule, const Topology& topology, double reduce_Bps);

}  // namespace commsim
