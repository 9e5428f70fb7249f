// The event queue keeps events of one (time, class) in buckets; these tests check that the order it runs them in is
// exactly the documented one: time, then class, then insertion order, including events scheduled while others of
// the same instant run, and (time, class) pairs that come back after other pairs evicted their open bucket.
#include "sim/engine/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

namespace commsim {
namespace {

struct Scheduled {
  TimePs at;
  int klass;
  std::uint64_t insertion;
  bool operator<(const Scheduled& o) const {
    return std::tie(at, klass, insertion) < std::tie(o.at, o.klass, o.insertion);
  }
};

// The definition, one event at a time: a binary heap of (time, class, insertion).
class ReferenceQueue {
 public:
  void schedule(TimePs at, EventHandler* handler, std::uint64_t payload, std::uint8_t klass = 0) {
    heap_.push({{at, klass, next_++}, handler, payload});
  }
  TimePs now() const { return now_; }
  void run() {
    while (!heap_.empty()) {
      const Entry e = heap_.top();
      heap_.pop();
      now_ = e.key.at;
      e.handler->on_event(e.payload);
    }
  }

 private:
  struct Entry {
    Scheduled key;
    EventHandler* handler;
    std::uint64_t payload;
    bool operator>(const Entry& o) const { return o.key < key; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  TimePs now_ = 0;
  std::uint64_t next_ = 0;
};

// Records the insertion index of every event it runs; some events schedule more when they run (`spawn`).
template <class Queue>
class Recorder final : public EventHandler {
 public:
  explicit Recorder(Queue& queue) : queue_(queue) {}
  void add(TimePs at, int klass) {
    log_.push_back({at, klass, log_.size()});
    queue_.schedule(at, this, log_.size() - 1, static_cast<std::uint8_t>(klass));
  }
  void on_event(std::uint64_t insertion) override {
    EXPECT_EQ(queue_.now(), log_[insertion].at);
    if (dead_ && dead_(insertion)) return;  // a superseded event: does nothing
    ran_.push_back(insertion);
    if (spawn_) spawn_(insertion);
  }
  std::function<void(std::uint64_t)> spawn_;
  std::function<bool(std::uint64_t)> dead_;
  std::vector<Scheduled> log_;
  std::vector<std::uint64_t> ran_;

