// Plan -> NCCL launch translation (hw/nccl/launch_plan.hpp), without a GPU. The scenario is the demo one,
// scenarios/resnet50-dgx-a100.json: ResNet-50 (161 gradient tensors, 25 557 032 parameters) on 4 DGX A100 nodes,
//
//   node 0: gpu0..gpu7 --NVSwitch--   node 1: gpu8..gpu15   ...   node 3: gpu24..gpu31
//              |  8 HDR NICs                 |                         |
//              +--------- rail-optimized HDR fabric ----------------------+
//
// so 32 ranks, 8 per node; PyTorch DDP buckets (1 MiB first, then 25 MiB), one communication stream unless a test
// sets nccl_comm_num. Each test loads it through the simulate-free pieces (load_scenario, load_topology,
// build_plan) with --set style overrides and checks the translation against the Plan it came from.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include "hw/nccl/launch_plan.hpp"
#include "hw/nccl/step_marks.hpp"
#include "sim/core/error.hpp"
#include "sim/plan/plan.hpp"

namespace commsim::nccl {
namespace {

constexpr const char* kScenario = "scenarios/resnet50-dgx-a100.json";
constexpr int kRanks = 32, kRanksPerNode = 8;

struct Loaded {
  Scenario scenario;
  std::unique_ptr<Topology> topology;
  Plan plan;
  LaunchProgram program;
};

Loaded load(const std::vector<std::string>& sets) {
  Loaded l;
  l.scenario = load_scenario(kScenario, sets);
  l.topology = load_topology(l.scenario.topology_path, l.scenario.nodes);
  l.plan = build_plan(l.scenario, *l.topology, load_model(l.scenario.model_path));
  l.program = translate_plan(l.plan, l.topology->ranks_per_node());
  return l;
}

std::vector<const LaunchOp*> collectives(const LaunchStep& step) {
  std::vector<const LaunchOp*> out;
  for (const LaunchOp& op : step.ops)
    if (op.kind == OpKind::Collective) out.push_back(&op);
  return out;
}

std::uint64_t elements_of(const Plan& plan, const std::vector<int>& tensors) {
  std::uint64_t e = 0;
  for (int t : tensors) e += plan.model.tensors[static_cast<std::size_t>(t)].elements;
  return e;
}

// Properties every translated step has, whatever the strategy: an event is recorded before anything waits for it;
// stream 0 holds only compute and bookkeeping; every Plan task appears; the step ends with stream 0 waiting for
// every communication stream it used.
void expect_well_formed(const Loaded& l, const LaunchStep& step, const StepPlan& plan_step) {
  std::set<int> recorded, tasks_seen, comm_streams;
  for (const LaunchOp& op : step.ops) {
    ASSERT_GE(op.event, op.kind == OpKind::Record || op.kind == OpKind::Wait ? 0 : -1);
    ASSERT_LT(op.event, step.events);
    if (op.kind == OpKind::Record) recorded.insert(op.event);
    if (op.kind == OpKind::Wait) {
      EXPECT_TRUE(recorded.count(op.event)) << "wait for event " << op.event << " before its record";
    }
    if (op.stream == 0) {
      EXPECT_TRUE(op.kind == OpKind::Spin || op.kind == OpKind::Record || op.kind == OpKind::Wait)
          << describe(op, l.program);
    }
    if (op.stream > 0 && op.kind != OpKind::Record && op.kind != OpKind::Wait) comm_streams.insert(op.stream);
    if (op.task >= 0) tasks_seen.insert(op.task);
    if (op.kind == OpKind::Collective) {
      ASSERT_GE(op.comm, 0);
      EXPECT_EQ(l.program.comms[static_cast<std::size_t>(op.comm)].stream, op.stream)
          << "a communicator serves one stream";
    }
  }
  EXPECT_EQ(tasks_seen.size(), plan_step.tasks.size());
  // The last ops: for each used comm stream, a record on it and a wait on stream 0.
  std::set<int> joined;
  for (auto it = step.ops.rbegin(); it != step.ops.rend() && it->task < 0; ++it)
    if (it->kind == OpKind::Record && it->stream > 0) joined.insert(it->stream);
  EXPECT_EQ(joined, comm_streams);
}

// Default strategy: fp32, ring, one stream. Every bucket becomes one ncclAllReduce of exactly its elements, in float,
// on the world communicator of stream 1, after its last gradient's backward task (an event on stream 0).
TEST(NcclTranslate, SyncBucketsBecomeOneAllReduceEach) {
  const Loaded l = load({});
  ASSERT_EQ(l.plan.ranks, kRanks);
  ASSERT_EQ(l.program.step_plans.size(), 1u);
  const LaunchStep& step = l.program.step_plans[0];
  expect_well_formed(l, step, l.plan.step_plans[0]);
  const auto ops = collectives(step);
  ASSERT_EQ(ops.size(), l.plan.buckets.size());
  ASSERT_EQ(l.program.comms.size(), 1u);  // one stream, world scope only
  EXPECT_EQ(l.program.comms[0].stream, 1);
  EXPECT_EQ(l.program.comms[0].scope, Scope::World);
  std::uint64_t total = 0;
  for (const LaunchOp* op : ops) {
    const Task& task = l.plan.step_plans[0].tasks[static_cast<std::size_t>(op->task)];
    const Bucket& bucket = l.plan.buckets[static_cast<std::size_t>(task.bucket)];
    EXPECT_EQ(op->call, Call::AllReduce);
    EXPECT_EQ(op->count, bucket.elements) << task.label;
    EXPECT_EQ(op->dtype, Dtype::Float32);
    EXPECT_EQ(op->stream, bucket.stream);
    total += op->count;
  }
  // Every parameter is reduced exactly once: the counts add up to the model's 25 557 032 parameters.
  EXPECT_EQ(total, l.plan.model.parameters());
  EXPECT_EQ(total, 25557032u);
  // No cast for fp32.
  for (const LaunchOp& op : step.ops) EXPECT_NE(op.kind, OpKind::CastDown);
}

// Overlap: a bucket's allreduce waits for the event of the backward task of its ready layer, which stream 0
// records right after that task's spin.
TEST(NcclTranslate, BucketWaitsForItsReadyLayersBackward) {
  const Loaded l = load({});
  const LaunchStep& step = l.program.step_plans[0];
  const StepPlan& ps = l.plan.step_plans[0];
  for (std::size_t j = 0; j < step.ops.size(); ++j) {
    if (step.ops[j].kind != OpKind::Collective) continue;
    const Task& task = ps.tasks[static_cast<std::size_t>(step.ops[j].task)];
    ASSERT_EQ(task.deps.size(), 1u);
    const int dep = task.deps[0];
    EXPECT_EQ(ps.tasks[static_cast<std::size_t>(dep)].kind, TaskKind::Compute);
    EXPECT_EQ(ps.tasks[static_cast<std::size_t>(dep)].label.rfind("bwd ", 0), 0u);
    // The wait sits just before the collective, on its stream.
    ASSERT_GE(j, 1u);
    EXPECT_EQ(step.ops[j - 1].kind, OpKind::Wait);
    EXPECT_EQ(step.ops[j - 1].event, dep);
    EXPECT_EQ(step.ops[j - 1].stream, step.ops[j].stream);
  }
}

// The compute stream spends the Plan's compute time: the spins add up to Plan::compute_s (forward + backward of
// every layer at batch 256), one spin per compute task.
TEST(NcclTranslate, SpinsAddUpToThePlansCompute) {
  const Loaded l = load({});
  double spin = 0;
  int spins = 0, compute_tasks = 0;
  for (const LaunchOp& op : l.program.step_plans[0].ops)
    if (op.kind == OpKind::Spin) spin += op.seconds, ++spins;
  for (const Task& t : l.plan.step_plans[0].tasks) compute_tasks += t.kind == TaskKind::Compute;
  EXPECT_EQ(spins, compute_tasks);
  EXPECT_NEAR(spin, l.plan.compute_s, 1e-12 * l.plan.compute_s);
}

// The runtime enqueues each run of consecutive layers on stream 0 as one busy-wait kernel. Here the 218 layer tasks
// (109 layers forward, then backward) are cut by the 5 bucket-ready records that stream 0 makes during the backward
// (one after the last layer of each bucket's gradients; the fifth bucket's comes after the last task, cutting
// nothing): 5 runs, hence 5 spin kernels whose seconds add up to the Plan's compute, with every other op issued on
// its own and in order. Traced steps time each layer: no merging.
TEST(NcclTranslate, ConsecutiveLayersAreOneKernel) {
  const Loaded l = load({});
  const LaunchStep& step = l.program.step_plans[0];
  const std::vector<Issue> issues = issues_of(step, make_marks(step, false));
  int records_on_compute = 0;
  for (const LaunchOp& op : step.ops) records_on_compute += op.kind == OpKind::Record && op.stream == 0 && op.task >= 0;
  ASSERT_EQ(records_on_compute, 5);
  int spins = 0;
  double spin_s = 0;
  std::vector<int> others;  // the op index of every other issue
  for (const Issue& i : issues) {
    if (i.op.kind == OpKind::Spin) {
      ++spins;
      spin_s += i.op.seconds;
    } else {
      others.push_back(i.first);
      EXPECT_EQ(i.first, i.last);
    }
  }
  EXPECT_EQ(spins, 5);
  EXPECT_NEAR(spin_s, l.plan.compute_s, 1e-12 * l.plan.compute_s);
  std::vector<int> expected;
  for (int j = 0; j < static_cast<int>(step.ops.size()); ++j)
    if (step.ops[static_cast<std::size_t>(j)].kind != OpKind::Spin) expected.push_back(j);
  EXPECT_EQ(others, expected);
  // Traced: one issue per op.
  EXPECT_EQ(issues_of(step, make_marks(step, true)).size(), step.ops.size());
}

// nccl_comm_num = 2: buckets alternate between streams 1 and 2 (bucket i on 1 + i mod 2), and each stream gets its
// own communicator -- exactly one per stream, so the two streams' allreduces can overlap.
TEST(NcclTranslate, OneCommunicatorPerStream) {
  const Loaded l = load({"strategy.nccl_comm_num=2"});
  ASSERT_EQ(l.program.comms.size(), 2u);
  std::set<int> streams;
  for (const CommSpec& c : l.program.comms) {
    EXPECT_EQ(c.scope, Scope::World);
    streams.insert(c.stream);
  }
  EXPECT_EQ(streams, (std::set<int>{1, 2}));
  for (const LaunchOp* op : collectives(l.program.step_plans[0])) {
    const Task& task = l.plan.step_plans[0].tasks[static_cast<std::size_t>(op->task)];
    EXPECT_EQ(op->stream, 1 + task.bucket % 2);
  }
  expect_well_formed(l, l.program.step_plans[0], l.plan.step_plans[0]);
}

// Paddle use_hierarchical_allreduce on 4 nodes of 8: groups of 8 (one per node). Each bucket becomes the triple
//   ncclAllReduce(intra) -> ncclAllReduce(inter: the 4 leaders) -> ncclBroadcast(intra, root 0)
// on the bucket's stream, each of the bucket's elements; the intra and inter communicators are distinct, per stream.
// These are the three phases of the simulator's Hierarchical schedule and of the MPI backend (shared/seeds: AllReduce
// inside each group, AllReduce among the leaders, broadcast from each leader to its group).
TEST(NcclTranslate, HierarchicalGivesGroupLeadersBroadcastTriples) {
  const Loaded l = load({"strategy.use_hierarchical_allreduce=true", "strategy.nccl_comm_num=2"});
  EXPECT_EQ(l.program.group_size, kRanksPerNode);
  const auto ops = collectives(l.program.step_plans[0]);
  ASSERT_EQ(ops.size(), 3 * l.plan.buckets.size());
  for (std::size_t i = 0; i < ops.size(); i += 3) {
    const LaunchOp &group = *ops[i], &leaders = *ops[i + 1], &broadcast = *ops[i + 2];
    const Task& task = l.plan.step_plans[0].tasks[static_cast<std::size_t>(group.task)];
    const std::uint64_t elements = l.plan.buckets[static_cast<std::size_t>(task.bucket)].elements;
    EXPECT_EQ(group.call, Call::AllReduce);
    EXPECT_EQ(leaders.call, Call::AllReduce);
    EXPECT_EQ(broadcast.call, Call::Broadcast);
    for (const LaunchOp* op : {&group, &leaders, &broadcast}) {
      EXPECT_EQ(op->count, elements);
      EXPECT_EQ(op->task, group.task);
      EXPECT_EQ(op->stream, 1 + task.bucket % 2);
    }
    EXPECT_EQ(broadcast.root, 0);
    const CommSpec& intra = l.program.comms[static_cast<std::size_t>(group.comm)];
    const CommSpec& inter = l.program.comms[static_cast<std::size_t>(leaders.comm)];
    EXPECT_EQ(intra.scope, Scope::Intra);
    EXPECT_EQ(inter.scope, Scope::Inter);
    EXPECT_EQ(broadcast.comm, group.comm);
    EXPECT_EQ(intra.stream, group.stream);
    EXPECT_EQ(inter.stream, group.stream);
  }
  // 2 streams x (intra, inter) = 4 communicators.
  EXPECT_EQ(l.program.comms.size(), 4u);
}

// hierarchical_allreduce_leaders = 2: groups of 32 / 2 = 16 ranks (two nodes each; Paddle inter_nranks = 16).
TEST(NcclTranslate, HierarchyGroupsFollowInterNranks) {
  const Loaded l = load({"strategy.use_hierarchical_allreduce=true", "strategy.hierarchical_allreduce_leaders=2"});
  EXPECT_EQ(l.program.group_size, 16);
  Plan odd = l.plan;
  odd.hierarchy_groups = 3;  // 32 ranks do not split into 3 groups
  try {
    hierarchy_group_size(odd, kRanksPerNode);
    FAIL() << "3 groups of 32 ranks accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hierarchical_allreduce_leaders"), std::string::npos) << e.what();
  }
}

