// The CLI contract of `commsim calibrate` and `commsim validate` without MPI: calibration from a given bench file,
// validation re-judging given measurements (--measured), and bad input (exit 2, one line naming file and field).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "sim/step/simulation.hpp"
#include "tests/validate/test_helpers.hpp"
#include "validate/calibration.hpp"
#include "validate/suite.hpp"

using namespace commsim;
using commsim::validate::test_support::TempDir;

namespace {

struct CliRun {
  int code;
  std::string out, err;
};

CliRun commsim_cli(const std::string& args, const TempDir& dir) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const int status = std::system((std::string(COMMSIM_CLI_PATH) + " " + args + " > " + out + " 2> " + err).c_str());
  auto slurp = [](const std::string& f) {
    std::ifstream in(f);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

Json good_bench() {
  return validate::test_support::bench_report(
      [](double b) { return 1e-6 + b / 5e9; },
      [](double b) { return b < 524288 ? 30e-6 + b / 200e6 : 60e-6 + b / 118e6; });
}

}  // namespace

TEST(CalibrateCli, FitsAGivenBenchAndWritesALoadableTopology) {
  TempDir dir("cal-cli");
  validate::test_support::write(dir.file("bench.json"), good_bench());
  const CliRun r = commsim_cli("calibrate --backend mpi topologies/emulated-cpu-cluster.json --bench " +
                                   dir.file("bench.json") + " -o " + dir.file("cal.json"),
                               dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("tcp"), std::string::npos);
  EXPECT_NE(r.out.find("regimes break at 512 KiB"), std::string::npos) << r.out;
  // The simulator loads the calibrated topology as any other.
  const CliRun sim =
      commsim_cli("collective --topology " + dir.file("cal.json") + " --op allreduce --algo ring --sizes 1M:1M", dir);
  EXPECT_EQ(sim.code, 0) << sim.err;
}

TEST(CalibrateCli, RefusesANoisyFitWithExitOne) {
  TempDir dir("cal-noisy");
  Json bench = good_bench();
  for (std::size_t i = 0; i < bench["pingpong"][1]["samples"].size(); ++i)
    bench["pingpong"][1]["samples"][i]["seconds_per_repetition"] =
        bench["pingpong"][1]["samples"][i]["seconds_per_repetition"].get<double>() * (i % 2 ? 2.5 : 0.4);
  validate::test_support::write(dir.file("bench.json"), bench);
  const CliRun r = commsim_cli("calibrate topologies/emulated-cpu-cluster.json --bench " + dir.file("bench.json") +
                                   " -o " + dir.file("cal.json"),
                               dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("refused: link class tcp"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("cal.json")));
}

TEST(CalibrateCli, FitsConcurrentSlowdownFromAGpuMeasurement) {
  // reports/gpu/h100/interference.json on dgx-h100 (132 SMs, as measured): c = 0.037756
  // (InterferenceFit.FitsTheH100MeasurementAndPredictsTheRest), written into the library and loaded back.
  TempDir dir("cal-interference");
  const CliRun r = commsim_cli(
      "calibrate topologies/dgx-h100.json --interference reports/gpu/h100/interference.json -o " + dir.file("cal.json"),
      dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("concurrent_slowdown 0.0378"), std::string::npos) << r.out;
  const Json doc = read_json_file(dir.file("cal.json"));
  EXPECT_NEAR(doc["library"]["concurrent_slowdown"].get<double>(), 0.037756, 1e-6);
  EXPECT_NE(doc["library"]["source"].get<std::string>().find("--interference"), std::string::npos);
  EXPECT_EQ(commsim_cli("simulate scenarios/llama3-8b-dgx-h100.json --set topology=" + dir.file("cal.json"), dir).code,
            0);
  auto calibrate = [&](const std::string& topology, const std::string& extra, const std::string& out) {
    return commsim_cli("calibrate " + topology + " --interference reports/gpu/h100/interference.json " + extra +
                           " -o " + dir.file(out),
                       dir);
  };
  // A GPU of another SM count than the topology's: exit 2, one line naming library.sms.
  const CliRun other = calibrate("topologies/dgx-a100.json", "", "x.json");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("library.sms"), std::string::npos) << other.err;
  EXPECT_EQ(lines(other.err), 1);
  // A workload the fit refuses (the memory-bound add sped up): exit 1, nothing written.
  EXPECT_EQ(calibrate("topologies/dgx-h100.json", "--workload add_fp32_256Mi", "y.json").code, 1);
  EXPECT_FALSE(std::ifstream(dir.file("y.json")).good());
}

