// How a hardware backend lays a Plan out in memory: one flat fp32 gradient buffer per rank with the tensors in
// bucket order, so every bucket is one contiguous range (PyTorch DDP lays its bucket views out the same way), and
// the memory a rank needs, checked before anything is launched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/common/schedule_program.hpp"
#include "sim/plan/plan.hpp"

namespace commsim::hw {

struct GradientLayout {
  std::vector<std::uint64_t> offset;  // per tensor (Model::tensors index): first element in the flat buffer
  std::uint64_t elements = 0;         // the model's parameter count
  // The ranges `tensors` occupy, in the order given, neighbours merged.
  std::vector<Range> ranges(const std::vector<int>& tensors, const Model& model) const;
  // The ranges a task works on: its tensors' ranges, cut to its piece where it is one (strategy.partition_mb).
  std::vector<Range> task_ranges(const Task& task, const Model& model) const;
};

GradientLayout gradient_layout(const Plan& plan);

// Elements of the largest collective of the plan (what one stream's buffers must hold).
std::uint64_t largest_collective_elements(const Plan& plan);

// Bytes one rank needs: gradients; parameters (Local SGD averages them) or residuals (DGC); and per communication
// stream the packed vector, its fp32 view and the staging area for received operands (up to twice the vector).
std::uint64_t bytes_per_rank(const Plan& plan);

// Physical memory not in use now (sysconf _SC_AVPHYS_PAGES x _SC_PAGESIZE), in bytes.
std::uint64_t available_memory_bytes();

// Throws InputError naming the scenario when `ranks` ranks of bytes_per_rank(plan) exceed `available_bytes`.
void check_memory(const Plan& plan, std::uint64_t available_bytes);

}  // namespace commsim::hw
