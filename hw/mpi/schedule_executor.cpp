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

std::uint64_t execute_program(const RankProgram& program, MPI_Comm comm, CommDtype dtype, void* vector, void* staging) {
  const std::size_t n = program.actions.size();
  const std::size_t element = element_bytes(dtype);
  auto* base = static_cast<std::byte*>(vector);
  auto* stage = static_cast<std::byte*>(staging);
  auto at = [&](const Action& a) {
    return a.staging_offset >= 0 ? stage + static_cast<std::size_t>(a.staging_offset) * element
                                 : base + a.range.offset * element;
  };

  std::vector<int> waiting(n);
  std::vector<std::vector<int>> dependents(n);
  // Lowest action first: earlier pieces of a pipeline go out first, as the simulator's FIFO links send them.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    waiting[i] = static_cast<int>(program.actions[i].deps.size());
    for (int d : program.actions[i].deps) dependents[d].push_back(static_cast<int>(i));
    if (waiting[i] == 0) ready.push(static_cast<int>(i));
  }
  std::vector<MPI_Request> requests;
  std::vector<int> request_action;
  std::size_t done = 0;
  std::uint64_t sent_bytes = 0;
  auto finish = [&](int a) {
    ++done;
    for (int d : dependents[a])
      if (--waiting[d] == 0) ready.push(d);
  };

  std::vector<int> indices;
  std::vector<MPI_Request> still;
  std::vector<int> still_action;
  while (done < n) {
    // Start everything whose dependencies are met; reductions and joins finish at once and may release more.
    while (!ready.empty()) {
      const int a = ready.top();
      ready.pop();
      const Action& action = program.actions[a];
      const std::uint64_t bytes = action.range.count * element;
      COMMSIM_CHECK(bytes <= static_cast<std::uint64_t>(INT_MAX), "a transfer of more than 2 GiB");
      const int count = static_cast<int>(bytes);
      const int tag = static_cast<int>(action.tag);
      MPI_Request request = MPI_REQUEST_NULL;
      switch (action.kind) {
        case Action::Kind::Send:
          COMMSIM_MPI_CHECK(
              MPI_Isend(base + action.range.offset * element, count, MPI_BYTE, action.peer, tag, comm, &request));
          sent_bytes += bytes;
          break;
        case Action::Kind::Receive:
          COMMSIM_MPI_CHECK(MPI_Irecv(at(action), count, MPI_BYTE, action.peer, tag, comm, &request));
          break;
        case Action::Kind::Reduce:
          sum_into(dtype, base + action.range.offset * element, at(action), action.range.count);
          finish(a);
          continue;
        case Action::Kind::Join:
          finish(a);
          continue;
      }
      requests.push_back(request);
      request_action.push_back(a);
    }
    if (done == n) break;
    COMMSIM_CHECK(!requests.empty(), "schedule program stalled: no transfer in flight and none ready");
    int completed = 0;
    indices.resize(requests.size());
    COMMSIM_MPI_CHECK(MPI_Waitsome(static_cast<int>(requests.size()), requests.data(), &completed, indices.data(),
                                   MPI_STATUSES_IGNORE));
    for (int k = 0; k < completed; ++k) finish(request_action[indices[k]]);
    // Waitsome set the completed requests to MPI_REQUEST_NULL: keep the others.
    still.clear();
    still_action.clear();
    for (std::size_t r = 0; r < requests.size(); ++r) {
      if (requests[r] == MPI_REQUEST_NULL) continue;
      still.push_back(requests[r]);
      still_action.push_back(request_action[r]);
    }
    requests.swap(still);
    request_action.swap(still_action);
  }
  return sent_bytes;
}

}  // namespace commsim::hw
