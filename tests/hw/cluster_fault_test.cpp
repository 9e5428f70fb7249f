// Every way a `commsim run --cluster` can end, and `commsim cluster up` interrupted: afterwards no process of the
// run, no namespace, no veth, no state file, no temporary file and no shared-memory segment may remain. Each test
// runs in its own sandbox (tests/hw/fault_harness.hpp): its own TMPDIR and cluster state directory, which the
// sandbox cleans up on every exit path, even when an assertion fails.
//
// The run: scenarios/emulated-tiny.json, 2 nodes x 2 ranks (ranks 0,1 on node 0; 2,3 on node 1), 1000 steps, so
// it is still stepping whenever a test ends it. Needs root (namespaces) and Open MPI; skips, saying why, without.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hw/cluster/emulated_cluster.hpp"
#include "hw/mpi/launcher.hpp"
#include "tests/hw/fault_harness.hpp"

namespace {

using commsim::test::FaultSandbox;
using namespace std::chrono_literals;

const std::vector<std::string> kLongRun = {
    "run", "--backend", "mpi", "scenarios/emulated-tiny.json", "--cluster", "--steps", "1000", "--timeout-s", "60"};
constexpr int kRanks = 4;

class ClusterFault : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!commsim::hw::has_net_admin(&why)) GTEST_SKIP() << "emulated-cluster fault tests need namespaces: " << why;
    if (commsim::hw::find_in_path("mpirun").empty()) GTEST_SKIP() << "mpirun is not installed (Open MPI)";
  }

  // Starts the long run and waits until its cluster is recorded and all 4 ranks run.
  pid_t start_long_run(const std::vector<std::string>& env = {}) {
    const pid_t launcher = sandbox.start(kLongRun, env);
    prefix = sandbox.wait_for_cluster(30);
    EXPECT_TRUE(sandbox.wait_for_ranks(launcher, kRanks, 30)) << sandbox.log();
    std::this_thread::sleep_for(1s);  // past start-up: the ranks are stepping
    return launcher;
  }

  FaultSandbox sandbox;
  std::string prefix;
};

// A trapped signal to the launcher stops the job, removes the cluster and everything else at once, and the exit
// code says which signal: 128 + its number, as a shell reports a process it killed.
class ClusterFaultSignal : public ClusterFault, public ::testing::WithParamInterface<int> {};

TEST_P(ClusterFaultSignal, RemovesEverythingAndExits128PlusSignal) {
  const int signal_number = GetParam();
  const pid_t launcher = start_long_run();
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  ASSERT_NE(sandbox.leftovers(prefix), "");  // the census sees a live run
  kill(launcher, signal_number);
  const int status = sandbox.wait_exit(launcher, 20);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << "status " << status << "\n" << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 128 + signal_number) << sandbox.log();
  EXPECT_NE(sandbox.log().find("interrupted by signal " + std::to_string(signal_number)), std::string::npos);
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

INSTANTIATE_TEST_SUITE_P(Signals, ClusterFaultSignal, ::testing::Values(SIGHUP, SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& p) { return std::string(sigabbrev_np(p.param)); });

