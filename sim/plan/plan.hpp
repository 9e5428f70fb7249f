// The Plan: what every rank does in each training step, derived once from a Scenario and executed as-is by the
// simulator and by the hardware backends. A step is a small DAG of tasks on streams: stream 0 computes (forward and
// backward, layer by layer), streams 1..n communicate (Paddle nccl_comm_num); tasks on one stream run in order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/schedules.hpp"

namespace commsim {

// What a task is; a backend dispatches on it and infers nothing.
enum class TaskKind : std::uint8_t {
  Compute,     // stream 0: a layer's forward or backward, `seconds` x the step's straggler factor
  Cast,        // before collective `prepares`: its fp32 data cast to the comm dtype, and back after it (`seconds`
               // covers both ways)
  TopK,        // before DGC gather `prepares`: the gradients added to the residual and the top `kept` of it
               // selected as (value, int32 index) pairs (`seconds` also covers decoding the gathered pairs)
  Collective,  // `collective` over all ranks (or the spec's ranks), for `purpose`
};

// What a collective is for; it fixes the buffer the collective reads and writes back (buffer_of).
enum class Purpose : std::uint8_t {
  DenseGradients,    // allreduce of gradients (reduce-scatter when sharded); the sum becomes the average
  SparseGather,      // DGC: all-gather of every rank's `kept` (value, index) pairs; their sum becomes the average
  ParameterGather,   // sharded data parallel: all-gather of the parameter shards
  ParameterAverage,  // Local SGD: allreduce of the parameters; the sum becomes the average
  LossAverage,       // adaptive Local SGD: allreduce of the scalar loss (one element), every step
};

// The per-rank state a collective moves.
enum class Buffer : std::uint8_t { Gradients, Parameters, Loss };
Buffer buffer_of(Purpose purpose);
// The loss buffer holds one fp32 scalar; a LossAverage collective names no tensors and moves this many elements.
constexpr std::uint64_t kLossElements = 1;

std::string_view to_string(TaskKind kind);
std::string_view to_string(Purpose purpose);
std::string_view to_string(Buffer buffer);

// Elements [offset, offset + count) of the buffer a task's tensors make, concatenated in the listed order.
struct ElementRange {
  std::uint64_t offset = 0, count = 0;
};

// One task of a step. Which fields matter depends on `kind` (see TaskKind); a tagged struct rather than a variant,
// so that what every task has (stream, dependencies, label, tensors) is read the same way for all of them.
struct Task {
  TaskKind kind = TaskKind::Compute;
  int stream = 0;
  double seconds = 0;      // Compute / Cast / TopK
  int prepares = -1;       // Cast / TopK: the collective task it prepares (later, on the same stream)
  std::uint64_t kept = 0;  // TopK / SparseGather: the (value, index) pairs each rank selects and sends
  Purpose purpose = Purpose::DenseGradients;  // Collective
  // Collective: fixed costs the simulator charges on its stream around it (libraries/overheads.json): it starts at
  // the first multiple of start_grid_s from the step's start at or after its gradients were ready (Horovod's cycle;
  // within kCycleTolerance_s of a boundary counts as on it), pays overhead_before_s (framework hook,
  // copy into the flat buffer, library launch), then overhead_after_s (copy back). The hardware backends pay their
  // own such costs for real and ignore these.
  double start_grid_s = 0, overhead_before_s = 0, overhead_after_s = 0;
  static constexpr double kCycleTolerance_s = 1e-9;
  CollectiveSpec collective;  // Collective
  double bytes_sent_per_rank = 0;
  std::vector<int> deps;  // earlier tasks of the same step
  std::string label;
  int bucket = -1;           // for the trace and for the hardware backends
  std::vector<int> tensors;  // tensors this task works on (indices into Model::tensors), in the buffer's order
  // Collective and its Cast, under strategy.partition_mb: the piece of `tensors` it moves; count 0 = all of them.
  ElementRange piece;
  int gradient_layer = -1;  // Compute, backward: the layer whose gradients this task produces (for the trace)
  int forward_layer = -1;   // Compute, forward: the layer it computes (the next step's gate under forward_order)
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
  // What the backends and the reports need to know of the scenario, besides the tasks (a Plan carries no Scenario).
  std::string scenario_name;
  std::string scenario_file;  // names the scenario in errors about it
  int batch_per_gpu = 0;
  CommDtype comm_dtype = CommDtype::Fp32;  // every collective's element type (Cast tasks around narrower ones)
  Algorithm algorithm = Algorithm::Auto;   // strategy.algorithm as asked (the NCCL backend sets NCCL_ALGO from it)
  int hierarchy_groups = 0;                // hierarchical allreduce: groups (leaders); 0 = one group per node
  bool local_sgd = false;                  // ranks keep their own parameters between averages
  bool sharded = false;                    // ranks keep parameter shards (ZeRO stage 2 or 3)
  bool dgc = false;                        // ranks keep DGC residuals
  int steady_from = 0;                     // first step of the steady state (steady_state_start, schedules.hpp)
  // strategy.priority. ForwardOrder: a communication stream runs the ready collective of the earliest forward layer
  // first, and the next step's forward of layer i waits for the collectives of layer i's gradients only (the
  // simulator; the hardware backends run every stream in the listed order with a barrier between steps).
  CommPriority priority = CommPriority::Fifo;

  Model model;
  int ranks = 0;
  int streams = 1;  // communication streams
  std::vector<Bucket> buckets;
  std::vector<StepPlan> step_plans;    // the distinct step plans
  std::vector<int> step_plan_of;       // per step: index into step_plans
  std::vector<double> compute_factor;  // per step: straggler slowdown of the critical rank
  // Per step: the rank whose timeline the step follows (the slowest since the last synchronisation); -1 for a
  // Local SGD local step, which follows the mean of the ranks. Without stragglers every rank is the same: 0.
  std::vector<int> critical_rank;
  bool symmetric_ranks = true;     // no stragglers: every rank runs the same timeline
  double compute_s = 0;            // one step's compute on an unslowed rank
  std::vector<std::string> notes;  // assumptions stated in the output

  int steps() const { return static_cast<int>(step_plan_of.size()); }
  const StepPlan& step_plan(int step) const { return step_plans[static_cast<std::size_t>(step_plan_of[step])]; }
};

// Paddle's hierarchical allreduce groups of this Plan: consecutive ranks, `ranks_per_node` each by default, else
// ranks / hierarchy_groups (hierarchical_allreduce_leaders / _group_size); every backend forms these same groups.
// Throws InputError when the groups do not divide the ranks.
int hierarchy_group_size(const Plan& plan, int ranks_per_node);

// Builds the plan from values only (the scenario, its topology and its model, loaded by prepare_run); throws
// InputError for impossible settings (bucket index past the last tensor, too few ranks, too many pieces).
Plan build_plan(const Scenario& scenario, const Topology& topology, Model model);

// The forward layer a collective task's gradients are needed by first: the lowest layer of its tensors (-1: none).
int earliest_layer(const Task& task, const Model& model);

}  // namespace commsim
