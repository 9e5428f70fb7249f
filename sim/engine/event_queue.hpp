// Discrete-event queue: integer time, ties broken by a priority class and then by insertion order, so runs are
// deterministic (as ns-3's EventKey). The queue is passed to whoever schedules, never a global. A collective's flows
// change in step (a ring over 8192 GPUs finishes 8192 transfers in one picosecond), so events of one time and class
// are kept together in a bucket and a binary heap orders the buckets: one heap operation per bucket, not per event.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
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
    const std::uint64_t order = (static_cast<std::uint64_t>(klass) << 56) | next_seq_++;
    buckets_[bucket_for(at, klass, order)].events.push_back({handler, payload});
  }
  TimePs now() const { return now_; }
  bool empty() const { return heap_.empty(); }
  std::uint64_t processed() const { return processed_; }
  // Runs until no event is left.
  void run() {
    while (!heap_.empty()) step();
  }
  // The hook for progress and cancellation of long runs: runs like run(), but calls keep_going(*this) after every
  // `every_events` events (and not otherwise: the check costs nothing per event) and stops, leaving the remaining
  // events queued, when it returns false. A caller reports now() and processed() from it, or returns false once
  // SIGINT set its flag. Returns whether every event ran.
  bool run_checked(std::uint64_t every_events, const std::function<bool(const EventQueue&)>& keep_going) {
    while (!heap_.empty()) {
      const std::uint64_t until = processed_ + std::max<std::uint64_t>(every_events, 1);
      while (!heap_.empty() && processed_ < until) step();
      if (!heap_.empty() && !keep_going(*this)) return false;
    }
    return true;
  }
  // Drops the pending events for which dead(handler, payload) is true (events that would do nothing when run, such as
  // a handler's superseded ones) and keeps every other event where it is, so what runs, and in what order, is
  // unchanged; only processed() no longer counts the dropped ones. One pass over every pending event: a handler calls
  // it when its dead events outnumber its live ones (lazy deletion otherwise lets them pile up in the heap).
  template <class Dead>
  void drop(Dead dead) {
    std::size_t kept = 0;
    for (const Key& key : heap_) {
      Bucket& bucket = buckets_[key.bucket];
      const auto first = bucket.events.begin() + static_cast<std::ptrdiff_t>(bucket.next);
      bucket.events.erase(
          std::remove_if(first, bucket.events.end(), [&](const Event& e) { return dead(e.handler, e.payload); }),
          bucket.events.end());
      if (bucket.next < bucket.events.size()) {
        heap_[kept++] = key;
      } else {
        free_bucket(key.bucket);
      }
    }
    heap_.resize(kept);
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
  // Moves the clock and every pending event `delta` later, keeping their order: for a run that skips periods it knows
  // to repeat (RingRun's steady state). The caller checks that now() + delta does not overflow.
  void shift(TimePs delta) {
    now_ += delta;
    for (Key& key : heap_) key.at += delta;
    for (Recent& r : recent_)
      if (r.bucket != kNone) r.at += delta;
  }
  void step() {
    const Key top = heap_.front();
    Bucket& bucket = buckets_[top.bucket];
    const Event e = bucket.events[bucket.next++];
    if (bucket.next == bucket.events.size()) release(top.bucket);  // before the handler: it may schedule anew
    now_ = top.at;
    ++processed_;
    e.handler->on_event(e.payload);
  }

 private:
  // Events of one time and class, scheduled with no other (time, class) scheduled between them that evicted the
  // bucket from recent_: their insertion orders are consecutive among that (time, class), so ordering buckets by
  // their first event's order and draining each in turn yields exactly the order of the events themselves.
  struct Event {
    EventHandler* handler;
    std::uint64_t payload;
  };
  struct Bucket {
    std::vector<Event> events;
    std::size_t next = 0;  // the first event not yet run
  };
  struct Key {
    TimePs at;
    std::uint64_t order;  // of the bucket's first event: class in the top 8 bits, insertion sequence below
    std::uint32_t bucket;
    bool operator>(const Key& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  // Buckets open for more events: the last few (time, class) pairs scheduled.
  struct Recent {
    TimePs at = -1;
    std::uint8_t klass = 0;
    std::uint32_t bucket = kNone;
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;

  std::uint32_t bucket_for(TimePs at, std::uint8_t klass, std::uint64_t order) {
    for (const Recent& r : recent_)
      if (r.bucket != kNone && r.at == at && r.klass == klass) return r.bucket;
    std::uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    heap_.push_back({at, order, id});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    recent_[next_recent_] = {at, klass, id};
    next_recent_ = (next_recent_ + 1) % recent_.size();
    return id;
  }
  void release(std::uint32_t id) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
    free_bucket(id);
  }
  void free_bucket(std::uint32_t id) {
    buckets_[id].events.clear();  // keeps its capacity for the next bucket
    buckets_[id].next = 0;
    free_.push_back(id);
    for (Recent& r : recent_)
      if (r.bucket == id) r.bucket = kNone;
  }

  std::vector<Key> heap_;  // min-heap of the buckets with events left
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;
  std::array<Recent, 4> recent_{};
  std::size_t next_recent_ = 0;
  TimePs now_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace commsim
