// Training-step model: each knob moves the prediction as theory says. Expectations are derived in the comments.
//
// The cluster of most tests: two nodes of two GPUs, every link of the same latency; bandwidths set per test.
//
//   gpu0 ─┐                            ┌─ gpu2
//         sw0 ─ nic0 ══ switch ══ nic1 ─ sw1
//   gpu1 ─┘                            └─ gpu3
//
// The model: four layers, one 1 Mi-element fp32 tensor (4 MiB) each; forward 1 ms and backward 2 ms per layer at
// batch 1, so one step computes 4 + 8 = 12 ms. Gamma is made negligible (memory 3e18 B/s: a reduction of 1 MiB
// takes ~1 ps) so that the arithmetic below is the alpha-beta part only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/collective/nccl_model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/step/simulation.hpp"
#include "sim/step/step_simulator.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim {
namespace {

namespace fs = std::filesystem;

constexpr double kMiB = 1048576.0;
constexpr double kComputeS = 0.012;  // 4 x (1 ms forward + 2 ms backward)

std::string write(const std::string& name, const Json& doc) { return test::write_temp_json(name, doc); }

std::string cluster(double intra_Bps, double inter_Bps, double latency_s, int gpus_per_node = 2) {
  auto cls = [&](double bw) { return Json{{"latency_s", latency_s}, {"bandwidth_Bps", bw}, {"source", "test"}}; };
  Json devices = Json::array(), links = Json::array();
  for (int g = 0; g < gpus_per_node; ++g) {
    devices.push_back({{"name", "gpu" + std::to_string(g)}, {"kind", "gpu"}});
    links.push_back({{"a", "gpu" + std::to_string(g)}, {"b", "sw"}, {"class", "nvswitch"}});
  }
  devices.push_back({{"name", "sw"}, {"kind", "nvswitch"}});
  devices.push_back({{"name", "nic0"}, {"kind", "nic"}});
  links.push_back({{"a", "nic0"}, {"b", "sw"}, {"class", "pcie"}});
  Json t = {{"name", "test-cluster"},
            {"link_classes", {{"nvswitch", cls(intra_Bps)}, {"pcie", cls(intra_Bps)}, {"rdma", cls(inter_Bps)}}},
            {"node", {{"devices", devices}, {"links", links}}},
            {"nodes", 2},
            {"fabric", {{"kind", "single_switch"}, {"link_class", "rdma"}}}};
  return write("cluster-" + std::to_string(intra_Bps) + "-" + std::to_string(inter_Bps) + "-" +
                   std::to_string(latency_s) + "-" + std::to_string(gpus_per_node) + ".json",
               t);
}

Json scenario(const std::string& topology, Json strategy, int steps = 2) {
  return {
      {"name", "test"},
      {"topology", topology},
      {"model", fs::absolute("tests/data/training/model-4x1m.json").string()},
      {"device", {{"name", "test"}, {"peak_flops", 1e12}, {"efficiency", 1}, {"memory_Bps", 3e18}, {"source", "test"}}},
      {"batch_per_gpu", 1},
      {"steps", steps},
      {"strategy", strategy}};
}

Result simulate(const Json& doc, Fidelity fidelity = Fidelity::Analytical) {
  return simulate_document(doc, write("scenario.json", doc), fidelity).result;
}

const Json kNoFusion = {{"mode", "none"}};
const Json kOneBucket = {{"mode", "size"}, {"size_mb", 1000}};

TEST(LinkBusy, SteadyStepsAloneAreAveraged) {
  // Four identical synchronous steps in flow fidelity: each keeps the links of each class busy for the same time B,
  // so link_class_busy_s (the mean over the steady steps) is B whichever step the steady state starts at. Starting
  // it at step 2 averages steps 2 and 3 (2B / 2 = B); counting the links' busy time since step 0 into step 2, as
  // the simulator once did, would give (3B + B) / 2 = 2B.
  const std::string topo = cluster(100e9, 10e9, 5e-6);
  const Json doc = scenario(topo, {{"fusion", kOneBucket}}, 4);
  SimulationRun run = prepare_document(doc, write("busy.json", doc));
  ASSERT_EQ(run.plan.steady_from, 0);
  const Result all = simulate_plan(run.plan, *run.topology, Fidelity::Flow, {});
  run.plan.steady_from = 2;
  const Result last_two = simulate_plan(run.plan, *run.topology, Fidelity::Flow, {});
  ASSERT_FALSE(all.link_class_busy_s.empty());
  for (const auto& [link_class, busy_s] : all.link_class_busy_s)
    EXPECT_NEAR(last_two.link_class_busy_s.at(link_class), busy_s, busy_s * 1e-9) << link_class;
}

TEST(Fusion, ChangesNothingWithZeroLatency) {
  // alpha = 0: a ring allreduce of m bytes takes 2(p-1)(m/p)/beta, linear in m, so four 4 MiB allreduces take as
  // long as one of 16 MiB: p = 4, beta = 10 GB/s -> 6 x 4 MiB/4 / 1e10 = 629.1456 us each, 2.5166 ms in all.
  const std::string t = cluster(10e9, 10e9, 0);
  const Result separate = simulate(scenario(t, {{"fusion", kNoFusion}, {"overlap", false}}));
  const Result fused = simulate(scenario(t, {{"fusion", kOneBucket}, {"overlap", false}}));
  const double comm_s = 4 * 6 * (kMiB / 1e10);
  EXPECT_NEAR(fused.step_time_s, kComputeS + comm_s, 1e-9);
  EXPECT_NEAR(separate.step_time_s, fused.step_time_s, 1e-9 * fused.step_time_s);
}

TEST(Fusion, FewerBucketsWinWithLargeLatency) {
  // alpha = 100 us, bandwidth practically infinite: each allreduce costs its 2(p-1) = 6 latencies, so four buckets
  // cost 3 x 6 x 100 us = 1.8 ms more than one.
  const std::string t = cluster(1e18, 1e18, 100e-6);
  const Result separate = simulate(scenario(t, {{"fusion", kNoFusion}, {"overlap", false}}));
  const Result fused = simulate(scenario(t, {{"fusion", kOneBucket}, {"overlap", false}}));
  EXPECT_NEAR(separate.step_time_s - fused.step_time_s, 3 * 6 * 100e-6, 1e-8);
}

TEST(Fusion, NoFusionBlockIsTheDocumentedDefault) {
  // Without a "fusion" block a scenario buckets as {"mode": "size", "size_mb": 25} spelled out: the first bucket's
  // cap is size_mb (first_bucket_mb 0 means "same as size_mb"). The four 4 MiB tensors (16.8 MB) fit under 25 MB,
  // so both plans have one bucket of all four tensors; a 0 MB first-bucket cap would have split off the last
  // layer's tensor (two buckets). A 1 MB first bucket (DDP's) does split it off: 4.19 MB >= 1 MB closes it.
  const std::string t = cluster(10e9, 10e9, 0);
  auto buckets = [&](const Json& strategy) {
    return simulate_document(scenario(t, strategy), write("scenario.json", scenario(t, strategy)), Fidelity::Analytical)
        .plan.buckets;
  };
  const auto implicit = buckets(Json::object());
  const auto spelled_out = buckets({{"fusion", {{"mode", "size"}, {"size_mb", 25}}}});
  const auto ddp_first = buckets({{"fusion", {{"mode", "size"}, {"size_mb", 25}, {"first_bucket_mb", 1}}}});
  ASSERT_EQ(implicit.size(), 1u);
  EXPECT_EQ(implicit[0].tensors, (std::vector<int>{3, 2, 1, 0}));
  ASSERT_EQ(spelled_out.size(), 1u);
  EXPECT_EQ(spelled_out[0].tensors, implicit[0].tensors);
  ASSERT_EQ(ddp_first.size(), 2u);
  EXPECT_EQ(ddp_first[0].tensors, (std::vector<int>{3}));
}

TEST(Overlap, HidesAllButTheLastBucket) {
  // One bucket per layer, 629.1456 us each (see above), shorter than a layer's 2 ms backward: each bucket finishes
  // before the next is ready, so only the last (layer 0's, ready at 12 ms) shows: step = 12 ms + 629.1456 us.
  const std::string t = cluster(10e9, 10e9, 0);
  const double bucket_s = 6 * (kMiB / 1e10);
  const Result on = simulate(scenario(t, {{"fusion", kNoFusion}, {"overlap", true}}));
  const Result off = simulate(scenario(t, {{"fusion", kNoFusion}, {"overlap", false}}));
  EXPECT_NEAR(on.step_time_s, kComputeS + bucket_s, 1e-9);
  EXPECT_NEAR(on.exposed_comm_s, bucket_s, 1e-9);
  EXPECT_NEAR(off.step_time_s, kComputeS + 4 * bucket_s, 1e-9);
  // The bounds: max(compute, comm) <= step <= compute + comm.
  EXPECT_GE(on.step_time_s, std::max(on.compute_s, on.comm_s));
  EXPECT_LE(on.step_time_s, on.compute_s + on.comm_s + 1e-12);
  EXPECT_NEAR(on.overlap_ratio, 0.75, 1e-6);  // 3 of 4 equal buckets hidden
}

TEST(Streams, HelpOnlyWhenOneStreamCannotFillTheLink) {
  // Bandwidth-bound (alpha = 0): two streams share the bandwidth, so four buckets take 4 x 629.1456 us either way.
  const std::string bw = cluster(10e9, 10e9, 0);
  const Result one = simulate(scenario(bw, {{"fusion", kNoFusion}, {"overlap", false}, {"nccl_comm_num", 1}}));
  const Result two = simulate(scenario(bw, {{"fusion", kNoFusion}, {"overlap", false}, {"nccl_comm_num", 2}}));
  EXPECT_NEAR(two.step_time_s, one.step_time_s, 1e-9);
  // Latency-bound (alpha = 100 us, bandwidth ~infinite): each allreduce waits 6 x 100 us; two streams wait in
  // parallel, so the communication after backward halves: 4 x 600 us -> 2 x 600 us.
  const std::string lat = cluster(1e18, 1e18, 100e-6);
  const Result lat_one = simulate(scenario(lat, {{"fusion", kNoFusion}, {"overlap", false}, {"nccl_comm_num", 1}}));
  const Result lat_two = simulate(scenario(lat, {{"fusion", kNoFusion}, {"overlap", false}, {"nccl_comm_num", 2}}));
  EXPECT_NEAR(lat_one.step_time_s - kComputeS, 4 * 600e-6, 1e-8);
  EXPECT_NEAR(lat_two.step_time_s - kComputeS, 2 * 600e-6, 1e-8);
}

TEST(Hierarchy, BeatsFlatRingWhenInterNodeIsSlow) {
  // Intra-node 100 GB/s, inter-node 1 GB/s, one 16 MiB bucket (m), alpha = 0.
  // Flat ring over 4 ranks: 2(p-1) steps of m/4 through the slowest hop: 1.5 m / 1e9 = 25.17 ms.
  // Hierarchical with 2 leaders (groups of 2 ranks; Paddle hierarchical_allreduce_inter_nranks = 2): group allreduce 2
  // x (m/2)/100e9 = 0.168 ms, leaders' allreduce 2 x (m/2)/1e9 = 16.78 ms, group broadcast in 32 pipelined 512 KiB
  // pieces 32 x 512 KiB/100e9 = 0.168 ms: 17.11 ms.
  const std::string t = cluster(100e9, 1e9, 0);
  const double m = 16 * kMiB;
  const Result flat = simulate(scenario(t, {{"fusion", kOneBucket}, {"overlap", false}}));
  const Result hier = simulate(scenario(t, {{"fusion", kOneBucket},
                                            {"overlap", false},
                                            {"use_hierarchical_allreduce", true},
                                            {"hierarchical_allreduce_leaders", 2}}));
  EXPECT_NEAR(flat.comm_s, 1.5 * m / 1e9, 1e-6);
  EXPECT_NEAR(hier.comm_s, m / 100e9 + m / 1e9 + m / 100e9, 1e-6);
  EXPECT_LT(hier.step_time_s, flat.step_time_s);
}

TEST(Hierarchy, GroupSizeIsPaddlesInterNranksAndLeadersItsInverse) {
  // 2 nodes x 4 GPUs = 8 ranks. Paddle's inter_nranks is the ranks per group (gen_nccl_id_op.cc: inter_trainer_id =
  // trainer_id % inter_nranks), so group_size 4 is 8 / 4 = 2 leaders and group_size 2 is 4 leaders: each pair of
  // spellings is the same plan, and 2 leaders (one per node, the leaders' allreduce over 2 ranks) differ from 4.
  const std::string t = cluster(100e9, 1e9, 0, 4);
  auto hier = [&](const char* field, int value) {
    return simulate(scenario(
        t, {{"fusion", kOneBucket}, {"overlap", false}, {"use_hierarchical_allreduce", true}, {field, value}}));
  };
  const Result two_leaders = hier("hierarchical_allreduce_leaders", 2),
               groups_of_4 = hier("hierarchical_allreduce_group_size", 4);
  const Result four_leaders = hier("hierarchical_allreduce_leaders", 4),
               groups_of_2 = hier("hierarchical_allreduce_group_size", 2);
  EXPECT_EQ(two_leaders.step_time_s, groups_of_4.step_time_s);
  EXPECT_EQ(four_leaders.step_time_s, groups_of_2.step_time_s);
  EXPECT_NE(two_leaders.step_time_s, four_leaders.step_time_s);
  // One group of all 8 ranks is allowed in both spellings (Paddle: inter_nranks > 1 and dividing the ranks, so
  // inter_nranks = 8 passes) and is one plan.
  EXPECT_EQ(hier("hierarchical_allreduce_leaders", 1).step_time_s,
            hier("hierarchical_allreduce_group_size", 8).step_time_s);
}

TEST(Dgc, MovesTheBytesTheFormulaSays) {
  // Sparsity 0.999 from step 0; every tensor (1 Mi elements >= 16384) is sparsified on its own: each rank keeps
  // Paddle's k = int(1048576 x (1 - 0.999f)) = int(1048.56) = 1048 (value, index) pairs of 4 + 4 bytes = 8384 bytes
  // per tensor. The AllGather of p = 4 such contributions makes each rank send (p-1) x 8384 = 25152 bytes per tensor,
  // 100608 per step.
  const std::string t = cluster(10e9, 10e9, 0);
  const Json dgc = {{"rampup_begin_step", 0}, {"rampup_step", 1}, {"sparsity", {0.999}}};
  const Result r = simulate(scenario(t, {{"fusion", kNoFusion}, {"dgc", dgc}}));
  EXPECT_DOUBLE_EQ(r.bytes_sent_per_rank, 4 * 3 * 8384.0);
  // Dense, the same step sends 2(p-1)/p x 16 MiB = 1.5 x 16 MiB per rank.
  const Result dense = simulate(scenario(t, {{"fusion", kNoFusion}}));
  EXPECT_DOUBLE_EQ(dense.bytes_sent_per_rank, 1.5 * 16 * kMiB);
}

TEST(Dgc, RampUpMappingIsPaddles) {
  // Paddle's example: rampup_step 100 with 5 sparsities: steps 0-19 use the first, 20-39 the second, ...
  Dgc d;
  d.rampup_begin_step = 0;
  d.rampup_step = 100;
  d.sparsity = {0.75, 0.9375, 0.984375, 0.996, 0.999};
  EXPECT_EQ(dgc_sparsity(d, 0), 0.75);
  EXPECT_EQ(dgc_sparsity(d, 19), 0.75);
  EXPECT_EQ(dgc_sparsity(d, 20), 0.9375);
  EXPECT_EQ(dgc_sparsity(d, 99), 0.999);
  EXPECT_EQ(dgc_sparsity(d, 5000), 0.999);  // after the ramp, the last value stays
  d.rampup_begin_step = 10;                 // dense before rampup_begin_step
  EXPECT_EQ(dgc_sparsity(d, 9), 0.0);
  EXPECT_EQ(dgc_sparsity(d, 10), 0.75);
  EXPECT_EQ(dgc_sparsity(d, 30), 0.9375);
}

TEST(Dgc, RampUpShowsInTheStepTimes) {
  // Dense for steps 0-1 (rampup_begin_step 2), then sparse: the dense steps carry 16 MiB allreduces, so they are
  // slower.
  const std::string t = cluster(10e9, 1e9, 0);
  const Json dgc = {{"rampup_begin_step", 2}, {"rampup_step", 1}, {"sparsity", {0.999}}};
  const Result r = simulate(scenario(t, {{"fusion", kOneBucket}, {"overlap", false}, {"dgc", dgc}}, 4));
  ASSERT_EQ(r.steps_s.size(), 4u);
  EXPECT_EQ(r.steps_s[0], r.steps_s[1]);
  EXPECT_GT(r.steps_s[1], r.steps_s[2]);
  // One sparsity is final from rampup_begin_step: Paddle's index int((2 - 2) x 1 / 1) = 0 is already the last.
  EXPECT_EQ(r.steady_from, 2);
}

TEST(Dgc, StepTimesFollowPaddlesRampUpIndex) {
  // rampup_step 10 over 3 sparsities: Paddle's idx = int(s x 3 / 10) gives steps 0-3 / 4-6 / 7+ (schedules_test.cpp).
  // One bucket, no overlap: each step's gather carries (1 - sparsity) of the 16 MiB, so the three sparsities give
  // three different step times, equal within each run of steps; the steady state starts at step 7.
  const std::string t = cluster(10e9, 1e9, 0);
  const Json dgc = {{"rampup_begin_step", 0}, {"rampup_step", 10}, {"sparsity", {0.9, 0.99, 0.999}}};
  const Result r = simulate(scenario(t, {{"fusion", kOneBucket}, {"overlap", false}, {"dgc", dgc}}, 10));
  ASSERT_EQ(r.steps_s.size(), 10u);
  EXPECT_EQ(r.steps_s[0], r.steps_s[3]);
  EXPECT_GT(r.steps_s[3], r.steps_s[4]);  // sparser from step 4
  EXPECT_EQ(r.steps_s[4], r.steps_s[6]);
  EXPECT_GT(r.steps_s[6], r.steps_s[7]);  // sparser again from step 7
  EXPECT_EQ(r.steps_s[7], r.steps_s[9]);
  EXPECT_EQ(r.steady_from, 7);
}

// What the local DGC work adds to a sparse step (sparsity 0.999 from step 0, one bucket, no overlap: the work is on
// the step's critical path) at these device rates, against the tests' 3e18 B/s memory, where it is negligible.
// dgc_Bps 0: not given (priced from memory passes).
double dgc_local_work_s(double memory_Bps, double dgc_Bps) {
  const std::string t = cluster(10e9, 10e9, 0);
  const Json dgc = {{"rampup_begin_step", 0}, {"rampup_step", 1}, {"sparsity", {0.999}}};
  const Json fast = scenario(t, {{"fusion", kOneBucket}, {"overlap", false}, {"dgc", dgc}});
  Json slow = fast;
  slow["device"]["memory_Bps"] = memory_Bps;
  if (dgc_Bps > 0) slow["device"]["dgc_Bps"] = dgc_Bps;
  return simulate(slow).step_time_s - simulate(fast).step_time_s;
}

TEST(Dgc, LocalWorkIsPricedFromMemoryBandwidth) {
  // A sparse step's local DGC work is memory-bound: 7 passes over the 4 Mi fp32 elements (residual 3, selection 1,
  // decode 3) plus 16 B for each of the p x kept gathered pairs, p = 4, kept = 4 tensors x 1048 (each tensor on its
  // own, as Paddle runs DGC unfused: int(1 Mi x (1 - 0.999f)) = 1048) = 4192. At memory_Bps 1e9 the step grows by
  // (7 x 4 x 4 Mi + 16 x 4 x 4192) / 1e9 = 117.71 ms (nothing else in this step uses memory_Bps).
  EXPECT_NEAR(dgc_local_work_s(1e9, 0), (7.0 * 4 * 4 * kMiB + 16.0 * 4 * 4192) / 1e9, 1e-9);
}

TEST(Dgc, AMeasuredDgcRateReplacesTheMemoryPasses) {
  // With the device's dgc_Bps (the rate `commsim bench` measures for the residual, selection, clearing and averaging)
  // the 4 Mi fp32 elements cost 4 x 4 Mi / dgc_Bps instead of 7 memory passes; the 16 B per gathered pair stay at
  // memory_Bps. Memory at 1e9, dgc_Bps 2e8: 16 MiB / 2e8 + 16 x 4 x 4192 / 1e9 = 83.886 + 0.268 ms.
  EXPECT_NEAR(dgc_local_work_s(1e9, 2e8), 4.0 * 4 * kMiB / 2e8 + 16.0 * 4 * 4192 / 1e9, 1e-9);
}

TEST(LocalSgd, KFourCommunicatesAQuarterAsOften) {
  // k_steps 4 from step 0 over 8 steps: parameters are averaged after steps 3 and 7 only; the other six steps
  // only compute (12 ms).
  const std::string t = cluster(10e9, 10e9, 0);
  const Result r =
      simulate(scenario(t, {{"fusion", kOneBucket}, {"localsgd", {{"k_steps", 4}, {"begin_step", 0}}}}, 8));
  int communicating = 0;
  for (double s : r.steps_s) communicating += s > kComputeS + 1e-9;
  EXPECT_EQ(communicating, 2);
  EXPECT_GT(r.steps_s[3], kComputeS);
  EXPECT_GT(r.steps_s[7], kComputeS);
  // Bytes: two allreduces of 16 MiB in 8 steps: 2 x 1.5 x 16 MiB / 8 per step on average.
  EXPECT_DOUBLE_EQ(r.bytes_sent_per_rank, 2 * 1.5 * 16 * kMiB / 8);
}

TEST(LocalSgd, AdaptiveInitKStepsIsTheFirstInterval) {
  // adaptive_localsgd init_k_steps 16 from begin_step 0 (accepted: Paddle does not cap the first interval): the
  // first average after step 15, then k = ceil(sqrt(16)) = 4 with constant lr and loss: after steps 19 and 23. Of 24
  // steps, these 3 communicate; the steady state starts after the first interval, at step 16.
  // Every step also allreduces the loss twice, so the averaging steps are those above the shortest step.
  const std::string t = cluster(10e9, 10e9, 0);
  const Result r = simulate(
      scenario(t, {{"fusion", kOneBucket}, {"adaptive_localsgd", {{"init_k_steps", 16}, {"begin_step", 0}}}}, 24));
  const double local_s = *std::min_element(r.steps_s.begin(), r.steps_s.end());
  std::vector<int> communicating;
  for (int s = 0; s < 24; ++s)
    if (r.steps_s[s] > local_s + 1e-9) communicating.push_back(s);
  EXPECT_EQ(communicating, (std::vector<int>{15, 19, 23}));
  EXPECT_EQ(r.steady_from, 16);
}

TEST(LocalSgd, AdaptiveAveragesTheLossInEveryStep) {
  // Paddle's adaptive optimizer appends two allreduces of the scalar loss to the main block (_generate_avg_loss,
  // called from `initialize` and `communicate_avg_loss`), so every step runs them after the update, and an
  // averaging step averages the parameters after them. Plain Local SGD has none. Steps 0 and 2 average (begin_step
  // 1: every step up to it; then init_k_steps 2 after the last average at Paddle's step 1), step 1 does not.
  const std::string t = cluster(10e9, 10e9, 5e-6);
  const Json adaptive =
      scenario(t, {{"fusion", kOneBucket}, {"adaptive_localsgd", {{"init_k_steps", 2}, {"begin_step", 1}}}}, 3);
  const SimulationRun run = prepare_document(adaptive, write("adaptive.json", adaptive));
  for (int s = 0; s < 3; ++s) {
    const StepPlan& step = run.plan.step_plan(s);
    std::vector<int> loss, averages;
    for (std::size_t i = 0; i < step.tasks.size(); ++i) {
      const Task& task = step.tasks[i];
      if (task.purpose == Purpose::LossAverage && task.kind == TaskKind::Collective) loss.push_back(int(i));
      if (task.purpose == Purpose::ParameterAverage) averages.push_back(int(i));
    }
    ASSERT_EQ(loss.size(), 2u) << "step " << s;
    const Task& first = step.tasks[loss[0]];
    const Task& second = step.tasks[loss[1]];
    EXPECT_EQ(first.collective.bytes, 4u);  // one fp32
    EXPECT_TRUE(first.tensors.empty());
    EXPECT_EQ(step.tasks[first.deps.at(0)].kind, TaskKind::Compute);  // after the last backward
    EXPECT_EQ(second.deps, std::vector<int>{loss[0]});
    EXPECT_EQ(averages.size(), s == 1 ? 0u : 1u) << "step " << s;
    for (int a : averages) EXPECT_EQ(step.tasks[a].deps, std::vector<int>{loss[1]});
  }
  // The local step pays the two allreduces one after the other, after the compute: 12 ms + 2 x (the launch the
  // plan charges + what the collective model prices one 4 B allreduce at on this cluster).
  const Task& loss = run.plan.step_plan(1).tasks.back();
  const double one_s = loss.overhead_before_s + predict_seconds(loss.collective, *run.topology);
  EXPECT_GT(one_s, 5e-6);  // at least one hop's latency
  EXPECT_NEAR(simulate(adaptive).steps_s[1], kComputeS + 2 * one_s, 1e-12);
  const Json plain = scenario(t, {{"fusion", kOneBucket}, {"localsgd", {{"k_steps", 2}, {"begin_step", 1}}}}, 3);
  const SimulationRun plain_run = prepare_document(plain, write("plain.json", plain));
  for (const Task& task : plain_run.plan.step_plan(1).tasks) EXPECT_NE(task.kind, TaskKind::Collective);
  EXPECT_DOUBLE_EQ(simulate(plain).steps_s[1], kComputeS);
}

TEST(SteadyState, ARunTooShortToReachItSaysSo) {
  // DGC from step 5 over 2 steps of 2 sparsities reaches 0.99 at step 6 (index int(1 x 2 / 2) = 1): a 3-step run
  // has no steady step, its mean is over all 3, and the notes say so; 8 steps reach it, and the notes are silent.
  const std::string t = cluster(10e9, 10e9, 0);
  const Json dgc = {{"rampup_begin_step", 5}, {"rampup_step", 2}, {"sparsity", {0.9, 0.99}}};
  const auto said = [](const Result& r) {
    return std::any_of(r.notes.begin(), r.notes.end(),
                       [](const std::string& n) { return n.starts_with("steady state not reached: DGC"); });
  };
  const Result short_run = simulate(scenario(t, {{"fusion", kOneBucket}, {"dgc", dgc}}, 3));
  EXPECT_EQ(short_run.steady_from, 0);
  EXPECT_TRUE(said(short_run));
  const Result long_run = simulate(scenario(t, {{"fusion", kOneBucket}, {"dgc", dgc}}, 8));
  EXPECT_EQ(long_run.steady_from, 6);
  EXPECT_FALSE(said(long_run));
}

TEST(LocalSgd, AdaptiveIntervalFollowsPaddlesFormula) {
  // k = ceil(sqrt(lr_0 * loss_t / (lr_t * loss_0) * init_k)), clamped to [1, 16].
  LocalSgd l;
  l.adaptive = true;
  l.init_k_steps = 4;
  EXPECT_EQ(adaptive_k(l, 0), 2);  // constant lr and loss: ceil(sqrt(4)) = 2
  l.lr_decay_factor = 0.1;
  l.lr_decay_every_steps = 10;
  EXPECT_EQ(adaptive_k(l, 10), 7);   // lr 10x smaller: ceil(sqrt(10 x 4)) = ceil(6.32) = 7
  EXPECT_EQ(adaptive_k(l, 20), 16);  // ceil(sqrt(100 x 4)) = 20, capped at 16
  l.lr_decay_factor = 1;
  l.loss_initial = 4;
  l.loss_final = 1;
  l.loss_half_life_steps = 1;
  EXPECT_EQ(adaptive_k(l, 1000), 1);  // loss 4x smaller: ceil(sqrt(4 / 4)) = 1
}

TEST(Stragglers, SynchronousStepsWaitForTheSlowestRank) {
  // Rank 3 computes twice as slowly: every synchronous step's compute takes 24 ms instead of 12.
  const std::string t = cluster(1e18, 1e18, 0);
  const Result r = simulate(scenario(t, {{"fusion", kOneBucket}, {"stragglers", {{"slow_ranks", {{"3", 2.0}}}}}}));
  EXPECT_NEAR(r.compute_s, 2 * kComputeS, 1e-9);
}

TEST(Stragglers, AdaptiveLocalSgdWaitsInEveryStep) {
  // Rank 3 computes twice as slowly: 24 ms against 12. Plain Local SGD with k 16 from step 0 runs 16 steps (one
  // whole period, whole_period_steps) and averages after step 15 only: its local steps follow the mean rank,
  // (3 x 12 + 24) / 4 = 15 ms, and the averaging step waits for rank 3's 16 x 24 = 384 ms less the 15 x 15 already
  // counted, 159 ms. Adaptive Local SGD allreduces the loss in every step, so every step waits for rank 3's 24 ms, as
  // synchronous training does.
  const std::string t = cluster(1e18, 1e18, 0);
  const Json slow = {{"slow_ranks", {{"3", 2.0}}}};
  const Result plain = simulate(scenario(
      t, {{"fusion", kOneBucket}, {"stragglers", slow}, {"localsgd", {{"k_steps", 16}, {"begin_step", 0}}}}, 4));
  const Result adaptive = simulate(scenario(
      t,
      {{"fusion", kOneBucket}, {"stragglers", slow}, {"adaptive_localsgd", {{"init_k_steps", 16}, {"begin_step", 0}}}},
      4));
  ASSERT_EQ(plain.steps_s.size(), 16u);
  EXPECT_NEAR(plain.steps_s[0], 1.25 * kComputeS, 1e-9);
  EXPECT_NEAR(plain.steps_s[15], 16 * 2 * kComputeS - 15 * 1.25 * kComputeS, 1e-9);
  for (double step_s : adaptive.steps_s) EXPECT_NEAR(step_s, 2 * kComputeS, 1e-9);
}

// With k larger than the steps asked, the plan runs one whole period so that the steady state includes its
// averaging: k 16 over 4 steps asked runs 16, and the mean step of one 1-bucket averaging every 16 steps is
// compute + averaging / 16 (it was compute alone: no averaging in the 4 steps). Asking for 17 steps runs 32.
TEST(LocalSgd, StepsCoverWholePeriods) {
  const std::string t = cluster(1e9, 1e9, 0);
  const Result sync = simulate(scenario(t, {{"fusion", kOneBucket}}, 4));
  const Result local =
      simulate(scenario(t, {{"fusion", kOneBucket}, {"localsgd", {{"k_steps", 16}, {"begin_step", 0}}}}, 4));
  ASSERT_EQ(local.steps_s.size(), 16u);
  const double averaging_s = sync.step_time_s - kComputeS;
  EXPECT_GT(averaging_s, 0);
  EXPECT_NEAR(local.step_time_s, kComputeS + averaging_s / 16, 1e-9);
  EXPECT_EQ(simulate(scenario(t, {{"fusion", kOneBucket}, {"localsgd", {{"k_steps", 16}, {"begin_step", 0}}}}, 17))
                .steps_s.size(),
            32u);
  // A begin_step past the run leaves no steady state to complete: the 4 steps asked run (the plan notes that the
  // steady state is not reached). A period that would take a run past its 100 000 steps is refused
  // (tests/data/bad/catalogue.json).
  EXPECT_EQ(simulate(scenario(t, {{"fusion", kOneBucket}, {"localsgd", {{"k_steps", 16}, {"begin_step", 10}}}}, 4))
                .steps_s.size(),
            4u);
}

TEST(Stragglers, LocalSgdWaitsOnlyAtAveraging) {
  // Random per-step slowdowns: synchronous training pays sum over steps of max over ranks; Local SGD pays
  // max over ranks of the sum over a cycle, which is never larger (max of sums <= sum of maxes).
  const std::string t = cluster(1e18, 1e18, 0);
  const Json noise = {{"seed", 7}, {"compute_cv", 0.2}};
  const Result sync = simulate(scenario(t, {{"fusion", kOneBucket}, {"stragglers", noise}}, 16));
  const Result local = simulate(scenario(
      t, {{"fusion", kOneBucket}, {"stragglers", noise}, {"localsgd", {{"k_steps", 4}, {"begin_step", 0}}}}, 16));
  EXPECT_LT(local.compute_s, sync.compute_s);
}

TEST(Compression, Fp16HalvesTheBytes) {
  // fp16 gradients: 2 bytes per element instead of 4, so half the bytes on the wire.
  const std::string t = cluster(10e9, 10e9, 0);
  const Result fp32 = simulate(scenario(t, {{"fusion", kOneBucket}}));
  const Result fp16 = simulate(scenario(t, {{"fusion", kOneBucket}, {"comm_dtype", "fp16"}}));
  EXPECT_DOUBLE_EQ(fp16.bytes_sent_per_rank, fp32.bytes_sent_per_rank / 2);
}

TEST(Sharding, Stage3GathersParametersAndScattersGradients) {
  // ZeRO-3 with the default 64 MB groups: the 16 MiB of parameters are one group, which stays gathered from forward
  // into backward, so per step one all-gather of 16 MiB and one reduce-scatter of the 16 MiB of gradients, each
  // (p-1)/p x 16 MiB per rank: 2 x 0.75 x 16 MiB, the same as one allreduce (ZeRO paper, sec. 7).
  const std::string t = cluster(10e9, 10e9, 0);
  const Result r = simulate(scenario(t, {{"sharding", {{"stage", 3}}}}));
  EXPECT_DOUBLE_EQ(r.bytes_sent_per_rank, 2 * 0.75 * 16 * kMiB);
}

TEST(Sharding, Stage3RegathersEveryGroupButTheLastBeforeBackward) {
  // 1 MB groups: each 4 MiB layer is its own group. Forward gathers all four (16 MiB), backward re-gathers the
  // three that were freed (12 MiB; the last layer's stays gathered), the gradients are reduce-scattered (16 MiB):
  // 0.75 x (16 + 12 + 16) MiB per rank, 1.5x the traffic of ZeRO-2 (ZeRO paper, sec. 7: 3 x parameters, less the
  // group kept here).
  const std::string t = cluster(10e9, 10e9, 0);
  const Json groups = {{"allgather_fusion_mb", 1}, {"reducescatter_fusion_mb", 1}};
  Json stage3 = groups, stage2 = groups;
  stage3["stage"] = 3, stage2["stage"] = 2;
  const Result zero3 = simulate(scenario(t, {{"sharding", stage3}}));
  const Result zero2 = simulate(scenario(t, {{"sharding", stage2}}));
  EXPECT_DOUBLE_EQ(zero3.bytes_sent_per_rank, 0.75 * (16 + 12 + 16) * kMiB);
  EXPECT_DOUBLE_EQ(zero2.bytes_sent_per_rank, 0.75 * (16 + 16) * kMiB);
  // Time: the first forward gather (a ring all-gather of 4 MiB: 0.75 x 4 MiB at 10 GB/s = 0.315 ms) cannot be
  // hidden; the later ones run ahead of forward. The re-gathers start when forward ends and each takes 0.315 ms,
  // hidden behind the 2 ms backward of the layer before. Each layer's reduce-scatter (0.315 ms) starts when its
  // backward ends and is hidden behind the next layer's, except the first layer's: 12 ms + 2 x 0.315 ms.
  EXPECT_NEAR(zero3.step_time_s, kComputeS + 2 * 0.75 * 4 * kMiB / 10e9, 1e-9);
}

TEST(Sharding, Stage3PrefetchDepthBoundsHowFarGathersRunAhead) {
  // Four 4 MiB layers, each its own all-gather and reduce-scatter bucket (4 MB), one stream. At 3 MiB/ms a ring
  // all-gather or reduce-scatter of 4 MiB (0.75 x 4 MiB per rank) takes 1 ms, as long as a layer's forward.
  // Unlimited prefetch: gathers at 0-1, 1-2, 2-3, 3-4 ms, forward 1-5; re-gathers 5-6, 6-7, 7-8 behind the 2 ms
  // backwards (5-7, 7-9, 9-11, 11-13); each reduce-scatter, after its layer's backward and the last re-gather on
  // the stream: 8-9, 9-10, 11-12, 13-14. 14 ms = 12 + 2 (as in the test above).
  // One bucket ahead (FSDP forward_prefetch / BACKWARD_PRE): forward as above (a gather waits for the compute of the
  // bucket before it to begin, and 1 ms gathers keep pace); re-gathers 5-6, after B3 7-8, after B2 9-10, each
  // before the backward that needs it; reduce-scatters 10-11, 11-12, 12-13, 13-14: 14 ms too.
  // On demand (0): each forward gather waits for the previous layer (0-1, F0 1-2, 2-3, F1 3-4, 4-5, F2 5-6, 6-7,
  // F3 7-8), each re-gather for the backward after it (B3 8-10, 10-11, B2 11-13, 13-14, B1 14-16, 16-17, B0 17-19),
  // and the reduce-scatters queue behind the last one: 17-18, 18-19, 19-20, 20-21. 21 ms.
  const std::string t = cluster(0.75 * 4 * kMiB / 1e-3, 0.75 * 4 * kMiB / 1e-3, 0);
  auto zero3 = [&](Json prefetch) {
    Json sharding = {{"stage", 3}, {"allgather_fusion_mb", 4}, {"reducescatter_fusion_mb", 4}};
    if (!prefetch.is_null()) sharding["prefetch_buckets"] = prefetch;
    return simulate(scenario(t, {{"sharding", sharding}})).step_time_s;
  };
  EXPECT_NEAR(zero3(nullptr), 0.014, 1e-9);  // the default is unlimited
  EXPECT_NEAR(zero3("unlimited"), 0.014, 1e-9);
  EXPECT_NEAR(zero3(1), 0.014, 1e-9);
  EXPECT_NEAR(zero3(0), 0.021, 1e-9);
}

TEST(Fidelity, FlowAgreesWithAnalyticalOnAnUncontendedCluster) {
  // One bucket, one stream, uniform links: the flow network sees one ring at a time, so both fidelities give the
  // closed form (the aggregate ring and the step-by-step ring agree on an uncontended network).
  const std::string t = cluster(10e9, 10e9, 1e-6);
  const Json doc = scenario(t, {{"fusion", kOneBucket}, {"overlap", false}});
  EXPECT_NEAR(simulate(doc, Fidelity::Flow).step_time_s, simulate(doc, Fidelity::Analytical).step_time_s, 1e-9);
}

TEST(Trace, IsAChromeTraceWithEveryStream) {
  const std::string t = cluster(10e9, 10e9, 0);
  const Json doc = scenario(t, {{"fusion", kNoFusion}, {"nccl_comm_num", 2}});
  const SimulationRun run = simulate_document(doc, write("trace.json", doc), Fidelity::Analytical);
  const Json trace = chrome_trace(run.result, run.plan.streams);
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::set<int> threads;
  int complete = 0;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("name"));
      threads.insert(e["tid"].get<int>());
    }
  }
  // Two steps traced: 8 compute tasks and 4 bucket allreduces each.
  EXPECT_EQ(complete, 2 * (8 + 4));
  EXPECT_EQ(threads, (std::set<int>{0, 1, 2}));
}

