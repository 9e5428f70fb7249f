// The data-parallel step kinds that synchronise buckets: Sync (allreduce every bucket), DgcSparse (DGC's top-k and
// sparse gather for large tensors) and Local SGD's LocalOnly / LocalAverage.
#include <cmath>

#include "sim/plan/plan_builder.hpp"

namespace commsim {

namespace {

// The pairs DGC keeps of a tensor of `elements`: Paddle's k = static_cast<int>(numel * ratio) with ratio = 1 -
// sparsity in float (paddle/phi/kernels/gpu/dgc_kernel.cu, DGCKernel), so truncated, not rounded up.
std::uint64_t dgc_kept(std::uint64_t elements, double sparsity) {
  const float ratio = 1.0F - static_cast<float>(sparsity);
  return static_cast<std::uint64_t>(static_cast<float>(elements) * ratio);
}

// DGC on one bucket (one tensor: Paddle runs DGC unfused, plan.cpp make_buckets): tensors of at least min_elements
// are sparsified (top-k selection, then an all-gather of (value, index) pairs); the rest are allreduced.
void dgc_bucket(const StepBuilder& b, StepPlan& step, const Bucket& bucket, int index, const std::vector<int>& deps) {
  const Strategy& st = b.sc.strategy;
  const std::string name = "bucket " + std::to_string(index);
  std::vector<int> sparse, dense;
  for (int t : bucket.tensors) (b.model.tensors[t].elements >= st.dgc->min_elements ? sparse : dense).push_back(t);
  if (!sparse.empty()) {
    const std::uint64_t elements = elements_of(b.model, sparse);
    double kept = 0;
    for (int t : sparse) kept += static_cast<double>(dgc_kept(b.model.tensors[t].elements, step.sparsity));
    Task select;
    select.kind = TaskKind::TopK;
    select.stream = bucket.stream;
    // A rank's DGC work on the fp32 gradient: add it to the residual (read 2, write 1), one pass against a sampled
    // threshold to select (DGC paper, sec. 3), and decoding the gathered pairs: clear the dense sum (1), average it
    // into the gradient (2) -- seven memory passes, or the device's measured dgc_Bps for all of it -- plus p x kept
    // scattered adds (~16 B each). Priced here, before the gather, on the same stream: the stream is busy for the
    // same time.
    const Device& device = b.sc.device;
    const double gradient_bytes = 4.0 * static_cast<double>(elements);
    const double scattered_bytes = 16.0 * b.ranks * kept;
    select.seconds = device.dgc_Bps > 0 ? gradient_bytes / device.dgc_Bps + scattered_bytes / device.memory_Bps
                                        : (7.0 * gradient_bytes + scattered_bytes) / device.memory_Bps;
    select.kept = static_cast<std::uint64_t>(kept);
    select.deps = deps;
    select.label = "top-k " + name;
    select.bucket = index;
    select.tensors = sparse;
    const int s = b.add(step, select);
    // Every rank contributes kept pairs of (value in comm dtype, int32 index): the gathered output is p times that.
    Task gather;
    gather.kind = TaskKind::Collective;
    gather.purpose = Purpose::SparseGather;
    gather.kept = select.kept;
    gather.stream = bucket.stream;
    gather.collective = b.collective(
        Collective::AllGather, static_cast<Bytes>(kept * (dtype_bytes(st.comm_dtype) + 4) * b.ranks), Algorithm::Ring);
    gather.bytes_sent_per_rank = b.sent_per_rank(gather.collective);
    gather.deps = {s};
    gather.label = "dgc allgather " + name;
    gather.bucket = index;
    gather.tensors = sparse;
    step.tasks[static_cast<std::size_t>(s)].prepares = b.add(step, gather);
  }
  if (!dense.empty())
    b.communicate(step, bucket.stream, Collective::AllReduce, elements_of(b.model, dense), deps, name + " dense", index,
                  dense, st.algorithm, Purpose::DenseGradients);
}

// Adaptive Local SGD averages the loss in every step: AdaptiveLocalSGDOptimizer._generate_avg_loss appends an
// allreduce of the scalar loss (on the calc stream, then c_sync_calc_stream) to the main block, not to the branch
// it is called from, and minimize_impl calls it twice (`initialize` and `communicate_avg_loss`), so both run in every
// step, after the update and before the parameters are averaged (localsgd_optimizer.py at f8704b3). Here they run
// on communication stream 1 after backward: nothing else computes until the step ends, so the calc stream would
// wait for them just as long. The loss is one fp32 (the MPI backend sends it in the comm dtype, as every collective
// it runs); the library's launch is its only fixed cost (no bucket copies).
int loss_allreduces(const StepBuilder& b, StepPlan& step, int after) {
  for (int i = 1; i <= 2; ++i) {
    Task t;
    t.kind = TaskKind::Collective;
    t.purpose = Purpose::LossAverage;
    t.stream = 1;
    t.collective = b.collective(Collective::AllReduce, 4 * kLossElements, Algorithm::Auto);
    t.bytes_sent_per_rank = b.sent_per_rank(t.collective);
    t.overhead_before_s = b.overheads.launch_s;
    t.deps = {after};
    t.label = "loss allreduce " + std::to_string(i);
    after = b.add(step, t);
  }
  return after;
}

}  // namespace

StepPlan sync_step(const StepBuilder& b, const std::vector<Bucket>& buckets, StepKind kind, double sparsity) {
  const Strategy& st = b.sc.strategy;
  StepPlan step;
  step.kind = kind;
  step.sparsity = sparsity;
  std::vector<int> backward = b.compute_pass(step);
  const int backward_end = backward.front();
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& bucket = buckets[i];
    const std::vector<int> deps = {st.overlap ? backward[bucket.ready_layer] : backward_end};
    if (kind == StepKind::DgcSparse) {
      dgc_bucket(b, step, bucket, static_cast<int>(i), deps);
      continue;
    }
    allreduce_bucket(b, step, bucket, static_cast<int>(i), deps.front());
  }
  return step;
}

StepPlan local_step(const StepBuilder& b, const std::vector<Bucket>& buckets, bool average) {
  StepPlan step;
  step.kind = average ? StepKind::LocalAverage : StepKind::LocalOnly;
  const std::vector<int> backward = b.compute_pass(step);
  int last = backward.front();  // what the averages wait for
  if (b.sc.strategy.localsgd->adaptive) last = loss_allreduces(b, step, last);
  if (!average) return step;
  for (std::size_t i = 0; i < buckets.size(); ++i)
    b.communicate(step, buckets[i].stream, Collective::AllReduce, buckets[i].elements, {last},
                  "average " + std::to_string(i), static_cast<int>(i), buckets[i].tensors, b.sc.strategy.algorithm,
                  Purpose::ParameterAverage);
  return step;
}

}  // namespace commsim
