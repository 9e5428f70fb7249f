// `commsim collective` prints nccl-tests' layout (reports/collective_table.hpp): a real all_reduce_perf log and
// commsim's output go through the same two parsers — a small one written here the way scripts parse nccl-tests
// (skip '#' lines, 13 columns per row, the "# Avg bus bandwidth" footer) and the one `calibrate --from-nccl-tests`
// uses (validate/nccl_tests_log.hpp) — and come out alike.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tests/validate/test_helpers.hpp"
#include "validate/nccl_tests_log.hpp"

using namespace commsim;
using commsim::validate::test_support::TempDir;

namespace {

struct Row {
  unsigned long long size = 0, count = 0;
  std::string type, redop;
  int root = 0;
  double time_us[2] = {0, 0}, algbw[2] = {0, 0}, busbw[2] = {0, 0};
  std::string wrong[2];
};

struct Table {
  std::vector<Row> rows;
  double avg_busbw = -1;  // the footer; -1 when absent
  int comment_lines = 0;
};

// What a typical nccl-tests parser does.
Table parse_nccl_tests(const std::string& text) {
  Table t;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#') {
      ++t.comment_lines;
      const std::string marker = "# Avg bus bandwidth    : ";
      if (line.rfind(marker, 0) == 0) t.avg_busbw = std::stod(line.substr(marker.size()));
      continue;
    }
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    EXPECT_EQ(w.size(), 13u) << "not a result row: " << line;
    if (w.size() != 13) continue;
    Row r;
    r.size = std::stoull(w[0]), r.count = std::stoull(w[1]), r.type = w[2], r.redop = w[3], r.root = std::stoi(w[4]);
    for (int k = 0; k < 2; ++k)
      r.time_us[k] = std::stod(w[5 + 4 * k]), r.algbw[k] = std::stod(w[6 + 4 * k]),
      r.busbw[k] = std::stod(w[7 + 4 * k]), r.wrong[k] = w[8 + 4 * k];
    t.rows.push_back(r);
  }
  return t;
}

std::string slurp(const std::string& f) {
  std::ifstream in(f);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string run_collective(const std::string& args, const TempDir& dir) {
  const std::string out = dir.file("table.txt");
  const int status = std::system((std::string(COMMSIM_CLI_PATH) + " collective " + args + " > " + out).c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << args;
  return out;
}

// The footer is the mean busbw of every out-of-place and in-place cell (nccl-tests src/common.cu: bw[0] += busBw
// per timed pass, divided by the passes); cells are printed to 0.01, so their mean is within 0.005 of it.
void expect_footer_is_the_mean(const Table& t) {
  double sum = 0;
  for (const Row& r : t.rows) sum += r.busbw[0] + r.busbw[1];
  EXPECT_NEAR(t.avg_busbw, sum / static_cast<double>(2 * t.rows.size()), 0.005 + 1e-9);
}

const char* kRealLog = "tests/data/nccl-tests/gcp-a3mega-2x8xh100-all_reduce_perf.log";

}  // namespace

// The parser of this test reads the real log as nccl-tests wrote it (tests/data/nccl-tests/SOURCES.md).
TEST(CollectiveFormat, TheTestParserReadsARealAllReducePerfLog) {
  const Table real = parse_nccl_tests(slurp(kRealLog));
  ASSERT_EQ(real.rows.size(), 31u);  // -b 8 -e 8G -f 2: 2^3 .. 2^33
  EXPECT_EQ(real.rows.front().size, 8u);
  EXPECT_EQ(real.rows.front().count, 2u);  // 8 bytes of float
  EXPECT_EQ(real.rows.front().redop, "sum");
  EXPECT_EQ(real.rows.front().root, -1);
  EXPECT_EQ(real.rows.back().size, 8589934592u);
  EXPECT_DOUBLE_EQ(real.avg_busbw, 70.742);
  expect_footer_is_the_mean(real);
  const validate::NcclTestsLog log = validate::read_nccl_tests_log(kRealLog);
  EXPECT_EQ(log.rows.size(), 31u);
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.hosts, 2);
}

// commsim predicting the run of the real log (A3 Mega, 2 nodes, 8 B .. 8 GiB) prints a table both parsers read
// the same way: the same sizes and counts, redop, root, #wrong N/A (a prediction checks no data), algbw = size /
// time, busbw = algbw x 2 (n-1) / n with n = 16, and the footer.
TEST(CollectiveFormat, CommsimOutputRoundTripsThroughBothParsers) {
  TempDir dir("collective-format");
  const std::string out = run_collective("--topology topologies/gcp-a3-mega.json --nodes 2 --sizes 8:8G", dir);
  const Table real = parse_nccl_tests(slurp(kRealLog));
  const Table sim = parse_nccl_tests(slurp(out));
  ASSERT_EQ(sim.rows.size(), real.rows.size());
  for (std::size_t i = 0; i < sim.rows.size(); ++i) {
    const Row &s = sim.rows[i], &r = real.rows[i];
    EXPECT_EQ(s.size, r.size);
    EXPECT_EQ(s.count, r.count);
    EXPECT_EQ(s.type, "float");
    EXPECT_EQ(s.redop, "sum");
    EXPECT_EQ(s.root, -1);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(s.wrong[k], "N/A");
      // Printed to 0.01 (or fewer decimals when wide): relative checks with the printing's resolution.
      const double algbw = static_cast<double>(s.size) / s.time_us[k] / 1e3;
      EXPECT_NEAR(s.algbw[k], algbw, 0.005 + 1e-3 * algbw) << s.size;
      // busbw and algbw are each rounded to +-0.005: busbw - algbw x 1.875 is within 0.005 + 1.875 x 0.005.
      EXPECT_NEAR(s.busbw[k], s.algbw[k] * 2 * 15 / 16, 0.005 + 0.005 * 1.875 + 1e-3 * s.busbw[k]) << s.size;
    }
    EXPECT_EQ(s.time_us[0], s.time_us[1]);  // one prediction for both placements
  }
  expect_footer_is_the_mean(sim);
  // The calibration parser sees the same rows, 16 ranks on 2 hosts.
  const validate::NcclTestsLog log = validate::read_nccl_tests_log(out);
  ASSERT_EQ(log.rows.size(), sim.rows.size());
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.hosts, 2);
  for (std::size_t i = 0; i < log.rows.size(); ++i) EXPECT_DOUBLE_EQ(log.rows[i].time_us, sim.rows[i].time_us[0]);
  // commsim's own choices are in '#' lines after the footer.
  const std::string text = slurp(out);
  EXPECT_LT(text.find("# Avg bus bandwidth"), text.find("# commsim: what was priced for each size"));
}

