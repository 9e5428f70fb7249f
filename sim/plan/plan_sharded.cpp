// The sharded data-parallel step (ZeRO stage 2 or 3, FSDP): gradients reduce-scattered during backward; stage 2
// all-gathers the updated parameters at the end of the step. Stage 3 frees each group's gathered parameters after
// use, so it all-gathers them before the group's forward and, once forward is done, again before its backward (the
// group of the last forward layers stays gathered into backward, as FSDP's root unit does); the gathers run on
// stream 1 in the order of use, each running ahead of the compute that needs it by at most sharding.prefetch_buckets
// buckets (prefetch: DeepSpeed stage3_prefetch_bucket_size, FSDP forward_prefetch / backward_prefetch /
// limit_all_gathers). The memory that bounds prefetching in practice is not modelled.
#include <algorithm>

#include "sim/plan/plan_builder.hpp"

namespace commsim {

namespace {

// Buckets of `cap_bytes` in a given tensor order (for sharded all-gathers and reduce-scatters).
std::vector<std::vector<int>> pack(const Model& model, const std::vector<int>& order, double cap_bytes) {
  std::vector<std::vector<int>> groups(1);
  double bytes = 0;
  for (int t : order) {
    groups.back().push_back(t);
    bytes += 4.0 * static_cast<double>(model.tensors[t].elements);
    if (bytes >= cap_bytes) groups.emplace_back(), bytes = 0;
  }
  if (groups.back().empty()) groups.pop_back();
  return groups;
}

class ShardedStep {
 public:
  explicit ShardedStep(const StepBuilder& b)
      : b_(b), st_(b.sc.strategy), layers_(static_cast<int>(b.model.layers.size())) {
    step_.kind = StepKind::Sharded;
    forward_order_.resize(b.model.tensors.size());
    for (std::size_t t = 0; t < forward_order_.size(); ++t) forward_order_[t] = static_cast<int>(t);
    gather_groups_ = pack(b.model, forward_order_, st_.sharding.allgather_fusion_mb * kMB);
    groups_ = static_cast<int>(gather_groups_.size());
    first_layer_.assign(groups_, layers_);
    last_layer_.assign(groups_, -1);
    for (int g = 0; g < groups_; ++g)
      for (int t : gather_groups_[g]) {
        first_layer_[g] = std::min(first_layer_[g], b.model.tensors[t].layer);
        last_layer_[g] = std::max(last_layer_[g], b.model.tensors[t].layer);
      }
  }

  StepPlan build() {
    forward();
    backward();
    scatter_and_gather();
    return std::move(step_);
  }

 private:
  bool stage3() const { return st_.sharding.stage == 3; }

  // The all-gather of parameter group g before the compute of its layers (`gate`), after task `after` (if >= 0).
  void gather(int g, const char* pass, std::vector<int>& gate, int after) {
    std::vector<int> deps;
    if (previous_ >= 0) deps.push_back(previous_);
    if (after >= 0) deps.push_back(after);
    previous_ = b_.communicate(step_, 1, Collective::AllGather, elements_of(b_.model, gather_groups_[g]), deps,
                               std::string("allgather params ") + pass + std::to_string(g), -1, gather_groups_[g],
                               Algorithm::Ring, Purpose::ParameterGather);
    for (int t : gather_groups_[g]) {
      int& layer_gate = gate[b_.model.tensors[t].layer];
      layer_gate = std::max(layer_gate, previous_);  // gathers are chained: the latest one is the last to finish
    }
  }

  // Prefetch depth d (sharding.prefetch_buckets; < 0 unlimited): a gather may start once the compute has reached
  // the bucket d before it in the order of use; d = 0 gathers on demand. Gathers are added just before the first
  // compute task that may depend on them, so every dependency points to an earlier task.
  void forward() {
    const int depth = st_.sharding.prefetch_buckets;
    std::vector<int> gate(layers_, -1);
    forward_.resize(layers_);
    int next = 0;
    for (int l = 0; l < layers_; ++l) {
      // Forward: gather g waits for the layers before bucket g - d to be computed.
      while (stage3() && next < groups_ && (depth < 0 || next <= depth || first_layer_[next - depth] <= l)) {
        const int before = depth < 0 || next <= depth ? -1 : first_layer_[next - depth] - 1;
        gather(next, "fwd ", gate, before >= 0 ? forward_[before] : -1);
        ++next;
      }
      last_ = forward_[l] =
          StepBuilder::gated(step_, b_.compute(step_, b_.forward_s[l], "fwd " + b_.model.layers[l].name, last_), gate,
                             static_cast<std::size_t>(l));
    }
  }

  void backward() {
    const int depth = st_.sharding.prefetch_buckets;
    std::vector<int> gate(layers_, -1);
    backward_.resize(layers_);
    previous_ = last_;       // a group's parameters are freed after its forward: re-gathers start when it is done
    int next = groups_ - 2;  // the group of the last forward layers stays gathered
    for (int l = layers_; l-- > 0;) {
      // Backward: gather g waits for the backward of the layers after bucket g + d.
      while (stage3() && next >= 0 && (depth < 0 || next + depth >= groups_ - 1 || last_layer_[next + depth] >= l)) {
        const int after = depth < 0 || next + depth >= groups_ - 1 ? layers_ : last_layer_[next + depth] + 1;
        gather(next, "bwd ", gate, after < layers_ ? backward_[after] : -1);
        --next;
      }
      last_ = backward_[l] =
          StepBuilder::gated(step_, b_.compute(step_, b_.backward_s[l], "bwd " + b_.model.layers[l].name, last_), gate,
                             static_cast<std::size_t>(l));
    }
  }

  // Gradients reduce-scattered as their groups are ready; stage 2 then all-gathers the updated parameters.
  void scatter_and_gather() {
    std::vector<int> backward_order(forward_order_.rbegin(), forward_order_.rend());
    const auto scatter_groups = pack(b_.model, backward_order, st_.sharding.reducescatter_fusion_mb * kMB);
    std::vector<int> scattered;
    for (std::size_t g = 0; g < scatter_groups.size(); ++g) {
      const int ready = b_.model.tensors[scatter_groups[g].back()].layer;
      const int stream = 1 + static_cast<int>((g + (stage3() ? 1 : 0)) % b_.streams);
      scattered.push_back(b_.communicate(
          step_, stream, Collective::ReduceScatter, elements_of(b_.model, scatter_groups[g]),
          {st_.overlap ? backward_[ready] : backward_.front()}, "reducescatter grads " + std::to_string(g), -1,
          scatter_groups[g], Algorithm::Ring, Purpose::DenseGradients));
    }
    if (st_.sharding.stage == 2)
      for (std::size_t g = 0; g < gather_groups_.size(); ++g)
        b_.communicate(step_, 1 + static_cast<int>(g % b_.streams), Collective::AllGather,
                       elements_of(b_.model, gather_groups_[g]), scattered, "allgather params " + std::to_string(g), -1,
                       gather_groups_[g], Algorithm::Ring, Purpose::ParameterGather);
  }

  const StepBuilder& b_;
  const Strategy& st_;
  const int layers_;
  StepPlan step_;
  std::vector<int> forward_order_;
  std::vector<std::vector<int>> gather_groups_;
  int groups_ = 0;
  std::vector<int> first_layer_, last_layer_;  // per gather group: its lowest and highest layer
  std::vector<int> forward_, backward_;        // per layer: its compute task
  int previous_ = -1, last_ = -1;              // the latest gather; the latest compute task
};

}  // namespace

StepPlan sharded_step(const StepBuilder& b) { return ShardedStep(b).build(); }

}  // namespace commsim