// Low-precision communication: cast down (fp32 -> dtype) on the bucket's stream, the allreduce in that dtype, cast
// back up; all three count the bucket's elements.
class NcclTranslateDtype : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclTranslateDtype, CastsAroundEachAllReduce) {
  const std::string name = GetParam();
  const Dtype dtype = name == "fp16" ? Dtype::Float16 : name == "bf16" ? Dtype::Bfloat16 : Dtype::Float8e4m3;
  const Loaded l = load({"strategy.comm_dtype=" + name});
  const LaunchStep& step = l.program.step_plans[0];
  expect_well_formed(l, step, l.plan.step_plans[0]);
  int triples = 0;
  for (std::size_t j = 0; j < step.ops.size(); ++j) {
    if (step.ops[j].kind != OpKind::Collective) continue;
    const LaunchOp &down = step.ops[j - 1], &coll = step.ops[j], &up = step.ops[j + 1];
    const Task& task = l.plan.step_plans[0].tasks[static_cast<std::size_t>(coll.task)];
    const std::uint64_t elements = l.plan.buckets[static_cast<std::size_t>(task.bucket)].elements;
    EXPECT_EQ(down.kind, OpKind::CastDown);
    EXPECT_EQ(up.kind, OpKind::CastUp);
    EXPECT_EQ(coll.dtype, dtype);
    EXPECT_EQ(to_string(coll.dtype), name == "fp16" ? "half" : name == "bf16" ? "bfloat16" : "f8e4m3");
    for (const LaunchOp* op : {&down, &coll, &up}) {
      EXPECT_EQ(op->count, elements);
      EXPECT_EQ(op->buffer, coll.buffer);
      EXPECT_EQ(op->stream, coll.stream);
    }
    // Gradients are averaged: the sum of kRanks ranks scaled by 1/kRanks on the way back, from the narrow copy.
    EXPECT_EQ(up.scale, 1.0f / kRanks);
    EXPECT_EQ(up.dtype, dtype);
    EXPECT_TRUE(l.program.buffers[static_cast<std::size_t>(coll.buffer)].comm_copy);
    ++triples;
  }
  EXPECT_EQ(static_cast<std::size_t>(triples), l.plan.buckets.size());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NcclTranslateDtype, ::testing::Values("fp16", "bf16", "fp8"));

