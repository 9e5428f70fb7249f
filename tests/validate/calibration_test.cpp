// calibrate(): from a synthetic bench report to a calibrated topology the simulator loads, whose path costs are
// the fitted values; refusal of untrustworthy fits.
#include "validate/calibration.hpp"

#include <gtest/gtest.h>

#include "sim/collective/collective.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/engine/executor.hpp"
#include "sim/topology/topology.hpp"
#include "tests/validate/test_helpers.hpp"

using namespace commsim;
using namespace commsim::validate;
using commsim::validate::test_support::TempDir;

namespace {

const char* kTopology = "topologies/emulated-cpu-cluster.json";

// Deterministic "noise": +-amplitude alternating by size.
std::function<double(double)> noisy(double alpha, double beta, double amplitude) {
  return [=](double b) {
    const bool odd = static_cast<long long>(std::log2(b)) % 2;
    return (alpha + b / beta) * (odd ? 1 + amplitude : 1 - amplitude);
  };
}

}  // namespace

// The emulated cluster (4 nodes x 2 ranks):
//
//   rank0 --shm-- cpu0 --shm-- rank1          node 0   (and nic0 --shm-- cpu0)
//                  |
//                nic0 ==tcp== switch ==tcp== nic1 ...  nodes 1..3
//
// A path's latency is its slowest class's, its bandwidth the narrowest link's. Ping-pong between rank 0 and 1 sees
// shm only; between rank 0 and 2 the tcp hop dominates both. So the calibrated topology must give
//   path_cost(0, 1) = (alpha_shm, beta_shm) and path_cost(0, 2) = (alpha_tcp, beta_tcp)
// with beta_tcp = 125e6 (datasheet, kept) x fitted efficiency 0.9 = 112.5e6.
TEST(Calibration, CalibratedTopologyReproducesTheFittedPaths) {
  const Json topology = read_json_file(kTopology);
  const Json bench =
      test_support::bench_report([](double b) { return 1e-6 + b / 5e9; }, [](double b) { return 40e-6 + b / 112.5e6; });
  const Calibration cal = calibrate(topology, kTopology, bench, "bench.json");
  ASSERT_TRUE(cal.trusted()) << cal.classes[0].why_not << cal.classes[1].why_not;
  EXPECT_EQ(cal.reduce_Bps, 3e9);
  EXPECT_EQ(cal.dgc_Bps, 6e8);  // the bench's dgc_Bps (a fifth of 3e9), as measured
  const Json& lc = cal.calibrated_topology["link_classes"];
  EXPECT_NEAR(lc["tcp"]["latency_s"].get<double>(), 40e-6, 1e-12);
  EXPECT_EQ(lc["tcp"]["bandwidth_Bps"].get<double>(), 1.25e8);  // the datasheet rate stays: tc shapes from it
  EXPECT_NEAR(lc["tcp"]["efficiency"].get<double>(), 0.9, 1e-9);
  // shm: 5e9 B/s measured is below the 7.7e9 datasheet figure -> efficiency 5/7.7
  EXPECT_NEAR(lc["shm"]["efficiency"].get<double>(), 5.0 / 7.7, 1e-9);
  EXPECT_NE(lc["tcp"]["source"].get<std::string>().find("fitted by commsim calibrate on testhost"), std::string::npos);
  EXPECT_TRUE(cal.calibrated_topology["sources"]["calibration"]["link_classes"]["tcp"]["trusted"].get<bool>());

  TempDir dir("calibrated");
  test_support::write(dir.file("cal.json"), cal.calibrated_topology);
  const auto topo = load_topology(dir.file("cal.json"));
  EXPECT_EQ(topo->ranks(), 8);
  const PathCost intra = topo->path_cost(0, 1), inter = topo->path_cost(0, 2);
  EXPECT_NEAR(intra.latency_s, 1e-6, 1e-15);
  EXPECT_NEAR(intra.bottleneck_Bps, 5e9, 1);
  EXPECT_NEAR(inter.latency_s, 40e-6, 1e-15);
  EXPECT_NEAR(inter.bottleneck_Bps, 112.5e6, 1e-3);

  const CalibrationSummary s = read_calibration(dir.file("cal.json"));
  EXPECT_EQ(s.topology_name, "emulated-cpu-cluster");
  EXPECT_TRUE(s.cluster);
  EXPECT_EQ(s.reduce_Bps, 3e9);
  EXPECT_EQ(s.dgc_Bps, 6e8);
  ASSERT_EQ(s.band_rel.size(), 2u);
}

