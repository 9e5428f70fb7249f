// The Plan: what every rank does in each training step, derived once from a Scenario and executed as-is by the
// simulator and by the hardware backends. A step is a small DAG of tasks on streams: stream 0 computes (forward and
// backward, layer by layer), streams 1..n communicate (Paddle nccl_comm_num); tasks on one stream run in order.
#pragma once

#include <string>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/training/scenario.hpp"
#include "sim/training/schedules.hpp"

namespace commsim {

enum class TaskKind : std::uint8_t {
  Compute,     // layer compute on stream 0, seconds scaled by the step's straggler factor
  Delay,       // fixed-time work on a communication stream (casts, top-k selection)
  Collective,  // a collective over all ranks (or the spec's ranks)
};

struct Task {
  TaskKind kind = TaskKind::Compute;
  int stream = 0;
  double seconds = 0;  // Compute / Delay
  // Collective: fixed costs the simulator charges on its stream around it (libraries/overheads.json): it starts at
  // the next multiple of start_grid_s after it is ready (Horovod's cycle), pays overhead_before_s (framework hook,
  // copy into the flat buffer, library launch), then overhead_after_s (copy back). The hardware backends pay their
  // own such costs for real and ignore these.
  double start_grid_s = 0, overhead_before_s = 0, overhead_after_s = 0;
  CollectiveSpec collective;  // Collective
  double bytes_sent_per_rank = 0;
  std::vector<int> deps;  // earlier tasks of the same step
  std::string label;
  int bucket = -1;           // for the trace and for the hardware backends
  std::vector<int> tensors;  // gradient tensors this task communicates (indices into Model::tensors)
  int gradient_layer = -1;   // Compute, backward: the layer whose gradients this task produces (for the trace)
};

struct Bucket {
  std::vector<int> tensors;  // in backward order
  std::uint64_t elements = 0;
  int ready_layer = 0;  // its last gradient is ready when this layer's backward ends
  int stream = 1;
};

enum class StepKind : std::uint8_t { Sync, DgcSparse, LocalOnly, LocalAverage, Sharded };

struct StepPlan {
  StepKind kind = StepKind::Sync;
  double sparsity = 0;  // DgcSparse
  std::vector<Task> tasks;
};

struct Plan {
  Scenario scenario;
  Model model;
  int ranks = 0;
  int streams = 1;  // communication streams
  std::vector<Bucket> buckets;
  std::vector<StepPlan> kinds;         // distinct step plans
  std::vector<int> step_kind;          // per step: index into kinds
  std::vector<double> compute_factor;  // per step: straggler slowdown of the critical rank
  // Per step: the rank whose timeline the step follows (the slowest since the last synchronisation); -1 for a
  // Local SGD local step, which follows the mean of the ranks. Without stragglers every rank is the same: 0.
  std::vector<int> critical_rank;
  bool symmetric_ranks = true;     // no stragglers: every rank runs the same timeline
  double compute_s = 0;            // one step's compute on an unslowed rank
  std::vector<std::string> notes;  // assumptions stated in the output
};

// Builds the plan; throws InputError for impossible settings (bucket index past the last tensor, too few ranks).
Plan build_plan(const Scenario& scenario, const Topology& topology);

}  // namespace commsim