// DGC at sparsity 0.99 from step 0, one tensor per collective (Paddle runs DGC unfused). Tensors of at least
// min_elements (16384) are sparsified: top-k with Paddle's k = int(elements x (1 - 0.99f)), in float as DGCKernel
// computes it, then an ncclAllGather of (int32 index, fp32 value) pairs packed in 32-bit words -- 2k words per rank --
// then the scatter-add of 32 x k pairs. The smaller tensors stay dense: one ncclAllReduce of their elements each.
TEST(NcclTranslate, DgcGivesTopKAndAllGatherOfTwoKWords) {
  const Loaded l = load({R"(strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.99]})"});
  ASSERT_EQ(l.program.step_plans.size(), 1u);
  const LaunchStep& step = l.program.step_plans[0];
  ASSERT_EQ(step.kind, StepKind::DgcSparse);
  expect_well_formed(l, step, l.plan.step_plans[0]);
  std::uint64_t sparse_total = 0, dense_total = 0;
  int gathers = 0;
  for (std::size_t j = 0; j < step.ops.size(); ++j) {
    const LaunchOp& op = step.ops[j];
    if (op.kind != OpKind::Collective) continue;
    const Task& task = l.plan.step_plans[0].tasks[static_cast<std::size_t>(op.task)];
    const std::uint64_t elements = elements_of(l.plan, task.tensors);
    EXPECT_EQ(task.tensors.size(), 1u) << task.label;
    if (op.call == Call::AllReduce) {
      for (int t : task.tensors) EXPECT_LT(l.plan.model.tensors[static_cast<std::size_t>(t)].elements, 16384u);
      EXPECT_EQ(op.count, elements);
      dense_total += elements;
      continue;
    }
    ASSERT_EQ(op.call, Call::AllGather);
    for (int t : task.tensors) EXPECT_GE(l.plan.model.tensors[static_cast<std::size_t>(t)].elements, 16384u);
    const auto k = static_cast<std::uint64_t>(static_cast<float>(elements) * (1.0F - 0.99F));
    EXPECT_EQ(op.dtype, Dtype::Packed32);
    EXPECT_EQ(op.count, 2 * k) << task.label;  // fp32: 4-byte index + 4-byte value = 2 words per pair
    const LaunchOp* topk = nullptr;
    for (std::size_t i = 0; i < j; ++i)
      if (step.ops[i].kind == OpKind::TopK && step.ops[i].buffer == op.buffer) topk = &step.ops[i];
    ASSERT_NE(topk, nullptr);
    EXPECT_EQ(topk->count, k);
    EXPECT_EQ(topk->elements, elements);
    EXPECT_EQ(topk->stream, op.stream);
    const LaunchOp& scatter = step.ops[j + 1];
    EXPECT_EQ(scatter.kind, OpKind::Scatter);
    EXPECT_EQ(scatter.count, k);
    EXPECT_EQ(l.program.buffers[static_cast<std::size_t>(op.buffer)].gathered_words, 2 * k * kRanks);
    sparse_total += elements;
    ++gathers;
  }
  EXPECT_GT(gathers, 0);
  EXPECT_EQ(sparse_total + dense_total, l.plan.model.parameters());
}

