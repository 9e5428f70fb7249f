#include "hw/mpi/schedule_executor.hpp"

#include <climits>
#include <cstddef>
#include <functional>
#include <queue>
#include <vector>

#include "hw/common/dtype.hpp"
#include "hw/mpi/mpi_check.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {

namespace {

// One execution of a program: its actions start as their dependencies finish; transfers complete through MPI.
class ProgramExecution {
 public:
  ProgramExecution(const RankProgram& program, MPI_Comm comm, CommDtype dtype, void* vector, void* staging)
      : program_(program),
        comm_(comm),
        dtype_(dtype),
        element_(element_bytes(dtype)),
        base_(static_cast<std::byte*>(vector)),
        stage_(static_cast<std::byte*>(staging)),
        waiting_(program.actions.size()),
        dependents_(program.actions.size()) {
    for (std::size_t i = 0; i < program.actions.size(); ++i) {
      waiting_[i] = static_cast<int>(program.actions[i].deps.size());
      for (int d : program.actions[i].deps) dependents_[d].push_back(static_cast<int>(i));
      if (waiting_[i] == 0) ready_.push(static_cast<int>(i));
    }
  }

  // Runs every action; returns the bytes this rank sent.
  std::uint64_t run() {
    const std::size_t n = program_.actions.size();
    while (done_ < n) {
      start_ready();
      if (done_ == n) break;
      COMMSIM_CHECK(!requests_.empty(), "schedule program stalled: no transfer in flight and none ready");
      wait_some();
    }
    return sent_bytes_;
  }

 private:
  // Where an action's data lies: staging for a received operand, else the vector.
  std::byte* at(const Action& a) const {
    return a.staging_offset >= 0 ? stage_ + static_cast<std::size_t>(a.staging_offset) * element_
                                 : base_ + a.range.offset * element_;
  }

  void finish(int a) {
    ++done_;
    for (int d : dependents_[a])
      if (--waiting_[d] == 0) ready_.push(d);
  }

  // Starts everything whose dependencies are met; reductions and joins finish at once and may release more.
  void start_ready() {
    while (!ready_.empty()) {
      const int a = ready_.top();
      ready_.pop();
      const Action& action = program_.actions[a];
      const std::uint64_t bytes = action.range.count * element_;
      COMMSIM_CHECK(bytes <= static_cast<std::uint64_t>(INT_MAX), "a transfer of more than 2 GiB");
      const int count = static_cast<int>(bytes);
      const int tag = static_cast<int>(action.tag);
      MPI_Request request = MPI_REQUEST_NULL;
      switch (action.kind) {
        case Action::Kind::Send:
          COMMSIM_MPI_CHECK(
              MPI_Isend(base_ + action.range.offset * element_, count, MPI_BYTE, action.peer, tag, comm_, &request));
          sent_bytes_ += bytes;
          break;
        case Action::Kind::Receive:
          COMMSIM_MPI_CHECK(MPI_Irecv(at(action), count, MPI_BYTE, action.peer, tag, comm_, &request));
          break;
        case Action::Kind::Reduce:
          sum_into(dtype_, base_ + action.range.offset * element_, at(action), action.range.count);
          finish(a);
          continue;
        case Action::Kind::Join:
          finish(a);
          continue;
      }
      requests_.push_back(request);
      request_action_.push_back(a);
    }
  }

  // Waits for some transfers in flight and finishes them.
  void wait_some() {
    int completed = 0;
    indices_.resize(requests_.size());
    COMMSIM_MPI_CHECK(MPI_Waitsome(static_cast<int>(requests_.size()), requests_.data(), &completed, indices_.data(),
                                   MPI_STATUSES_IGNORE));
    for (int k = 0; k < completed; ++k) finish(request_action_[indices_[k]]);
    // Waitsome set the completed requests to MPI_REQUEST_NULL: keep the others.
    still_.clear();
    still_action_.clear();
    for (std::size_t r = 0; r < requests_.size(); ++r) {
      if (requests_[r] == MPI_REQUEST_NULL) continue;
      still_.push_back(requests_[r]);
      still_action_.push_back(request_action_[r]);
    }
    requests_.swap(still_);
    request_action_.swap(still_action_);
  }

  const RankProgram& program_;
  const MPI_Comm comm_;
  const CommDtype dtype_;
  const std::size_t element_;
  std::byte* const base_;
  std::byte* const stage_;
  std::vector<int> waiting_;                  // per action: dependencies not yet finished
  std::vector<std::vector<int>> dependents_;  // per action: the actions that wait for it
  // Lowest action first: earlier pieces of a pipeline go out first, as the simulator's FIFO links send them.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready_;
  std::vector<MPI_Request> requests_;  // transfers in flight
  std::vector<int> request_action_;    // the action of each
  std::vector<int> indices_;
  std::vector<MPI_Request> still_;
  std::vector<int> still_action_;
  std::size_t done_ = 0;
  std::uint64_t sent_bytes_ = 0;
};

}  // namespace

std::uint64_t execute_program(const RankProgram& program, MPI_Comm comm, CommDtype dtype, void* vector, void* staging) {
  return ProgramExecution(program, comm, dtype, vector, staging).run();
}

}  // namespace commsim::hw