 private:
  Queue& queue_;
};

TEST(EventQueue, RunsByTimeThenClassThenInsertion) {
  EventQueue queue;
  Recorder<EventQueue> r(queue);
  r.add(20, 0);  // 0
  r.add(10, 1);  // 1: after event 2 (same time, lower class)
  r.add(10, 0);  // 2
  r.add(10, 0);  // 3: after 2 (inserted later)
  r.add(5, 0);   // 4
  queue.run();
  EXPECT_EQ(r.ran_, (std::vector<std::uint64_t>{4, 2, 3, 1, 0}));
  EXPECT_EQ(queue.processed(), 5u);
}

// A class-0 event scheduled for "now" while a class-1 event of this instant runs must run before the other class-1
// events of the instant (it sorts before them); one of the same class runs after them (inserted last).
TEST(EventQueue, EventsScheduledForNowKeepTheOrder) {
  EventQueue queue;
  Recorder<EventQueue> r(queue);
  r.add(7, 1);  // 0
  r.add(7, 1);  // 1
  r.add(7, 1);  // 2
  bool spawned = false;
  r.spawn_ = [&](std::uint64_t ran) {
    if (ran != 0 || spawned) return;
    spawned = true;
    r.add(7, 0);  // 3: before 1 and 2
    r.add(7, 1);  // 4: after 2
  };
  queue.run();
  EXPECT_EQ(r.ran_, (std::vector<std::uint64_t>{0, 3, 1, 2, 4}));
}

// Random schedules over few distinct times and classes (many ties, and more (time, class) pairs in turn than the
// queue keeps buckets open for), with events that schedule further events at or after the current time, some of a
// lower class than the one running: run alike by the queue and by the one-event-at-a-time definition.
template <class Queue>
std::vector<std::uint64_t> run_random(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> time(0, 12), klass(0, 2), spawn(0, 3), later(0, 4);
  Queue queue;
  Recorder<Queue> r(queue);
  for (int i = 0; i < 300; ++i) r.add(time(rng), klass(rng));
  r.spawn_ = [&](std::uint64_t) {
    if (r.log_.size() >= 2000) return;
    for (int n = spawn(rng); n > 0; --n) r.add(queue.now() + later(rng), klass(rng));
  };
  queue.run();
  EXPECT_EQ(r.ran_.size(), r.log_.size());
  return r.ran_;
}

// The progress hook: 10 events at times 1..10 ps checked every 3 events sees 3, 6 and 9 processed at times 3, 6 and
// 9 (one check per 3 events, none after the last event); stopping at the second check leaves events 7..10 queued,
// and a second run_checked finishes them in order.
TEST(EventQueue, RunCheckedReportsProgressAndStops) {
  struct Count final : EventHandler {
    std::vector<std::uint64_t> seen;
    void on_event(std::uint64_t payload) override { seen.push_back(payload); }
  } handler;
  EventQueue queue;
  for (std::uint64_t i = 1; i <= 10; ++i) queue.schedule(static_cast<TimePs>(i), &handler, i);
  std::vector<std::pair<std::uint64_t, TimePs>> checks;
  const bool finished = queue.run_checked(3, [&](const EventQueue& q) {
    checks.emplace_back(q.processed(), q.now());
    return checks.size() < 2;
  });
  EXPECT_FALSE(finished);
  EXPECT_EQ(checks, (std::vector<std::pair<std::uint64_t, TimePs>>{{3, 3}, {6, 6}}));
  EXPECT_EQ(handler.seen.size(), 6u);
  EXPECT_FALSE(queue.empty());
  checks.clear();
  EXPECT_TRUE(queue.run_checked(3, [&](const EventQueue& q) {
    checks.emplace_back(q.processed(), q.now());
    return true;
  }));
  EXPECT_EQ(checks, (std::vector<std::pair<std::uint64_t, TimePs>>{{9, 9}}));
  EXPECT_EQ(handler.seen, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(EventQueue, RandomSchedulesRunAsTheDefinitionDoes) {
  for (unsigned seed = 1; seed <= 50; ++seed)
    EXPECT_EQ(run_random<EventQueue>(seed), run_random<ReferenceQueue>(seed)) << "seed " << seed;
}

// The random schedules again, with every third event dead (it does nothing when it runs, as a superseded completion
// of the flow network): the queue drops the dead ones from inside every 25th live event, and the live events still
// run exactly in the definition's order, which runs everything. The dropped events are not run (fewer processed).
TEST(EventQueue, DroppingDeadEventsKeepsTheOrderOfTheOthers) {
  const auto dead = [](std::uint64_t insertion) { return insertion % 3 == 0; };
  for (unsigned seed = 1; seed <= 50; ++seed) {
    const auto run = [&](auto& queue, bool drop) {
      std::mt19937 rng(seed);
      std::uniform_int_distribution<int> time(0, 12), klass(0, 2), spawn(0, 3), later(0, 4);
      Recorder<std::remove_reference_t<decltype(queue)>> r(queue);
      r.dead_ = dead;
      for (int i = 0; i < 300; ++i) r.add(time(rng), klass(rng));
      int live = 0;
      r.spawn_ = [&](std::uint64_t) {
        if constexpr (std::is_same_v<std::remove_reference_t<decltype(queue)>, EventQueue>)
          if (drop && ++live % 25 == 0)
            queue.drop([&](const EventHandler*, std::uint64_t insertion) { return dead(insertion); });
        if (r.log_.size() >= 2000) return;
        for (int n = spawn(rng); n > 0; --n) r.add(queue.now() + later(rng), klass(rng));
      };
      queue.run();
      return std::make_pair(r.ran_, r.log_.size());
    };
    EventQueue dropping;
    ReferenceQueue reference;
    const auto [ran, scheduled] = run(dropping, true);
    EXPECT_EQ(ran, run(reference, false).first) << "seed " << seed;
    EXPECT_LT(dropping.processed(), scheduled) << "seed " << seed;
  }
}

}  // namespace
}  // namespace commsim