// DGC with fp16 values: a pair is a 4-byte index and a 2-byte value, so ceil(6k / 4) words.
TEST(NcclTranslate, DgcPacksNarrowValues) {
  const Loaded l =
      load({R"(strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.999]})", "strategy.comm_dtype=fp16"});
  for (const LaunchOp& op : l.program.step_plans[0].ops)
    if (op.kind == OpKind::Scatter) {
      const LaunchOp* gather = &op - 1;
      EXPECT_EQ(gather->count, (6 * op.count + 3) / 4);
    }
}

// Gradients in fp32 are averaged in place: each allreduce is followed by a CastUp of the fp32 buffer itself (dtype
// float, no copy) scaling the sum by 1/32, as the MPI backend divides and DDP divides by the world size. Sharded
// stage 3's all-gathers of parameter shards are not summed, so nothing follows them; its reduce-scatters scale the
// rank's own shard.
TEST(NcclTranslate, GradientsAreAveragedAndGathersAreNot) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{}, std::vector<std::string>{R"(strategy.sharding={"stage":3})"}}) {
    const Loaded l = load(sets);
    const LaunchStep& step = l.program.step_plans[0];
    int averaged = 0, gathers = 0;
    for (std::size_t j = 0; j < step.ops.size(); ++j) {
      const LaunchOp& op = step.ops[j];
      if (op.kind != OpKind::Collective) continue;
      const bool next_scales = j + 1 < step.ops.size() && step.ops[j + 1].kind == OpKind::CastUp;
      if (op.call == Call::AllGather) {
        EXPECT_FALSE(next_scales);
        ++gathers;
        continue;
      }
      ASSERT_TRUE(next_scales) << j;
      const LaunchOp& up = step.ops[j + 1];
      EXPECT_FLOAT_EQ(up.scale, 1.0f / kRanks);
      EXPECT_EQ(up.dtype, Dtype::Float32);
      EXPECT_EQ(up.shard, op.call == Call::ReduceScatter);
      EXPECT_FALSE(l.program.buffers[static_cast<std::size_t>(op.buffer)].comm_copy);
      ++averaged;
    }
    EXPECT_GT(averaged, 0);
    EXPECT_EQ(gathers > 0, !sets.empty());
  }
}

