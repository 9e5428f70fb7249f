// Sweeps split into shards and merged, and sweeps stopped by a signal: `commsim sweep --shard I/N`, `--merge DIR...`
// and SIGINT/SIGTERM, run through the built commsim from the source root. The MPI sweep is in sweep_mpi_test.cpp.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "explore/sweep_shard.hpp"
#include "sim/core/error.hpp"
#include "tests/explore/cli_signals.hpp"
#include "tests/explore/sweep_compare.hpp"

namespace commsim::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST(SweepShard, ParsesOneBasedIndexAndRejectsTheRest) {
  const explore::ShardSpec s = explore::parse_shard("2/3");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 3u);
  for (const char* bad : {"0/3", "4/3", "3", "/3", "2/", "a/b", "1/0", "-1/3", "1/3/5", " 1/3", "1/2000000"})
    EXPECT_THROW(explore::parse_shard(bad), InputError) << bad;
}

// Every row of every grid size is in exactly one shard, the one its index modulo N names.
TEST(SweepShard, RoundRobinPartitionIsCompleteAndDisjoint) {
  for (std::size_t rows = 0; rows <= 20; ++rows)
    for (std::size_t n = 1; n <= 7; ++n) {
      std::multiset<std::size_t> seen;
      for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t r : explore::shard_rows(rows, {i, n})) {
          EXPECT_EQ(r % n, i - 1) << rows << " rows, shard " << i << "/" << n;
          seen.insert(r);
        }
      ASSERT_EQ(seen.size(), rows);
      for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(seen.count(r), 1u) << r;
    }
}

TEST(SweepShardCli, ThreeShardsMergeIntoTheOneProcessOutputsByteForByte) {
  ScratchDir dir("sweep-shards");
  const CliRun whole = commsim(kGridArgs + " --jobs 2 -o " + (dir / "whole"));
  ASSERT_EQ(whole.code, 0) << whole.err;
  // Shard 1 in a folder of its own, shards 2 and 3 side by side (both layouts a job array may use).
  const std::string folder[] = {dir / "a", dir / "b", dir / "b"};
  // Round robin over 16 rows: shard 1 has rows 0,3,...,15 (6), shards 2 and 3 have 5 each.
  const std::size_t expected_rows[] = {6, 5, 5};
  for (int i = 0; i < 3; ++i) {
    const std::string shard = std::to_string(i + 1) + "/3";
    const CliRun r = commsim(kGridArgs + " --jobs 1 --shard " + shard + " -o " + folder[i]);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const json doc =
        json::parse(read_text(fs::path(folder[i]) / ("sweep.shard-" + std::to_string(i + 1) + "-of-3.json")));
    EXPECT_EQ(doc["rows"].size(), expected_rows[i]) << shard;
    EXPECT_EQ(doc["rows_total"], kGridRows);
    EXPECT_FALSE(fs::exists(fs::path(folder[i]) / "sweep.csv")) << "a shard writes only its shard file";
  }
  const CliRun merged = commsim("sweep --merge " + (dir / "a") + " " + (dir / "b") + " -o " + (dir / "merged"));
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_EQ(merged.err, "");
  expect_same_outputs(whole.out, dir / "whole", merged.out, dir / "merged");
}

// Bad input: exit code 2, one line on stderr containing every one of `words`.
void expect_refused(const CliRun& r, const std::vector<std::string>& words) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  for (const std::string& w : words) EXPECT_NE(r.err.find(w), std::string::npos) << w << " in " << r.err;
}

TEST(SweepShardCli, MergeRefusesShardsThatAreNotOneCompleteSweep) {
  ScratchDir dir("sweep-merge-bad");
  for (int i = 1; i <= 2; ++i)
    ASSERT_EQ(commsim(kGridArgs + " --shard " + std::to_string(i) + "/2 -o " + (dir / "s")).code, 0);
  // the same grid with another batch size gives other results: another sweep
  ASSERT_EQ(commsim(kGridArgs + " --set batch_per_gpu=32 --shard 2/2 -o " + (dir / "other")).code, 0);
  fs::create_directories(dir / "one");
  fs::copy_file(dir / "s/sweep.shard-1-of-2.json", dir / "one/sweep.shard-1-of-2.json");

  expect_refused(commsim("sweep --merge " + (dir / "one") + " -o " + (dir / "out")), {"shard 2/2", "is missing"});
  expect_refused(commsim("sweep --merge " + (dir / "one") + " " + (dir / "other") + " -o " + (dir / "out")),
                 {"sweep.shard-2-of-2.json", "sweep_hash", "different sweep"});
  expect_refused(commsim("sweep --merge " + (dir / "s") + " " + (dir / "one") + " -o " + (dir / "out")),
                 {"sweep.shard-1-of-2.json", "shard 1/2 given twice", "overlap"});
  // a shard whose rows were edited into another shard's place: rows overlap though the shard numbers do not
  json doc = json::parse(read_text(dir / "s/sweep.shard-2-of-2.json"));
  doc["rows"][0]["row"] = 0;
  std::ofstream(dir / "s/sweep.shard-2-of-2.json") << doc.dump();
  expect_refused(commsim("sweep --merge " + (dir / "s") + " -o " + (dir / "out")),
                 {"sweep.shard-2-of-2.json", "rows[0].row", "not one of shard 2/2's rows"});
  EXPECT_FALSE(fs::exists(dir / "out")) << "a refused merge creates nothing";
}