// A measured rate above the datasheet figure replaces it, at efficiency 1.
TEST(Calibration, MeasurementAboveDatasheetBecomesTheBandwidth) {
  const Json topology = read_json_file(kTopology);
  const Json bench =
      test_support::bench_report([](double b) { return 1e-6 + b / 9e9; }, [](double b) { return 40e-6 + b / 112.5e6; });
  const Calibration cal = calibrate(topology, kTopology, bench, "bench.json");
  const Json& shm = cal.calibrated_topology["link_classes"]["shm"];
  EXPECT_NEAR(shm["bandwidth_Bps"].get<double>(), 9e9, 1e-3);
  EXPECT_EQ(shm["efficiency"].get<double>(), 1.0);
}

// Eager below 64 KiB (alpha 20 us, 80 MB/s), rendezvous above (alpha 90 us, 115 MB/s): the topology line takes
// alpha from the small-size regime and beta from the large-size one; the breakpoint is reported.
TEST(Calibration, TwoRegimesGiveTheTopologyLineFromEachEnd) {
  const Json topology = read_json_file(kTopology);
  auto tcp = [](double b) { return b < 65536 ? 20e-6 + b / 80e6 : 90e-6 + b / 115e6; };
  const Calibration cal = calibrate(topology, kTopology,
                                    test_support::bench_report([](double b) { return 1e-6 + b / 5e9; }, tcp), "b.json");
  const ClassCalibration& c = cal.classes[1];
  ASSERT_EQ(c.link_class, "tcp");
  ASSERT_EQ(c.fit.breakpoints_bytes.size(), 1u);
  EXPECT_EQ(c.fit.breakpoints_bytes[0], 65536);
  EXPECT_NEAR(c.alpha_s, 20e-6, 1e-10);
  EXPECT_NEAR(c.beta_Bps, 115e6, 1);
  EXPECT_TRUE(c.trusted) << c.why_not;
}

// +-60 % noise: the model explains little and single sizes are off by more than half: refused, naming the class.
TEST(Calibration, RefusesNoisyData) {
  const Json topology = read_json_file(kTopology);
  const Calibration cal = calibrate(
      topology, kTopology,
      test_support::bench_report([](double b) { return 1e-6 + b / 5e9; }, noisy(40e-6, 112.5e6, 0.6)), "b.json");
  EXPECT_TRUE(cal.classes[0].trusted);
  EXPECT_FALSE(cal.classes[1].trusted);
  EXPECT_FALSE(cal.trusted());
  EXPECT_NE(cal.classes[1].why_not.find("link class tcp"), std::string::npos) << cal.classes[1].why_not;
}

// Bad bench input is an InputError naming the file and the field.
TEST(Calibration, BadBenchNamesTheField) {
  const Json topology = read_json_file(kTopology);
  Json bench =
      test_support::bench_report([](double b) { return 1e-6 + b / 5e9; }, [](double b) { return 40e-6 + b / 112.5e6; });
  bench["pingpong"][1]["link_class"] = "rdma";
  try {
    calibrate(topology, kTopology, bench, "bench.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bench.json: pingpong[1].link_class"), std::string::npos) << e.what();
  }
  bench =
      test_support::bench_report([](double b) { return 1e-6 + b / 5e9; }, [](double b) { return 40e-6 + b / 112.5e6; });
  bench["pingpong"][0]["samples"][3]["seconds_per_repetition"] = -1;
  EXPECT_THROW(calibrate(topology, kTopology, bench, "bench.json"), InputError);
}

// The band's scaled topologies: slower by factor f = 1 + band_rel means latency x f and bandwidth / f.
TEST(Calibration, ScaleLinkClasses) {
  Json topology = read_json_file(kTopology);
  CalibrationSummary s;
  s.band_rel = {{"tcp", 0.1}};
  const Json slow = scale_link_classes(topology, s, +1), fast = scale_link_classes(topology, s, -1);
  EXPECT_NEAR(slow["link_classes"]["tcp"]["latency_s"].get<double>(), 1.5e-5 * 1.1, 1e-15);
  EXPECT_NEAR(slow["link_classes"]["tcp"]["bandwidth_Bps"].get<double>(), 1.25e8 / 1.1, 1e-3);
  EXPECT_NEAR(fast["link_classes"]["tcp"]["bandwidth_Bps"].get<double>(), 1.25e8 / 0.9, 1e-3);
  EXPECT_EQ(slow["link_classes"]["shm"], topology["link_classes"]["shm"]);  // not calibrated in s: unchanged
}