// SIGKILL cannot be trapped: the job ends (mpirun gets SIGTERM when its parent dies) but the namespaces, state
// file and directories stay. The next command that makes a cluster finds the state's owner dead and removes them,
// then runs normally.
TEST_F(ClusterFault, SigkillLeavesStateThatTheNextRunRemoves) {
  const pid_t launcher = start_long_run();
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  kill(launcher, SIGKILL);
  const int status = sandbox.wait_exit(launcher, 10);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_NE(sandbox.leftovers(prefix).find("state file"), std::string::npos);  // what the next command must find

  const int next = sandbox.run({"run", "--backend", "mpi", "scenarios/emulated-tiny.json", "--cluster", "--steps", "2",
                                "--warmup", "0", "--timeout-s", "40"});
  EXPECT_EQ(next, 0) << sandbox.log();
  EXPECT_NE(sandbox.log().find("removed emulated cluster " + prefix), std::string::npos) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// The same state is removed by `cluster down --all`, which owes no one an explanation: exit 0.
TEST_F(ClusterFault, SigkillLeavesStateThatDownAllRemoves) {
  const pid_t launcher = start_long_run();
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  kill(launcher, SIGKILL);
  sandbox.wait_exit(launcher, 10);
  EXPECT_NE(sandbox.leftovers(prefix), "");
  EXPECT_EQ(sandbox.run({"cluster", "down", "--all"}), 0) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// mpirun killed: the launcher sees it end without rank 0's report, kills the orphaned ranks and daemons (it is
// their subreaper), says what happened in one line and exits 3.
TEST_F(ClusterFault, DeadMpirunEndsTheRunWithAClearError) {
  const pid_t launcher = start_long_run();
  const std::vector<pid_t> mpirun = sandbox.processes_named("mpirun");
  ASSERT_EQ(mpirun.size(), 1u) << sandbox.log();
  kill(mpirun[0], SIGKILL);
  const int status = sandbox.wait_exit(launcher, 20);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 3) << sandbox.log();
  EXPECT_NE(sandbox.log().find("mpirun was killed by signal 9"), std::string::npos) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// The daemon of node 1 killed: mpirun loses its ranks and aborts the job; the launcher reports and cleans up.
TEST_F(ClusterFault, DeadOrtedEndsTheRunWithAClearError) {
  const pid_t launcher = start_long_run();
  const std::vector<pid_t> orted = sandbox.processes_named("orted");
  ASSERT_EQ(orted.size(), 1u) << "one daemon, for node 1 (node 0's ranks are mpirun's own)\n" << sandbox.log();
  kill(orted[0], SIGKILL);
  const int status = sandbox.wait_exit(launcher, 30);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 3) << sandbox.log();
  EXPECT_NE(sandbox.log().find("ended without a result"), std::string::npos) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// Rank 3 (node 1) aborts in its first measured step (COMMSIM_TEST_KILL_RANK) while the others wait for it.
TEST_F(ClusterFault, DeadRankEndsTheRunWithAClearError) {
  const pid_t launcher = sandbox.start(kLongRun, {"COMMSIM_TEST_KILL_RANK=3"});
  const int status = sandbox.wait_exit(launcher, 40);
  prefix = commsim::test::cluster_prefix_in(sandbox.log());
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 3) << sandbox.log();
  EXPECT_NE(sandbox.log().find("ended without a result"), std::string::npos) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// Rank 2 hangs in its first measured step (COMMSIM_TEST_HANG_RANK): only the time limit can end the run; at 8 s
// it stops the job, says so and exits 3, with nothing left.
TEST_F(ClusterFault, HungRankIsStoppedAtTheTimeLimit) {
  std::vector<std::string> args = kLongRun;
  args.back() = "8";  // --timeout-s
  const pid_t launcher = sandbox.start(args, {"COMMSIM_TEST_HANG_RANK=2"});
  const int status = sandbox.wait_exit(launcher, 40);
  prefix = commsim::test::cluster_prefix_in(sandbox.log());
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 3) << sandbox.log();
  EXPECT_NE(sandbox.log().find("did not finish within 8 s"), std::string::npos) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// `cluster down PREFIX` while the cluster's run is alive is refused in one line (exit 2) and the run goes on;
// with --force it ends the run (SIGTERM: the run stops its job and cleans up, exit 143) and removes the cluster.
TEST_F(ClusterFault, DownRefusesALiveRunUnlessForced) {
  const pid_t launcher = start_long_run();
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  EXPECT_EQ(sandbox.run({"cluster", "down", prefix}, 20), 2) << sandbox.log();
  EXPECT_NE(sandbox.log().find("is in use: its run (PID " + std::to_string(launcher)), std::string::npos)
      << sandbox.log();
  EXPECT_TRUE(sandbox.running(launcher)) << "the refused down must leave the run alone";
  EXPECT_EQ(sandbox.run({"cluster", "down", prefix, "--force"}, 30), 0) << sandbox.log();
  const int status = sandbox.wait_exit(launcher, 20);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// A persistent cluster (`cluster up`) with a process left inside a node (here a sleep started by hand): down
// refuses, naming the process; --force kills it and removes the cluster.
TEST_F(ClusterFault, DownRefusesAClusterWithProcessesInsideUnlessForced) {
  ASSERT_EQ(sandbox.run({"cluster", "up", "topologies/emulated-cpu-cluster.json", "--nodes", "2"}), 0) << sandbox.log();
  prefix = sandbox.wait_for_cluster(1);
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    setenv("TMPDIR", sandbox.temp_dir().c_str(), 1);  // tagged: the sandbox's census and cleanup find it
    execl("/usr/bin/ip", "ip", "netns", "exec", (prefix + "-n1").c_str(), "sleep", "120", static_cast<char*>(nullptr));
    _exit(127);
  }
  while (sandbox.processes_named("sleep").empty()) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(sandbox.run({"cluster", "down", prefix}, 20), 2) << sandbox.log();
  EXPECT_NE(sandbox.log().find("1 process runs inside it (PID " + std::to_string(sleeper) + " sleep)"),
            std::string::npos)
      << sandbox.log();
  EXPECT_EQ(sandbox.run({"cluster", "down", prefix, "--force"}, 30), 0) << sandbox.log();
  const int status = sandbox.wait_exit(sleeper, 10);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// A state file is trusted only for what belongs to its prefix: one that lists a foreign namespace or directory
// (corrupted, or written by hand) is refused in one line, exit 2, and nothing it names is touched.
TEST_F(ClusterFault, StateListingForeignThingsIsRefused) {
  const std::string foreign_dir = sandbox.temp_dir() + "/keep-me";
  std::filesystem::create_directories(foreign_dir);
  using Lists = std::pair<std::string, std::string>;  // namespaces, temp_dirs
  for (const auto& [namespaces, dirs] :
       {Lists{R"(["cs00c0de-n0", "not-ours"])", "[]"}, Lists{R"(["cs00c0de-n0"])", "[\"" + foreign_dir + "\"]"}}) {
    std::ofstream(sandbox.state_dir() + "/cs00c0de.json")
        << R"({"prefix": "cs00c0de", "owner_pid": 1, "persistent": true, "namespaces": )" << namespaces
        << R"(, "temp_dirs": )" << dirs << "}";
    EXPECT_EQ(sandbox.run({"cluster", "down", "cs00c0de"}), 2) << sandbox.log();
    EXPECT_EQ(sandbox.run({"cluster", "down", "--all"}), 2) << sandbox.log();
  }
  EXPECT_NE(sandbox.log().find("lists namespace 'not-ours' outside cluster cs00c0de"), std::string::npos)
      << sandbox.log();
  EXPECT_NE(sandbox.log().find("lists directory '" + foreign_dir + "' outside cluster cs00c0de"), std::string::npos)
      << sandbox.log();
  EXPECT_TRUE(std::filesystem::is_directory(foreign_dir));
  std::filesystem::remove(sandbox.state_dir() + "/cs00c0de.json");
  std::filesystem::remove(foreign_dir);
}

// Ctrl-C (or the terminal closing) while `cluster up` builds 32 nodes: the half-built cluster, its state file and
// its launch files are removed, and the process ends by the signal, as it would have without the cleanup.
class ClusterFaultDuringUp : public ClusterFault, public ::testing::WithParamInterface<int> {};

TEST_P(ClusterFaultDuringUp, LeavesNothing) {
  const int signal_number = GetParam();
  const pid_t up = sandbox.start({"cluster", "up", "topologies/emulated-cpu-cluster.json", "--nodes", "32"});
  prefix = sandbox.wait_for_cluster(30);  // the state file is written before the first namespace
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  std::this_thread::sleep_for(100ms);  // a few namespaces exist
  kill(up, signal_number);
  const int status = sandbox.wait_exit(up, 20);
  EXPECT_TRUE(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == signal_number) << status << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

// Ctrl-C while `run --cluster` is still making its 32-node cluster: the run acts on it once the namespaces exist
// (no job is started then), removes everything and exits 128 + SIGINT.
TEST_F(ClusterFault, CtrlCWhileARunMakesItsCluster) {
  const pid_t launcher = sandbox.start({"run", "--backend", "mpi", "scenarios/emulated-tiny.json", "--cluster", "--set",
                                        "nodes=32", "--steps", "1000", "--timeout-s", "60"});
  prefix = sandbox.wait_for_cluster(30);
  ASSERT_FALSE(prefix.empty()) << sandbox.log();
  kill(launcher, SIGINT);
  const int status = sandbox.wait_exit(launcher, 30);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status)) << status << sandbox.log();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << sandbox.log();
  EXPECT_EQ(sandbox.leftovers(prefix), "");
}

INSTANTIATE_TEST_SUITE_P(Signals, ClusterFaultDuringUp, ::testing::Values(SIGINT, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& p) { return std::string(sigabbrev_np(p.param)); });

}  // namespace
