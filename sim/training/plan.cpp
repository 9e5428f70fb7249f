#include "sim/training/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"

namespace commsim {

namespace {

constexpr double kMB = 1024.0 * 1024.0;  // fusion sizes are MiB, as PyTorch's bucket_cap_mb and MindSpore's

struct Builder {
  const Scenario& sc;
  const Model& model;
  const Topology& topo;
  int ranks;
  int streams;
  std::vector<double> forward_s, backward_s;
  Overheads overheads;

  CollectiveSpec collective(Collective op, Bytes bytes, Algorithm algorithm) const {
    CollectiveSpec c;
    c.op = op;
    c.algorithm = algorithm;
    c.bytes = bytes;
    c.channels = sc.strategy.channels > 0 ? sc.strategy.channels : topo.default_channels();
    c.hierarchy_groups = sc.strategy.hierarchical_allreduce_leaders;
    c.ranks_per_node = topo.ranks_per_node();
    // Gamma: a reduction reads two operands and writes one at memory speed.
    c.reduce_Bps = sc.device.memory_Bps / 3;
    return c;
  }
  // Bytes each rank sends in the collective, on average over ranks.
  double sent_per_rank(const CollectiveSpec& c) const {
    CollectiveSpec resolved = c;
    resolved.algorithm = choose_algorithm(c, topo);
    return total_transfer_bytes(resolved, ranks) / ranks;
  }
  int add(StepPlan& plan, Task t) const {
    plan.tasks.push_back(std::move(t));
    return static_cast<int>(plan.tasks.size() - 1);
  }
  int compute(StepPlan& plan, double seconds, const std::string& label, int dep) const {
    Task t;
    t.kind = TaskKind::Compute;
    t.seconds = seconds;
    t.label = label;
    if (dep >= 0) t.deps.push_back(dep);
    return add(plan, t);
  }
  // A collective on `stream` with its fixed costs (libraries/overheads.json), preceded by a cast when the gradients
  // travel in a narrower dtype. Before it: the framework's per-bucket work (hook, event record/wait), the copy of the
  // gradients into the flat buffer and the library's host-side launch, started on the framework's cycle (Horovod);
  // after it, the copy back. The collective's own fixed latency (NCCL's baseLat and per-step hwLat, or the links'
  // alpha) stays in its price: launch_s is only the host side that NCCL's model leaves out.
  int communicate(StepPlan& plan, int stream, Collective op, std::uint64_t elements, double bytes_per_element,
                  std::vector<int> deps, const std::string& label, int bucket, const std::vector<int>& tensors,
                  Algorithm algorithm) const {
    if (sc.strategy.comm_dtype != CommDtype::Fp32) {
      // Cast down before and up after: read 4 + write b bytes, then read b + write 4, per element.
      Task cast;
      cast.kind = TaskKind::Delay;
      cast.stream = stream;
      cast.seconds =
          2.0 * static_cast<double>(elements) * (4 + dtype_bytes(sc.strategy.comm_dtype)) / sc.device.memory_Bps;
      cast.deps = deps;
      cast.label = "cast " + label;
      cast.bucket = bucket;
      deps = {add(plan, cast)};
    }
    Task t;
    t.kind = TaskKind::Collective;
    t.stream = stream;
    t.collective =
        collective(op, static_cast<Bytes>(std::ceil(static_cast<double>(elements) * bytes_per_element)), algorithm);
    t.bytes_sent_per_rank = sent_per_rank(t.collective);
    t.deps = std::move(deps);
    t.label = label;
    t.bucket = bucket;
    t.tensors = tensors;
    const Overheads& o = overheads;
    const double gradient_bytes = 4.0 * static_cast<double>(elements);  // the fp32 gradients the buckets hold
    t.start_grid_s = o.cycle_s;
    t.overhead_before_s = o.per_bucket_s + o.launch_s + o.copy_in_passes * gradient_bytes / sc.device.memory_Bps;
    t.overhead_after_s = o.copy_out_passes * gradient_bytes / sc.device.memory_Bps;
    return add(plan, t);
  }

