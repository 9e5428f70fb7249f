// Which intervals rank 0 of an NCCL run times within a step, read from the step's launch ops: one per
// communication task, and one per run of compute kernels (or per compute task, in traced steps), each from its first
// to its last op. Internal to the backend.
#pragma once

#include <map>
#include <vector>

#include "hw/nccl/launch_plan.hpp"

namespace commsim::nccl {

// A timed interval of rank 0: one communication task, or one run of compute kernels (each compute task in traced
// steps), from its first to its last op.
struct Mark {
  int first_op = 0, last_op = 0, stream = 0, task = -1;
  bool compute = false;
};
struct Marks {
  std::vector<Mark> marks;
  std::map<int, std::vector<int>> begin_at, end_at;  // op index -> marks
};

// The marks of `step`; with `each_compute_task` every compute task gets its own (traced steps).
Marks make_marks(const LaunchStep& step, bool each_compute_task);

// One enqueue: `op` stands for the step's ops first..last. A Spin merges a run of consecutive Spin ops on one stream
// with no mark ending inside the run or beginning after its first op (one kernel per layer adds the gap between two
// kernels to every layer: ResNet-50's 109 layers, 218 kernels, ran 0.43 ms over their Plan time on an H100 that way,
// docs/hardware-nccl.md); its seconds are theirs summed. Any other op stands for itself (first == last).
struct Issue {
  int first = 0, last = 0;
  LaunchOp op;
};
std::vector<Issue> issues_of(const LaunchStep& step, const Marks& marks);

}  // namespace commsim::nccl