// Leaders beside no hierarchy are ignored, as the simulator ignores them (and Paddle): 3 leaders do not divide 32
// ranks, yet without use_hierarchical_allreduce the plan translates, its groups one node's 8 ranks.
TEST(NcclTranslate, LeadersWithoutTheHierarchyAreIgnored) {
  const Loaded l = load({"strategy.hierarchical_allreduce_leaders=3"});
  EXPECT_EQ(l.program.group_size, kRanksPerNode);
}

// DGC on every tensor (min_elements 1) at sparsity 0.999: a tensor of fewer than 1000 elements keeps k = 0 pairs, so
// it has nothing to gather: no ncclAllGather of count 0 (on buffers never allocated), only the scatter that writes
// its zeros; a tensor that keeps pairs gathers them.
TEST(NcclTranslate, ADgcTensorKeepingNoPairGathersNothing) {
  const Loaded l =
      load({R"(strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.999],"min_elements":1})"});
  int empty = 0, kept = 0;
  for (const LaunchStep& step : l.program.step_plans)
    for (std::size_t j = 0; j < step.ops.size(); ++j) {
      const LaunchOp& op = step.ops[j];
      if (op.kind == OpKind::Collective) {
        EXPECT_GT(op.count, 0u);
      }
      if (op.kind != OpKind::Scatter) continue;
      const bool gathered = j > 0 && step.ops[j - 1].kind == OpKind::Collective && step.ops[j - 1].task == op.task;
      EXPECT_EQ(gathered, op.count > 0) << j;
      ++(op.count > 0 ? kept : empty);
    }
  EXPECT_GT(empty, 0);
  EXPECT_GT(kept, 0);
}

