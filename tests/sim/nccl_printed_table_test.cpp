// NCCL's printed tuning table read back from a log (sim/collective/nccl_printed_table): the layout NCCL prints,
// with or without its line prefix, and what is not a table.
#include "sim/collective/nccl_printed_table.hpp"

#include <sstream>

#include "sim/core/error.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// A table of one block as NCCL prints it (two collectives kept), between other NCCL log lines, and then a second
// communicator's table, which is not read.
const char* const kLog =
    "h:1:2 [0] NCCL INFO Channel 00/02 : 0 1\n"
    "h:1:2 [0] NCCL INFO   Algorithm   |                            Tree                  |                            "
    "Ring                  |                   CollNetDirect                  |\n"
    "h:1:2 [0] NCCL INFO   Protocol    |             LL |          LL128 |         Simple |             LL |          "
    "LL128 |         Simple |             LL |          LL128 |         Simple |\n"
    "h:1:2 [0] NCCL INFO  Max NThreads |            512 |            640 |            512 |            512 |           "
    " "
    "640 |            512 |              0 |              0 |            640 |\n"
    "h:1:2 [0] NCCL INFO     Broadcast |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |     9.3/   5.0 |    "
    "18.0/   0.0 |    22.4/  20.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |\n"
    "h:1:2 [0] NCCL INFO     AllReduce |    25.2/   0.0 |    48.5/   0.0 |   448.0/   0.0 |    43.4/   2.7 |    "
    "79.4/   0.0 |   152.8/  19.5 |     5.6/   0.0 |     5.6/   0.0 |    44.0/   0.0 |\n"
    "h:1:2 [0] NCCL INFO threadThresholds 8/8/64 | 128/8/64 | 512 | 512\n"
    "h:1:2 [0] NCCL INFO   Algorithm   |  Tree | Ring | CollNetDirect |\n"
    "h:1:2 [0] NCCL INFO     Broadcast |   1.0/ 1.0 |   1.0/ 1.0 |   1.0/ 1.0 |   1.0/ 1.0 |   1.0/ 1.0 |   1.0/ 1.0 "
    "|   1.0/ 1.0 |   1.0/ 1.0 |   1.0/ 1.0 |\n";

