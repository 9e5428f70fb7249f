// `commsim run|bench|cluster` with the MPI backend, end to end: the built executable runs as a subprocess (from the
// source root), launches mpirun itself, and is judged by its exit code, its output and what it leaves behind.
// Every run has a time limit, so a hung job fails the test instead of hanging it.
//
// scenarios/emulated-tiny.json: 2 nodes x 2 ranks, mlp-small (669 706 parameters), 2 buckets on 2 streams:
//   node0: r0 r1 --shm--+            +--shm-- r2 r3 :node1
//                       nic0 --tcp-- switch -- nic1     (tcp: tc tbf 1 Gbit/s when --cluster)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hw/cluster/emulated_cluster.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kCommsim = COMMSIM_CLI_PATH;
const std::string kTiny = "scenarios/emulated-tiny.json";

struct Output {
  int exit_code = -1;  // -1: killed (time limit) or signalled
  std::string text;    // stdout and stderr together
  std::string err;     // stderr alone
  std::string out;     // stdout alone
};

// Runs argv (no shell) with extra environment entries; kills its process group after timeout_s.
Output run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}, int timeout_s = 50) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  Output o;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buffer[4096];
  while (open_fds > 0) {
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left_ms <= 0 || poll(fds, 2, static_cast<int>(left_ms)) == 0) {
      kill(-pid, SIGKILL);
      o.text += "\n[killed after " + std::to_string(timeout_s) + " s]";
      break;
    }
    for (pollfd& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(f.fd, buffer, sizeof buffer);
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
        continue;
      }
      o.text.append(buffer, static_cast<std::size_t>(n));
      (f.fd == err[0] ? o.err : o.out).append(buffer, static_cast<std::size_t>(n));
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  return o;
}

std::vector<std::string> commsim(std::vector<std::string> args) {
  args.insert(args.begin(), kCommsim);
  return args;
}

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / ("commsim-mpi-test-" + name)).string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Processes still running this test's commsim binary (ranks or launchers a run left behind).
int leftover_processes() {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || std::stoi(pid) == getpid()) continue;
    std::error_code error;
    const fs::path exe = fs::read_symlink(entry.path() / "exe", error);
    if (!error && exe == fs::path(kCommsim)) ++count;
  }
  return count;
}

bool namespaces_with(const std::string& prefix) {
  std::error_code missing;
  for (const auto& entry : fs::directory_iterator("/run/netns", missing))
    if (entry.path().filename().string().starts_with(prefix)) return true;
  return false;
}

std::string cluster_prefix(const std::string& text) {
  std::smatch m;
  return std::regex_search(text, m, std::regex("emulated cluster (cs[0-9a-f]{6})")) ? m[1].str() : "";
}

// Expectation for one clear line on stderr naming what is wrong.
void expect_one_line(const Output& o, const std::string& mentions) {
  EXPECT_NE(o.err.find(mentions), std::string::npos) << o.text;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
}