  // Forward compute, each layer after the previous one; returns the last layer's task. A gate >= 0 is a task the
  // layer must also wait for (the all-gather of its parameters under ZeRO-3); so in backward_pass.
  int forward_pass(StepPlan& plan, const std::vector<int>& gate = {}) const {
    int last = -1;
    for (std::size_t l = 0; l < model.layers.size(); ++l)
      last = gated(plan, compute(plan, forward_s[l], "fwd " + model.layers[l].name, last), gate, l);
    return last;
  }
  // Backward compute after `last`, from the last layer to the first; returns the task of each layer's backward.
  std::vector<int> backward_pass(StepPlan& plan, int last, const std::vector<int>& gate = {}) const {
    std::vector<int> backward(model.layers.size());
    for (std::size_t l = model.layers.size(); l-- > 0;) {
      last = backward[l] = gated(plan, compute(plan, backward_s[l], "bwd " + model.layers[l].name, last), gate, l);
      plan.tasks[last].gradient_layer = static_cast<int>(l);
    }
    return backward;
  }
  std::vector<int> compute_pass(StepPlan& plan) const { return backward_pass(plan, forward_pass(plan)); }
  static int gated(StepPlan& plan, int task, const std::vector<int>& gate, std::size_t layer) {
    if (!gate.empty() && gate[layer] >= 0) plan.tasks[task].deps.push_back(gate[layer]);
    return task;
  }
};

std::vector<Bucket> make_buckets(const Scenario& sc, const Model& model) {
  const Fusion& f = sc.strategy.fusion;
  const int n = static_cast<int>(model.tensors.size());
  std::vector<std::vector<int>> groups;  // each in backward order
  if (f.mode == FusionMode::None) {
    for (int t = n - 1; t >= 0; --t) groups.push_back({t});
  } else if (f.mode == FusionMode::Index) {
    // MindSpore all_reduce_fusion_config: indices split the forward-ordered tensors; the last group is launched first.
    if (f.indices.empty()) throw InputError(sc.file, "strategy.fusion.indices", "needs at least one split index");
    if (f.indices.back() >= n)
      throw InputError(sc.file, "strategy.fusion.indices",
                       "split index " + std::to_string(f.indices.back()) + " is past the last tensor (the model has " +
                           std::to_string(n) + ")");
    std::vector<int> bounds{0};
    bounds.insert(bounds.end(), f.indices.begin(), f.indices.end());
    bounds.push_back(n);
    for (std::size_t g = bounds.size() - 1; g-- > 0;) {
      std::vector<int> group;
      for (int t = bounds[g + 1] - 1; t >= bounds[g]; --t) group.push_back(t);
      groups.push_back(group);
    }
  } else {
    // Size: fill in backward order until the bucket reaches its cap (PyTorch DDP Reducer; MindSpore "size"/"auto").
    double cap = (f.mode == FusionMode::Size ? f.first_bucket_cap_mb() : f.size_mb) * kMB;
    std::vector<int> group;
    double bytes = 0;
    for (int t = n - 1; t >= 0; --t) {
      group.push_back(t);
      bytes += 4.0 * static_cast<double>(model.tensors[t].elements);
      if (bytes >= cap) {
        groups.push_back(group);
        group.clear();
        bytes = 0;
        cap = f.size_mb * kMB;
      }
    }
    if (!group.empty()) groups.push_back(group);
  }
  std::vector<Bucket> buckets;
  for (auto& g : groups) {
    Bucket b;
    b.tensors = g;
    b.ready_layer = model.tensors[g.back()].layer;  // lowest forward index: its gradient comes last
    for (int t : g) b.elements += model.tensors[t].elements;
    buckets.push_back(b);
  }
  return buckets;
}

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

std::uint64_t elements_of(const Model& model, const std::vector<int>& tensors) {
  std::uint64_t e = 0;
  for (int t : tensors) e += model.tensors[t].elements;
  return e;
}

// The hierarchy's groups as a number of leaders: a group size (Paddle's inter_nranks) becomes ranks / size.
Scenario with_hierarchy_leaders(Scenario sc, int ranks) {
  const int size = sc.strategy.hierarchical_allreduce_group_size;
  if (size <= 0) return sc;
  if (size >= ranks || ranks % size != 0)
    throw InputError(sc.file, "strategy.hierarchical_allreduce_group_size",
                     "groups of " + std::to_string(size) + " ranks do not split the " + std::to_string(ranks) +
                         " ranks into two or more equal groups");
  sc.strategy.hierarchical_allreduce_leaders = ranks / size;
  return sc;
}

}  // namespace

Plan build_plan(const Scenario& given, const Topology& topo) {
  Plan plan;
  plan.scenario = with_hierarchy_leaders(given, topo.ranks());
  const Scenario& sc = plan.scenario;
  plan.model = load_model(sc.model_path);
  plan.ranks = topo.ranks();
  plan.streams = sc.strategy.nccl_comm_num;
  const Model& model = plan.model;
  if (plan.ranks < 2)
    throw InputError(sc.file, "nodes",
                     "data parallelism needs at least 2 ranks, the cluster has " + std::to_string(plan.ranks));
  CollectiveSpec probe;
  probe.algorithm = sc.strategy.algorithm;
  probe.hierarchy_groups = sc.strategy.hierarchical_allreduce_leaders;
  probe.ranks_per_node = topo.ranks_per_node();
  check_supported(probe, plan.ranks, sc.file + ": strategy");
  for (auto& [rank, factor] : sc.strategy.stragglers.slow_ranks)
    if (rank >= plan.ranks)
      throw InputError(sc.file, "strategy.stragglers.slow_ranks." + std::to_string(rank),
                       "no such rank (the cluster has " + std::to_string(plan.ranks) + ")");

  Builder b{sc, model, topo, plan.ranks, plan.streams, {}, {}, resolve_overheads(sc.framework, topo.library().kind)};
  const double rate = sc.device.peak_flops * sc.device.efficiency;
  for (const Layer& l : model.layers) {
    b.forward_s.push_back(l.forward_s_per_sample >= 0 ? l.forward_s_per_sample * sc.batch_per_gpu
                                                      : l.forward_flops_per_sample * sc.batch_per_gpu / rate);
    b.backward_s.push_back(l.backward_s_per_sample >= 0 ? l.backward_s_per_sample * sc.batch_per_gpu
                                                        : l.backward_flops_per_sample * sc.batch_per_gpu / rate);
    plan.compute_s += b.forward_s.back() + b.backward_s.back();
  }
  if (!(plan.compute_s <= kMaxSimulatedSeconds))
    throw InputError(sc.file, "device.peak_flops",
                     "a step's compute takes " + std::to_string(plan.compute_s) +
                         " s (the model's FLOPs / (peak_flops x efficiency), or its measured "
                         "times, x batch_per_gpu), beyond the simulated range of 100 days: is peak_flops in FLOP/s?");
  plan.buckets = make_buckets(sc, model);
  for (std::size_t i = 0; i < plan.buckets.size(); ++i) plan.buckets[i].stream = 1 + static_cast<int>(i % plan.streams);
  const Strategy& st = sc.strategy;
  plan.notes.push_back("compute: FLOPs / (" + sc.device.name +
                       " peak x efficiency); backward = 2x forward unless the model says otherwise");
  {
    const Overheads& o = b.overheads;
    char note[256];
    std::snprintf(note, sizeof note,
                  "fixed costs (libraries/overheads.json): framework %s, %.3g us launch per collective, %.3g us per "
                  "bucket, copies of %.3g passes over a bucket, cycle %.3g ms",
                  sc.framework.name.c_str(), o.launch_s * 1e6, o.per_bucket_s * 1e6,
                  o.copy_in_passes + o.copy_out_passes, o.cycle_s * 1e3);
    plan.notes.push_back(note);
    if (const int sms = topo.library().sms; sms > 0)
      plan.notes.push_back("interference: while collectives of K channels in all run, compute runs at (" +
                           std::to_string(sms) + " - K) / " + std::to_string(sms) +
                           " of its speed (one SM per NCCL channel); compute time includes it");
  }
  plan.notes.push_back("stragglers: synchronous steps wait for the slowest rank; Local SGD only at each averaging");
  plan.notes.push_back(
      "flow fidelity: rings of more than 32768 transfers run as one flow per ring edge (same uncontended time)");

  // Gradient synchronisation of every bucket, overlapped with backward or after it.
  auto sync_step = [&](StepKind kind, double sparsity) {
    StepPlan step;
    step.kind = kind;
    step.sparsity = sparsity;
    std::vector<int> backward = b.compute_pass(step);
    const int backward_end = backward.front();
    for (std::size_t i = 0; i < plan.buckets.size(); ++i) {
      const Bucket& bucket = plan.buckets[i];
      const std::vector<int> deps = {st.overlap ? backward[bucket.ready_layer] : backward_end};
      const std::string name = "bucket " + std::to_string(i);
      if (kind != StepKind::DgcSparse) {
        b.communicate(step, bucket.stream, Collective::AllReduce, bucket.elements, dtype_bytes(st.comm_dtype), deps,
                      name, static_cast<int>(i), bucket.tensors, st.algorithm);
        continue;
      }
      // DGC: tensors of at least min_elements are sparsified: top-k selection, then an AllGather of (value, index).
      std::vector<int> sparse, dense;
      for (int t : bucket.tensors) (model.tensors[t].elements >= st.dgc->min_elements ? sparse : dense).push_back(t);
      std::vector<int> after = deps;
      if (!sparse.empty()) {
        const std::uint64_t elements = elements_of(model, sparse);
        const double kept = std::ceil((1 - sparsity) * static_cast<double>(elements));
        Task select;
        select.kind = TaskKind::Delay;
        select.stream = bucket.stream;
        // A rank's DGC work on the fp32 gradient, memory-bound: add it to the residual (read 2, write 1), one pass
        // against a sampled threshold to select (DGC paper, sec. 3), and decoding the gathered pairs: clear the
        // dense sum (1), average it into the gradient (2), plus p x kept scattered adds (~16 B each). Priced here,
        // before the gather, on the same stream: the stream is busy for the same time.
        select.seconds = (7.0 * 4.0 * static_cast<double>(elements) + 16.0 * plan.ranks * kept) / sc.device.memory_Bps;
        select.deps = deps;
        select.label = "top-k " + name;
        select.bucket = static_cast<int>(i);
        int s = b.add(step, select);
        // Every rank contributes kept pairs of (value in comm dtype, int32 index): the gathered output is p times that.
        Task gather;
        gather.kind = TaskKind::Collective;
        gather.stream = bucket.stream;
        gather.collective =
            b.collective(Collective::AllGather,
                         static_cast<Bytes>(kept * (dtype_bytes(st.comm_dtype) + 4) * plan.ranks), Algorithm::Ring);
        gather.bytes_sent_per_rank = b.sent_per_rank(gather.collective);
        gather.deps = {s};
        gather.label = "dgc allgather " + name;
        gather.bucket = static_cast<int>(i);
        gather.tensors = sparse;
        b.add(step, gather);
      }
      if (!dense.empty())
        b.communicate(step, bucket.stream, Collective::AllReduce, elements_of(model, dense), dtype_bytes(st.comm_dtype),
                      after, name + " dense", static_cast<int>(i), dense, st.algorithm);
    }
    return step;
  };
  // Local SGD: local steps only compute; an averaging step allreduces the parameters after the local update.
  auto local_step = [&](bool average) {
    StepPlan step;
    step.kind = average ? StepKind::LocalAverage : StepKind::LocalOnly;
    std::vector<int> backward = b.compute_pass(step);
    if (!average) return step;
    for (std::size_t i = 0; i < plan.buckets.size(); ++i)
      b.communicate(step, plan.buckets[i].stream, Collective::AllReduce, plan.buckets[i].elements,
                    dtype_bytes(st.comm_dtype), {backward.front()}, "average " + std::to_string(i), static_cast<int>(i),
                    plan.buckets[i].tensors, st.algorithm);
    return step;
  };
  // Sharded data parallel: gradients reduce-scattered during backward; stage 2 all-gathers the updated parameters
  // at the end of the step. Stage 3 frees each group's gathered parameters after use, so it all-gathers them before
  // the group's forward and, once forward is done, again before its backward (the group of the last forward layers
  // stays gathered into backward, as FSDP's root unit does); the gathers run on stream 1 in the order of use, each
  // running ahead of the compute that needs it by at most sharding.prefetch_buckets buckets (prefetch: DeepSpeed
  // stage3_prefetch_bucket_size, FSDP forward_prefetch / backward_prefetch / limit_all_gathers). The memory that
  // bounds prefetching in practice is not modelled.
  auto sharded_step = [&]() {
    StepPlan step;
    step.kind = StepKind::Sharded;
    std::vector<int> forward_order(model.tensors.size());
    for (std::size_t t = 0; t < forward_order.size(); ++t) forward_order[t] = static_cast<int>(t);
    const auto gather_groups = pack(model, forward_order, st.sharding.allgather_fusion_mb * kMB);
    const bool stage3 = st.sharding.stage == 3;
    std::vector<int> forward_gate(model.layers.size(), -1), backward_gate(model.layers.size(), -1);
    int previous = -1;
    auto gather = [&](int g, const char* pass, std::vector<int>& gate, int after) {
      std::vector<int> deps;
      if (previous >= 0) deps.push_back(previous);
      if (after >= 0) deps.push_back(after);
      previous = b.communicate(
          step, 1, Collective::AllGather, elements_of(model, gather_groups[g]), dtype_bytes(st.comm_dtype), deps,
          std::string("allgather params ") + pass + std::to_string(g), -1, gather_groups[g], Algorithm::Ring);
      for (int t : gather_groups[g]) {
        int& layer_gate = gate[model.tensors[t].layer];
        layer_gate = std::max(layer_gate, previous);  // gathers are chained: the latest one is the last to finish
      }
    };
    // Prefetch depth d (sharding.prefetch_buckets; < 0 unlimited): a gather may start once the compute has reached
    // the bucket d before it in the order of use; d = 0 gathers on demand. Gathers are added just before the first
    // compute task that may depend on them, so every dependency points to an earlier task.
    const int depth = st.sharding.prefetch_buckets, groups = static_cast<int>(gather_groups.size());
    const int layers = static_cast<int>(model.layers.size());
    std::vector<int> first_layer(groups, layers), last_layer(groups, -1);
    for (int g = 0; g < groups; ++g) {
      for (int t : gather_groups[g]) {
        first_layer[g] = std::min(first_layer[g], model.tensors[t].layer);
        last_layer[g] = std::max(last_layer[g], model.tensors[t].layer);
      }
    }
    std::vector<int> forward(layers), backward(layers);
    int next = 0, last = -1;
    for (int l = 0; l < layers; ++l) {
      // Forward: gather g waits for the layers before bucket g - d to be computed.
      while (stage3 && next < groups && (depth < 0 || next <= depth || first_layer[next - depth] <= l)) {
        const int before = depth < 0 || next <= depth ? -1 : first_layer[next - depth] - 1;
        gather(next, "fwd ", forward_gate, before >= 0 ? forward[before] : -1);
        ++next;
      }
      last = forward[l] = Builder::gated(step, b.compute(step, b.forward_s[l], "fwd " + model.layers[l].name, last),
                                         forward_gate, static_cast<std::size_t>(l));
    }
    const int forward_end = last;
    previous = forward_end;  // a group's parameters are freed after its forward: re-gathers start when it is done
    next = groups - 2;       // the group of the last forward layers stays gathered
    for (int l = layers; l-- > 0;) {
      // Backward: gather g waits for the backward of the layers after bucket g + d.
      while (stage3 && next >= 0 && (depth < 0 || next + depth >= groups - 1 || last_layer[next + depth] >= l)) {
        const int after = depth < 0 || next + depth >= groups - 1 ? layers : last_layer[next + depth] + 1;
        gather(next, "bwd ", backward_gate, after < layers ? backward[after] : -1);
        --next;
      }
      last = backward[l] = Builder::gated(step, b.compute(step, b.backward_s[l], "bwd " + model.layers[l].name, last),
                                          backward_gate, static_cast<std::size_t>(l));
    }
    std::vector<int> backward_order(forward_order.rbegin(), forward_order.rend());
    const auto scatter_groups = pack(model, backward_order, st.sharding.reducescatter_fusion_mb * kMB);
    std::vector<int> scattered;
    for (std::size_t g = 0; g < scatter_groups.size(); ++g) {
      const int ready = model.tensors[scatter_groups[g].back()].layer;
      const int stream = 1 + static_cast<int>((g + (stage3 ? 1 : 0)) % plan.streams);
      scattered.push_back(b.communicate(step, stream, Collective::ReduceScatter, elements_of(model, scatter_groups[g]),
                                        dtype_bytes(st.comm_dtype), {st.overlap ? backward[ready] : backward.front()},
                                        "reducescatter grads " + std::to_string(g), -1, scatter_groups[g],
                                        Algorithm::Ring));
    }
    if (st.sharding.stage == 2)
      for (std::size_t g = 0; g < gather_groups.size(); ++g)
        b.communicate(step, 1 + static_cast<int>(g % plan.streams), Collective::AllGather,
                      elements_of(model, gather_groups[g]), dtype_bytes(st.comm_dtype), scattered,
                      "allgather params " + std::to_string(g), -1, gather_groups[g], Algorithm::Ring);
    return step;
  };

  auto kind_index = [&](StepPlan step) {
    for (std::size_t k = 0; k < plan.kinds.size(); ++k)
      if (plan.kinds[k].kind == step.kind && plan.kinds[k].sparsity == step.sparsity) return static_cast<int>(k);
    plan.kinds.push_back(std::move(step));
    return static_cast<int>(plan.kinds.size() - 1);
  };
  // Paddle's Local SGD averages the parameters at every step up to begin_step, then every k steps (schedules.cpp).
  const std::vector<bool> averages =
      st.localsgd ? localsgd_averaging_steps(*st.localsgd, sc.steps) : std::vector<bool>{};
  for (int s = 0; s < sc.steps; ++s) {
    int k;
    if (st.sharding.stage) {
      k = kind_index(sharded_step());
    } else if (st.dgc) {
      const double sparsity = dgc_sparsity(*st.dgc, s);
      k = kind_index(sync_step(sparsity > 0 ? StepKind::DgcSparse : StepKind::Sync, sparsity));
    } else if (st.localsgd) {
      k = kind_index(local_step(averages[s]));
    } else {
      k = kind_index(sync_step(StepKind::Sync, 0));
    }
    plan.step_kind.push_back(k);
  }

  // Straggler factors: per rank and step, compute time x max(0.5, N(1, cv)) x the rank's fixed slowdown.
  const Stragglers& sg = st.stragglers;
  plan.compute_factor.assign(sc.steps, 1.0);
  plan.critical_rank.assign(sc.steps, 0);
  plan.symmetric_ranks = sg.compute_cv <= 0 && sg.slow_ranks.empty();
  if (!plan.symmetric_ranks) {
    std::mt19937_64 rng(sg.seed);
    std::normal_distribution<double> noise(1.0, sg.compute_cv);
    std::vector<double> since_sync(plan.ranks, 0.0);
    double mean_since_sync = 0;
    for (int s = 0; s < sc.steps; ++s) {
      double worst = 0, mean = 0;
      for (int r = 0; r < plan.ranks; ++r) {
        double f = sg.compute_cv > 0 ? std::max(0.5, noise(rng)) : 1.0;
        if (auto it = sg.slow_ranks.find(r); it != sg.slow_ranks.end()) f *= it->second;
        since_sync[r] += f;
        if (since_sync[r] > worst) plan.critical_rank[s] = r;
        worst = std::max(worst, since_sync[r]);
        mean += f / plan.ranks;
      }
      const StepKind kind = plan.kinds[plan.step_kind[s]].kind;
      if (kind == StepKind::LocalOnly) {
        // Ranks run ahead independently: the representative timeline advances by the mean; the wait comes at sync.
        plan.compute_factor[s] = mean;
        plan.critical_rank[s] = -1;
        mean_since_sync += mean;
        continue;
      }
      plan.compute_factor[s] = worst - mean_since_sync;  // the slowest rank's accumulated time, less what was counted
      std::fill(since_sync.begin(), since_sync.end(), 0.0);
      mean_since_sync = 0;
    }
  }
  return plan;
}

}  // namespace commsim