Json bad(Json doc, const std::string& pointer, Json value) {
  doc[Json::json_pointer(pointer)] = value;
  return doc;
}

TEST(BadScenario, EachIsOneClearError) {
  const std::string t = cluster(10e9, 10e9, 0);
  const Json good = scenario(t, {{"fusion", kNoFusion}});
  struct Case {
    Json doc;
    std::string expected;
  } cases[] = {
      {bad(good, "/strategy/nccl_comm_nums", 2), "strategy.nccl_comm_nums: unknown field"},
      {bad(good, "/strategy/dgc", {{"rampup_begin_step", 0}, {"rampup_step", 1}, {"sparsity", {1.0}}}),
       "strategy.dgc.sparsity[0]: must be in (0, 1)"},
      {bad(good, "/strategy/localsgd", {{"k_steps", 0}}), "strategy.localsgd.k_steps: must be in [1"},
      {bad(good, "/strategy/fusion", {{"mode", "index"}, {"indices", {2, 4}}}),
       "strategy.fusion.indices: split index 4 is past the last tensor"},
      {bad(good, "/strategy/stragglers", {{"slow_ranks", {{"9", 2.0}}}}),
       "strategy.stragglers.slow_ranks.9: no such rank"},
      {bad(good, "/topology", cluster(10e9, 10e9, 0, 1)), "strategy: hierarchical"},
  };
  // The last case: 2 nodes x 1 GPU is fine for a flat ring; make it too small by asking for 4 leaders.
  cases[5].doc["strategy"]["use_hierarchical_allreduce"] = true;
  cases[5].doc["strategy"]["hierarchical_allreduce_leaders"] = 4;
  cases[5].expected = "hierarchical_allreduce_leaders: 4 leaders do not divide 2 ranks";
  for (const Case& c : cases) {
    try {
      simulate(c.doc);
      ADD_FAILURE() << "accepted: " << c.expected;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    }
  }
}

