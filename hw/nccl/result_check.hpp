// The NCCL backend's --check pass: one untimed run of every step kind the Plan uses, with verifiable integer inputs
// on every GPU, after which a kernel counts the elements of each collective's result that differ from the exact
// sum (or gathered value, or DGC's sparse sum). Internal to the backend.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hw/nccl/gpu_ranks.hpp"

namespace commsim::nccl {

// What the check pass verifies after one task.
struct CheckItem {
  enum Kind { Sum, ShardSum, Gathered, Dgc } kind = Sum;
  int task = -1, buffer = -1;
  std::uint64_t count = 0, elements = 0;  // count: NCCL count; elements: DGC dense size
  std::uint64_t first = 0;                // Sum: where the summed elements start (a partition_mb piece)
  float scale = 1;
};

// The checked results of a step, one per collective task, in task order.
std::vector<CheckItem> check_items(const LaunchStep& step);

// Runs the pass (`run_untimed(k)` enqueues step kind k without its compute waits) and returns the wrong elements
// over all ranks of all processes; appends one note saying what was checked.
std::uint64_t check_results(const Plan& plan, const LaunchProgram& program, GpuRanks& gpus, const World& world,
                            const std::function<void(int)>& run_untimed, std::vector<std::string>& notes);

}  // namespace commsim::nccl