TEST(Calibration, ReadCalibrationRejectsAPlainTopology) {
  try {
    read_calibration(kTopology);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sources.calibration"), std::string::npos);
  }
}

// The collective model on exact ring data (p = 8, one ring step = 500 us + chunk / 70 MB/s, gamma 3 GB/s):
//   t(S) = 14 x 500 us + (14/8) S / 70e6 + (7/8) S / 3e9
// The fit recovers alpha_step = 500 us and beta = 70 MB/s; every class's latency becomes 500 us (ping-pong said
// 1 us for shm, 40 us for tcp) and tcp's efficiency 70/125 = 0.56. The simulator's closed-form ring allreduce on
// the calibrated topology then reproduces the measured sweep (the model the fit inverted).
TEST(Calibration, CollectiveModelReproducesTheAllreduceSweep) {
  const Json topology = read_json_file(kTopology);
  Json bench = test_support::bench_report([](double b) { return 1e-6 + b / 5e9; },
                                          [](double b) { return 40e-6 + b / 112.5e6; }, 3e9);
  test_support::add_ring_sweep(bench, 8, 500e-6, 70e6, 3e9);
  const Calibration cal = calibrate(topology, kTopology, bench, "bench.json");
  ASSERT_TRUE(cal.collective.present);
  ASSERT_TRUE(cal.collective_used) << cal.collective.why_not;
  EXPECT_EQ(cal.collective.bottleneck_class, "tcp");
  EXPECT_NEAR(cal.collective.alpha_step_s, 500e-6, 1e-12);
  EXPECT_NEAR(cal.collective.beta_Bps, 70e6, 1e-3);
  const Json& lc = cal.calibrated_topology["link_classes"];
  EXPECT_NEAR(lc["shm"]["latency_s"].get<double>(), 500e-6, 1e-12);
  EXPECT_NEAR(lc["tcp"]["latency_s"].get<double>(), 500e-6, 1e-12);
  EXPECT_NEAR(lc["tcp"]["efficiency"].get<double>(), 0.56, 1e-9);

  TempDir dir("collective");
  test_support::write(dir.file("cal.json"), cal.calibrated_topology);
  const auto topo = load_topology(dir.file("cal.json"));
  for (const double s : {8.0, 65536.0, 16.0 * 1024 * 1024}) {
    CollectiveSpec spec;
    spec.algorithm = Algorithm::Ring;
    spec.bytes = static_cast<Bytes>(s);
    spec.ranks_per_node = topo->ranks_per_node();
    spec.channels = topo->default_channels();
    spec.reduce_Bps = 3e9;
    const double measured = 14 * 500e-6 + 14.0 / 8 * s / 70e6 + 7.0 / 8 * s / 3e9;
    EXPECT_NEAR(closed_form_seconds(spec, *topo), measured, measured * 1e-6) << s << " B";
  }
}

// Three bench runs whose sweeps are the same ring at 0.9x, 1x and 1.1x the time (alpha x f, beta and gamma / f):
// the merge keeps the 1x run per size, which the fit matches exactly (RMS ~ 0), and every size's three times have a
// sample standard deviation of 0.1 x the median. The band is then 2 x sqrt(0^2 + 0.1^2) = 0.2, not the fit's ~0.
TEST(Calibration, CollectiveBandCountsTheRunToRunSpread) {
  const Json topology = read_json_file(kTopology);
  std::vector<Json> runs;
  for (const double f : {0.9, 1.0, 1.1}) {
    Json b = test_support::bench_report([](double x) { return 1e-6 + x / 5e9; },
                                        [](double x) { return 40e-6 + x / 112.5e6; }, 3e9);
    test_support::add_ring_sweep(b, 8, f * 500e-6, 70e6 / f, 3e9 / f);
    runs.push_back(b);
  }
  const Json merged = merge_bench_runs(runs, {"a.json", "b.json", "c.json"});
  const Calibration cal = calibrate(topology, kTopology, merged, "merged.json");
  ASSERT_TRUE(cal.collective_used) << cal.collective.why_not;
  EXPECT_LT(cal.collective.fit.rms_rel, 1e-9);
  EXPECT_NEAR(cal.collective.run_spread_rel, 0.1, 1e-9);
  EXPECT_NEAR(cal.collective.band_rel, 0.2, 1e-9);
  // One run alone: no spread, the band is the fit's.
  const Calibration single = calibrate(topology, kTopology, runs[1], "b.json");
  EXPECT_EQ(single.collective.run_spread_rel, 0);
  EXPECT_LT(single.collective.band_rel, 1e-8);
}