// Shards of one command line whose topology file was edited between them are two sweeps: the sweep's hash covers
// the contents of the topology and model files its rows read, not only the scenario naming them.
TEST(SweepShardCli, MergeRefusesShardsMadeFromAnEditedTopology) {
  ScratchDir dir("sweep-merge-edited");
  json scenario = json::parse(read_text("scenarios/emulated-tiny.json"));
  scenario["topology"] = dir / "t.json";
  scenario["model"] = fs::absolute("scenarios/models/mlp-small.json").string();
  std::ofstream(dir / "s.json") << scenario.dump();
  fs::copy_file("topologies/emulated-cpu-cluster.json", dir / "t.json");
  const std::string args = "sweep " + (dir / "s.json") + " --steps 2 --vary nodes=1,2";
  ASSERT_EQ(commsim(args + " --shard 1/2 -o " + (dir / "out")).code, 0);
  json topology = json::parse(read_text(dir / "t.json"));
  for (auto& [name, link_class] : topology["link_classes"].items()) link_class["bandwidth_Bps"] = 1e6;
  std::ofstream(dir / "t.json") << topology.dump();
  ASSERT_EQ(commsim(args + " --shard 2/2 -o " + (dir / "out")).code, 0);
  expect_refused(commsim("sweep --merge " + (dir / "out") + " -o " + (dir / "merged")),
                 {"sweep_hash", "different sweep"});
}

// The signal arrives from the test hook (run_with_signal_after). With --jobs 1 no other row is in flight then, so
// exactly N rows are done -- no timing involved.

TEST(SweepCancel, SigintWritesTheRowsDoneMarkedPartialAndExits130) {
  ScratchDir dir("sweep-sigint");
  const CliRun whole = commsim(kGridArgs + " -o " + (dir / "whole"));
  ASSERT_EQ(whole.code, 0) << whole.err;
  const CliRun r = run_with_signal_after(kGridArgs + " --jobs 1 -o " + (dir / "cut"), "3:" + std::to_string(SIGINT));
  EXPECT_EQ(r.code, 128 + SIGINT) << r.err;  // 130: the shell's convention for a command ended by SIGINT
  EXPECT_EQ(r.err, "");
  const json cut = json::parse(read_text(dir / "cut/sweep.json"));
  EXPECT_EQ(cut["partial"], true);
  EXPECT_EQ(cut["rows_done"], 3);
  EXPECT_EQ(cut["rows_total"], kGridRows);
  // the rows done are the grid's first 3 (one thread takes them in order), identical to the whole run's
  const json whole_doc = json::parse(read_text(dir / "whole/sweep.json"));
  ASSERT_EQ(cut["rows"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(cut["rows"][i], whole_doc["rows"][i]) << i;
  const std::string note = "# partial: 3 of 16 configurations (stopped by SIGINT)\n";
  EXPECT_EQ(read_text(dir / "cut/sweep.csv").rfind(note, 0), 0u);
  EXPECT_EQ(r.out.rfind(note, 0), 0u) << r.out;
  EXPECT_NE(read_text(dir / "cut/sweep.html").find("Incomplete sweep: partial: 3 of 16"), std::string::npos);
  // nothing half-written: the three outputs and no temporary file
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "cut")) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"sweep.csv", "sweep.html", "sweep.json"}));
}

TEST(SweepCancel, SigtermStopsAShardWhichMergeThenRefuses) {
  ScratchDir dir("sweep-sigterm");
  const CliRun r =
      run_with_signal_after(kGridArgs + " --jobs 1 --shard 1/2 -o " + (dir / "s"), "1:" + std::to_string(SIGTERM));
  EXPECT_EQ(r.code, 128 + SIGTERM) << r.err;  // 143
  // shard 1/2 of 16 rows has 8 (rows 0, 2, ..., 14); one was done
  const json doc = json::parse(read_text(dir / "s/sweep.shard-1-of-2.json"));
  EXPECT_EQ(doc["partial"], true);
  EXPECT_EQ(doc["rows"].size(), 1u);
  ASSERT_EQ(commsim(kGridArgs + " --shard 2/2 -o " + (dir / "s")).code, 0);
  expect_refused(commsim("sweep --merge " + (dir / "s") + " -o " + (dir / "out")),
                 {"sweep.shard-1-of-2.json", "partial", "after 1 of its 8 rows"});
}

// A signal after the last row started cuts nothing short: the outputs are complete and the exit code 0.
TEST(SweepCancel, SignalAfterTheLastRowLeavesACompleteSweep) {
  ScratchDir dir("sweep-late-signal");
  const CliRun whole = commsim(kGridArgs + " -o " + (dir / "whole"));
  const CliRun late = run_with_signal_after(kGridArgs + " --jobs 1 -o " + (dir / "late"),
                                            std::to_string(kGridRows) + ":" + std::to_string(SIGINT));
  EXPECT_EQ(late.code, 0) << late.err;
  expect_same_outputs(whole.out, dir / "whole", late.out, dir / "late");
}

// On a terminal the sweep shows its progress on stderr: rows done of the total, the rate and the time left. The
// command runs on a pseudo-terminal (forkpty), which is what isatty() sees in an interactive shell.
TEST(SweepProgress, ShownOnATerminal) {
  ScratchDir dir("sweep-tty");
  const TerminalRun r = run_on_terminal(kGridArgs + " --jobs 1 -o " + (dir / "out"));
  EXPECT_EQ(r.code, 0) << r.seen;
  // the bar after the last of the 16 rows, then its rate and the time left (their values depend on the machine)
  EXPECT_NE(r.seen.find("16/16 configurations, "), std::string::npos) << r.seen;
  EXPECT_NE(r.seen.find("/s, ETA 0 s"), std::string::npos) << r.seen;
}

}  // namespace
}  // namespace commsim::test
