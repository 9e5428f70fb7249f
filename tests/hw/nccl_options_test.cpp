// The NCCL backend's argument handling and its nccl-tests style report, without a GPU. Error paths one by one:
// each names the option and says what is wrong, in one line.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "hw/nccl/nccl_backend.hpp"
#include "tests/sim/test_util.hpp"
#include "validate/nccl_tests_log.hpp"

namespace commsim::nccl {
namespace {

using test::error_of;

TEST(NcclOptions, ParsesLaunchModes) {
  Launch l = Launch::Auto;
  EXPECT_TRUE(parse_launch("single", l));
  EXPECT_EQ(l, Launch::SingleProcess);
  EXPECT_TRUE(parse_launch("mpi", l));
  EXPECT_EQ(l, Launch::Mpi);
  EXPECT_TRUE(parse_launch("auto", l));
  EXPECT_EQ(l, Launch::Auto);
  EXPECT_FALSE(parse_launch("threads", l));
}

TEST(NcclOptions, DefaultsAreValid) {
  EXPECT_NO_THROW(validate(NcclOptions{}));
  EXPECT_NO_THROW(validate(BenchOptions{}));
}

TEST(NcclOptions, RejectsBadRunOptionsOneByOne) {
  NcclOptions o;
  o.repeats = 0;
  EXPECT_EQ(error_of([&] { validate(o); }), "--repeats: must be >= 1, got 0");
  o = {};
  o.warmup_steps = -1;
  EXPECT_EQ(error_of([&] { validate(o); }), "--warmup: must be >= 0, got -1");
  o = {};
  o.gpus = -2;
  EXPECT_EQ(error_of([&] { validate(o); }), "--gpus: must be >= 0 (0 = one per rank of the scenario), got -2");
  o = {};
  o.trace_steps = -1;
  EXPECT_EQ(error_of([&] { validate(o); }), "--trace-steps: must be >= 0, got -1");
  o = {};
  o.launch = Launch::Mpi;
  o.gpus = 4;
  EXPECT_NE(error_of([&] { validate(o); }).find("one process per GPU"), std::string::npos);
}

TEST(NcclOptions, RejectsBadBenchOptionsOneByOne) {
  auto bad = [](auto change) {
    BenchOptions o;
    change(o);
    return error_of([&] { validate(o); });
  };
  EXPECT_EQ(bad([](BenchOptions& o) { o.dtype = "fp64"; }).rfind("--dtype: unknown type \"fp64\"", 0), 0u);
  EXPECT_EQ(bad([](BenchOptions& o) { o.redop = "xor"; }).rfind("--redop: unknown reduction \"xor\"", 0), 0u);
  EXPECT_EQ(bad([](BenchOptions& o) { o.min_bytes = 1024, o.max_bytes = 8; }),
            "--sizes: need 0 < min <= max, got 1024:8");
  EXPECT_EQ(bad([](BenchOptions& o) { o.min_bytes = 0; }), "--sizes: need 0 < min <= max, got 0:134217728");
  EXPECT_EQ(bad([](BenchOptions& o) { o.step_factor = 1; }), "--step-factor: must be >= 2, got 1");
  EXPECT_EQ(bad([](BenchOptions& o) { o.iters = 0; }), "--iters: must be >= 1, got 0");
  EXPECT_EQ(bad([](BenchOptions& o) { o.warmup_iters = -1; }), "--warmup-iters: must be >= 0, got -1");
  EXPECT_EQ(bad([](BenchOptions& o) { o.root = -1; }), "--root: must be >= 0, got -1");
  EXPECT_EQ(bad([](BenchOptions& o) { o.dtype = "f8e4m3", o.redop = "prod"; }),
            "--redop: fp8 types reduce with sum, max or min only");
}

TEST(NcclOptions, ParsesBenchCollectives) {
  Collective c = Collective::AllReduce;
  EXPECT_TRUE(parse_bench_op("allgather", c));
  EXPECT_EQ(c, Collective::AllGather);
  EXPECT_TRUE(parse_bench_op("reducescatter", c));
  EXPECT_EQ(c, Collective::ReduceScatter);
  EXPECT_FALSE(parse_bench_op("alltoall", c));
  EXPECT_EQ(perf_name(Collective::AllReduce), "all_reduce_perf");
  EXPECT_EQ(perf_name(Collective::ReduceScatter), "reduce_scatter_perf");
}

// One all_reduce_perf row on 8 ranks, 1 MiB in 150 us:
//   algbw = 1 048 576 B / 150 us = 6.99 GB/s; busbw = algbw x 2(8-1)/8 = 6.9905 x 1.75 = 12.23 GB/s
// (nccl-tests doc/PERFORMANCE.md); the in-place run took 300 us: 3.50 and 6.12 GB/s. Columns as nccl-tests prints
// them: "%12li  %12li  %8s  %6s  %6i" then per run "  %7s  %6.2f  %6.2f  %5li", time with one decimal from 100 us.
BenchResult one_row() {
  BenchResult r;
  r.op = Collective::AllReduce;
  r.ranks = 8;
  r.nodes = 1;
  r.nccl_version = "2.28.9";
  r.devices = {"#  Rank  0 Group  0 Pid   1234 on       host device  0 [0x07] NVIDIA H100 80GB HBM3"};
  r.options.min_bytes = r.options.max_bytes = 1 << 20;
  BenchRow row;
  row.bytes = 1 << 20;
  row.count = (1 << 20) / 4;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  for (auto [t, us] : {std::pair{&row.out_of_place, 150.0}, std::pair{&row.in_place, 300.0}}) {
    t->time_s = us * 1e-6;
    t->algbw_Bps = static_cast<double>(row.bytes) / t->time_s;
    t->busbw_Bps = t->algbw_Bps * busbw_factor(Collective::AllReduce, 8);
    t->wrong = 0;
  }
  r.rows.push_back(row);
  return r;
}

std::string table_of(const BenchResult& r) {
  char* buf = nullptr;
  std::size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  print_bench_table(r, f);
  std::fclose(f);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

TEST(NcclBenchReport, PrintsNcclTestsColumns) {
  const std::string text = table_of(one_row());
  EXPECT_NE(text.find("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                      "algbw   busbw #wrong\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("     1048576        262144     float     sum      -1    150.0    6.99   12.23      0    300.0   "
                      " 3.50    6.12      0\n"),
            std::string::npos)
      << text;
  // Average bus bandwidth over both runs: (12.233 + 6.117) / 2 = 9.175 GB/s.
  EXPECT_NE(text.find("# Avg bus bandwidth    : 9.175"), std::string::npos) << text;
  EXPECT_NE(text.find("# Out of bounds values : 0 OK"), std::string::npos) << text;
  EXPECT_NE(text.find("NVIDIA H100 80GB HBM3"), std::string::npos);
}

// `commsim bench --backend nccl` feeds the same fit as nccl-tests: its table reads back as an nccl-tests log, the
// out-of-place time of each row (150 us above, not the in-place 300 us) and the devices listed.
TEST(NcclBenchReport, ReadsBackAsAnNcclTestsLog) {
  const std::string path = ::testing::TempDir() + "commsim-bench-table.log";
  { std::ofstream(path) << table_of(one_row()); }
  const validate::NcclTestsLog log = validate::read_nccl_tests_log(path);
  std::remove(path.c_str());
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(log.rows[0].time_us, 150.0);
  EXPECT_EQ(log.ranks, 1);
  EXPECT_EQ(log.hosts, 1);
  EXPECT_EQ(log.gpus_per_thread, 1);      // one_row's process drives one GPU, as under MPI: no issue floor in the fit
  EXPECT_EQ(log.nccl_version, "2.28.9");  // the header names the release, so calibrate prices the log with it
}

// Without MPI one process drives every GPU (ncclCommInitAll): the header says so, as nccl-tests -g does, so the
// fit knows those runs' small sizes may be bound by the host issuing one kernel per GPU.
TEST(NcclBenchReport, HeaderGivesTheGpusOneProcessDrives) {
  BenchResult r = one_row();
  r.gpus_per_process = 8;
  EXPECT_NE(table_of(r).find("# nThread 1 nGpus 8 minBytes"), std::string::npos) << table_of(r);
}

TEST(NcclBenchReport, UncheckedRunsSayNA) {
  BenchResult r = one_row();
  r.rows[0].in_place.wrong = -1;
  EXPECT_NE(table_of(r).find("    6.12    N/A\n"), std::string::npos) << table_of(r);
}

// Calibration samples: one per timed run (out-of-place and in-place), with the bytes and seconds calibrate fits.
TEST(NcclBenchReport, JsonCarriesSamples) {
  const nlohmann::json j = one_row().to_json();
  EXPECT_EQ(j.at("backend"), "nccl");
  EXPECT_EQ(j.at("fidelity"), "measured");
  EXPECT_EQ(j.at("op"), "allreduce");
  EXPECT_EQ(j.at("ranks"), 8);
  ASSERT_EQ(j.at("samples").size(), 2u);
  EXPECT_EQ(j.at("samples")[0].at("bytes"), 1u << 20);
  EXPECT_DOUBLE_EQ(j.at("samples")[0].at("seconds").get<double>(), 150e-6);
  EXPECT_EQ(j.at("samples")[1].at("in_place"), true);
  EXPECT_NEAR(j.at("rows")[0].at("out_of_place").at("busbw_GBps").get<double>(), 12.23, 0.005);
}

}  // namespace
}  // namespace commsim::nccl
