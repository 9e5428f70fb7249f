#include "sim/plan/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "sim/collective/nccl_model.hpp"
#include "sim/core/error.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/units.hpp"
#include "sim/plan/plan_builder.hpp"

namespace commsim {

std::string_view to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::Compute:
      return "compute";
    case TaskKind::Cast:
      return "cast";
    case TaskKind::TopK:
      return "top-k";
    case TaskKind::Collective:
      return "collective";
  }
  return "?";
}

std::string_view to_string(Purpose purpose) {
  switch (purpose) {
    case Purpose::DenseGradients:
      return "dense gradients";
    case Purpose::SparseGather:
      return "sparse gather";
    case Purpose::ParameterGather:
      return "parameter gather";
    case Purpose::ParameterAverage:
      return "parameter average";
    case Purpose::LossAverage:
      return "loss average";
  }
  return "?";
}

std::string_view to_string(Buffer buffer) {
  switch (buffer) {
    case Buffer::Gradients:
      return "gradients";
    case Buffer::Parameters:
      return "parameters";
    case Buffer::Loss:
      return "loss";
  }
  return "?";
}

Buffer buffer_of(Purpose purpose) {
  switch (purpose) {
    case Purpose::ParameterGather:
    case Purpose::ParameterAverage:
      return Buffer::Parameters;
    case Purpose::LossAverage:
      return Buffer::Loss;
    case Purpose::DenseGradients:
    case Purpose::SparseGather:
      return Buffer::Gradients;
  }
  return Buffer::Gradients;
}

CollectiveSpec StepBuilder::collective(Collective op, Bytes bytes, Algorithm algorithm) const {
  CollectiveSpec c;
  c.op = op;
  c.algorithm = algorithm;
  c.bytes = bytes;
  c.channels = sc.strategy.channels > 0 ? sc.strategy.channels : topo.default_channels();
  // On an NCCL topology the channels are NCCL's (NCCL_MIN/MAX_NCHANNELS), as collective --channels sets them.
  if (topo.library().kind == LibraryKind::Nccl) c.nccl_channels = sc.strategy.channels;
  c.hierarchy_groups = sc.strategy.hierarchical_allreduce_leaders;
  c.ranks_per_node = topo.ranks_per_node();
  // Gamma: a reduction reads two operands and writes one at memory speed.
  c.reduce_Bps = sc.device.memory_Bps / 3;
  return c;
}
// Bytes each rank sends in the collective, on average over ranks.
double StepBuilder::sent_per_rank(const CollectiveSpec& c) const {
  CollectiveSpec resolved = c;
  resolved.algorithm = choose_algorithm(c, topo);
  return total_transfer_bytes(resolved, ranks) / ranks;
}
int StepBuilder::add(StepPlan& plan, Task t) const {
  plan.tasks.push_back(std::move(t));
  return static_cast<int>(plan.tasks.size() - 1);
}
int StepBuilder::compute(StepPlan& plan, double seconds, const std::string& label, int dep) const {
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
int StepBuilder::communicate(StepPlan& plan, int stream, Collective op, std::uint64_t elements, std::vector<int> deps,
                             const std::string& label, int bucket, const std::vector<int>& tensors, Algorithm algorithm,
                             Purpose purpose, ElementRange piece) const {
  const CommDtype dtype = sc.strategy.comm_dtype;
  int cast_task = -1;
  if (dtype != CommDtype::Fp32) {
    // Cast down before and up after: read 4 + write b bytes, then read b + write 4, per element.
    Task cast;
    cast.kind = TaskKind::Cast;
    cast.stream = stream;
    cast.seconds = 2.0 * static_cast<double>(elements) * (4 + dtype_bytes(dtype)) / sc.device.memory_Bps;
    cast.deps = deps;
    cast.label = "cast " + label;
    cast.bucket = bucket;
    cast.tensors = tensors;
    cast.piece = piece;
    cast_task = add(plan, cast);
    deps = {cast_task};
  }
  Task t;
  t.kind = TaskKind::Collective;
  t.purpose = purpose;
  t.stream = stream;
  t.collective =
      collective(op, static_cast<Bytes>(std::ceil(static_cast<double>(elements) * dtype_bytes(dtype))), algorithm);
  t.bytes_sent_per_rank = sent_per_rank(t.collective);
  t.deps = std::move(deps);
  t.label = label;
  t.bucket = bucket;
  t.tensors = tensors;
  t.piece = piece;
  const Overheads& o = overheads;
  const double gradient_bytes = 4.0 * static_cast<double>(elements);  // the fp32 gradients the buckets hold
  t.start_grid_s = o.cycle_s;
  // No copy when the cast is it (the MPI executor) or when Horovod sends a single tensor in place.
  const bool no_copy = (cast_task >= 0 && o.copies_are_casts) || (o.fuses_per_cycle && tensors.size() == 1);
  const double copy_bytes = no_copy ? 0.0 : gradient_bytes;
  t.overhead_before_s = o.per_bucket_s + o.launch_s + o.copy_in_passes * copy_bytes / sc.device.memory_Bps;
  t.overhead_after_s = o.copy_out_passes * copy_bytes / sc.device.memory_Bps;
  const int task = add(plan, t);
  if (cast_task >= 0) plan.tasks[static_cast<std::size_t>(cast_task)].prepares = task;
  return task;
}

int StepBuilder::forward_pass(StepPlan& plan, const std::vector<int>& gate) const {
  int last = -1;
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    last = gated(plan, compute(plan, forward_s[l], "fwd " + model.layers[l].name, last), gate, l);
    plan.tasks[last].forward_layer = static_cast<int>(l);
  }
  return last;
}
std::vector<int> StepBuilder::backward_pass(StepPlan& plan, int last, const std::vector<int>& gate) const {
  std::vector<int> backward(model.layers.size());
  for (std::size_t l = model.layers.size(); l-- > 0;) {
    last = backward[l] = gated(plan, compute(plan, backward_s[l], "bwd " + model.layers[l].name, last), gate, l);
    plan.tasks[last].gradient_layer = static_cast<int>(l);
  }
  return backward;
}
int StepBuilder::gated(StepPlan& plan, int task, const std::vector<int>& gate, std::size_t layer) {
  if (!gate.empty() && gate[layer] >= 0) plan.tasks[task].deps.push_back(gate[layer]);
  return task;
}

