// PyTorch profiler (Kineto) Chrome traces: what `torch.profiler.profile(...).export_chrome_trace()` writes for one
// rank, read for `commsim model from-trace` and `commsim validate --trace` (docs/model-format.md, "From a profiler
// trace"). What is read, with the names PyTorch gives it:
//   - steps: "ProfilerStep#N" spans (cat user_annotation; cpu_op in older releases), one per prof.step();
//   - forward per module: "nn.Module: NAME" spans (cat python_function, with_stack=True / with_modules=True); the
//     innermost (leaf) modules are the layers;
//   - backward per module: "autograd::engine::evaluate_function: ..." cpu_op spans, joined to the module whose
//     forward op carried the same "Sequence number" arg (how autograd links the two in the profiler);
//   - collectives: NCCL kernels (cat kernel, "ncclDevKernel_*" / "ncclKernel_*") where there are any, otherwise the
//     "record_param_comms" cpu_op spans (CPU process groups); sizes from their args "Collective name",
//     "In msg nelems", "Out msg nelems", "dtype", "Group size" (torch/csrc/profiler/util.h kCommsName ... kGroupSize;
//     libkineto/src/output_json.cpp copies them from record_param_comms onto the NCCL kernel).
// Times in the trace are microseconds (ts, dur); here seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/model.hpp"

namespace commsim {

struct TracedModule {
  std::string name;                  // as in the trace, without "nn.Module: "
  double forward_s = 0;              // per step, mean over the traced steps
  double backward_s = 0;             // per step, mean
  double first_backward_end_s = -1;  // when its backward ended in the first step (-1: it has none)
};

struct TracedCollective {
  std::string name;            // "Collective name" (allreduce, _allgather_base, ...)
  std::string dtype;           // "Float", "BFloat16", ...
  std::uint64_t elements = 0;  // max(In msg nelems, Out msg nelems)
  int bytes_per_element = 4;
  int group_size = 0;
  int step = 0;           // index into KinetoTrace::steps
  std::size_t event = 0;  // index in traceEvents of the span that named it (for errors)
  double start_s = 0, duration_s = 0;
  double issued_s = 0;  // when the host issued it: an NCCL kernel's launch, else start_s
};

struct TracedStep {
  std::string name;  // ProfilerStep#N
  double start_s = 0, duration_s = 0;
  double compute_s = 0;          // union of the step's compute spans
  double backward_start_s = -1;  // its first backward op's start (-1: none traced)
  double busy_s = 0;             // union of its compute and collective spans
  // N of "ProfilerStep#N" (the N-th step since the profiler started); none where the name holds no such number.
  std::optional<int> number() const;
};

// Where a trace's collectives were read from: NCCL kernels, a CPU process group's work spans (gloo:, mpi:), or the
// record_param_comms spans themselves (the MPI backend's traces before it wrote work spans).
enum class CollectiveSource { NcclKernels, WorkSpans, Records };
std::string_view to_string(CollectiveSource source);

struct KinetoTrace {
  std::vector<TracedStep> steps;              // in time order
  std::vector<TracedModule> modules;          // leaf modules, forward order of the first step
  std::vector<TracedCollective> collectives;  // the gradients' (from the backward on), every step, in time order
  // Collectives a step ran before its backward (DDP's buffer broadcast): not gradients, not in the model.
  std::vector<TracedCollective> forward_collectives;
  CollectiveSource collective_source = CollectiveSource::Records;
  bool compute_on_gpu = false;  // compute is the GPU's work (the trace has kernels), else host spans

  double mean_step_s() const;
  // Step time minus compute, per step, mean: the simulator's exposed communication (Result::exposed_comm_s).
  double mean_exposed_comm_s() const;
  // The n-th collective of every step, mean duration; collectives_per_step() of them (the first step's count).
  std::size_t collectives_per_step() const;
  double mean_collective_s(std::size_t index) const;
};

// The time the spans [from, to) cover within [from_s, to_s), each instant once.
double covered_s(std::vector<std::pair<double, double>> spans, double from_s, double to_s);

// Reads a trace; a trace without steps, or a collective without its size, is an InputError naming the file and the
// event's field (traceEvents[i].args.In msg nelems).
KinetoTrace read_kineto_trace(const std::string& path);

// A model with measured times: one layer per leaf module (forward_s, backward_s per sample = per-step time / batch),
// and the gradients as the trace communicates them: one tensor per collective of the first step ("bucket.K", its
// element count), attached to the layer whose backward had ended last when that collective started (so the same
// bucket size re-creates the same buckets). Needs at least one module and one collective.
Model model_from_trace(const KinetoTrace& trace, const std::string& path, const std::string& name, int batch = 1);

}  // namespace commsim
