// How the threads of one rank of the MPI backend meet within a step: the compute stream (the rank's main thread)
// opens each step through a Gate, every thread waits for its tasks' dependencies on a Board.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace commsim::hw {

// Which tasks of the current step are done; the stream threads of a rank wait on it for their dependencies.
class Board {
 public:
  void reset(std::size_t tasks) {
    std::lock_guard lock(mutex_);
    done_.assign(tasks, 0);
  }
  void finish(int task) {
    {
      std::lock_guard lock(mutex_);
      done_[task] = 1;
    }
    changed_.notify_all();
  }
  void wait(const std::vector<int>& deps) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return std::all_of(deps.begin(), deps.end(), [&](int d) { return done_[d] != 0; }); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<char> done_;
};

// Starts the stream threads on a step and waits for all of them to finish it.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      ++generation_;
      finished_ = 0;
    }
    changed_.notify_all();
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
  }
  // Called by a stream thread: false when the run is over.
  bool next(std::uint64_t& seen) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    seen = generation_;
    return !stopping_;
  }
  void finished() {
    {
      std::lock_guard lock(mutex_);
      ++finished_;
    }
    changed_.notify_all();
  }
  void wait_all(int streams) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return finished_ == streams; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
  int finished_ = 0;
  bool stopping_ = false;
};

}  // namespace commsim::hw