// Local SGD every 4 steps from step 0: local steps only compute (no collective); averaging steps allreduce every
// bucket and scale the sum by 1/32 on the way back (the average of 32 ranks).
TEST(NcclTranslate, LocalSgdAveragesEveryKSteps) {
  const Loaded l = load({R"(strategy.localsgd={"k_steps":4,"begin_step":0})", "steps=8"});
  std::map<StepKind, const LaunchStep*> by_kind;
  for (const LaunchStep& s : l.program.step_plans) by_kind[s.kind] = &s;
  ASSERT_TRUE(by_kind.count(StepKind::LocalOnly));
  ASSERT_TRUE(by_kind.count(StepKind::LocalAverage));
  EXPECT_TRUE(collectives(*by_kind[StepKind::LocalOnly]).empty());
  const LaunchStep& avg = *by_kind[StepKind::LocalAverage];
  EXPECT_EQ(collectives(avg).size(), l.plan.buckets.size());
  int scales = 0;
  for (const LaunchOp& op : avg.ops)
    if (op.kind == OpKind::CastUp) {
      EXPECT_FLOAT_EQ(op.scale, 1.0f / kRanks);
      ++scales;
    }
  EXPECT_EQ(static_cast<std::size_t>(scales), l.plan.buckets.size());
  // Steps 3 and 7 average (the 4th and 8th step of each window).
  for (int s : {3, 7})
    EXPECT_EQ(l.program.step_plans[static_cast<std::size_t>(l.plan.step_plan_of[static_cast<std::size_t>(s)])].kind,
              StepKind::LocalAverage);
}

