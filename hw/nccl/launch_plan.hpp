// Plan -> launch translation for the NCCL backend: what every rank enqueues, in order, to execute one step of a
// Plan on CUDA streams. Pure C++ (no CUDA, no NCCL types), so it is built and tested on machines without a GPU;
// the runtime (nccl_runtime.cpp, one op at a time in launch_ops.cpp) executes the list as it is.
//
// Conventions the runtime relies on:
//   * stream 0 computes; streams 1..n communicate (Paddle nccl_comm_num), one set of communicators per stream, so
//     that collectives on different streams can overlap (NCCL serialises the operations of one communicator);
//   * a task's dependencies on another stream become Wait ops on an event its producer Records; dependencies on the
//     same stream are kept by stream order and need nothing;
//   * every op of one step is listed in an order that is valid to enqueue (the Plan's task order is topological),
//     and every rank enqueues the same list, so the operations on each communicator are issued in the same order
//     everywhere (NCCL's requirement for overlapping communicators);
//   * a step begins with stream 0 recording a start event that each used communication stream waits for, and ends
//     with stream 0 waiting for every communication stream (the optimizer needs all gradients), so steps do not
//     overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan/plan.hpp"

namespace commsim::nccl {

// The NCCL collective of a Collective op.
enum class Call : std::uint8_t { AllReduce, ReduceScatter, AllGather, Reduce, Broadcast };

// Element types on the wire.
enum class Dtype : std::uint8_t {
  Float32,
  Float16,
  Bfloat16,
  Float8e4m3,
  Packed32,  // DGC (index, value) pairs packed into 32-bit words: gathered, never reduced
};

// Which communicator of a stream an op uses.
enum class Scope : std::uint8_t {
  World,  // all ranks
  Intra,  // the ranks of this rank's hierarchy group (a node, or 1 / hierarchical_allreduce_leaders of them)
  Inter,  // the group leaders (local index 0 of every group); other ranks hold no such communicator
};

enum class OpKind : std::uint8_t {
  Record,      // cudaEventRecord(event, stream)
  Wait,        // cudaStreamWaitEvent(stream, event)
  Spin,        // compute emulation: busy-wait `seconds` x the step's straggler factor
  CastDown,    // fp32 buffer -> comm-dtype buffer, `count` elements (the rank's shard when `shard`)
  CastUp,      // comm-dtype buffer -> fp32 buffer, times `scale` (fp32 comm dtype: scales in place)
  TopK,        // exact top-`count` of the buffer's `elements` by |g|, packed as (int32 index, comm-dtype value)
  Scatter,     // DGC decompression: zero the dense output, add the ranks x `count` gathered pairs into it
  Collective,  // one NCCL call
};

// One enqueued operation. Which fields matter depends on `kind` (see OpKind).
struct LaunchOp {
  OpKind kind = OpKind::Spin;
  int stream = 0;
  int task = -1;       // the Plan task it executes (-1: step start/end bookkeeping)
  int event = -1;      // Record / Wait: event index in [0, LaunchStep::events)
  int buffer = -1;     // data ops: index into LaunchProgram::buffers
  double seconds = 0;  // Spin, in seconds
  // Collective: the NCCL call, communicator (index into LaunchProgram::comms), count as NCCL takes it
  // (AllReduce/Reduce/Broadcast: elements of the buffer; ReduceScatter: elements received per rank; AllGather:
  // elements sent per rank), datatype and root (rank within the communicator; Reduce/Broadcast only).
  Call call = Call::AllReduce;
  int comm = -1;
  std::uint64_t count = 0;
  Dtype dtype = Dtype::Float32;
  int root = 0;
  // CastDown/CastUp: whether `count` elements start at the rank's shard (rank x count) instead of 0.
  bool shard = false;
  // Collective, CastDown/CastUp: where the op's elements start in the buffer (a partition_mb piece's offset in its
  // tensor group; 0 otherwise).
  std::uint64_t first = 0;
  float scale = 1;             // CastUp (whose dtype is the collective's: the comm dtype's copy, or fp32 in place)
  std::uint64_t elements = 0;  // TopK / Scatter: dense elements of the buffer
};

// A communicator: one per (communication stream, scope) used.
struct CommSpec {
  int stream = 1;
  Scope scope = Scope::World;
};

// Device memory of one group of tensors (a bucket, or the DGC sparse / dense part of one, or a sharded group).
// Sizes are the largest any step asks for.
struct BufferSpec {
  std::vector<int> tensors;          // indices into Model::tensors
  Buffer holds = Buffer::Gradients;  // the state it is (gradients or parameters), from the tasks' purpose
  std::uint64_t elements = 0;  // fp32 gradient / parameter elements (padded to a multiple of the ranks when sharded)
  bool comm_copy = false;      // a comm-dtype copy of `elements` is needed (comm dtype narrower than fp32)
  std::uint64_t packed_words = 0;    // DGC: 32-bit words one rank sends
  std::uint64_t gathered_words = 0;  // DGC: ranks x packed_words
  bool dense_output = false;         // DGC: an fp32 output of `elements` for the decompressed sum
};

struct LaunchStep {
  StepKind kind = StepKind::Sync;
  double sparsity = 0;
  int events = 0;  // events the step records (per rank)
  std::vector<LaunchOp> ops;
};

// The whole Plan, translated: per distinct step kind (parallel to Plan::step_plans) the ops, plus the communicators and
// buffers they name.
struct LaunchProgram {
  int ranks = 0;
  int group_size = 0;  // ranks per hierarchy group (Intra communicator size)
  int streams = 1;     // communication streams
  CommDtype comm_dtype = CommDtype::Fp32;
  std::vector<CommSpec> comms;
  std::vector<BufferSpec> buffers;
  std::vector<LaunchStep> step_plans;
};

// Translates the whole Plan. `ranks_per_node` comes from the topology (Topology::ranks_per_node()).
LaunchProgram translate_plan(const Plan& plan, int ranks_per_node);

// The ops of one step (as translate_plan lists them for that step kind; communicator and buffer indices refer to a
// program holding only this step).
std::vector<LaunchOp> translate(const Plan& plan, const StepPlan& step, int ranks_per_node);

int dtype_size(Dtype d);  // bytes per element
Dtype wire_dtype(CommDtype d);
std::string to_string(Call c);   // "AllReduce", ...
std::string to_string(Dtype d);  // nccl-tests' type names: "float", "half", "bfloat16", "f8e4m3", "packed32"
std::string to_string(Scope s);  // "world", "intra", "inter"
// One line per op, for `--dry-run` and for test failure messages, e.g.
// "s1 ncclAllReduce comm 0 (s1 world) count 2048 float sum buffer 0".
std::string describe(const LaunchOp& op, const LaunchProgram& program);
// The whole program, one op a line with the Plan task's label, per step kind (what `--dry-run` prints).
std::string format_program(const Plan& plan, const LaunchProgram& program);

}  // namespace commsim::nccl