// Links model: the sweep is fitted and reported but the topology keeps the ping-pong values.
TEST(Calibration, LinksModelIgnoresTheSweep) {
  const Json topology = read_json_file(kTopology);
  Json bench = test_support::bench_report([](double b) { return 1e-6 + b / 5e9; },
                                          [](double b) { return 40e-6 + b / 112.5e6; }, 3e9);
  test_support::add_ring_sweep(bench, 8, 500e-6, 70e6, 3e9);
  const Calibration cal = calibrate(topology, kTopology, bench, "bench.json", CalibrationModel::Links);
  EXPECT_TRUE(cal.collective.trusted);
  EXPECT_FALSE(cal.collective_used);
  EXPECT_NEAR(cal.calibrated_topology["link_classes"]["tcp"]["latency_s"].get<double>(), 40e-6, 1e-12);
}

// Merging runs: ping-pong takes the fastest run per size, allreduce the median run, the reduction and DGC rates the
// median (runs at 1, 1.5 and 3 x: reduction 1.5e9, DGC a fifth of it).
TEST(Calibration, MergeTakesFastestPingPongAndMedianAllreduce) {
  std::vector<Json> runs;
  for (const double f : {1.0, 1.5, 3.0}) {
    Json b = test_support::bench_report([f](double x) { return f * (1e-6 + x / 5e9); },
                                        [f](double x) { return f * (40e-6 + x / 112.5e6); }, 1e9 * f);
    test_support::add_ring_sweep(b, 8, f * 500e-6, 70e6 / f, 3e9);
    runs.push_back(b);
  }
  const Json m = merge_bench_runs(runs, {"a.json", "b.json", "c.json"});
  EXPECT_EQ(m["pingpong"][1]["samples"][0]["seconds_per_repetition"],
            runs[0]["pingpong"][1]["samples"][0]["seconds_per_repetition"]);
  EXPECT_EQ(m["allreduce"]["samples"][5]["seconds_per_repetition"],
            runs[1]["allreduce"]["samples"][5]["seconds_per_repetition"]);
  EXPECT_EQ(m["reduction"]["reduce_Bps"].get<double>(), 1.5e9);
  EXPECT_EQ(m["dgc"]["dgc_Bps"].get<double>(), 1.5e9 / 5);
  runs[2]["ranks"] = 4;
  EXPECT_THROW(merge_bench_runs(runs, {"a.json", "b.json", "c.json"}), InputError);
  runs[2]["ranks"] = 8;
  runs[2].erase("dgc");  // a run of an older bench, without the DGC rate: named, not a JSON library error
  EXPECT_THROW(merge_bench_runs(runs, {"a.json", "b.json", "c.json"}), InputError);
}

namespace {

// The bench's two-stream sweep (64 KiB - 16 MiB) of two rings started together, as the simulator prices them with a
// step delay d: t_2(S) = 14 (alpha + 2 d) + 2 x 14/8 S / beta + 7/8 S / gamma (p = 8; validate/calibration.hpp),
// times `off` on the predicted sizes (every other one from 128 KiB).
Json concurrent_sweep(double alpha_step_s, double beta_Bps, double gamma_Bps, double delay_s, double off = 1) {
  Json samples = Json::array();
  bool predicted = false;
  for (double s = 65536; s <= 16.0 * 1024 * 1024; s *= 2, predicted = !predicted) {
    const double t = 14 * (alpha_step_s + 2 * delay_s) + 2 * 14.0 / 8 * s / beta_Bps + 7.0 / 8 * s / gamma_Bps;
    samples.push_back({{"bytes", s}, {"seconds_per_repetition", predicted ? t * off : t}, {"repetitions", 1}});
  }
  return {{"op", "allreduce"}, {"impl", "schedule"}, {"streams", 2}, {"samples", samples}};
}

}  // namespace

