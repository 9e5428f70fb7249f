// Error bands wherever a calibrated topology is used (sim/topology/calibration_band.hpp, Result::comm_band_rel):
// the band read from the file, the bound it claims on the step time checked by re-simulating with every link
// slower and faster by the band, and the commands that print it.
#include <gtest/gtest.h>

#include <fstream>

#include "sim/core/json_fields.hpp"
#include "sim/step/simulation.hpp"
#include "sim/topology/calibration_band.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// topologies/emulated-cpu-cluster.json with a calibration block as `commsim calibrate` writes it (per class
// band_rel: shm 0.05, tcp 0.2) and every class's time scaled by `factor` (latency x factor, bandwidth / factor).
std::string calibrated_topology(const TempDir& dir, const std::string& name, double factor) {
  Json doc = read_json_file("topologies/emulated-cpu-cluster.json");
  doc["sources"]["calibration"] = {{"link_classes", {{"shm", {{"band_rel", 0.05}}}, {"tcp", {{"band_rel", 0.2}}}}}};
  for (auto& [cls, lc] : doc["link_classes"].items()) {
    lc["latency_s"] = lc.value("latency_s", 0.0) * factor;
    lc["bandwidth_Bps"] = lc["bandwidth_Bps"].get<double>() / factor;
  }
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << doc.dump();
  return path;
}

TEST(Band, TheLargestClassBandOfACalibratedTopology) {
  TempDir dir;
  EXPECT_EQ(calibration_band_rel("topologies/dgx-a100.json"), 0);                      // not calibrated
  EXPECT_DOUBLE_EQ(calibration_band_rel(calibrated_topology(dir, "t.json", 1)), 0.2);  // max(0.05, 0.2)
}

// The bound: every communication span within +-20 % changes the step by at most 20 % of the communication time.
// Re-simulated with every link 20 % slower and 20 % faster, the step stays inside [T - 0.2 comm, T + 0.2 comm].
TEST(Band, TheStepTimeBandHoldsWhenEveryLinkIsSlowerOrFaster) {
  TempDir dir;
  auto step = [&](double factor, const std::string& name) {
    return simulate_scenario("scenarios/emulated-tiny.json",
                             {"topology=" + calibrated_topology(dir, name, factor), "steps=4"}, 0, Fidelity::Analytical)
        .result;
  };
  const Result nominal = step(1, "nominal.json");
  ASSERT_DOUBLE_EQ(nominal.comm_band_rel, 0.2);
  ASSERT_GT(nominal.comm_s, 0);
  EXPECT_DOUBLE_EQ(nominal.step_band_s(), 0.2 * nominal.comm_s);
  const Result slow = step(1.2, "slow.json"), fast = step(0.8, "fast.json");
  EXPECT_GT(slow.step_time_s, nominal.step_time_s);  // the band is not empty: communication is on the path
  EXPECT_LE(slow.step_time_s, nominal.step_time_s + nominal.step_band_s() * (1 + 1e-9));
  EXPECT_GE(fast.step_time_s, nominal.step_time_s - nominal.step_band_s() * (1 + 1e-9));
}

TEST(Band, SimulateCollectiveAndSweepPrintIt) {
  if (!cli_available()) GTEST_SKIP() << "the commsim executable was not built";
  TempDir dir;
  const std::string topology = calibrated_topology(dir, "cal.json", 1);
  const CliResult sim = run_cli("simulate scenarios/emulated-tiny.json --set topology=" + topology);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("error band     +-20.0 % on communication"), std::string::npos) << sim.out;
  const CliResult coll = run_cli("collective --topology " + topology + " --sizes 1M");
  ASSERT_EQ(coll.exit_code, 0) << coll.err;
  EXPECT_NE(coll.out.find("+-20%"), std::string::npos) << coll.out;
  const CliResult sweep = run_cli("sweep scenarios/emulated-tiny.json --set topology=" + topology +
                                  " --vary strategy.nccl_comm_num=1,2 -o " + (dir.path() / "sweep").string());
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_NE(sweep.out.find("band ms"), std::string::npos) << sweep.out;
  // Without a calibration nothing changes.
  const CliResult plain = run_cli("simulate scenarios/emulated-tiny.json");
  EXPECT_EQ(plain.out.find("error band"), std::string::npos);
}

}  // namespace
}  // namespace commsim::test