TEST(CalibrateCli, BadInputIsExitTwoOneLine) {
  TempDir dir("cal-bad");
  validate::test_support::write_text(dir.file("bench.json"), "{ not json");
  CliRun r = commsim_cli("calibrate topologies/emulated-cpu-cluster.json --bench " + dir.file("bench.json"), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("bench.json"), std::string::npos);
  r = commsim_cli("calibrate topologies/no-such.json --bench " + dir.file("bench.json"), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
}

TEST(ValidateCli, BadSuiteIsExitTwoOneLine) {
  TempDir dir("val-bad");
  validate::test_support::write(dir.file("suite.json"),
                                {{"name", "x"}, {"scenarios", {{{"name", "a"}, {"scenario", "nowhere.json"}}}}});
  CliRun r = commsim_cli("validate " + dir.file("suite.json"), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("scenarios[0] (a)"), std::string::npos) << r.err;
  // A suite that needs shaped links refuses to run without --cluster.
  r = commsim_cli("validate validate/suites/emulated.json --report " + dir.file("r"), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs_cluster"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  // A file that is not a calibrated topology.
  r = commsim_cli("validate validate/suites/smoke.json --calibration topologies/emulated-cpu-cluster.json --report " +
                      dir.file("r"),
                  dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sources.calibration"), std::string::npos) << r.err;
}

// Re-judging given runs: the "measurements" here are the simulator's own prediction with the calibrated topology,
// so every error is 0, every measurement lies in its band and every sign is right -> exit 0 and a full report.
TEST(ValidateCli, RejudgesGivenMeasurementsAndWritesTheReport) {
  TempDir dir("val-measured");
  // Calibrate the smoke suite's 2-node topology from a synthetic bench on loopback.
  Json bench = good_bench();
  bench["network"] = "loopback: all 4 ranks on this host, shared memory, unshaped";
  validate::test_support::write(dir.file("bench.json"), bench);
  const std::string cal = dir.file("cal.json");
  ASSERT_EQ(commsim_cli("calibrate validate/suites/topologies/emulated-cpu-cluster-2x2.json --bench " +
                            dir.file("bench.json") + " -o " + cal,
                        dir)
                .code,
            0);
  const validate::CalibrationSummary summary = validate::read_calibration(cal);
  const validate::Suite suite = validate::load_suite("validate/suites/smoke.json");
  std::filesystem::create_directories(dir.file("measured"));
  for (const validate::SuiteEntry& e : suite.entries) {
    Json doc = suite.document(e);
    doc["topology"] = std::filesystem::absolute(cal).string();
    doc["device"]["memory_Bps"] = 3 * summary.reduce_Bps;
    doc["device"]["dgc_Bps"] = summary.dgc_Bps;
    Result r = simulate_document(doc, e.scenario, Fidelity::Flow).result;
    r.backend = "mpi";
    validate::test_support::write(dir.file("measured/measured-" + e.name + ".json"), r.to_json());
  }
  const CliRun r = commsim_cli("validate validate/suites/smoke.json --calibration " + cal + " --measured " +
                                   dir.file("measured") + " --report " + dir.file("report"),
                               dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("median |error| 0.0 %"), std::string::npos) << r.out;
  const Json v = read_json_file(dir.file("report/validation.json"));
  EXPECT_EQ(v["summary"]["inside_band"].get<int>(), 2);
  EXPECT_TRUE(v["summary"]["targets"]["signs_met"].get<bool>());
  EXPECT_TRUE(v["summary"]["targets"]["inside_met"].get<bool>());
  EXPECT_EQ(v["speedups"][0]["technique"], "overlap");
  std::ifstream html(dir.file("report/index.html"));
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("data-chart=\"validation-bands\""), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);  // self-contained, no scripts
}
