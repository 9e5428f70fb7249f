// The NCCL runtime's entry points. On a machine without a GPU (the development machines: CUDA runtime present, no
// driver) they must refuse with one clear line; on a machine with GPUs, the GPU tests below run a small scenario
// end to end and check the results element by element.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "hw/nccl/nccl_backend.hpp"

namespace commsim::nccl {
namespace {

bool gpu_present() { return nccl_available(nullptr); }

std::unique_ptr<Topology> topology_of(const Scenario& sc) { return load_topology(sc.topology_path, sc.nodes); }

TEST(NcclRuntime, UnavailableWithoutAGpuSaysWhyInOneLine) {
  std::string why;
  if (nccl_available(&why)) GTEST_SKIP() << "a usable GPU is present";
  EXPECT_EQ(why.rfind("nccl backend: ", 0), 0u) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  // Here: the CUDA runtime loads but finds no driver (cudaErrorInsufficientDriver) or no device.
  EXPECT_TRUE(why.find("cudaGetDeviceCount") != std::string::npos || why.find("no CUDA device") != std::string::npos)
      << why;
}

TEST(NcclRuntime, RunWithoutAGpuThrowsOneLineInputError) {
  if (gpu_present()) GTEST_SKIP() << "a usable GPU is present";
  const Scenario sc = load_scenario("scenarios/resnet50-dgx-a100.json", {"nodes=1"});
  const auto topo = topology_of(sc);
  const Plan plan = build_plan(sc, *topo, load_model(sc.model_path));
  try {
    run_nccl(plan, *topo, NcclOptions{});
    FAIL() << "run_nccl ran without a GPU";
  } catch (const InputError& e) {
    // An InputError (the CLI prints it as one line and exits with 2), and the one that says "no GPU".
    const std::string msg = e.what();
    EXPECT_NE(dynamic_cast<const NcclUnavailable*>(&e), nullptr) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("nccl backend: no usable GPU", 0), 0u) << msg;
  }
}

TEST(NcclRuntime, BenchWithoutAGpuThrowsOneLineInputError) {
  if (gpu_present()) GTEST_SKIP() << "a usable GPU is present";
  try {
    bench_nccl(BenchOptions{});
    FAIL() << "bench_nccl ran without a GPU";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// Options are checked before anything touches a GPU, so a bad option names itself on any machine.
TEST(NcclRuntime, OptionsAreCheckedFirst) {
  const Scenario sc = load_scenario("scenarios/resnet50-dgx-a100.json", {"nodes=1"});
  const auto topo = topology_of(sc);
  const Plan plan = build_plan(sc, *topo, load_model(sc.model_path));
  NcclOptions o;
  o.repeats = 0;
  try {
    run_nccl(plan, *topo, o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--repeats: must be >= 1, got 0");
  }
  BenchOptions b;
  b.iters = 0;
  EXPECT_THROW(bench_nccl(b), InputError);
}

// ---- With GPUs: a scenario sized to this machine's GPUs (one node of N GPUs on an NVSwitch, written to a temporary
// folder), ResNet-50 at batch 8, 3 steps, each strategy, with the check pass: no wrong element. One GPU runs one rank
// (NCCL refuses two ranks on one GPU): NCCL's collectives of one rank are copies, but everything around them runs as
// with more (spin kernels, casts, DGC's selection and scatter, streams and events, the check pass). ----

int visible_gpus() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::string write_machine(int gpus) {
  const auto dir = std::filesystem::temp_directory_path() / ("commsim-nccl-test-" + std::to_string(gpus));
  std::filesystem::create_directories(dir);
  nlohmann::json devices = nlohmann::json::array(), links = nlohmann::json::array();
  for (int g = 0; g < gpus; ++g) {
    devices.push_back({{"name", "gpu" + std::to_string(g)}, {"kind", "gpu"}});
    links.push_back({{"a", "gpu" + std::to_string(g)}, {"b", "nvswitch"}, {"class", "nvswitch"}});
  }
  devices.push_back({{"name", "nvswitch"}, {"kind", "nvswitch"}});
  const nlohmann::json topo = {
      {"name", "test-gpus"},
      {"description", "this machine's GPUs, as one NVSwitch node (test fixture)"},
      {"link_classes",
       {{"nvswitch", {{"latency_s", 1e-6}, {"bandwidth_Bps", 1e11}, {"efficiency", 1.0}, {"source", "test fixture"}}}}},
      {"node", {{"devices", devices}, {"links", links}}},
      {"nodes", 1},
      {"fabric", {{"kind", "none"}}}};
  std::ofstream(dir / "machine.json") << topo.dump(2);
  const nlohmann::json scenario = {
      {"name", "nccl-test"},
      {"topology", (dir / "machine.json").string()},
      {"model", std::filesystem::absolute("scenarios/models/resnet50.json").string()},
      {"device",
       {{"name", "test"}, {"peak_flops", 1e14}, {"efficiency", 0.5}, {"memory_Bps", 1e12}, {"source", "test fixture"}}},
      {"batch_per_gpu", 8},
      {"steps", 3},
      {"strategy", {{"fusion", {{"mode", "size"}, {"size_mb", 25}}}}}};
  std::ofstream(dir / "scenario.json") << scenario.dump(2);
  return (dir / "scenario.json").string();
}

class NcclOnGpus : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(NcclOnGpus, RunsAndChecks) {
  const int gpus = visible_gpus();
  if (!gpu_present()) GTEST_SKIP() << "needs a GPU";
  const Scenario sc = load_scenario(write_machine(gpus), GetParam());
  const auto topo = topology_of(sc);
  const Plan plan = build_plan(sc, *topo, load_model(sc.model_path));
  NcclOptions o;
  o.launch = Launch::SingleProcess;
  o.check = true;
  o.repeats = 2;
  o.warmup_steps = 1;
  const NcclRun run = run_nccl(plan, *topo, o);
  EXPECT_TRUE(run.checked);
  EXPECT_EQ(run.wrong_elements, 0u);
  EXPECT_EQ(run.result.backend, "nccl");
  EXPECT_EQ(run.result.fidelity, "measured");
  ASSERT_EQ(run.result.steps_s.size(), 3u);
  // A step lasts at least its emulated compute (the spin kernels), within the clock calibration's accuracy.
  for (double s : run.result.steps_s) EXPECT_GT(s, 0.9 * plan.compute_s);
  // With one rank NCCL's in-place sum does nothing at all (src/device/onerank.cu, ncclLaunchOneRank), so only runs of
  // two or more ranks must have spent time communicating.
  if (gpus >= 2) {
    EXPECT_GT(run.result.comm_s, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, NcclOnGpus,
    ::testing::Values(std::vector<std::string>{},
                      std::vector<std::string>{"strategy.nccl_comm_num=2", "strategy.comm_dtype=fp16"},
                      std::vector<std::string>{"strategy.use_hierarchical_allreduce=true", "strategy.comm_dtype=bf16"},
                      std::vector<std::string>{
                          R"(strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.99]})"},
                      std::vector<std::string>{R"(strategy.localsgd={"k_steps":2,"begin_step":0})"},
                      std::vector<std::string>{R"(strategy.sharding={"stage":3})", "strategy.comm_dtype=fp16"}));

TEST(NcclBenchOnGpus, AllReduceSweepIsCorrect) {
  if (!gpu_present()) GTEST_SKIP() << "needs a GPU";
  BenchOptions o;
  o.launch = Launch::SingleProcess;
  o.min_bytes = 1024;
  o.max_bytes = 1 << 20;
  o.iters = 5;
  o.warmup_iters = 2;
  for (const char* op : {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}) {
    ASSERT_TRUE(parse_bench_op(op, o.op));
    const BenchResult r = bench_nccl(o);
    ASSERT_EQ(r.rows.size(), 11u);  // 1 KiB .. 1 MiB, doubling
    for (const BenchRow& row : r.rows) {
      EXPECT_EQ(row.out_of_place.wrong, 0) << op << " " << row.bytes;
      EXPECT_EQ(row.in_place.wrong, 0) << op << " " << row.bytes;
    }
  }
}

}  // namespace
}  // namespace commsim::nccl
