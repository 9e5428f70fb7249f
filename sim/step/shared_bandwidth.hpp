// Processor sharing of the network's bandwidth among concurrent collectives in the simulator's analytical fidelity
// (internal to step_simulator.cpp).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/engine/event_queue.hpp"

namespace commsim {

// Processor sharing of the network's bandwidth among concurrent collectives in analytical fidelity: each of n
// active collectives drains its bandwidth term at 1/n of full speed (latency terms overlap freely). A job of task
// kNoTask is time the network loses: it takes its share like the others and reports nothing when done.
class SharedBandwidth final : public EventHandler {
 public:
  static constexpr int kNoTask = -1;
  SharedBandwidth(EventQueue& q, std::function<void(int)> done) : queue_(q), done_(std::move(done)) {}
  void add(int task, TimePs work) {
    advance();
    jobs_.push_back({task, static_cast<double>(work)});
    reschedule();
  }
  void on_event(std::uint64_t version) override {
    if (version != version_) return;
    advance();
    std::vector<int> finished;
    for (auto it = jobs_.begin(); it != jobs_.end();)
      if (it->remaining_ps <= 0.5)
        finished.push_back(it->task), it = jobs_.erase(it);
      else
        ++it;
    reschedule();
    for (int t : finished)
      if (t != kNoTask) done_(t);
  }

 private:
  struct Job {
    int task;
    double remaining_ps;
  };
  void advance() {
    const TimePs now = queue_.now();
    if (!jobs_.empty()) {
      const double share = static_cast<double>(now - last_) / static_cast<double>(jobs_.size());
      for (Job& j : jobs_) j.remaining_ps -= share;
    }
    last_ = now;
  }
  void reschedule() {
    ++version_;
    if (jobs_.empty()) return;
    double least = jobs_.front().remaining_ps;
    for (const Job& j : jobs_) least = std::min(least, j.remaining_ps);
    queue_.schedule(add_ps(queue_.now(), seconds_to_ps(std::max(0.0, least) * static_cast<double>(jobs_.size()) * 1e-12,
                                                       "shared collective time")),
                    this, version_);
  }
  EventQueue& queue_;
  std::function<void(int)> done_;
  std::vector<Job> jobs_;
  TimePs last_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace commsim