std::uint64_t elements_of(const Model& model, const std::vector<int>& tensors) {
  std::uint64_t e = 0;
  for (int t : tensors) e += model.tensors[t].elements;
  return e;
}

namespace {

// Horovod's responses (libraries/overheads.json "fuses_per_cycle"): a gradient is negotiated at the first cycle
// boundary at or after it is ready (the end of its layer's backward; of backward without overlap, and for Local SGD's
// averages of the parameters after the update; cycles counted from the step's start, as the step simulator snaps a
// collective's start; with no cycle, at the moment it is ready), and the gradients of one boundary are fused in
// backward order while the fused size, in the bytes sent (hvd.Compression.fp16 compresses first), stays within the
// threshold, checked before a gradient is added. Ready times are the plan's nominal compute: stragglers and compute
// slowed by collectives do not regroup them.
std::vector<std::vector<int>> horovod_responses(const Scenario& sc, const Model& model, const StepBuilder& b) {
  const double cycle_s = b.overheads.cycle_s, threshold = sc.strategy.fusion.size_mb * kMB;
  const bool all_after_backward = !sc.strategy.overlap || sc.strategy.localsgd;
  double ready_s = 0;
  for (double s : b.forward_s) ready_s += s;
  std::vector<double> layer_ready_s(model.layers.size());
  for (std::size_t l = model.layers.size(); l-- > 0;) layer_ready_s[l] = ready_s += b.backward_s[l];
  std::vector<std::vector<int>> groups;
  double group_bytes = 0, group_cycle = -1;
  for (int t = static_cast<int>(model.tensors.size()) - 1; t >= 0; --t) {
    const double ready = all_after_backward ? ready_s : layer_ready_s[static_cast<std::size_t>(model.tensors[t].layer)];
    // A gradient ready within a nanosecond of a boundary goes with it (the step simulator's tolerance too).
    const double cycle = cycle_s > 0 ? std::ceil((ready - Task::kCycleTolerance_s) / cycle_s) : ready;
    const double bytes = dtype_bytes(sc.strategy.comm_dtype) * static_cast<double>(model.tensors[t].elements);
    if (groups.empty() || cycle != group_cycle || group_bytes + bytes > threshold) {
      groups.emplace_back();
      group_bytes = 0, group_cycle = cycle;
    }
    groups.back().push_back(t);
    group_bytes += bytes;
  }
  return groups;
}

std::vector<Bucket> make_buckets(const Scenario& sc, const Model& model, const StepBuilder& builder) {
  const Fusion& f = sc.strategy.fusion;
  const int n = static_cast<int>(model.tensors.size());
  std::vector<std::vector<int>> groups;  // each in backward order
  // Paddle turns fusion off under DGC ("DGC doesn't support fuse for now, close fuse": python/paddle/fluid/
  // compiler.py, CompiledProgram._compile_data_parallel sets fuse_all_reduce_ops = False), so every tensor is its
  // own collective in every step, dense ones before the ramp-up included.
  if (f.mode == FusionMode::None || sc.strategy.dgc) {
    for (int t = n - 1; t >= 0; --t) groups.push_back({t});
  } else if ((f.mode == FusionMode::Size || f.mode == FusionMode::Auto) && builder.overheads.fuses_per_cycle) {
    // Horovod fuses by its threshold whatever names it: "auto" is 64 MB, HOROVOD_FUSION_THRESHOLD's default.
    groups = horovod_responses(sc, model, builder);
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

// The hierarchy's groups as a number of leaders: a group size (Paddle's inter_nranks) becomes ranks / size. Paddle
// asks of its groups what it asks of inter_nranks (gen_nccl_id_op.cc, parallel_executor.cc): they split the ranks
// evenly and hold more than one rank each; one group of every rank is allowed (its leaders' allreduce is of one).
// The two spellings and the default (one group per node) are held to that alike, where the hierarchy is used.
Scenario with_hierarchy_leaders(Scenario sc, int ranks, int ranks_per_node) {
  Strategy& st = sc.strategy;
  const int size = st.hierarchical_allreduce_group_size;
  if (size > 0) {
    if (size > ranks || ranks % size != 0)
      throw InputError(sc.file, "strategy.hierarchical_allreduce_group_size",
                       "groups of " + std::to_string(size) + " ranks do not split the " + std::to_string(ranks) +
                           " ranks into equal groups");
    st.hierarchical_allreduce_leaders = ranks / size;
  }
  if (st.algorithm != Algorithm::Hierarchical) return sc;
  const int leaders = st.hierarchical_allreduce_leaders;
  if (leaders > 0 && ranks % leaders != 0)
    throw InputError(
        sc.file, "strategy.hierarchical_allreduce_leaders",
        std::to_string(leaders) + " leaders do not divide " + std::to_string(ranks) + " ranks into equal groups");
  if (leaders > 0 && ranks / leaders < 2)
    throw InputError(sc.file, "strategy.hierarchical_allreduce_leaders",
                     std::to_string(leaders) + " leaders of " + std::to_string(ranks) +
                         " ranks make groups of one rank: Paddle needs at least 2 ranks per group (inter_nranks > 1)");
  if (leaders == 0 && ranks_per_node < 2)
    throw InputError(sc.file, "strategy.use_hierarchical_allreduce",
                     "the groups are one per node by default, and the topology has 1 rank per node: Paddle needs at "
                     "least 2 ranks per group (inter_nranks > 1); set hierarchical_allreduce_group_size");
  return sc;
}

// Rejects settings the plan cannot honour, naming the field.
void check_settings(const Scenario& sc, const Topology& topo, int ranks) {
  if (ranks < 1) throw InputError(sc.file, "nodes", "the cluster has no rank");
  CollectiveSpec probe;
  probe.algorithm = sc.strategy.algorithm;
  probe.hierarchy_groups = sc.strategy.hierarchical_allreduce_leaders;
  probe.ranks_per_node = topo.ranks_per_node();
  check_supported(probe, ranks, sc.file + ": strategy");
  // An NCCL algorithm the machine cannot run (NVLS without NVSwitch SHARP, CollNet without SHARP) is the
  // scenario's setting, named here rather than by the first collective that tries it.
  probe.op = sc.strategy.sharding.stage > 0 ? Collective::ReduceScatter : Collective::AllReduce;
  probe.bytes = Bytes{1} << 20;
  const Algorithm a = sc.strategy.algorithm;
  const bool nccls_own = a == Algorithm::Ring || a == Algorithm::Tree || library_only(a);
  if (nccls_own && uses_library_model(probe, topo)) {
    const std::vector<nccl::Estimate> runs = nccl::candidates(probe, topo);
    if (std::none_of(runs.begin(), runs.end(), [&](const nccl::Estimate& e) { return e.algorithm == a; }))
      throw InputError(sc.file, "strategy.algorithm",
                       "NCCL runs no " + std::string(to_string(probe.op)) + " with " + std::string(to_string(a)) +
                           " on " + topo.name() + " (" + std::to_string(ranks) + " ranks, " +
                           std::to_string(topo.nodes()) + " nodes)");
  }
  for (auto& [rank, factor] : sc.strategy.stragglers.slow_ranks)
    if (rank >= ranks)
      throw InputError(sc.file, "strategy.stragglers.slow_ranks." + std::to_string(rank),
                       "no such rank (the cluster has " + std::to_string(ranks) + ")");
}

// Each layer's forward and backward time on an unslowed rank; returns the step's compute.
double layer_times(const Scenario& sc, const Model& model, StepBuilder& b) {
  const double rate = sc.device.peak_flops * sc.device.efficiency;
  double compute_s = 0;
  for (const Layer& l : model.layers) {
    b.forward_s.push_back(l.forward_s_per_sample >= 0 ? l.forward_s_per_sample * sc.batch_per_gpu
                                                      : l.forward_flops_per_sample * sc.batch_per_gpu / rate);
    b.backward_s.push_back(l.backward_s_per_sample >= 0 ? l.backward_s_per_sample * sc.batch_per_gpu
                                                        : l.backward_flops_per_sample * sc.batch_per_gpu / rate);
    compute_s += b.forward_s.back() + b.backward_s.back();
  }
  if (!(compute_s <= kMaxSimulatedSeconds))
    throw InputError(sc.file, "device.peak_flops",
                     "a step's compute takes " + std::to_string(compute_s) +
                         " s (the model's FLOPs / (peak_flops x efficiency), or its measured "
                         "times, x batch_per_gpu), beyond the simulated range of 100 days: is peak_flops in FLOP/s?");
  return compute_s;
}

// The assumptions the output states.
std::vector<std::string> plan_notes(const Scenario& sc, const Topology& topo, const Overheads& o) {
  std::vector<std::string> notes;
  notes.push_back("compute: FLOPs / (" + sc.device.name +
                  " peak x efficiency); backward = 2x forward unless the model says otherwise");
  char note[256];
  std::snprintf(note, sizeof note,
                "fixed costs (libraries/overheads.json): framework %s, %.3g us launch per collective, %.3g us per "
                "bucket, copies of %.3g passes over a bucket, cycle %.3g ms",
                sc.framework.name.c_str(), o.launch_s * 1e6, o.per_bucket_s * 1e6, o.copy_in_passes + o.copy_out_passes,
                o.cycle_s * 1e3);
  notes.push_back(note);
  if (const int sms = topo.library().sms; sms > 0) {
    const double c = topo.library().concurrent_slowdown;
    char further[64] = "";
    if (c > 0) std::snprintf(further, sizeof further, " / %.4g", 1 + c);
    notes.push_back("interference: while collectives of K channels in all run, compute runs at (" +
                    std::to_string(sms) + " - K) / " + std::to_string(sms) + further +
                    " of its speed (one SM per NCCL channel" +
                    (c > 0 ? ", and the topology's concurrent_slowdown" : "") + "); compute time includes it");
  }
  if (sc.strategy.dgc)
    notes.push_back("DGC: one collective per tensor in every step, as Paddle turns fusion off under DGC");
  if (const int steady = first_steady_step(sc.strategy, sc.steps); steady >= sc.steps)
    notes.push_back("steady state not reached: " +
                    std::string(sc.strategy.dgc ? "DGC reaches its final sparsity at step " + std::to_string(steady)
                                                : "Local SGD's intervals settle after the last step") +
                    ", so the step time is the mean of all " + std::to_string(sc.steps) +
                    " steps, warm-up included (give more steps)");
  if (sc.strategy.localsgd && sc.strategy.localsgd->adaptive)
    notes.push_back(
        "adaptive Local SGD: two allreduces of the scalar loss in every step, after the update (Paddle's "
        "_generate_avg_loss); they keep the ranks in step between averages");
  notes.push_back("stragglers: steps with collectives wait for the slowest rank; plain Local SGD only at each average");
  if (sc.strategy.priority == CommPriority::ForwardOrder)
    notes.push_back(
        "priority forward_order: the ready collective of the earliest layer first, and the next forward of layer i "
        "after layer i's collectives (simulated only: the hardware backends run the Plan's order, steps apart)");
  notes.push_back(
      "flow fidelity: rings of more than 32768 transfers run as one flow per ring edge (same uncontended time)");
  return notes;
}

// The distinct step plans and which one each step runs.
void plan_steps(const StepBuilder& b, Plan& plan) {
  const Strategy& st = b.sc.strategy;
  auto index_of = [&](StepPlan step) {
    for (std::size_t k = 0; k < plan.step_plans.size(); ++k)
      if (plan.step_plans[k].kind == step.kind && plan.step_plans[k].sparsity == step.sparsity)
        return static_cast<int>(k);
    plan.step_plans.push_back(std::move(step));
    return static_cast<int>(plan.step_plans.size() - 1);
  };
  // Paddle's Local SGD averages the parameters at every step up to begin_step, then every k steps (schedules.cpp).
  const std::vector<bool> averages =
      st.localsgd ? localsgd_averaging_steps(*st.localsgd, b.sc.steps) : std::vector<bool>{};
  for (int s = 0; s < b.sc.steps; ++s) {
    int k;
    if (st.sharding.stage) {
      k = index_of(sharded_step(b));
    } else if (st.dgc) {
      const double sparsity = dgc_sparsity(*st.dgc, s);
      k = index_of(sync_step(b, plan.buckets, sparsity > 0 ? StepKind::DgcSparse : StepKind::Sync, sparsity));
    } else if (st.localsgd) {
      k = index_of(local_step(b, plan.buckets, averages[s]));
    } else {
      k = index_of(sync_step(b, plan.buckets, StepKind::Sync, 0));
    }
    plan.step_plan_of.push_back(k);
  }
}

// Straggler factors: per rank and step, compute time x max(0.5, N(1, cv)) x the rank's fixed slowdown.
void straggler_factors(const Stragglers& sg, int steps, Plan& plan) {
  plan.compute_factor.assign(steps, 1.0);
  plan.critical_rank.assign(steps, 0);
  plan.symmetric_ranks = sg.compute_cv <= 0 && sg.slow_ranks.empty();
  if (plan.symmetric_ranks) return;
  std::mt19937_64 rng(sg.seed);
  std::normal_distribution<double> noise(1.0, sg.compute_cv);
  std::vector<double> since_sync(plan.ranks, 0.0);
  double mean_since_sync = 0;
  for (int s = 0; s < steps; ++s) {
    double worst = 0, mean = 0;
    for (int r = 0; r < plan.ranks; ++r) {
      double f = sg.compute_cv > 0 ? std::max(0.5, noise(rng)) : 1.0;
      if (auto it = sg.slow_ranks.find(r); it != sg.slow_ranks.end()) f *= it->second;
      since_sync[r] += f;
      if (since_sync[r] > worst) plan.critical_rank[s] = r;
      worst = std::max(worst, since_sync[r]);
      mean += f / plan.ranks;
    }
    const std::vector<Task>& tasks = plan.step_plans[plan.step_plan_of[s]].tasks;
    if (std::none_of(tasks.begin(), tasks.end(), [](const Task& t) { return t.kind == TaskKind::Collective; })) {
      // A step without collectives (a Local SGD local step): ranks run ahead independently, the representative
      // timeline advances by the mean; the wait comes at the next step with a collective.
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

}  // namespace

Plan build_plan(const Scenario& given, const Topology& topo, Model model) {
  Scenario sc = with_hierarchy_leaders(given, topo.ranks(), topo.ranks_per_node());
  if (const std::int64_t steps = whole_period_steps(sc.strategy, given.steps); steps > kMaxSteps)
    throw InputError(sc.file, "strategy.localsgd.k_steps",
                     "whole Local SGD periods of " + std::to_string(sc.strategy.localsgd->k_steps) +
                         " steps from step " + std::to_string(sc.strategy.localsgd->begin_step) + " need " +
                         std::to_string(steps) + " steps, more than the " + std::to_string(kMaxSteps) +
                         " a run may have");
  else
    sc.steps = static_cast<int>(steps);
  Plan plan;
  plan.scenario_name = sc.name;
  plan.scenario_file = sc.file;
  plan.batch_per_gpu = sc.batch_per_gpu;
  plan.comm_dtype = sc.strategy.comm_dtype;
  plan.algorithm = sc.strategy.algorithm;
  plan.hierarchy_groups = sc.strategy.hierarchical_allreduce_leaders;
  plan.local_sgd = sc.strategy.localsgd.has_value();
  plan.sharded = sc.strategy.sharding.stage != 0;
  plan.dgc = sc.strategy.dgc.has_value();
  plan.steady_from = steady_state_start(sc.strategy, sc.steps);
  plan.priority = sc.strategy.priority;
  plan.model = std::move(model);
  plan.ranks = topo.ranks();
  plan.streams = sc.strategy.nccl_comm_num;
  check_settings(sc, topo, plan.ranks);
  StepBuilder b{sc,           plan.model, topo, plan.ranks,
                plan.streams, {},         {},   resolve_overheads(sc.framework, topo.library().kind)};
  plan.compute_s = layer_times(sc, plan.model, b);
  plan.buckets = make_buckets(sc, plan.model, b);
  check_partition(sc, plan.buckets);
  for (std::size_t i = 0; i < plan.buckets.size(); ++i) plan.buckets[i].stream = 1 + static_cast<int>(i % plan.streams);
  plan.notes = plan_notes(sc, topo, b.overheads);
  if (sc.steps != given.steps)
    plan.notes.push_back("steps: " + std::to_string(sc.steps) + " run for the " + std::to_string(given.steps) +
                         " asked, so that the steady state from step " +
                         std::to_string(sc.strategy.localsgd->begin_step) + " holds whole Local SGD periods of " +
                         std::to_string(sc.strategy.localsgd->k_steps) + " steps, each with its averaging once");
  plan_steps(b, plan);
  straggler_factors(sc.strategy.stragglers, sc.steps, plan);
  return plan;
}

int hierarchy_group_size(const Plan& plan, int ranks_per_node) {
  const int groups = plan.hierarchy_groups;
  // Leaders beside no hierarchy are ignored, as Paddle and the plan ignore them (with_hierarchy_leaders).
  if (groups <= 0 || (plan.algorithm != Algorithm::Hierarchical && plan.ranks % groups != 0))
    return std::max(1, ranks_per_node);
  if (plan.ranks % groups != 0)
    throw InputError(plan.scenario_file, "strategy.hierarchical_allreduce_leaders",
                     std::to_string(groups) + " groups do not divide " + std::to_string(plan.ranks) + " ranks");
  return plan.ranks / groups;
}

}  // namespace commsim
