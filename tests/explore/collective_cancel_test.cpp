// `commsim collective --fidelity flow` stopped by SIGINT/SIGTERM and watched on a terminal, and the library call under
// it (reports::predict_collective with a CollectiveProgress) stopped part-way through a size. No timing is involved:
// the signal comes from the test hook after a given number of sizes, the library stop after a given number of checks.
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "reports/collective_table.hpp"
#include "tests/explore/cli_signals.hpp"

namespace commsim::test {
namespace {

using nlohmann::json;

// 2 DGX A100 nodes (16 GPUs), a ring allreduce from 8 KiB to 1 MiB: 8 doubling sizes, each a flow run of well
// under a second.
const std::string kCollectiveArgs =
    "collective --topology topologies/dgx-a100.json --nodes 2 --op allreduce --algo ring --fidelity flow "
    "--sizes 8K:1M --format commsim";
constexpr std::size_t kSizes = 8;  // 8K, 16K, 32K, 64K, 128K, 256K, 512K, 1M

// The table's data lines (those not starting with '#').
std::vector<std::string> data_lines(const std::string& table) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = table.find('\n', start)) != std::string::npos; start = end + 1)
    if (end > start && table[start] != '#') lines.push_back(table.substr(start, end - start));
  return lines;
}

TEST(CollectiveCancel, SigintAfterThreeSizesWritesThoseMarkedPartialAndExits130) {
  ScratchDir dir("collective-sigint");
  const CliRun whole = commsim(kCollectiveArgs + " --json " + (dir / "whole.json"));
  ASSERT_EQ(whole.code, 0) << whole.err;
  ASSERT_EQ(data_lines(whole.out).size(), kSizes) << whole.out;
  const CliRun cut =
      run_with_signal_after(kCollectiveArgs + " --json " + (dir / "cut.json"), "3:" + std::to_string(SIGINT));
  EXPECT_EQ(cut.code, 128 + SIGINT) << cut.err;  // 130, as `sweep` exits
  EXPECT_EQ(cut.err, "");
  // the note atop the table; the sizes are done one after another, so the 3 done are the first 3, as in the whole run
  EXPECT_EQ(cut.out.rfind("# partial: 3 of 8 sizes (stopped by SIGINT)\n", 0), 0u) << cut.out;
  const std::vector<std::string> whole_rows = data_lines(whole.out), cut_rows = data_lines(cut.out);
  ASSERT_EQ(cut_rows.size(), 3u) << cut.out;
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(cut_rows[i], whole_rows[i]) << i;
  const json whole_doc = json::parse(read_text(dir / "whole.json")), cut_doc = json::parse(read_text(dir / "cut.json"));
  EXPECT_FALSE(whole_doc.contains("partial"));
  EXPECT_EQ(cut_doc["partial"], true);
  EXPECT_EQ(cut_doc["sizes_done"], 3);
  EXPECT_EQ(cut_doc["sizes_total"], kSizes);
  ASSERT_EQ(cut_doc["rows"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(cut_doc["rows"][i], whole_doc["rows"][i]) << i;
}

TEST(CollectiveCancel, SigtermExits143AndASignalAfterTheLastSizeCutsNothing) {
  const CliRun term = run_with_signal_after(kCollectiveArgs, "1:" + std::to_string(SIGTERM));
  EXPECT_EQ(term.code, 128 + SIGTERM) << term.err;  // 143
  EXPECT_EQ(term.out.rfind("# partial: 1 of 8 sizes (stopped by SIGTERM)\n", 0), 0u) << term.out;
  EXPECT_EQ(data_lines(term.out).size(), 1u);
  // a signal once the 8th (last) size is done finds nothing left to stop: the whole table, exit 0
  const CliRun whole = commsim(kCollectiveArgs);
  const CliRun late = run_with_signal_after(kCollectiveArgs, std::to_string(kSizes) + ":" + std::to_string(SIGINT));
  EXPECT_EQ(late.code, 0) << late.err;
  EXPECT_EQ(late.out, whole.out);
}

// On a terminal the flow run draws its progress on stderr: sizes done of the total, and for the size in flight the
// simulated time it reached, the events processed and their rate (values that depend on the machine are not checked).
// Cut into 512 pieces per step, the 128 MiB and 256 MiB allreduces on 16 GPUs each process over 2^16 events (0.1 s
// each here), and the first check of each size (after 2^16 events) always draws, so both sizes show in flight.
TEST(CollectiveProgress, ShownOnATerminalOnlyForFlow) {
  const std::string args =
      "collective --topology topologies/dgx-a100.json --nodes 2 --algo ring --fidelity flow --sizes 128M,256M "
      "--chunks 512";
  const TerminalRun flow = run_on_terminal(args);
  EXPECT_EQ(flow.code, 0) << flow.seen;
  EXPECT_NE(flow.seen.find("0/2 sizes; 134217728 B: simulated "), std::string::npos) << flow.seen;
  EXPECT_NE(flow.seen.find("1/2 sizes; 268435456 B: simulated "), std::string::npos) << flow.seen;
  EXPECT_NE(flow.seen.find(" M events, "), std::string::npos) << flow.seen;
  EXPECT_NE(flow.seen.find(" M events/s"), std::string::npos) << flow.seen;
  EXPECT_NE(flow.seen.find("2/2 sizes; 268435456 B: done"), std::string::npos) << flow.seen;
  // the same run with stderr not a terminal: nothing on stderr, though the same checks ran
  const CliRun piped = commsim(args);
  EXPECT_EQ(piped.code, 0);
  EXPECT_EQ(piped.err, "");
}

// The library call stopped inside a size (its flow run's keep_going says no at the first check of the third size):
// the two sizes before it are the rows, identical to an unstopped run's, and the third size gives no row -- the
// simulated time it had reached is a lower bound, not a prediction.
TEST(CollectiveProgressHook, StopInsideASizeKeepsOnlyTheSizesDone) {
  const auto topology = load_topology("topologies/dgx-a100.json", 2);
  CollectiveSpec spec;
  spec.channels = topology->default_channels();
  spec.ranks_per_node = topology->ranks_per_node();
  const std::vector<Bytes> sizes{8 << 10, 64 << 10, 1 << 20, 8 << 20};
  const reports::CollectivePrediction whole = reports::predict_collective(spec, *topology, Fidelity::Flow, sizes, 0);
  ASSERT_TRUE(whole.complete());
  ASSERT_EQ(whole.rows.size(), 4u);

  std::size_t size_index = 0, checks_in_third = 0;
  reports::CollectiveProgress progress;
  progress.before_size = [&](Bytes) {
    ++size_index;
    return true;
  };
  progress.flow.every_events = 1;  // a check after every event: the 1 MiB ring has many, so the first comes early
  progress.flow.keep_going = [&](const EventQueue& queue) {
    EXPECT_GT(queue.processed(), 0u);
    if (size_index < 3) return true;
    ++checks_in_third;
    return false;
  };
  const reports::CollectivePrediction cut =
      reports::predict_collective(spec, *topology, Fidelity::Flow, sizes, 0, progress);
  EXPECT_EQ(checks_in_third, 1u);  // stopped at the first check of the third size
  EXPECT_EQ(size_index, 3u);       // the fourth size never started
  EXPECT_FALSE(cut.complete());
  EXPECT_EQ(cut.sizes, 4u);
  ASSERT_EQ(cut.rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(cut.rows[i].sizing.bytes, whole.rows[i].sizing.bytes);
    EXPECT_EQ(cut.rows[i].seconds, whole.rows[i].seconds);
  }
}

}  // namespace
}  // namespace commsim::test
