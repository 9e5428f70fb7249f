// Discrete-event queue: integer time, ties broken by a priority class and then by insertion order, so runs are
// deterministic (as ns-3's EventKey). A binary heap; the queue is passed to whoever schedules, never a global.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/units.hpp"

namespace commsim {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint64_t payload) = 0;
};

class EventQueue {
 public:
  // Events of a higher class run after every lower-class event of the same time (used to batch rate updates).
  void schedule(TimePs at, EventHandler* handler, std::uint64_t payload, std::uint8_t klass = 0) {
    heap_.push({at, (static_cast<std::uint64_t>(klass) << 56) | next_seq_++, handler, payload});
  }
  TimePs now() const { return now_; }
  bool empty() const { return heap_.empty(); }
  std::uint64_t processed() const { return processed_; }
  // Runs until no event is left.
  void run() {
    while (!heap_.empty()) step();
  }
  void step() {
    Event e = heap_.top();
    heap_.pop();
    now_ = e.at;
    ++processed_;
    e.handler->on_event(e.payload);
  }

 private:
  struct Event {
    TimePs at;
    std::uint64_t order;  // class in the top 8 bits, insertion sequence below: one comparison orders both
    EventHandler* handler;
    std::uint64_t payload;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
  TimePs now_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace commsim
