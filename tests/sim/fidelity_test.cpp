// How a step really runs around its collectives: fixed per-bucket costs (libraries/overheads.json), Horovod's
// negotiation cycle, and compute slowed by the SMs a collective occupies. Expectations derived in the comments.
//
// The cluster: two nodes of two GPUs, every link 10 GB/s; no latency unless a test says so.
//
//   gpu0 ─┐                            ┌─ gpu2
//         sw0 ─ nic0 ══ switch ══ nic1 ─ sw1      (══: TCP)
//   gpu1 ─┘                            └─ gpu3
//
// On the generic library a ring allreduce of m bytes over p = 4 ranks takes 2(p-1) steps of m/p bytes:
// 6 x (m/4) / 1e10 s (gamma is negligible: memory 3e18 B/s).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/collective/nccl_model.hpp"
#include "sim/step/interference.hpp"
#include "sim/step/simulation.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim {
namespace {

namespace fs = std::filesystem;

constexpr double kMiB = 1048576.0;

std::string write(const std::string& name, const Json& doc) { return test::write_temp_json(name, doc); }

// The cluster above; `library` (a topology "library" block) when not null; `network` adds fields to the class of
// the links between nodes.
std::string cluster(double latency_s, const Json& library = nullptr, const Json& network = Json::object()) {
  auto cls = [&] { return Json{{"latency_s", latency_s}, {"bandwidth_Bps", 10e9}, {"source", "test"}}; };
  Json between = cls();
  between.update(network);
  Json t = {{"name", "test-cluster"},
            {"link_classes", {{"nvswitch", cls()}, {"pcie", cls()}, {"tcp", between}}},
            {"node",
             {{"devices",
               {{{"name", "gpu0"}, {"kind", "gpu"}},
                {{"name", "gpu1"}, {"kind", "gpu"}},
                {{"name", "sw"}, {"kind", "nvswitch"}},
                {{"name", "nic0"}, {"kind", "nic"}}}},
              {"links",
               {{{"a", "gpu0"}, {"b", "sw"}, {"class", "nvswitch"}},
                {{"a", "gpu1"}, {"b", "sw"}, {"class", "nvswitch"}},
                {{"a", "nic0"}, {"b", "sw"}, {"class", "pcie"}}}}}},
            {"nodes", 2},
            {"fabric", {{"kind", "single_switch"}, {"link_class", "tcp"}}}};
  if (!library.is_null()) t["library"] = library;
  static int files = 0;
  return write("cluster-" + std::to_string(files++) + ".json", t);
}

Json scenario(const std::string& topology, const std::string& model, Json strategy, Json framework = nullptr) {
  Json s = {
      {"name", "test"},
      {"topology", topology},
      {"model", fs::absolute("tests/data/training/" + model).string()},
      {"device", {{"name", "test"}, {"peak_flops", 1e12}, {"efficiency", 1}, {"memory_Bps", 3e18}, {"source", "test"}}},
      {"batch_per_gpu", 1},
      {"steps", 1},
      {"strategy", strategy}};
  if (!framework.is_null()) s["framework"] = framework;
  return s;
}

Result simulate(const Json& doc, Fidelity fidelity = Fidelity::Analytical) {
  return simulate_document(doc, write("scenario.json", doc), fidelity).result;
}

TEST(FixedCosts, BucketSizeHasTheOptimumDerivedByHand) {
  // model-16x1m: N = 16 layers, one 1 MiB gradient each, forward 100 us and backward b = 100 us per layer.
  // Buckets of k MiB hold k gradients (size_mb = k closes a bucket at exactly k MiB). Each bucket costs a fixed
  // f = 400 us (the framework's per_bucket_us, the only fixed cost: alpha = 0, copies negligible at 3e18 B/s)
  // plus its transfer k x s, s = 6 x (1 MiB / 4) / 1e10 = 157.2864 us > b: communication is the bottleneck, so
  // once the first bucket is ready (after forward F = 1.6 ms and k backward layers) the buckets run back to back:
  //   T(k) = F + k b + (N / k)(f + k s) = F + N s + k b + N f / k,
  // whose minimum over k is at k* = sqrt(N f / b) = sqrt(16 x 400 / 100) = 8. Over the sweep k = 1..16:
  // k b + N f / k = 6500, 3400, 2000, 1600, 2000 us: the interior k = 8 wins.
  const std::string t = cluster(0);
  const double N = 16, b = 100e-6, f = 400e-6, s = 6 * (kMiB / 4) / 1e10, F = 16 * 100e-6;
  const Json framework = {{"name", "pytorch_ddp"}, {"per_bucket_us", 400}};
  double best_s = 1e9;
  int best_k = 0;
  for (int k : {1, 2, 4, 8, 16}) {
    const Json strategy = {{"fusion", {{"mode", "size"}, {"size_mb", k}}}, {"overlap", true}};
    const Result r = simulate(scenario(t, "model-16x1m.json", strategy, framework));
    EXPECT_NEAR(r.step_time_s, F + N * s + k * b + N * f / k, 1e-9) << "k = " << k;
    if (r.step_time_s < best_s) best_s = r.step_time_s, best_k = k;
  }
  EXPECT_EQ(best_k, 8);
  // Without the fixed cost the same sweep has no interior optimum: T(k) = F + N s + k b, smallest buckets win.
  const Result free1 = simulate(scenario(t, "model-16x1m.json", {{"fusion", {{"mode", "size"}, {"size_mb", 1}}}}));
  const Result free8 = simulate(scenario(t, "model-16x1m.json", {{"fusion", {{"mode", "size"}, {"size_mb", 8}}}}));
  EXPECT_NEAR(free1.step_time_s, F + N * s + 1 * b, 1e-9);
  EXPECT_LT(free1.step_time_s, free8.step_time_s);
}

TEST(FixedCosts, CopiesArePassesOverTheBucketAtMemoryBandwidth) {
  // One bucket of the four 4 MiB gradients (16 MiB), after backward (overlap off), memory 1e10 B/s: DDP copies the
  // bucket in (2 passes: read the gradients, write the bucket) and out (2 passes), 4 x 16 MiB / 1e10 = 6.71 ms more
  // than the same step with no copies (the allreduce and its reductions are the same in both).
  const std::string t = cluster(0);
  auto step_s = [&](int passes) {
    Json doc = scenario(
        t, "model-4x1m.json", {{"fusion", {{"mode", "size"}, {"size_mb", 1000}}}, {"overlap", false}},
        {{"name", "pytorch_ddp"}, {"per_bucket_us", 0}, {"copy_in_passes", passes}, {"copy_out_passes", passes}});
    doc["device"]["memory_Bps"] = 1e10;
    return simulate(doc).step_time_s;
  };
  EXPECT_NEAR(step_s(2) - step_s(0), 4 * 16 * kMiB / 1e10, 1e-9);
}

TEST(FixedCosts, TheMpiExecutorsCopiesAreItsCastsWhenGradientsTravelNarrower) {
  // The MPI executor packs a bucket into its communication vector (2 passes) and unpacks the average back (2
  // passes): with fp32 gradients, one 16 MiB bucket after backward at memory 1e10 B/s costs 4 x 16 MiB / 1e10 =
  // 6.71 ms more than the collectives alone (framework none). With fp16 the pack and unpack are the casts, which the
  // plan's cast task already prices (2 x elements x (4 + 2) bytes): commsim_mpi adds nothing to that step.
  const std::string t = cluster(0);
  auto step_s = [&](const char* framework, const char* dtype) {
    Json doc = scenario(t, "model-4x1m.json",
                        {{"fusion", {{"mode", "size"}, {"size_mb", 1000}}}, {"overlap", false}, {"comm_dtype", dtype}},
                        {{"name", framework}});
    doc["device"]["memory_Bps"] = 1e10;
    return simulate(doc).step_time_s;
  };
  EXPECT_NEAR(step_s("commsim_mpi", "fp32") - step_s("none", "fp32"), 4 * 16 * kMiB / 1e10, 1e-9);
  EXPECT_NEAR(step_s("commsim_mpi", "fp16"), step_s("none", "fp16"), 1e-12);
}

TEST(FixedCosts, HorovodStartsEachBucketOnItsCycle) {
  // HOROVOD_CYCLE_TIME = 5 ms (overridden): the single bucket is ready when backward ends at 12 ms and its
  // collective starts at the next cycle boundary, 15 ms; it takes 6 x 4 MiB / 1e10 (copies negligible, per-bucket
  // cost set to 0 to isolate the cycle).
  const std::string t = cluster(0);
  const Json strategy = {{"fusion", {{"mode", "size"}, {"size_mb", 1000}}}, {"overlap", false}};
  const Result r =
      simulate(scenario(t, "model-4x1m.json", strategy, {{"name", "horovod"}, {"per_bucket_us", 0}, {"cycle_ms", 5}}));
  EXPECT_NEAR(r.step_time_s, 0.015 + 6 * 4 * kMiB / 1e10, 1e-9);
}

// Horovod fuses the gradients ready at one cycle boundary (controller.cc FuseResponses). model-4x1m: forward 4 x 1 ms,
// then l3, l2, l1, l0 ready at 6, 8, 10 and 12 ms; cycle 5 ms: l3, l2 and l1 are negotiated at the 10 ms boundary
// (l1 exactly on it), l0 at 15 ms. So two buckets, 12 MiB from 10 ms (6 x 3 MiB / 1e10 = 1.89 ms) and l0's 4 MiB
// from 15 ms: the step ends at 15 ms + 6 x 1 MiB / 1e10 (copies negligible at 3e18 B/s, per-bucket cost 0). Without
// the cycle's fusion one 16 MiB bucket would start at 15 ms and end 6 x 4 MiB / 1e10 later.
TEST(FixedCosts, HorovodFusesTheGradientsOfOneCycle) {
  const Json strategy = {{"fusion", {{"mode", "size"}, {"size_mb", 1000}}}, {"overlap", true}};
  const Json doc =
      scenario(cluster(0), "model-4x1m.json", strategy, {{"name", "horovod"}, {"per_bucket_us", 0}, {"cycle_ms", 5}});
  const SimulationRun run = simulate_document(doc, write("horovod-cycles.json", doc), Fidelity::Analytical);
  ASSERT_EQ(run.plan.buckets.size(), 2u);
  EXPECT_EQ(run.plan.buckets[0].tensors, (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(run.plan.buckets[1].tensors, (std::vector<int>{0}));
  EXPECT_NEAR(run.result.step_time_s, 0.015 + 6 * kMiB / 1e10, 1e-9);
}

// Horovod checks the threshold before adding a gradient (controller.cc: tensor_size + new_tensor_size <= threshold),
// runs one cycle's responses one after another, and copies a response into its fusion buffer only when it holds
// more than one tensor (nccl_operations.cc). All four 4 MiB gradients are ready at the 15 ms boundary (no overlap);
// with a 6 MB threshold 4 + 4 > 6, so four responses of one tensor each (DDP's rule, add then compare, would make two
// of 8 MiB), back to back from 15 ms: the step ends at 15 ms + 4 x 6 x 1 MiB / 1e10. None has a copy to pay; with a
// 9 MB threshold two responses of 8 MiB do (2 + 2 passes over their 8 MiB).
TEST(FixedCosts, HorovodChecksItsThresholdBeforeAddingAndCopiesOnlyFusedResponses) {
  const auto run = [](double threshold_mb) {
    const Json strategy = {{"fusion", {{"mode", "size"}, {"size_mb", threshold_mb}}}, {"overlap", false}};
    Json doc =
        scenario(cluster(0), "model-4x1m.json", strategy, {{"name", "horovod"}, {"per_bucket_us", 0}, {"cycle_ms", 5}});
    return simulate_document(doc, write("horovod-threshold.json", doc), Fidelity::Analytical);
  };
  const auto copy_s = [](const SimulationRun& r) {
    double s = 0;
    for (const Task& t : r.plan.step_plans[0].tasks) s += t.overhead_before_s + t.overhead_after_s;
    return s;
  };
  const SimulationRun six = run(6);
  ASSERT_EQ(six.plan.buckets.size(), 4u);
  for (const Bucket& b : six.plan.buckets) EXPECT_EQ(b.tensors.size(), 1u);
  EXPECT_NEAR(six.result.step_time_s, 0.015 + 4 * 6 * kMiB / 1e10, 1e-9);
  EXPECT_EQ(copy_s(six), 0);
  const SimulationRun nine = run(9);
  ASSERT_EQ(nine.plan.buckets.size(), 2u);
  EXPECT_NEAR(copy_s(nine), 2 * 4 * 8 * kMiB / 3e18, 1e-21);  // the tests' device: memory 3e18 B/s
}

// Fusion "auto" is 64 MB (scenario-format.md), so under Horovod it is the 64 MB threshold's responses, negotiated per
// cycle, as "size" 64 MB plans them (it was DDP's size fill, which ignores cycles: one 16 MiB bucket). With overlap
// the gradients of l3, l2, l1, l0 are ready at 4 ms of forward + 2, 4, 6, 8 ms of backward = 6, 8, 10, 12 ms; with
// 5 ms cycles the first three are negotiated at 10 ms (10 within the tolerance of its boundary) and l0 at 15 ms:
// two responses, {l3, l2, l1} (12 MiB, within 64 MB) and {l0}.
TEST(FixedCosts, HorovodFusesByItsThresholdWhenFusionIsAuto) {
  const auto plan = [](const Json& fusion) {
    Json doc = scenario(cluster(0), "model-4x1m.json", {{"fusion", fusion}, {"overlap", true}},
                        {{"name", "horovod"}, {"per_bucket_us", 0}, {"cycle_ms", 5}});
    return simulate_document(doc, write("horovod-auto.json", doc), Fidelity::Analytical);
  };
  const SimulationRun automatic = plan({{"mode", "auto"}}), sized = plan({{"mode", "size"}, {"size_mb", 64}});
  ASSERT_EQ(automatic.plan.buckets.size(), 2u);
  EXPECT_EQ(automatic.plan.buckets[0].tensors, (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(automatic.plan.buckets[1].tensors, (std::vector<int>{0}));
  EXPECT_EQ(automatic.result.step_time_s, sized.result.step_time_s);
}

// With fp16 compression Horovod fuses and sends the compressed tensors: each 1 Mi-element gradient is 2 MiB, so a
// 6 MB threshold takes three (2 + 2 + 2 <= 6) and leaves l0 alone. Both responses are negotiated at the 15 ms boundary
// (no overlap) and run back to back although each waits for its cast: 6 x (6 + 2) MiB / 4 / 1e10 after 15 ms (casts
// negligible at 3e18 B/s). With no cycle (cycle_ms 0) the threshold and the in-place single tensor still hold: four
// 4 MiB fp32 gradients with a 6 MB threshold are four responses, none copied.
TEST(FixedCosts, HorovodFusesCompressedBytesBackToBackAndKeepsItsRulesWithoutACycle) {
  const auto run = [](const Json& strategy, double cycle_ms) {
    const Json doc = scenario(cluster(0), "model-4x1m.json", strategy,
                              {{"name", "horovod"}, {"per_bucket_us", 0}, {"cycle_ms", cycle_ms}});
    return simulate_document(doc, write("horovod-fp16.json", doc), Fidelity::Analytical);
  };
  const SimulationRun fp16 =
      run({{"fusion", {{"mode", "size"}, {"size_mb", 6}}}, {"overlap", false}, {"comm_dtype", "fp16"}}, 5);
  ASSERT_EQ(fp16.plan.buckets.size(), 2u);
  EXPECT_EQ(fp16.plan.buckets[0].tensors, (std::vector<int>{3, 2, 1}));
  EXPECT_NEAR(fp16.result.step_time_s, 0.015 + 6 * 8 * kMiB / 4 / 1e10, 1e-9);
  const SimulationRun no_cycle = run({{"fusion", {{"mode", "size"}, {"size_mb", 6}}}, {"overlap", false}}, 0);
  EXPECT_EQ(no_cycle.plan.buckets.size(), 4u);
  for (const Task& t : no_cycle.plan.step_plans[0].tasks) EXPECT_EQ(t.overhead_before_s + t.overhead_after_s, 0);
}

TEST(FixedCosts, NcclLaunchIsChargedOncePerCollectiveBesideItsBaseLatency) {
  // On an NCCL topology with no framework, each collective pays the library's launch (libraries/overheads.json,
  // 4.24 us) on top of NCCL's own estimate, which keeps its baseLat: four separate buckets after backward cost
  // 4 x 4.24 us more than with the launch overridden to 0.
  const Json library = {{"name", "nccl"}, {"version", "2.18"}, {"gpu_arch", "ampere"}, {"source", "test"}};
  const std::string t = cluster(1e-6, library);
  const Json strategy = {{"fusion", {{"mode", "none"}}}, {"overlap", false}};
  const Result with = simulate(scenario(t, "model-4x1m.json", strategy));
  const Result without = simulate(scenario(t, "model-4x1m.json", strategy, {{"name", "none"}, {"launch_us", 0}}));
  EXPECT_NEAR(with.step_time_s - without.step_time_s, 4 * 4.24e-6, 1e-11);
}

TEST(Transports, TcpCarriesNoMoreThanItsFlowsReach) {
  // The links between nodes are TCP at 10 GB/s, but one flow reaches 1 GB/s and the transport keeps 2 flows busy
  // (a socket per channel, 2 channels): the class carries min(10, 2 x 1) = 2 GB/s, so the ring's inter-node hop
  // is 5x slower. One 16 MiB bucket after backward: 6 x 4 MiB / 2e9 instead of 6 x 4 MiB / 1e10.
  const Json strategy = {{"fusion", {{"mode", "size"}, {"size_mb", 1000}}}, {"overlap", false}};
  const Result line = simulate(scenario(cluster(0), "model-4x1m.json", strategy));
  const Result capped =
      simulate(scenario(cluster(0, nullptr, {{"per_flow_Bps", 1e9}, {"flows", 2}}), "model-4x1m.json", strategy));
  EXPECT_NEAR(line.step_time_s, 0.012 + 6 * 4 * kMiB / 1e10, 1e-9);
  EXPECT_NEAR(capped.step_time_s, 0.012 + 6 * 4 * kMiB / 2e9, 1e-9);
  // Enough flows to fill the line: no cap (12 x 1 GB/s > 10 GB/s).
  const Result filled =
      simulate(scenario(cluster(0, nullptr, {{"per_flow_Bps", 1e9}, {"flows", 12}}), "model-4x1m.json", strategy));
  EXPECT_NEAR(filled.step_time_s, line.step_time_s, 1e-12);
}

// Compute keeps (S - K) / S of the GPU beside K blocks; with K >= S the blocks and the compute kernel take turns,
// 1 / (K + 1): 132 SMs and 24 blocks -> 108 / 132; 25 SMs and 24 blocks -> 1 / 25 = 1 / (24 + 1), the same on both
// sides of the switch; 1 SM and 24 blocks -> 1 / 25 too (it was 1 / S = full speed, faster than with 2 SMs). Taking
// SMs away never speeds compute up, and more blocks never do.
TEST(ComputeShare, FallsWithEverySmTaken) {
  EXPECT_DOUBLE_EQ(compute_share(132, 24), 108.0 / 132);
  EXPECT_DOUBLE_EQ(compute_share(25, 24), 1.0 / 25);
  EXPECT_DOUBLE_EQ(compute_share(24, 24), 1.0 / 25);
  EXPECT_DOUBLE_EQ(compute_share(1, 24), 1.0 / 25);
  for (int k = 1; k <= 64; ++k)
    for (int s = 1; s <= 200; ++s) {
      EXPECT_LE(compute_share(s, k), compute_share(s + 1, k)) << s << " " << k;
      EXPECT_GE(compute_share(s, k), compute_share(s, k + 1)) << s << " " << k;
    }
}

class Interference : public ::testing::TestWithParam<Fidelity> {};

TEST_P(Interference, OverlappedStepIsSlowerByTheSmsTheChannelsTake) {
  // model-4x1m, one bucket per layer, overlapped; backward 2 ms per layer. Each bucket's allreduce takes M < 2 ms
  // (measured below without interference: step - 12 ms, since only the last bucket is exposed). With S SMs and a
  // collective of K channels (one CTA per SM each), compute runs at r = (S - K) / S while it overlaps: buckets 3, 2
  // and 1 each overlap the next layer's backward entirely, so layers 2, 1 and 0 each take (1 - r) M longer, and
  //   step = 12 ms + 3 (K / S) M + M  =  max(compute, comm) + 3 (K / S) M   (compute 12 ms > comm 4 M).
  const Json library = {{"name", "nccl"}, {"version", "2.18"}, {"gpu_arch", "hopper"}, {"source", "test"}};
  Json with_sms = library;
  with_sms["sms"] = 132;  // H100 SXM5 [NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs]
  const std::string plain = cluster(1e-6, library), slowed = cluster(1e-6, with_sms);
  const Json strategy = {{"fusion", {{"mode", "none"}}}, {"overlap", true}};
  const Json no_launch = {{"name", "none"}, {"launch_us", 0}};  // M is then the collective alone
  const Result base = simulate(scenario(plain, "model-4x1m.json", strategy, no_launch), GetParam());
  const Result r = simulate(scenario(slowed, "model-4x1m.json", strategy, no_launch), GetParam());
  const double M = base.step_time_s - 0.012;
  ASSERT_GT(M, 0);
  ASSERT_LT(M, 0.002);
  // K: the channels NCCL launches for one 4 MiB allreduce on this machine.
  const auto topo = load_topology(slowed);
  CollectiveSpec c;
  c.op = Collective::AllReduce;
  c.algorithm = Algorithm::Ring;
  c.bytes = static_cast<Bytes>(4 * kMiB);
  c.channels = topo->default_channels();
  c.ranks_per_node = topo->ranks_per_node();
  const int K = nccl::predict(c, *topo).channels;
  ASSERT_GT(K, 0);
  EXPECT_NEAR(r.step_time_s, 0.012 + M + 3.0 * K / 132 * M, 1e-9);
  EXPECT_GT(r.step_time_s, std::max(0.012, 4 * M));
  // With concurrent_slowdown c, compute runs at r = (S - K) / S / (1 + c) beside the collective: during its M a
  // layer's backward advances r M of its 2 ms and finishes the rest at full speed, so it takes 2 ms + (1 - r) M and
  //   step = 12 ms + 3 (1 - r) M + M.
  Json with_slowdown = with_sms;
  with_slowdown["concurrent_slowdown"] = 0.0378;  // calibrate --interference reports/gpu/h100/interference.json
  const Result further =
      simulate(scenario(cluster(1e-6, with_slowdown), "model-4x1m.json", strategy, no_launch), GetParam());
  const double rate = (132.0 - K) / 132 / 1.0378;
  EXPECT_NEAR(further.step_time_s, 0.012 + M + 3 * (1 - rate) * M, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(BothFidelities, Interference, ::testing::Values(Fidelity::Analytical, Fidelity::Flow));

// Collectives beside each other (CommLibrary::concurrent_step_delay_s = d): each of their transfers carries what its
// path moves in d. model-16x1m without overlap: the 16 buckets of 1 MiB are all ready after backward; on 2 streams
// they run in 8 pairs started together. In the flow fidelity the pair's two rings step in lockstep and share every
// hop (the cluster's links carry one hop of a ring each way): a hop of 2 (1 MiB / 4 + d x 1e10 B/s) / 1e10 B/s, so
// with d = 100 us the pair takes 6 x (52.43 + 200) us, 1.2 ms more than without, and the step 8 x 1.2 = 9.6 ms
// more. On one stream no collective runs beside another: nothing changes. The analytical fidelity prices the pairs'
// delays as time its shared network loses, so its step grows too.
TEST(ConcurrentCollectives, StepDelayCostsTwoStreamsNotOne) {
  const Json with_delay = {{"name", "mpi"}, {"source", "test"}, {"concurrent_step_delay_us", 100}};
  const Json without_delay = {{"name", "mpi"}, {"source", "test"}};
  const auto step_s = [](const Json& library, int streams, Fidelity fidelity) {
    const Json strategy = {{"fusion", {{"mode", "size"}, {"size_mb", 1}}},
                           {"overlap", false},
                           {"nccl_comm_num", streams},
                           {"algorithm", "ring"}};
    return simulate(scenario(cluster(0, library), "model-16x1m.json", strategy), fidelity).step_time_s;
  };
  EXPECT_NEAR(step_s(with_delay, 2, Fidelity::Flow) - step_s(without_delay, 2, Fidelity::Flow), 8 * 6 * 200e-6, 1e-9);
  for (const Fidelity fidelity : {Fidelity::Analytical, Fidelity::Flow})
    EXPECT_EQ(step_s(with_delay, 1, fidelity), step_s(without_delay, 1, fidelity)) << to_string(fidelity);
  EXPECT_GT(step_s(with_delay, 2, Fidelity::Analytical), step_s(without_delay, 2, Fidelity::Analytical) + 1e-3);
}

}  // namespace
}  // namespace commsim