// Adaptive Local SGD: every step, local or averaging, first allreduces the one-element fp32 loss twice on one
// buffer of its own (holding the loss, no tensors), then the averaging step's buckets.
TEST(NcclTranslate, AdaptiveLocalSgdAllreducesTheLossInEveryStep) {
  const Loaded l = load({R"(strategy.adaptive_localsgd={"init_k_steps":2,"begin_step":1})", "steps=3"});
  ASSERT_EQ(l.program.step_plans.size(), 2u);
  for (const LaunchStep& step : l.program.step_plans) {
    const std::vector<const LaunchOp*> calls = collectives(step);
    ASSERT_GE(calls.size(), 2u);
    for (int i : {0, 1}) {
      const LaunchOp& op = *calls[static_cast<std::size_t>(i)];
      EXPECT_EQ(op.call, Call::AllReduce);
      EXPECT_EQ(op.count, kLossElements);
      EXPECT_EQ(op.dtype, Dtype::Float32);
      const BufferSpec& buffer = l.program.buffers[static_cast<std::size_t>(op.buffer)];
      EXPECT_EQ(buffer.holds, Buffer::Loss);
      EXPECT_TRUE(buffer.tensors.empty());
    }
    EXPECT_EQ(calls[0]->buffer, calls[1]->buffer);
    const std::size_t buckets = step.kind == StepKind::LocalAverage ? l.plan.buckets.size() : 0;
    EXPECT_EQ(calls.size(), 2 + buckets);
  }
}

// ZeRO-2: gradients reduce-scattered, parameters all-gathered; NCCL counts are per rank: ceil(elements / 32).
TEST(NcclTranslate, ShardedCountsArePerRank) {
  const Loaded l = load({R"(strategy.sharding={"stage":2})"});
  int rs = 0, ag = 0;
  for (const LaunchOp* op : collectives(l.program.step_plans[0])) {
    const Task& task = l.plan.step_plans[0].tasks[static_cast<std::size_t>(op->task)];
    const std::uint64_t elements = elements_of(l.plan, task.tensors);
    EXPECT_EQ(op->count, (elements + kRanks - 1) / kRanks) << task.label;
    EXPECT_EQ(l.program.buffers[static_cast<std::size_t>(op->buffer)].elements % kRanks, 0u);
    rs += op->call == Call::ReduceScatter;
    ag += op->call == Call::AllGather;
  }
  EXPECT_GT(rs, 0);
  EXPECT_GT(ag, 0);
  expect_well_formed(l, l.program.step_plans[0], l.plan.step_plans[0]);
}

// partition_mb = 4: a bucket's allreduce is cut into pieces of at most 4 MiB of fp32 (1 Mi elements), inside
// tensors and across them; a piece names the tensors it touches and where it starts in their concatenation (the
// Plan's ElementRange). Each piece runs on that range of the buffer of its tensors: its casts and its collective
// start at the piece's offset, the range lies inside the tensors, the buffer holds it, and pieces that share a
// buffer (ResNet-50's tensors of 2.36 M elements are cut into three) take disjoint ranges of it.
TEST(NcclTranslate, PiecesRunOnTheirOwnRangeOfTheBuffer) {
  const Loaded l = load({"strategy.partition_mb=4", "strategy.comm_dtype=fp16"});
  const LaunchStep& step = l.program.step_plans[0];
  const std::vector<Task>& tasks = l.plan.step_plans[0].tasks;
  std::map<int, std::vector<std::pair<std::uint64_t, std::uint64_t>>> ranges;  // per buffer: the pieces' ranges
  for (const LaunchOp& op : step.ops) {
    if (op.kind != OpKind::CastDown && op.kind != OpKind::CastUp && op.kind != OpKind::Collective) continue;
    const Task& task = tasks[static_cast<std::size_t>(op.task)];
    const Task& piece = op.kind == OpKind::CastDown ? tasks[static_cast<std::size_t>(task.prepares)] : task;
    ASSERT_GT(piece.piece.count, 0u) << describe(op, l.program);
    EXPECT_EQ(op.first, piece.piece.offset) << describe(op, l.program);
    EXPECT_EQ(op.count, piece.piece.count) << describe(op, l.program);
    const BufferSpec& b = l.program.buffers[static_cast<std::size_t>(op.buffer)];
    EXPECT_LE(op.first + op.count, elements_of(l.plan, b.tensors)) << describe(op, l.program);
    EXPECT_LE(op.first + op.count, b.elements) << describe(op, l.program);
    if (op.kind == OpKind::Collective) ranges[op.buffer].push_back({op.first, op.first + op.count});
  }
  std::size_t shared = 0;
  for (auto& [buffer, r] : ranges) {
    std::sort(r.begin(), r.end());
    for (std::size_t i = 1; i < r.size(); ++i) EXPECT_LE(r[i - 1].second, r[i].first) << "buffer " << buffer;
    shared += r.size() > 1;
  }
  EXPECT_GT(shared, 0u) << "no buffer is shared by pieces: the case checks nothing about offsets";
  expect_well_formed(l, step, l.plan.step_plans[0]);
}