TEST(PrintedTuningTable, ReadsNcclsLayoutBetweenOtherLogLines) {
  std::istringstream log(kLog);
  const nccl::TuningTable t = nccl::read_printed_tuning_table(log, "log");
  ASSERT_EQ(t.algorithms, (std::vector<std::string>{"Tree", "Ring", "CollNetDirect"}));
  ASSERT_EQ(t.rows.size(), 2u);  // the first table only
  EXPECT_EQ(t.rows[1].collective, "AllReduce");
  ASSERT_EQ(t.rows[1].cells.size(), 9u);
  EXPECT_DOUBLE_EQ(t.rows[1].cells[2].latency_us, 448.0);  // Tree / Simple
  EXPECT_DOUBLE_EQ(t.rows[1].cells[5].algbw_GBps, 19.5);   // Ring / Simple
  EXPECT_DOUBLE_EQ(t.rows[0].cells[3].latency_us, 9.3);    // Broadcast Ring / LL
  // The second table right after the first, with no other line between: still the first one alone.
  std::string back_to_back = kLog;
  const std::size_t thresholds = back_to_back.find("h:1:2 [0] NCCL INFO threadThresholds");
  back_to_back.erase(thresholds, back_to_back.find('\n', thresholds) + 1 - thresholds);
  std::istringstream log2(back_to_back);
  const nccl::TuningTable first = nccl::read_printed_tuning_table(log2, "log");
  ASSERT_EQ(first.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(first.rows[0].cells[3].latency_us, 9.3);
}

// The comparison names each cell that differs by more than half of NCCL's printed 0.1: here 48.55 rounds to NCCL's
// 48.5 (within 0.05), 448.2 does not. An algorithm commsim's table lacks (NVLS here) counts as 0/0: its LL and LL128
// cells match NCCL's 0/0, its Simple cell does not.
TEST(PrintedTuningTable, ComparisonNamesTheCellsThatDiffer) {
  nccl::TuningTable printed{{"Tree", "NVLS"}, {{"AllReduce", std::vector<nccl::TuningCell>(6)}}, 0};
  printed.rows[0].cells[1] = {48.5, 0};
  printed.rows[0].cells[2] = {448.0, 170.2};
  printed.rows[0].cells[5] = {23.0, 300.0};  // NVLS / Simple
  nccl::TuningTable ours{{"Tree"}, {{"AllReduce", std::vector<nccl::TuningCell>(3)}}, 0};
  ours.rows[0].cells[1] = {48.55, 0};
  ours.rows[0].cells[2] = {448.2, 170.2};
  const nccl::TuningComparison c = nccl::compare_tuning_tables(printed, ours);
  EXPECT_EQ(c.cells, 6);
  ASSERT_EQ(c.mismatches.size(), 2u);
  EXPECT_EQ(c.mismatches[0].algorithm, "Tree");
  EXPECT_EQ(c.mismatches[0].protocol, "Simple");
  EXPECT_TRUE(c.mismatches[0].in_commsim);
  EXPECT_EQ(c.mismatches[1].algorithm, "NVLS");
  EXPECT_EQ(c.mismatches[1].protocol, "Simple");
  EXPECT_FALSE(c.mismatches[1].in_commsim);
}

// NCCL 2.25+ prints each operation's choice; every rank and iteration prints it again, so each collective and size is
// kept once. The channels are Hi - Lo + 1 of NCCL's channel{Lo..Hi}.
TEST(PrintedTuningTable, ReadsNcclsChoicesOncePerCollectiveAndSize) {
  std::istringstream log(
      "h:1:2 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo TREE proto SIMPLE channel{Lo..Hi}={0..7}\n"
      "h:1:3 [1] NCCL INFO AllReduce: 4194304 Bytes -> Algo TREE proto SIMPLE channel{Lo..Hi}={0..7}\n"
      "h:1:2 [0] NCCL INFO AllGather: 1048576 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={2..5}\n"
      "h:1:2 [0] NCCL INFO Broadcast:134217728 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}\n"
      "h:1:2 [0] NCCL INFO 4 coll channels, 4 collnet channels\n");
  const std::vector<nccl::PrintedChoice> choices = nccl::read_printed_choices(log, "log");
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_EQ(choices[0].collective, "AllReduce");
  EXPECT_EQ(choices[0].bytes, 4194304u);
  EXPECT_EQ(choices[0].algorithm, "TREE");
  EXPECT_EQ(choices[0].channels, 8);
  EXPECT_EQ(choices[1].protocol, "LL128");
  EXPECT_EQ(choices[1].channels, 4);
  EXPECT_EQ(choices[2].bytes, 134217728u);
}

TEST(PrintedTuningTable, WhatIsNotATableIsAnInputError) {
  // The error a reader of the log gives for `text`.
  const auto error_reading = [](auto read, const std::string& text) {
    std::istringstream log(text);
    try {
      read(log, "run.log");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto error_of = [&](const std::string& text) {
    return error_reading([](std::istream& log, const std::string& file) { nccl::read_printed_tuning_table(log, file); },
                         text);
  };
  EXPECT_EQ(error_of("NCCL INFO Channel 00/02 : 0 1\n"),
            "run.log: no NCCL tuning table in the log (NCCL prints it at init with NCCL_DEBUG=INFO "
            "NCCL_DEBUG_SUBSYS=TUNING)");
  const std::string header = "  Algorithm   | Tree | Ring |\n";
  EXPECT_EQ(error_of(header + "    AllReduce |  1.0/ 2.0 |  1.0/ 2.0 |\n"),
            "run.log: line 2: AllReduce has 2 cells where its block's 2 algorithm(s) have 6");
  EXPECT_EQ(error_of(header + "    AllReduce |  1.0/ 2.0 |  1.0 |  x/1 |  1/1 |  1/1 |  1/1 |\n"),
            "run.log: line 2: AllReduce cell 2 \"1.0\" is not NCCL's latency/bandwidth");
  const std::string row = "    AllReduce |  1/1 |  1/1 |  1/1 |  1/1 |  1/1 |  1/1 |\n";
  EXPECT_EQ(error_of(header + row + row), "run.log: line 3: AllReduce is in this block of the table twice");
  // A header alone is no table (it would compare nothing and match).
  EXPECT_EQ(error_of(header), "run.log: NCCL's tuning table in the log has no collective's row");
  // A choice line that is not one NCCL prints is refused with its line, not skipped or priced: a size above a
  // message's 1 TiB (of 13 digits, or of 20 that no integer holds), channel ids beyond NCCL's 64 (or beyond an int),
  // a range backwards, a field missing; and the same collective and size again with another choice.
  const auto choice_error = [&](const std::string& text) {
    return error_reading([](std::istream& log, const std::string& file) { nccl::read_printed_choices(log, file); },
                         text);
  };
  const std::string prefix = "NCCL INFO AllReduce: ";
  auto line = [&](const std::string& size, const std::string& channels) {
    return prefix + size + " Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={" + channels + "}\n";
  };
  for (const char* size : {"2199023255553", "99999999999999999999"})
    EXPECT_NE(choice_error(line(size, "0..3")).find("line 1: a choice line of NCCL's"), std::string::npos);
  EXPECT_NE(choice_error(line("2199023255553", "0..3")).find("the size 2199023255553 bytes, above the 1 TiB"),
            std::string::npos);
  for (const char* channels : {"0..64", "4294967296..4294967296", "3..0", "0..", "x..1"})
    EXPECT_NE(choice_error(line("4096", channels)).find("the channels"), std::string::npos) << channels;
  EXPECT_NE(choice_error(prefix + "4096 Bytes -> Algo RING SIMPLE\n").find("proto"), std::string::npos);
  EXPECT_NE(choice_error(line("4096", "0..3") + line("4096", "0..7")).find("line 2: AllReduce of 4096 bytes again"),
            std::string::npos);
  EXPECT_EQ(choice_error(line("4096", "0..3") + line("4096", "0..3")), "no error");  // the next iteration's line
}

}  // namespace
}  // namespace commsim::test