TEST(OneRank, StepIsItsCompute) {
  // One node of one GPU (a single-GPU baseline, or the NCCL backend's check on one GPU): a collective of one rank has
  // no peer, so it sends nothing (ring: 2 (n - 1) steps = 0). With no cast and no framework cost the step is its
  // compute, kComputeS, in both fidelities.
  Json doc = scenario(cluster(10e9, 10e9, 1e-6, 1), {{"fusion", kNoFusion}});
  doc["nodes"] = 1;
  for (const Fidelity f : {Fidelity::Analytical, Fidelity::Flow}) {
    const Result r = simulate(doc, f);
    EXPECT_EQ(r.ranks, 1);
    EXPECT_EQ(r.bytes_sent_per_rank, 0.0);
    EXPECT_NEAR(r.step_time_s, kComputeS, 1e-12);
  }
  // NCCL prices only ring/Simple for one rank, at 0 (enqueue.cc updateCollCostTable, nRanks == 1), and launches no
  // channel; what remains of its collective is the host's enqueue (libraries/overheads.json).
  const auto one_gpu = load_topology("tests/data/gpu/one-h100.json");
  CollectiveSpec spec;
  spec.bytes = 100 << 20;
  const nccl::Estimate e = nccl::predict(spec, *one_gpu);
  EXPECT_EQ(e.algorithm, Algorithm::Ring);
  EXPECT_EQ(e.protocol, Protocol::Simple);
  EXPECT_EQ(e.channels, 0);
  EXPECT_EQ(e.seconds, 0.0);
}