// 4 ranks on loopback with --check: every collective's result is compared with the exact verifiable sum, so the
// run must report 0 wrong elements and exit 0. Its JSON has the simulator's schema: 8 steps (the scenario's), and
// a median step no shorter than the compute the ranks waited for (the plan's 25.7 ms: sleeping never ends early).
// Its trace has the prediction's format: the same tasks on the same threads, three steps of them (the backend
// traces the first three measured steps of rank 0), each compute task at least as long as predicted.
TEST(MpiRun, LoopbackFourRanksCheckIsExact) {
  const std::string json = temp_file("loopback.json"), trace = temp_file("loopback-trace.json"),
                    predicted_trace = temp_file("predicted-trace.json");
  const Output o = run(
      commsim({"run", "--backend", "mpi", kTiny, "--check", "--json", json, "--trace", trace, "--timeout-s", "120"}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  EXPECT_NE(o.text.find("check: 0 wrong"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("compute is emulated by waiting"), std::string::npos) << o.text;
  const nlohmann::json r = read_json(json);
  EXPECT_EQ(r["backend"], "mpi");
  EXPECT_EQ(r["fidelity"], "measured");
  EXPECT_EQ(r["ranks"], 4);
  EXPECT_EQ(r["steps"].size(), 8u);
  EXPECT_GE(r["step_time_s"].get<double>(), 0.0256);
  EXPECT_GE(r["step_time_spread_s"].get<double>(), 0.0);
  EXPECT_GT(r["bytes_sent"].get<double>(), 0.0);

  ASSERT_EQ(run(commsim({"simulate", kTiny, "--trace", predicted_trace})).exit_code, 0);
  std::map<std::pair<std::string, int>, double> predicted_us;  // (task, thread) -> duration; the same every step
  // Each document is held in a local: a range-for over read_json(...)["traceEvents"] would iterate an element of a
  // temporary destroyed before the loop starts (a use-after-free AddressSanitizer reports).
  const nlohmann::json predicted_doc = read_json(predicted_trace), measured_doc = read_json(trace);
  for (const nlohmann::json& e : predicted_doc["traceEvents"])
    if (e["ph"] == "X") predicted_us[{e["name"], e["tid"]}] = e["dur"].get<double>();
  std::size_t measured_events = 0;
  for (const nlohmann::json& e : measured_doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++measured_events;
    const auto it = predicted_us.find({e["name"], e["tid"]});
    ASSERT_NE(it, predicted_us.end()) << e.dump();
    if (e["tid"] == 0) {
      EXPECT_GE(e["dur"].get<double>(), it->second - 1) << e.dump();  // 1 us: rounding to us
    }
  }
  EXPECT_EQ(measured_events, 3 * predicted_us.size());
  for (const std::string& f : {json, trace, predicted_trace}) fs::remove(f);
  EXPECT_EQ(leftover_processes(), 0);
}

// The typed seam (hw/common/hardware_request.hpp): a request file run by `commsim hw-run` (what calibrate, validate
// and regress start) measures the scenario as `commsim run` does, and its response names the network the job ran
// on. The ranks learn that network from the launcher's request file (no environment variable), and their Result's
// note says the same words: 4 ranks (2 nodes x 2) on loopback, 2 measured steps as asked.
TEST(MpiRun, HardwareRequestFileRunsAndAnswers) {
  const std::string request = temp_file("request.json"), json = temp_file("request-result.json"),
                    response = temp_file("request-response.json");
  std::ofstream(request) << nlohmann::json{
      {"job", "run"},
      {"scenario", fs::absolute(kTiny).string()},
      {"steps", 2},
      {"warmup", 1},
      {"timeout_s", 45},
      {"result_file", json},
      {"response_file",
       response}}.dump();
  const Output o = run(commsim({"hw-run", request}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const nlohmann::json answer = read_json(response);
  EXPECT_EQ(answer["exit_code"], 0);
  EXPECT_EQ(answer["cluster"], false);
  const std::string network = answer["network"];
  EXPECT_EQ(network.rfind("loopback: all 4 ranks", 0), 0u) << network;
  const nlohmann::json r = read_json(json);
  EXPECT_EQ(r["ranks"], 4);
  EXPECT_EQ(r["steps"].size(), 2u);
  const std::vector<std::string> notes = r["notes"];
  EXPECT_NE(std::find(notes.begin(), notes.end(), "network: " + network), notes.end()) << r["notes"].dump();
  for (const std::string& f : {request, json, response}) fs::remove(f);
  EXPECT_EQ(leftover_processes(), 0);
}

// An output path that cannot be written is bad input found before the job starts: exit 2, one line naming the
// option, no rank started.
TEST(MpiRun, UnwritableOutputIsFoundBeforeTheJob) {
  for (const char* flag : {"--json", "--trace"}) {
    const Output o = run(commsim({"run", "--backend", "mpi", kTiny, flag, "/nonexistent-dir/out.json"}));
    EXPECT_EQ(o.exit_code, 2) << o.text;
    expect_one_line(o, flag);
    EXPECT_EQ(leftover_processes(), 0);
  }
}

// --json - writes the measured Result to standard output, and nothing else goes there (the table moves to standard
// error), so `commsim run ... --json - | jq` works: stdout parses as one JSON document of the 4 ranks' run.
TEST(MpiRun, JsonToStandardOutputIsTheDocumentAlone) {
  const Output o = run(commsim({"run", "--backend", "mpi", kTiny, "--json", "-", "--timeout-s", "120"}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const nlohmann::json r = nlohmann::json::parse(o.out);  // throws (fails the test) on anything but one document
  EXPECT_EQ(r["backend"], "mpi");
  EXPECT_EQ(r["ranks"], 4);
  EXPECT_NE(o.err.find("step spread"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists("-"));
  EXPECT_EQ(leftover_processes(), 0);
}

// The same checks through other allreduce algorithms, Open MPI's own collectives (plain and hierarchical), fp16
// on the wire, and ZeRO-3 sharding (reduce-scatter of gradients, all-gather of parameters): all exact.
TEST(MpiRun, AlgorithmsShardingNativeAndFp16AreExact) {
  for (std::vector<std::string> extra :
       {std::vector<std::string>{"--set", "strategy.algorithm=tree"},
        {"--set", "strategy.algorithm=hd"},
        {"--set", "strategy.sharding={\"stage\":3,\"allgather_fusion_mb\":1,\"reducescatter_fusion_mb\":1}"},
        {"--set", "strategy.algorithm=hierarchical", "--set", "strategy.comm_dtype=fp16"},
        {"--impl", "native", "--set", "strategy.use_hierarchical_allreduce=true"}}) {
    std::vector<std::string> args = {"run", "--backend", "mpi", kTiny,         "--check", "--steps",
                                     "3",   "--warmup",  "1",   "--timeout-s", "40"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Output o = run(commsim(args));
    EXPECT_EQ(o.exit_code, 0) << extra[1] << "\n" << o.text;
    EXPECT_NE(o.text.find("check: 0 wrong"), std::string::npos) << o.text;
  }
}

// DGC from step 1 (sparsity 0.75 then 0.9, tensors of >= 1000 elements sparse): every rank replays every rank's
// residual and top-k (the inputs are known), so it knows the exact sparse sum it must receive; 0 wrong means the
// real selection, the gather of (value, index) pairs (the plan's ring schedule, or MPI_Allgather with --impl native)
// and the sparse accumulation gave exactly those averaged values.
TEST(MpiRun, DgcGivesTheExpectedAveragedGradients) {
  for (const char* impl : {"schedule", "native"}) {
    const Output o = run(commsim(
        {"run", "--backend", "mpi", kTiny, "--impl", impl, "--check", "--steps", "5", "--warmup", "1", "--timeout-s",
         "40", "--set",
         "strategy.dgc={\"rampup_begin_step\":1,\"rampup_step\":2,\"sparsity\":[0.75,0.9],\"min_elements\":1000}"}));
    ASSERT_EQ(o.exit_code, 0) << impl << "\n" << o.text;
    EXPECT_NE(o.text.find("check: 0 wrong"), std::string::npos) << impl << "\n" << o.text;
  }
}

// Local SGD averaging every 2 steps from step 1: each rank steps its own parameters with its own (verifiable)
// gradients; the averaged sum must equal ranks x the last average minus lr x the sum of every rank's gradients.
TEST(MpiRun, LocalSgdAveragesTheParameters) {
  const Output o = run(commsim({"run", "--backend", "mpi", kTiny, "--check", "--steps", "6", "--warmup", "1",
                                "--timeout-s", "40", "--set", "strategy.localsgd={\"k_steps\":2,\"begin_step\":1}"}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  EXPECT_NE(o.text.find("check: 0 wrong"), std::string::npos) << o.text;
}

// Adaptive Local SGD also allreduces the scalar loss twice in every step: the check fills each rank's loss with its
// verifiable value and expects their sum, beside the parameter averages of steps 0, 1 and 3.
TEST(MpiRun, AdaptiveLocalSgdAveragesTheLossAndTheParameters) {
  const Output o =
      run(commsim({"run", "--backend", "mpi", kTiny, "--check", "--steps", "4", "--warmup", "1", "--timeout-s", "40",
                   "--set", "strategy.adaptive_localsgd={\"init_k_steps\":2,\"begin_step\":1}"}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  EXPECT_NE(o.text.find("check: 0 wrong"), std::string::npos) << o.text;
}

// 2 emulated nodes x 2 ranks (namespaces, tc at 1 Gbit/s): exact, and afterwards no namespace of the run's cluster
// and no rank is left. Without CAP_NET_ADMIN there is nothing to emulate.
// Then 4 emulated nodes x 2 ranks (8 ranks on this machine's cores: fewer steps).
TEST(MpiRun, EmulatedClusterTwoAndFourNodesCheckAndCleanup) {
  std::string why;
  if (!commsim::hw::has_net_admin(&why)) GTEST_SKIP() << why;
  for (const char* nodes : {"nodes=2", "nodes=4"}) {
    const Output o = run(commsim({"run", "--backend", "mpi", kTiny, "--cluster", "--check", "--set", nodes, "--steps",
                                  "3", "--warmup", "1", "--timeout-s", "25"}));
    ASSERT_EQ(o.exit_code, 0) << nodes << "\n" << o.text;
    EXPECT_NE(o.text.find("check: 0 wrong"), std::string::npos) << o.text;
    const std::string prefix = cluster_prefix(o.text);
    ASSERT_FALSE(prefix.empty()) << o.text;
    EXPECT_FALSE(namespaces_with(prefix)) << prefix;
    EXPECT_FALSE(fs::exists("/run/commsim/" + prefix + ".json"));
    EXPECT_EQ(leftover_processes(), 0);
  }
}

// COMMSIM_TEST_KILL_RANK=1 makes rank 1 abort in its first measured step while the others wait for it in a
// collective: mpirun must end the job, and the launcher must say so and exit non-zero -- well inside the limit.
TEST(MpiRun, DeadRankEndsTheRunWithAClearError) {
  const auto start = Clock::now();
  const Output o = run(commsim({"run", "--backend", "mpi", kTiny, "--timeout-s", "40"}), {"COMMSIM_TEST_KILL_RANK=1"});
  EXPECT_NE(o.exit_code, 0) << o.text;
  EXPECT_NE(o.exit_code, -1) << "hung: " << o.text;
  EXPECT_NE(o.text.find("ended without a result"), std::string::npos) << o.text;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 40.0);
  EXPECT_EQ(leftover_processes(), 0);
}

// The check can fail: COMMSIM_TEST_CORRUPT_RANK=2 adds 1 to one element of rank 2's first result, so exactly one
// element is wrong; the run must report it and exit 1.
TEST(MpiRun, OneWrongElementFailsTheCheck) {
  const Output o =
      run(commsim({"run", "--backend", "mpi", kTiny, "--check", "--steps", "2", "--warmup", "0", "--timeout-s", "40"}),
          {"COMMSIM_TEST_CORRUPT_RANK=2"});
  EXPECT_EQ(o.exit_code, 1) << o.text;
  EXPECT_NE(o.text.find("check: 1 wrong"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("FAILED"), std::string::npos) << o.text;
}

// 300 steps of ~30 ms cannot finish in 2 s: the launcher stops the job at its limit, says so, exits 3, and leaves
// no rank behind.
TEST(MpiRun, TimeLimitStopsTheJob) {
  const Output o = run(commsim({"run", "--backend", "mpi", kTiny, "--steps", "300", "--timeout-s", "2"}));
  EXPECT_EQ(o.exit_code, 3) << o.text;
  EXPECT_NE(o.text.find("did not finish within 2 s"), std::string::npos) << o.text;
  EXPECT_EQ(leftover_processes(), 0);
}

// SIGTERM to the launcher in the middle of an emulated-cluster run (as Ctrl-C would be): the cluster's namespaces
// and every rank are gone afterwards, and the exit code says which signal (128 + 15).
TEST(MpiRun, SigtermRemovesTheClusterAndTheRanks) {
  std::string why;
  if (!commsim::hw::has_net_admin(&why)) GTEST_SKIP() << why;
  const std::string log = temp_file("sigterm.log");
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execl(kCommsim.c_str(), kCommsim.c_str(), "run", "--backend", "mpi", kTiny.c_str(), "--cluster", "--steps", "1000",
          "--timeout-s", "50", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the cluster is up and the ranks are stepping
  kill(pid, SIGTERM);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (waitpid(pid, &status, WNOHANG) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << text;
  const std::string prefix = cluster_prefix(text);
  ASSERT_FALSE(prefix.empty()) << text;
  EXPECT_FALSE(namespaces_with(prefix)) << prefix;
  EXPECT_EQ(leftover_processes(), 0);
}

// Bad input, one clear line and exit 2, nothing started: no mpirun in PATH; a model too large for this machine
// (GPT-3's 175 B parameters are 700 GB of fp32 gradients per rank); a topology with GPUs asked to be emulated.
TEST(MpiRun, BadInputIsOneLineAndExitTwo) {
  const Output no_mpirun = run(commsim({"run", "--backend", "mpi", kTiny}), {"PATH=/nonexistent"});
  EXPECT_EQ(no_mpirun.exit_code, 2) << no_mpirun.text;
  expect_one_line(no_mpirun, "mpirun");

  // A faster stand-in device, so that GPT-3's step computes in under 100 days of simulated time (on the scenario's
  // 1e10 FLOP/s it would take 163 days, refused before memory is considered).
  const Output too_large = run(commsim(
      {"run", "--backend", "mpi", kTiny, "--set", "model=models/gpt3-175b.json", "--set", "device.peak_flops=1e14"}));
  EXPECT_EQ(too_large.exit_code, 2) << too_large.text;
  expect_one_line(too_large, "memory");

  const Output gpus = run(commsim({"run", "--backend", "mpi", "scenarios/resnet50-dgx-a100.json", "--cluster"}));
  EXPECT_EQ(gpus.exit_code, 2) << gpus.text;
  expect_one_line(gpus, "cannot be emulated");
  EXPECT_EQ(leftover_processes(), 0);
}

// `cluster up` makes a cluster that outlives the command; `cluster down PREFIX` removes it; a GPU topology is
// refused with one line.
TEST(MpiCluster, UpThenDownLeavesNothing) {
  std::string why;
  if (!commsim::hw::has_net_admin(&why)) GTEST_SKIP() << why;
  const Output up = run(commsim({"cluster", "up", "topologies/emulated-cpu-cluster.json", "--nodes", "2"}));
  ASSERT_EQ(up.exit_code, 0) << up.text;
  const std::string prefix = cluster_prefix(up.text);
  ASSERT_FALSE(prefix.empty()) << up.text;
  EXPECT_TRUE(namespaces_with(prefix + "-n1"));
  const Output down = run(commsim({"cluster", "down", prefix}));
  EXPECT_EQ(down.exit_code, 0) << down.text;
  EXPECT_FALSE(namespaces_with(prefix));
  const Output gpus = run(commsim({"cluster", "up", "topologies/dgx-a100.json"}));
  EXPECT_EQ(gpus.exit_code, 2) << gpus.text;
  expect_one_line(gpus, "gpu");
}

// The microbenchmarks on 2 loopback ranks up to 64 KiB: a shared-memory ping-pong, an allreduce sweep 8 B .. 64 KiB
// (14 doublings) with no wrong element, the two-stream sweep's one size (it starts at 64 KiB) with both streams'
// results right, and a positive reduction rate -- all in the JSON calibration reads.
TEST(MpiBench, LoopbackSamplesReachTheJson) {
  const std::string json = temp_file("bench.json");
  const Output o = run(commsim({"bench", "--backend", "mpi", "topologies/emulated-cpu-cluster.json", "--nodes", "1",
                                "--max-bytes", "64K", "--json", json, "--timeout-s", "120"}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  EXPECT_NE(o.text.find("algbw"), std::string::npos) << o.text;
  const nlohmann::json r = read_json(json);
  ASSERT_EQ(r["pingpong"].size(), 1u);
  EXPECT_EQ(r["pingpong"][0]["link_class"], "shm");
  EXPECT_EQ(r["allreduce"]["samples"].size(), 14u);
  for (const auto& s : r["allreduce"]["samples"]) EXPECT_EQ(s["wrong"], 0);
  EXPECT_EQ(r["allreduce_concurrent"]["streams"], 2);
  ASSERT_EQ(r["allreduce_concurrent"]["samples"].size(), 1u);
  EXPECT_EQ(r["allreduce_concurrent"]["samples"][0]["bytes"], 65536);
  EXPECT_EQ(r["allreduce_concurrent"]["samples"][0]["wrong"], 0);
  EXPECT_GT(r["reduction"]["reduce_Bps"].get<double>(), 0.0);
  fs::remove(json);
}

// 2 emulated nodes x 2 ranks: the ping-pong across nodes crosses the NIC shaped to 125e6 B/s (tc tbf 1 Gbit/s);
// at 8 MiB the bucket (4 ms = 0.5 MB) no longer matters and one TCP stream gets ~96 % of the setting (1448 payload
// bytes per 1514-byte frame): within 10 % of it, as the topology's tcp class says. Same node: shared memory.
TEST(MpiBench, EmulatedClusterTcpPingPongMatchesTheShapedNic) {
  std::string why;
  if (!commsim::hw::has_net_admin(&why)) GTEST_SKIP() << why;
  const std::string json = temp_file("bench-cluster.json");
  const Output o = run(commsim({"bench", "--backend", "mpi", "topologies/emulated-cpu-cluster.json", "--nodes", "2",
                                "--cluster", "--max-bytes", "8M", "--json", json, "--timeout-s", "120"}));
  ASSERT_EQ(o.exit_code, 0) << o.text;
  const nlohmann::json r = read_json(json);
  fs::remove(json);
  ASSERT_EQ(r["pingpong"].size(), 2u) << r.dump();
  EXPECT_EQ(r["pingpong"][0]["link_class"], "shm");
  EXPECT_EQ(r["pingpong"][1]["link_class"], "tcp");
  const nlohmann::json& last = r["pingpong"][1]["samples"].back();
  ASSERT_EQ(last["bytes"], 8u << 20);
  const double one_way_Bps = last["bytes"].get<double>() / (last["seconds_per_repetition"].get<double>() / 2);
  EXPECT_GT(one_way_Bps, 0.90 * 125e6) << one_way_Bps;
  EXPECT_LT(one_way_Bps, 1.10 * 125e6) << one_way_Bps;
  for (const auto& s : r["allreduce"]["samples"]) EXPECT_EQ(s["wrong"], 0);
}

}  // namespace
