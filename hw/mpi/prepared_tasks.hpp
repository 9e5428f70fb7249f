// Everything a rank works out before it times anything: what each task of each step kind does on this rank
// (task_work.hpp), the simulator's schedule compiled for this rank where the Plan's collectives run on it, and the
// sizes of the buffers those need.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hw/common/plan_buffers.hpp"
#include "hw/common/schedule_program.hpp"
#include "hw/mpi/rank_context.hpp"
#include "hw/mpi/task_work.hpp"

namespace commsim::hw {

// A schedule compiled for this rank, shared by every task with the same collective.
struct CompiledSchedule {
  RankProgram program;
  std::vector<std::vector<Range>> contributed;  // every rank's allgather input ranges (AllGather checks, DGC)
};

// What one task of a step kind does on this rank, with what this rank compiled for it.
struct PreparedTask : TaskWork {
  bool hierarchical = false;
  std::shared_ptr<const CompiledSchedule> compiled;  // null: Open MPI's own collective
  int residual = -1;                                 // SparseGather: index of its residual buffer
};

struct PreparedTasks {
  std::vector<std::vector<PreparedTask>> by_step_kind;  // [Plan::step_plans index][task]
  std::vector<std::uint64_t> residual_elements;         // DGC: one residual per sparse bucket, its elements
  std::uint64_t staging_elements = 0;                   // the largest staging area a compiled schedule uses
};

// Works out once what each task of each step kind does on this rank (which buffer, which schedule).
PreparedTasks prepare_tasks(const RankContext& context, const GradientLayout& layout);

}  // namespace commsim::hw