// The sweep made from the model with d = 200 us gives d back, every size to rounding, and the calibrated topology's
// library (added as mpi: the emulated cluster's names none) carries it. On that topology two rings of 1 MiB started
// together on the flow network, each transfer carrying what its path moves in d (as the step simulator runs them
// beside each other), share every hop: a tcp hop of a step takes h = alpha + 2 (S/8 + d beta) / beta = 500 us +
// 2 (1872.5 + 200) us = 4645 us. The flow runs the 14 tcp hops of each node back to back, hiding the reductions
// (t_2's gamma term, 0.31 ms, which the closed form's step-by-step pricing keeps): the piece a tcp sender forwards
// next came over shm while its previous tcp hop ran, reduced twice and one shm hop later (2 x 44 us + 952 us < h).
// So they take 14 h = 65.03 ms.
TEST(Calibration, ConcurrentSweepGivesTheStepDelay) {
  const Json topology = read_json_file(kTopology);
  Json bench = test_support::bench_report([](double b) { return 1e-6 + b / 5e9; },
                                          [](double b) { return 40e-6 + b / 112.5e6; }, 3e9);
  test_support::add_ring_sweep(bench, 8, 500e-6, 70e6, 3e9);
  bench["allreduce_concurrent"] = concurrent_sweep(500e-6, 70e6, 3e9, 200e-6);
  const Calibration cal = calibrate(topology, kTopology, bench, "bench.json");
  ASSERT_TRUE(cal.concurrent.trusted) << cal.concurrent.why_not;
  EXPECT_NEAR(cal.concurrent.step_delay_s, 200e-6, 1e-12);
  for (const ConcurrentPoint& pt : cal.concurrent.points) EXPECT_NEAR(pt.model_s, pt.measured_s, 1e-12);
  const Json& library = cal.calibrated_topology["library"];
  EXPECT_EQ(library["name"], "mpi");
  EXPECT_NEAR(library["concurrent_step_delay_us"].get<double>(), 200, 1e-6);

  Json document = cal.calibrated_topology;
  document["link_classes"]["tcp"].erase("burst_bytes");  // the model has no token bucket: the NIC runs at its rate
  document["link_classes"]["tcp"].erase("burst_Bps");
  TempDir dir("concurrent");
  test_support::write(dir.file("cal.json"), document);
  const auto topo = load_topology(dir.file("cal.json"));
  EXPECT_NEAR(topo->library().concurrent_step_delay_s, 200e-6, 1e-15);
  CollectiveSpec spec;
  spec.algorithm = Algorithm::Ring;
  spec.bytes = 1 << 20;
  spec.ranks_per_node = topo->ranks_per_node();
  spec.reduce_Bps = 3e9;
  Schedule schedule;
  std::vector<OpId> frontier(topo->ranks(), kNoOp);
  generate(spec, *topo, schedule, frontier);
  EventQueue queue;
  const auto network = make_flow_network(*topo, queue);
  const ScheduleRun::ExtraBytes extra = [&](int src, int dst) {
    return topo->library().concurrent_step_delay_s * topo->path_cost(src, dst).bottleneck_Bps;
  };
  ScheduleRun a(schedule, spec.reduce_Bps, *network, queue, nullptr),
      b(schedule, spec.reduce_Bps, *network, queue, nullptr);
  a.set_extra_bytes(&extra);
  b.set_extra_bytes(&extra);
  a.start();
  b.start();
  queue.run();
  const double expected_s = 14 * (500e-6 + 2 * (1048576.0 / 8 / 70e6 + 200e-6));
  EXPECT_NEAR(ps_to_seconds(std::max(a.finished_at(), b.finished_at())), expected_s, expected_s * 1e-6);
}

// Predicted sizes 30 % slower than the model: their median error (1/1.3 - 1 = -23 %) exceeds the collective fit's
// band (~0 on an exact sweep), so the delay is not used and the topology keeps no library block; without the
// collective fit (model links) there is nothing to compare with.
TEST(Calibration, ConcurrentFitRefusedWhenItsPredictionsMiss) {
  const Json topology = read_json_file(kTopology);
  Json bench = test_support::bench_report([](double b) { return 1e-6 + b / 5e9; },
                                          [](double b) { return 40e-6 + b / 112.5e6; }, 3e9);
  test_support::add_ring_sweep(bench, 8, 500e-6, 70e6, 3e9);
  bench["allreduce_concurrent"] = concurrent_sweep(500e-6, 70e6, 3e9, 200e-6, 1.3);
  const Calibration cal = calibrate(topology, kTopology, bench, "bench.json");
  EXPECT_TRUE(cal.concurrent.present);
  EXPECT_FALSE(cal.concurrent.trusted);
  EXPECT_NEAR(cal.concurrent.predicted_median_abs_rel, 1 - 1 / 1.3, 1e-9);
  EXPECT_NE(cal.concurrent.why_not.find("exceeds the collective fit's band"), std::string::npos);
  EXPECT_FALSE(cal.calibrated_topology.contains("library"));
  const Calibration links = calibrate(topology, kTopology, bench, "bench.json", CalibrationModel::Links);
  EXPECT_FALSE(links.concurrent.present);
  EXPECT_NE(links.concurrent.why_not.find("collective fit is not used"), std::string::npos);
}