// overlap = false (the serial mode of paddle-overlap.txt): every bucket waits for the end of backward (the first
// layer's backward, the last compute task).
TEST(NcclTranslate, NoOverlapWaitsForTheWholeBackward) {
  const Loaded l = load({"strategy.overlap=false"});
  const StepPlan& ps = l.plan.step_plans[0];
  int last_compute = -1;
  for (std::size_t i = 0; i < ps.tasks.size(); ++i)
    if (ps.tasks[i].kind == TaskKind::Compute) last_compute = static_cast<int>(i);
  for (const LaunchOp& op : l.program.step_plans[0].ops)
    if (op.kind == OpKind::Wait && op.stream > 0 && op.task >= 0) {
      EXPECT_EQ(op.event, last_compute);
    }
}

// The single-step entry point lists the same ops as the whole-program translation.
TEST(NcclTranslate, SingleStepEntryPointMatches) {
  const Loaded l = load({"strategy.nccl_comm_num=3"});
  const std::vector<LaunchOp> ops = translate(l.plan, l.plan.step_plans[0], kRanksPerNode);
  ASSERT_EQ(ops.size(), l.program.step_plans[0].ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].kind, l.program.step_plans[0].ops[i].kind);
    EXPECT_EQ(ops[i].count, l.program.step_plans[0].ops[i].count);
    EXPECT_EQ(ops[i].stream, l.program.step_plans[0].ops[i].stream);
  }
}

// --dry-run output: one line per op naming the NCCL call, and the Plan task's label.
TEST(NcclTranslate, FormatsTheProgram) {
  const Loaded l = load({"strategy.use_hierarchical_allreduce=true"});
  const std::string text = format_program(l.plan, l.program);
  EXPECT_NE(text.find("ncclBroadcast comm"), std::string::npos);
  EXPECT_NE(text.find("(s1 inter)"), std::string::npos);
  EXPECT_NE(text.find("[bucket 0]"), std::string::npos);
  EXPECT_NE(text.find("32 ranks, hierarchy groups of 8"), std::string::npos);
}

// `commsim run --backend nccl --dry-run` prints that program without a GPU: on 2 DGX A100 nodes (8 GPUs each) the
// header counts 2 x 8 = 16 ranks, and ResNet-50's buckets are ncclAllReduce calls on the world communicator.
TEST(NcclTranslate, CliDryRunPrintsTheProgram) {
  const std::string out_file = ::testing::TempDir() + "commsim-dry-run.txt";
  const int status =
      std::system((std::string(COMMSIM_CLI_PATH) +
                   " run --backend nccl scenarios/resnet50-dgx-a100.json --set nodes=2 --dry-run > " + out_file)
                      .c_str());
  std::ifstream in(out_file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(out_file.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_EQ(text.rfind("# 16 ranks", 0), 0u) << text;
  EXPECT_NE(text.find("ncclAllReduce comm"), std::string::npos) << text;
  EXPECT_NE(text.find("[bucket 0]"), std::string::npos) << text;
}

}  // namespace
}  // namespace commsim::nccl