// Every shipped model on every shipped GPU topology with every technique: the simulator answers, and a step is
// never shorter than its compute.
TEST(Shipped, EveryModelTopologyAndTechnique) {
  const std::vector<Json> techniques = {
      Json::object(),
      {{"nccl_comm_num", 2}},
      {{"use_hierarchical_allreduce", true}},
      {{"algorithm", "auto"}},
      {{"dgc", {{"rampup_begin_step", 0}, {"rampup_step", 1}, {"sparsity", {0.999}}}}},
      {{"localsgd", {{"k_steps", 4}, {"begin_step", 0}}}},
      {{"adaptive_localsgd", {{"init_k_steps", 2}, {"begin_step", 0}}}},
      {{"comm_dtype", "bf16"}},
      {{"sharding", {{"stage", 3}}}},
      {{"fusion", {{"mode", "auto"}}}, {"stragglers", {{"compute_cv", 0.1}}}},
  };
  // The zoo the project promises (test models beside it are not part of this check).
  const std::vector<std::string> models = {"resnet50", "vgg16",     "bert-large",
                                           "gpt2-xl",  "gpt3-175b", "faster-rcnn-r50-fpn"};
  int runs = 0;
  for (const std::string& model : models) {
    const fs::path path = fs::absolute("scenarios/models/" + model + ".json");
    for (const char* topology :
         {"dgx-a100", "dgx-h100", "dgx1-v100", "pcie-gen4-8gpu", "cloud-tcp-10gbe", "cloud-p3-v100-25gbe"}) {
      for (const Json& strategy : techniques) {
        Json doc = scenario(fs::absolute(std::string("topologies/") + topology + ".json").string(), strategy, 4);
        // One GPU per node makes the default groups (one per node) of one rank, which Paddle refuses: one group of
        // both ranks there.
        if (std::string(topology) == "cloud-tcp-10gbe" && strategy.contains("use_hierarchical_allreduce"))
          doc["strategy"]["hierarchical_allreduce_group_size"] = 2;
        doc["model"] = path.string();
        doc["nodes"] = 2;
        const Result r = simulate(doc);
        ASSERT_TRUE(std::isfinite(r.step_time_s) && r.step_time_s > 0) << model << " " << topology << " " << strategy;
        EXPECT_GE(r.step_time_s, r.compute_s * (1 - 1e-9)) << model << " " << topology << " " << strategy;
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 6 * 6 * 10);
}

}  // namespace
}  // namespace commsim

// strategy.channels on an NCCL topology are NCCL's channels (NCCL_MIN/MAX_NCHANNELS, as collective --channels): one
// channel is slower than NCCL's own count on 4 DGX A100 (the value was ignored there, every count the same step).
TEST(Channels, AStrategysChannelsReachNcclsModel) {
  auto comm = [](const std::string& channels) {
    return commsim::simulate_scenario("scenarios/resnet50-dgx-a100.json", {"strategy.channels=" + channels}, 2,
                                      commsim::Fidelity::Analytical)
        .result.comm_s;
  };
  EXPECT_GT(comm("1"), comm("0"));
}
