// The smoke suite end to end: calibrate (microbenchmarks), predict, measure, judge, report — with the real MPI
// backend, on the emulated cluster when namespaces can be made here, else on loopback.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "sim/core/json_fields.hpp"
#include "tests/validate/test_helpers.hpp"

using namespace commsim;
using commsim::validate::test_support::TempDir;

namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p = path;
  for (std::size_t start = 0; start <= p.size();) {
    const std::size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

TEST(Smoke, SmokeSuiteEndToEnd) {
  if (!on_path("mpirun"))
    GTEST_SKIP() << "mpirun is not in PATH: the MPI backend cannot run here (apt-get install openmpi-bin)";
  TempDir dir("smoke");
  // A build without the MPI backend says so in one line (exit 2) before anything starts.
  const std::string probe = dir.file("probe.log");
  shell(std::string(COMMSIM_CLI_PATH) + " run --backend mpi validate/suites/scenarios/mlp-2x2.json --steps 0 > " +
        probe + " 2>&1");
  {
    std::ifstream in(probe);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("no MPI backend") != std::string::npos) GTEST_SKIP() << "this build has no MPI backend (COMMSIM_MPI)";
  }
  // Namespaces need root / CAP_NET_ADMIN; without them the suite runs on loopback (it does not need shaped links).
  const std::string ns = "commsim-vsmoke-" + std::to_string(getpid());
  const bool cluster = shell("ip netns add " + ns + " > /dev/null 2>&1") == 0;
  if (cluster) shell("ip netns del " + ns + " > /dev/null 2>&1");
  const std::string report = dir.file("report");
  const std::string command = std::string(COMMSIM_CLI_PATH) + " validate validate/suites/smoke.json --report " +
                              report + (cluster ? " --cluster" : "") + " > " + dir.file("out.log") + " 2>&1";
  // A calibration refused as too noisy to trust (exit 1, "refused") is the tool doing its job on a disturbed host,
  // not a failure of the loop: measure once more before judging.
  int code = 0;
  std::string out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    code = shell(command);
    std::ifstream log(dir.file("out.log"));
    out.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
    if (!(code == 1 && out.find("refused") != std::string::npos)) break;
  }
  // 0: targets met, 1: missed (a loaded 2-core machine may well miss them); anything else is a failure of the loop.
  ASSERT_TRUE(code == 0 || code == 1) << "exit " << code << "\n" << out;
  ASSERT_TRUE(std::filesystem::exists(report + "/index.html")) << out;
  const Json v = read_json_file(report + "/validation.json");
  ASSERT_EQ(v["scenarios"].size(), 2u);
  for (const Json& s : v["scenarios"]) {
    EXPECT_TRUE(s["measured_ok"].get<bool>()) << s.dump();
    EXPECT_GT(s["predicted_s"].get<double>(), 0);
    EXPECT_GT(s["measured_s"].get<double>(), 0);
    EXPECT_LE(s["band_low_s"].get<double>(), s["predicted_s"].get<double>());
    EXPECT_GE(s["band_high_s"].get<double>(), s["predicted_s"].get<double>());
  }
  ASSERT_EQ(v["speedups"].size(), 1u);
  EXPECT_EQ(v["provenance"]["cluster"].get<bool>(), cluster);
  EXPECT_EQ(v["fitting_runs"].size(), 1u);  // calibrated during the run: its own microbenchmark run
  std::printf("%s\n", v["summary"]["line"].get<std::string>().c_str());
}
