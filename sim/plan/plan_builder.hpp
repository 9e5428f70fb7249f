// The parts build_plan assembles a Plan from (internal to sim/plan/plan*.cpp): a StepBuilder that adds compute
// passes and collectives (with their casts and fixed costs) to a step, and one function per family of step kinds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan/plan.hpp"
#include "sim/scenario/overheads.hpp"

namespace commsim {

constexpr double kMB = 1024.0 * 1024.0;  // fusion sizes are MiB, as PyTorch's bucket_cap_mb and MindSpore's

struct StepBuilder {
  const Scenario& sc;
  const Model& model;
  const Topology& topo;
  int ranks;
  int streams;
  std::vector<double> forward_s, backward_s;
  Overheads overheads;

  CollectiveSpec collective(Collective op, Bytes bytes, Algorithm algorithm) const;
  // Bytes each rank sends in the collective, on average over ranks.
  double sent_per_rank(const CollectiveSpec& c) const;
  int add(StepPlan& plan, Task t) const;
  int compute(StepPlan& plan, double seconds, const std::string& label, int dep) const;
  // A collective of `elements` in the comm dtype on `stream`, for `purpose`, with its fixed costs, preceded by a
  // Cast when the comm dtype is narrower than fp32; returns the collective's task.
  // `piece` (count > 0) makes it a piece of the tensors' buffer (partition_mb): `elements` is then piece.count.
  int communicate(StepPlan& plan, int stream, Collective op, std::uint64_t elements, std::vector<int> deps,
                  const std::string& label, int bucket, const std::vector<int>& tensors, Algorithm algorithm,
                  Purpose purpose, ElementRange piece = {}) const;
  // Forward compute, each layer after the previous one; returns the last layer's task. A gate >= 0 is a task the
  // layer must also wait for (the all-gather of its parameters under ZeRO-3); so in backward_pass.
  int forward_pass(StepPlan& plan, const std::vector<int>& gate = {}) const;
  // Backward compute after `last`, from the last layer to the first; returns the task of each layer's backward.
  std::vector<int> backward_pass(StepPlan& plan, int last, const std::vector<int>& gate = {}) const;
  std::vector<int> compute_pass(StepPlan& plan) const { return backward_pass(plan, forward_pass(plan)); }
  static int gated(StepPlan& plan, int task, const std::vector<int>& gate, std::size_t layer);
};

std::uint64_t elements_of(const Model& model, const std::vector<int>& tensors);

// A bucket's gradient allreduce: one collective, or under strategy.partition_mb one per piece (partition.cpp).
void allreduce_bucket(const StepBuilder& b, StepPlan& step, const Bucket& bucket, int index, int dep);
// Throws InputError naming strategy.partition_mb when its pieces would be more than the plan keeps.
void check_partition(const Scenario& sc, const std::vector<Bucket>& buckets);

// Gradient synchronisation of every bucket, overlapped with backward or after it (kind Sync), or DGC's top-k and
// sparse gather of its large tensors (kind DgcSparse at `sparsity`).
StepPlan sync_step(const StepBuilder& b, const std::vector<Bucket>& buckets, StepKind kind, double sparsity);
// Local SGD: a local step only computes; an averaging step allreduces the parameters after the local update.
StepPlan local_step(const StepBuilder& b, const std::vector<Bucket>& buckets, bool average);
// Sharded data parallel (ZeRO stage 2 or 3), plan_sharded.cpp.
StepPlan sharded_step(const StepBuilder& b);

}  // namespace commsim