// --gpus-per-thread 8 predicts a run of one thread driving 8 GPUs: the header says nGpus 8 as nccl-tests -g 8 does,
// so the calibration parser reads it back, and every row is at least the floor the '#' line states (8 x the fitted
// issue time; a 1 KiB NVLS allreduce on one H100 node is ~16 us of GPU time, under it).
TEST(CollectiveFormat, OneThreadDrivingEightGpusReadsBackAsNGpus8) {
  TempDir dir("collective-format-g8");
  const std::string out = run_collective(
      "--topology topologies/azure-nd-h100-v5.json --nodes 1 --algo nvls --sizes 1K,1G --gpus-per-thread 8", dir);
  const validate::NcclTestsLog log = validate::read_nccl_tests_log(out);
  EXPECT_EQ(log.gpus_per_thread, 8);
  const std::string text = slurp(out);
  const std::size_t line = text.find("an operation takes at least 8 x ");
  ASSERT_NE(line, std::string::npos) << text;
  const double floor_us = std::stod(text.substr(text.find("= ", line) + 2));  // "8 x 4.24 us = 33.94 us"
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_NEAR(log.rows[0].time_us, floor_us, 0.01 + 0.01);  // both printed to 0.01 us
  EXPECT_GT(log.rows[1].time_us, floor_us);
}

// Allgather and reduce-scatter: nccl-tests prints each rank's element count, rounded down to 16 bytes, and the
// whole vector's size from it (src/all_gather.cu AllGatherGetCollByteCount: base = (count / nranks) & ~3 floats).
// 8 ranks (one DGX A100), 1000 B requested: 250 floats / 8 = 31, & ~3 = 28 per rank, 28 x 8 x 4 = 896 B;
// 1 MiB: 262144 / 8 = 32768 per rank. 32 B: 8 / 8 = 1 float, & ~3 = 0: nccl-tests would run 0 bytes, commsim
// leaves the size out. busbw = algbw x (n-1)/n.
TEST(CollectiveFormat, AllgatherAndReduceScatterPrintPerRankCounts) {
  TempDir dir("collective-allgather");
  for (const char* op : {"allgather", "reducescatter"}) {
    const Table t = parse_nccl_tests(slurp(run_collective(
        std::string("--topology topologies/dgx-a100.json --nodes 1 --op ") + op + " --sizes 32,1000,1M", dir)));
    ASSERT_EQ(t.rows.size(), 2u) << op;
    EXPECT_EQ(t.rows[0].size, 896u);
    EXPECT_EQ(t.rows[0].count, 28u);
    EXPECT_EQ(t.rows[1].size, 1048576u);
    EXPECT_EQ(t.rows[1].count, 32768u);
    EXPECT_EQ(t.rows[0].redop, std::string(op) == "allgather" ? "none" : "sum");
    EXPECT_EQ(t.rows[0].root, -1);
    EXPECT_NEAR(t.rows[1].busbw[0], t.rows[1].algbw[0] * 7 / 8, 0.005 + 0.005 * 7 / 8 + 1e-3 * t.rows[1].busbw[0]);
    expect_footer_is_the_mean(t);
  }
  // Broadcast: root 0 (nccl-tests' default -r 0), redop none, busbw = algbw.
  const Table b = parse_nccl_tests(
      slurp(run_collective("--topology topologies/dgx-a100.json --nodes 1 --op broadcast --sizes 1M", dir)));
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.rows[0].root, 0);
  EXPECT_EQ(b.rows[0].redop, "none");
  EXPECT_EQ(b.rows[0].count, 262144u);
  EXPECT_EQ(b.rows[0].busbw[0], b.rows[0].algbw[0]);
}

// --format commsim keeps the one-table layout with the algorithm, protocol, channel and band columns.
TEST(CollectiveFormat, CommsimFormatKeepsTheWideTable) {
  TempDir dir("collective-wide");
  const std::string text =
      slurp(run_collective("--topology topologies/dgx-a100.json --nodes 2 --sizes 1M --format commsim", dir));
  EXPECT_NE(text.find("algbw(GB/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("proto"), std::string::npos);
  EXPECT_EQ(text.find("Avg bus bandwidth"), std::string::npos);
}
