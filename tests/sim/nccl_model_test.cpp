// The NCCL model (sim/collective/nccl_model): NCCL's own estimate on a hand-worked machine, its choice of algorithm,
// protocol and channels, the physical bound every prediction respects, and the library block of a topology.
#include "sim/collective/nccl_model.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/collective/nccl_printed_table.hpp"
#include "sim/collective/nccl_table.hpp"
#include "sim/collective/nccl_tuning.hpp"
#include "sim/core/error.hpp"
#include "sim/scenario/overheads.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// Every cell of NCCL's printed table that commsim's differs from, one failure each.
void expect_no_mismatches(const nccl::TuningComparison& comparison) {
  for (const nccl::TuningMismatch& m : comparison.mismatches)
    ADD_FAILURE() << m.collective << " " << m.algorithm << "/" << m.protocol << ": NCCL " << m.nccl.latency_us << "/"
                  << m.nccl.algbw_GBps << ", commsim " << m.commsim.latency_us << "/" << m.commsim.algbw_GBps;
}

std::unique_ptr<Topology> dgx_a100_one_node() { return load_topology(shipped("dgx-a100"), 1); }

CollectiveSpec allreduce(Bytes bytes) {
  CollectiveSpec s;
  s.op = Collective::AllReduce;
  s.algorithm = Algorithm::Auto;
  s.bytes = bytes;
  return s;
}

double estimate_us(const std::vector<nccl::Estimate>& all, Algorithm a, Protocol p) {
  for (const nccl::Estimate& e : all)
    if (e.algorithm == a && e.protocol == p) return e.seconds * 1e6;
  ADD_FAILURE() << "no estimate for " << to_string(a) << "/" << to_string(p);
  return 0;
}

// One DGX A100 node (topologies/dgx-a100.json, NCCL 2.18 table in libraries/nccl.json). The machine NCCL sees:
//   8 ranks, 1 node, NVLink inside; ring bandwidth per GPU = 300 GB/s x 0.774 = 232.2 GB/s; 24 channels run (the
//   file's library.channels), 12 as NCCL's search counts them (per-channel caps).
// NCCL's estimate time = latency + n / (1000 algbw) in us with algbw in GB/s, ring ratio 8 / 2(8-1) = 8/14:
//   LL:     busBw = min(llMaxBw[Ampere][1 node] 87.7, 232.2 / 4) = 58.05     -> algbw 33.1714
//           latency = base 6.6 + 14 steps x hwLat NVLink LL 0.6 = 15.0 us
//   LL128:  busBw = min(232.2 x 0.92, 12 ch x 20.0) = 213.624              -> algbw 122.0709
//           latency = 14.0 + 14 x 1.9 = 40.6 us
//   Simple: busBw = 232.2                                                   -> algbw 132.6857
//           latency = 8.4 + 14 x 3.4 = 56.0 us
// At 1 MiB: LL 15.0 + 1048576 / 33171.4 = 46.611; LL128 40.6 + 8.590 = 49.190; Simple 56.0 + 7.903 = 63.903 us.
TEST(NcclModel, HandWorkedRingEstimatesOnOneDgxA100) {
  auto t = dgx_a100_one_node();
  const nccl::Machine m = nccl::machine_of(*t);
  EXPECT_EQ(m.ranks, 8);
  EXPECT_EQ(m.channels, 24);
  EXPECT_TRUE(m.nvlink_intra);
  EXPECT_NEAR(m.intra_GBps, 232.2, 1e-9);
  const auto all = nccl::candidates(allreduce(1 << 20), *t);
  EXPECT_NEAR(estimate_us(all, Algorithm::Ring, Protocol::LL), 15.0 + 1048576 / (1000 * 58.05 * 8 / 14), 1e-6);
  EXPECT_NEAR(estimate_us(all, Algorithm::Ring, Protocol::LL128), 40.6 + 1048576 / (1000 * 213.624 * 8 / 14), 1e-6);
  EXPECT_NEAR(estimate_us(all, Algorithm::Ring, Protocol::Simple), 56.0 + 1048576 / (1000 * 232.2 * 8 / 14), 1e-6);
}

// NCCL's tuning table of the same DGX A100 node, as NCCL_DEBUG_SUBSYS=TUNING prints it: its AllReduce ring cells are
// the hand-worked latencies and algorithm bandwidths above (15.0 / 33.17, 40.6 / 122.07, 56.0 / 132.69), printed
// "%8.1f/%6.1f"; the tree cells are the model's own estimates; CollNet needs SHARP, which this node lacks: NCCL models
// it and prints its latency with bandwidth 0.
TEST(NcclTuningTable, RowsAreNcclsEstimatesInNcclsLayout) {
  auto t = dgx_a100_one_node();
  const nccl::TuningTable table = nccl::tuning_table(*t);
  ASSERT_EQ(table.algorithms.size(), 6u);  // the 2.18 table: no PAT before 2.23
  ASSERT_EQ(table.rows.size(), 5u);
  EXPECT_EQ(table.rows[0].collective, "Broadcast");
  EXPECT_EQ(table.channels, 24);
  const nccl::TuningRow& allreduce_row = table.rows[4];
  EXPECT_EQ(allreduce_row.collective, "AllReduce");
  const auto cell = [&](int algorithm, int protocol) {
    return allreduce_row.cells[std::size_t(algorithm * 3 + protocol)];
  };
  EXPECT_NEAR(cell(1, 0).latency_us, 15.0, 1e-9);
  EXPECT_NEAR(cell(1, 0).algbw_GBps, 58.05 * 8 / 14, 1e-9);
  EXPECT_NEAR(cell(1, 1).algbw_GBps, 213.624 * 8 / 14, 1e-9);
  EXPECT_NEAR(cell(1, 2).latency_us, 56.0, 1e-9);
  const auto all = nccl::candidates(allreduce(1 << 20), *t);
  const auto tree_simple = std::find_if(all.begin(), all.end(), [](const nccl::Estimate& e) {
    return e.algorithm == Algorithm::Tree && e.protocol == Protocol::Simple;
  });
  ASSERT_NE(tree_simple, all.end());
  EXPECT_NEAR(cell(0, 2).latency_us, tree_simple->latency_s * 1e6, 1e-9);
  EXPECT_NEAR(cell(0, 2).algbw_GBps, tree_simple->algbw_Bps / 1e9, 1e-9);
  EXPECT_EQ(cell(2, 2).algbw_GBps, 0);  // CollNet direct
  EXPECT_GT(cell(2, 2).latency_us, 0);

  const std::string text = nccl::format_tuning_table(table);
  std::istringstream lines(text);
  std::string algorithm_line, protocol_line;
  std::getline(lines, algorithm_line);
  std::getline(lines, protocol_line);
  EXPECT_EQ(algorithm_line.rfind("  Algorithm   |", 0), 0u);
  EXPECT_NE(algorithm_line.find("Tree"), std::string::npos);
  EXPECT_NE(algorithm_line.find("CollNetDirect"), std::string::npos);
  EXPECT_EQ(protocol_line.rfind("  Protocol    |             LL |          LL128 |         Simple |", 0), 0u);
  EXPECT_NE(text.find("    AllReduce |    15.2/  28.1 |    31.5/  83.1 |    56.0/ 106.8 |    15.0/  33.2 |    40.6/ "
                      "122.1 |    56.0/ 132.7 |    13.8/   0.0 |    21.0/   0.0 |    33.7/   0.0 |\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 * (2 + 5));  // two blocks of three algorithms
}

// NCCL's own table, as NCCL 2.29.7 printed it for two ranks of one Blackwell GPU each over its socket transport
// (the log: tests/data/nccl-tuning/sockets-2x1-blackwell.log; the machine and the source: the .json beside it). One
// number was set from it, the network's 2.4 GB/s (Ring/Simple AllReduce: with 2 ranks algbw = busBw); every other
// cell is the model's:
//   latencies: Ring LL AllReduce = baseLat 6.6 + 2 network steps x 5.0 (hwLat NET Tree LL: one GPU per node) = 16.6;
//     Broadcast = baseLat + one hop, the channels being replays of one ring (6.6 + 2.7 = 9.3; 8.4 + 14.0 = 22.4);
//   bandwidths: ring LL = 2.4 x .5 = 1.2; AllGather ratio 2 / 1 = 2 -> 4.8 and 2.4; the tree and PAT run on the tree
//     graph, whose node part NCCL's search raises to twice the network on 2 nodes, with no local link to stop it:
//     Tree Simple = 2 x 2.4 x .92 x .85 (plain tree: one GPU per node) x .5 = 1.88; Tree LL = 4.8 x .92 / 3.8 x .85
//     x .5 = 0.49; PAT = 4.8 x .75 = 3.6 (no ratio for PAT from 2.23).
// Every cell is compared, also those NCCL models and then disables (latency / 0.0: LL128 without NVLink, CollNet
// without SHARP): Ring LL128 broadcast = baseLat 14.0 + hwLat NET Ring LL128 4.0 = 18.0; Tree LL128 allreduce = 14.0
// + 2 x 8.5 (hwLat NET Tree LL128) = 31.0; CollNet (baseLat 0 from 2.21) = one network step, 5.0 / 8.5 / 14.0.
TEST(NcclTuningTable, MatchesNcclsOwnTableOnTwoSocketRanks) {
  std::ifstream log(fixture("nccl-tuning/sockets-2x1-blackwell.log"));
  const nccl::TuningTable printed = nccl::read_printed_tuning_table(log, "sockets-2x1-blackwell.log");
  auto t = load_topology(fixture("nccl-tuning/sockets-2x1-blackwell.json"));
  const nccl::TuningTable ours = nccl::tuning_table(*t);
  ASSERT_EQ(ours.algorithms, printed.algorithms);  // Tree ... PAT, the 2.29 release's seven
  const nccl::TuningComparison comparison = nccl::compare_tuning_tables(printed, ours);
  EXPECT_EQ(comparison.cells, 5 * 7 * 3);
  expect_no_mismatches(comparison);
  // The cells NCCL can choose (bandwidth above 0): broadcast and reduce ring LL and Simple; allgather and
  // reduce-scatter those and PAT; allreduce tree and ring, LL and Simple each.
  int enabled = 0;
  for (const nccl::TuningRow& row : printed.rows)
    for (const nccl::TuningCell& cell : row.cells) enabled += cell.algbw_GBps > 0;
  EXPECT_EQ(enabled, 2 + 2 + 3 + 3 + 4);
}

// NCCL 2.30.4's own table and choices on one 8x H200 node (tests/data/nccl-tuning/hgx-h200-1x8.log; the machine
// and the source: the .json beside it, priced with the 2.29 constants, the newest table). One number was set from it:
// the ring's 360 GB/s (Broadcast Ring/Simple: a broadcast's algorithm bandwidth is its bus bandwidth), which NCCL's
// search finds as 12 channels x 30 GB/s where topologies/hgx-h200.json has the links' 370 GB/s. Every other cell is
// the model's, e.g. AllReduce Ring/Simple = 360 x 8 / 14 = 205.7; Ring/LL = min(llMaxBw 141 (Hopper, one node),
// 360 / 2) x 8 / 14 = 80.6, and Broadcast Ring/LL 141.0; Ring/LL latency = 6.6 + 14 steps x 0.6 = 15.0; NVLS
// latency = hwLat NVLink NVLS 25.0. The 17 choices NCCL printed (4 B to 32 KiB ring/LL on 1 channel, 64 KiB on 2,
// 128 KiB on 4: the LL thread threshold, 64 bytes x 8 ranks x 512 threads = 32 KiB a channel; 4 MiB NVLS/Simple on
// its 16 channels) are commsim's too. With the shipped hgx-h200.json every latency and choice still matches and 16
// bandwidths are 2.8 % high (370 / 360).
TEST(NcclTuningTable, MatchesNcclsOwnTableOnAnH200Node) {
  auto t = load_topology(fixture("nccl-tuning/hgx-h200-1x8.json"), 1);
  std::ifstream table_log(fixture("nccl-tuning/hgx-h200-1x8.log")), choice_log(fixture("nccl-tuning/hgx-h200-1x8.log"));
  const nccl::TuningComparison table = nccl::compare_tuning_tables(
      nccl::read_printed_tuning_table(table_log, "hgx-h200-1x8.log"), nccl::tuning_table(*t));
  EXPECT_EQ(table.cells, 5 * 7 * 3);
  expect_no_mismatches(table);
  const std::vector<nccl::PrintedChoice> printed = nccl::read_printed_choices(choice_log, "hgx-h200-1x8.log");
  const nccl::ChoiceComparison choices = nccl::compare_choices(printed, *t);
  EXPECT_EQ(choices.compared, 17);
  for (const nccl::ChoiceMismatch& m : choices.mismatches)
    ADD_FAILURE() << m.nccl.collective << " " << m.nccl.bytes << ": NCCL " << m.nccl.algorithm << "/" << m.nccl.protocol
                  << " on " << m.nccl.channels << ", commsim " << m.algorithm << "/" << m.protocol << " on "
                  << m.channels;
  // As if the run had been given NCCL_ALGO=Ring (which it was not): 4 MiB would take a ring, so that choice differs.
  const nccl::ChoiceComparison ring_only = nccl::compare_choices(printed, *t, "ring");
  ASSERT_EQ(ring_only.mismatches.size(), 1u);
  EXPECT_EQ(ring_only.mismatches[0].nccl.bytes, 4194304u);
  EXPECT_EQ(ring_only.mismatches[0].algorithm, "Ring");
}

// The same run printed NCCL's choice per size: "Broadcast: 1024..16384 Bytes -> Algo RING proto LL; 32768..134217728
// Bytes -> Algo RING proto SIMPLE". From the table above, LL takes 9.3 + S / 1200 us and Simple 22.4 + S / 2400 (S in
// bytes, GB/s = 1000 B/us): they cross at S = 2400 x 13.1 = 31 440 bytes, between 16 and 32 KiB, as NCCL chose. With
// a latency per rank for broadcast (12.0 and 36.4 us, the model before it knew NCCL's replayed channels) they would
// cross at 58 560 bytes, and 32 KiB would stay on LL.
TEST(NcclTuningTable, ChoosesWhatNcclChoseOnTwoSocketRanks) {
  auto t = load_topology(fixture("nccl-tuning/sockets-2x1-blackwell.json"));
  CollectiveSpec spec;
  spec.op = Collective::Broadcast;
  spec.algorithm = Algorithm::Auto;
  for (Bytes bytes : {Bytes(1024), Bytes(16384), Bytes(32768), Bytes(134217728)}) {
    spec.bytes = bytes;
    const nccl::Estimate chosen = nccl::choose(spec, *t);
    EXPECT_EQ(chosen.algorithm, Algorithm::Ring) << bytes;
    EXPECT_EQ(chosen.protocol, bytes <= 16384 ? Protocol::LL : Protocol::Simple) << bytes;
  }
}

// The channels of those choices, as the same run printed them ("Broadcast: 32768 Bytes -> Algo RING proto SIMPLE
// channel{Lo..Hi}={0..0}", 65536 on {0..1}, 131072 and every larger size to 128 MiB on {0..3}; the source: the
// topology's "choices"). NCCL 2.29 runs 4 channels here and first trims them while a thread would get less than its
// threshold: 256 Simple ring threads (the ring carries 2.4 GB/s, under PCI_BW 12) x 64 bytes, so 32 KiB < 4 x 256 x
// 64 leaves 2 channels, 64 KiB and more keep 4. Then the plan spreads the traffic (a broadcast's bytes) in cells of
// 32 KiB, each channel taking ceil(traffic / channels / 32 KiB) of them: 32 KiB is one cell on 1 channel; 64 KiB is 2
// cells, one per channel, on 2; 128 KiB is 4 cells on 4; 256 KiB is 8 cells, 2 per channel, on 4.
TEST(NcclTuningTable, LaunchesTheChannelsNcclLaunchedOnTwoSocketRanks) {
  auto t = load_topology(fixture("nccl-tuning/sockets-2x1-blackwell.json"));
  CollectiveSpec spec;
  spec.op = Collective::Broadcast;
  spec.algorithm = Algorithm::Auto;
  for (Bytes bytes = 32768; bytes <= 134217728; bytes *= 2) {
    spec.bytes = bytes;
    EXPECT_EQ(nccl::predict(spec, *t).channels, bytes == 32768 ? 1 : bytes == 65536 ? 2 : 4) << bytes;
  }
  // The same, read from NCCL's lines in the log (algorithm, protocol and channels of each of the 13 sizes).
  std::ifstream log(fixture("nccl-tuning/sockets-2x1-blackwell.log"));
  const nccl::ChoiceComparison c =
      nccl::compare_choices(nccl::read_printed_choices(log, "sockets-2x1-blackwell.log"), *t);
  EXPECT_EQ(c.compared, 13);
  EXPECT_TRUE(c.mismatches.empty());
  // With the thread thresholds alone (NCCL 2.21's rule) 32 and 64 KiB would take 2 and 4 channels: 256 threads x 64
  // bytes per channel.
  nccl::use_release(*t, "2.21.5", "test", "");
  spec.bytes = 32768;
  EXPECT_EQ(nccl::predict(spec, *t).channels, 2);
  spec.bytes = 65536;
  EXPECT_EQ(nccl::predict(spec, *t).channels, 4);
}

// From 2.23 an allgather's channels come from one rank's share of it; 4 bytes over 8 ranks is a share of 0 bytes, which
// still takes one channel (one cell of traffic), not a division by zero.
TEST(NcclModel, AnAllgatherSmallerThanItsRanksTakesOneChannel) {
  auto t = dgx_a100_one_node();
  nccl::use_release(*t, "2.26.2", "test", "");
  CollectiveSpec spec = allreduce(4);
  spec.op = Collective::AllGather;
  EXPECT_EQ(nccl::predict(spec, *t).channels, 1);
}

// Each release spreads an LL collective by its own rule (libraries/nccl.json "channel_split"). Tree LL allreduce of
// 64 KiB on one DGX A100: the thread threshold (8 bytes x 512 LL threads = 4 KiB a channel) leaves 16 of the 24
// channels. Then the traffic: 2 x 64 KiB = 128 KiB, 8 KiB a channel.
// 2.25: cells of 16 KiB of traffic = 8 KiB of data, 8 of them; a channel's share is at least one cell (16 KiB), so one
//   cell each: 8 channels.
// 2.26: LL traffic counts 4 times: 512 KiB, 32 KiB a channel; cells of 16 KiB of traffic = 2 KiB of data, 32 of them,
//   2 a channel: 16 channels.
// 2.29: cells of 32 KiB of traffic = 4 KiB of data, 16 of them; the share 32 KiB (rounded to 16 bytes) is one cell:
//   16 channels.
TEST(NcclModel, EachReleaseSpreadsAnLlCollectiveByItsOwnRule) {
  auto t = dgx_a100_one_node();
  const auto channels = [&](const char* release) {
    nccl::use_release(*t, release, "test", "");
    return nccl::predict_with(allreduce(64 << 10), *t, Algorithm::Tree, Protocol::LL, {}).channels;
  };
  EXPECT_EQ(channels("2.25.1"), 8);
  EXPECT_EQ(channels("2.26.2"), 16);
  EXPECT_EQ(channels("2.29.7"), 16);
}

// NCCL 2.22 spreads a collective in 16-byte cells, each channel's share of the traffic at least 512 bytes, the first
// channel's share rounded down to whole cells and the others' up (src/enqueue.cc v2.22.3-1:583-700).
// NVLS allreduce on one DGX H100 (16 NVLS channels, no thread trimming), traffic 2 x bytes, cells of 32 bytes of
// traffic: 1 KiB: share max(512, 2048 / 16) = 512 = 16 cells; 64 cells = 16 + 3 x 16, the last full one counted as
// the last: 4 channels. 2 KiB: 128 cells, 8 channels. 4 KiB: share 8192 / 16 = 512, 256 cells: 16.
// 4100 bytes: share 8200 / 16 = 512, 257 cells = 16 + 15 x 16 + 1 would take 17 channels, past the 16 there are:
// the 241 after the first spread over the other 15: 16.
// Ring LL128 allgather of 128 000 B on 4 DGX H100 (32 ranks, the 24 channels the thread thresholds leave): one rank's
// 4000 B, traffic x 32 = 128 000, share 128 000 / 24 = 5333; cells of 16 x 32 = 512 bytes of traffic, 250 of them;
// the first channel floor(5333 / 512) = 10, the others ceil = 11: 240 = 21 x 11 + 9, so 1 + 21 + 1 = 23.
// 2.23's rule gives 8 there (cells of 16 KiB of traffic = 512 B of data, 8 of them, one a channel), 2.21 all 24.
TEST(NcclModel, Nccl222SpreadsTrafficInSixteenByteCells) {
  auto one_node = load_topology(shipped("dgx-h100"), 1);
  nccl::use_release(*one_node, "2.22.3", "test", "");
  const auto nvls_channels = [&](Bytes bytes) {
    return nccl::predict_with(allreduce(bytes), *one_node, Algorithm::Nvls, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(nvls_channels(1024), 4);
  EXPECT_EQ(nvls_channels(2048), 8);
  EXPECT_EQ(nvls_channels(4096), 16);
  EXPECT_EQ(nvls_channels(4100), 16);

  auto four_nodes = load_topology(shipped("dgx-h100"), 4);
  CollectiveSpec gather = allreduce(128000);
  gather.op = Collective::AllGather;
  const auto ring_ll128_channels = [&](const char* release) {
    nccl::use_release(*four_nodes, release, "test", "");
    return nccl::predict_with(gather, *four_nodes, Algorithm::Ring, Protocol::LL128, {}).channels;
  };
  EXPECT_EQ(ring_ll128_channels("2.22.3"), 23);
  EXPECT_EQ(ring_ll128_channels("2.23.4"), 8);
  EXPECT_EQ(ring_ll128_channels("2.21.5"), 24);
}

// A collective whose cells overrun its shares takes one channel more than the thread thresholds left, as NCCL's plan
// does (the cells past nc x the share go to the next channel, up to comm->nChannels). Ring Simple allreduce on one
// DGX A100, NCCL 2.26 (24 channels, 512 threads x 64 bytes = 32 KiB a channel): 294 912 B = 9 x 32 KiB keeps 9
// channels; traffic 2 x 294 912, a share of 65 536 = 4 cells of 16 KiB of traffic (8 KiB of data); 36 cells on 9
// channels. 294 916 B: still 9 by the threads (under 10 x 32 KiB), the share floor(589 832 / 9) = 65 536 = 4 cells,
// but ceil(294 916 / 8192) = 37 cells: 9 channels of 4 and one of 1, 10 channels.
TEST(NcclModel, CellsPastTheSharesTakeOneChannelMore) {
  auto t = dgx_a100_one_node();
  nccl::use_release(*t, "2.26.2", "test", "");
  const auto channels = [&](Bytes bytes) {
    return nccl::predict_with(allreduce(bytes), *t, Algorithm::Ring, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(channels(294912), 9);
  EXPECT_EQ(channels(294916), 10);
}

// The Simple cell of one collective and algorithm in NCCL's tuning table of a topology priced as `release`.
nccl::TuningCell simple_cell(Topology& topology, const char* release, const std::string& collective,
                             const std::string& algorithm) {
  nccl::use_release(topology, release, "test", "");
  const nccl::TuningTable table = nccl::tuning_table(topology);
  const auto a = std::find(table.algorithms.begin(), table.algorithms.end(), algorithm);
  EXPECT_NE(a, table.algorithms.end()) << algorithm;
  for (const nccl::TuningRow& row : table.rows)
    if (row.collective == collective && a != table.algorithms.end())
      return row.cells.at(static_cast<std::size_t>(a - table.algorithms.begin()) * 3 + 2);
  ADD_FAILURE() << collective << " is not a row of " << release << "'s table";
  return {};
}

// 2.27 prices NVLS allgather and reduce-scatter at min(bwIntra (ppn - 1) / ppn, 0.9 bwInter) a channel, allreduce
// as before at min(bwIntra, bwInter) (tuning.cc v2.27.7-1:267-275). On one node the search's bwInter is 1.5 bwIntra,
// so allgather keeps 7/8 of 2.26's bandwidth on 8 GPUs (0.9 x 1.5 = 1.35 is not the smaller) and allreduce all of it.
// 2.28 prices NVLS by the efficiency rule of 2.29 (bwIntra x 0.85 on Hopper x (nCh - 1) / nCh, x 2 for allreduce),
// the same cell as 2.29's.
TEST(NcclTuningTable, NvlsGathersTakeTheirShareFrom227AndTheEfficiencyRuleFrom228) {
  auto t = load_topology(shipped("dgx-h100"), 1);
  const double gather_226 = simple_cell(*t, "2.26.6", "AllGather", "NVLS").algbw_GBps;
  const double gather_227 = simple_cell(*t, "2.27.7", "AllGather", "NVLS").algbw_GBps;
  ASSERT_GT(gather_226, 0);
  EXPECT_NEAR(gather_227, gather_226 * 7 / 8, 1e-9 * gather_226);
  EXPECT_EQ(simple_cell(*t, "2.27.7", "AllReduce", "NVLS").algbw_GBps,
            simple_cell(*t, "2.26.6", "AllReduce", "NVLS").algbw_GBps);
  const double allreduce_228 = simple_cell(*t, "2.28.9", "AllReduce", "NVLS").algbw_GBps;
  EXPECT_EQ(allreduce_228, simple_cell(*t, "2.29.7", "AllReduce", "NVLS").algbw_GBps);
  EXPECT_NE(allreduce_228, simple_cell(*t, "2.27.7", "AllReduce", "NVLS").algbw_GBps);
}

// From 2.27 one Blackwell node runs 24 NVLS channels (NVLS_NCHANNELS_SM100_NVL, transport/nvls.cc v2.27.7-1:149,193),
// two nodes 32 (NVLS_NCHANNELS_SM100); 2.25 and 2.26 run 32 on one node too.
TEST(NcclModel, OneBlackwellNodeRuns24NvlsChannelsFrom227) {
  const auto nvls_channels = [](int nodes, const char* release) {
    auto t = load_topology(shipped("hgx-b200"), nodes);
    nccl::use_release(*t, release, "test", "");
    const Algorithm a = nodes == 1 ? Algorithm::Nvls : Algorithm::NvlsTree;
    return nccl::predict_with(allreduce(64 << 20), *t, a, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(nvls_channels(1, "2.26.2"), 32);
  EXPECT_EQ(nvls_channels(1, "2.27.7"), 24);
  EXPECT_EQ(nvls_channels(2, "2.27.7"), 32);
}

// NVLS across nodes (with SHARP) is one of CollNet's kind in NCCL's plan (enqueue.cc: isCollnet = NVLS && nNodes > 1),
// which takes all its channels: 2 nodes of an A3 Mega with CollNet, NCCL 2.29, 64 KiB take NVLS's 16 channels. The
// traffic rule would have left 4 (128 KiB of traffic, 8 KiB a channel, cells of 32 KiB of traffic = 16 KiB of data:
// 4 cells, one a channel).
TEST(NcclModel, NvlsAcrossNodesTakesAllItsChannels) {
  Json with_collnet = Json::parse(read_file(shipped("gcp-a3-mega")));
  with_collnet["library"]["collnet"] = true;
  const auto t = load_topology(write_temp_json("a3-mega-collnet-channels.json", with_collnet), 2);
  nccl::use_release(*t, "2.29.7", "test", "");
  EXPECT_EQ(nccl::predict_with(allreduce(64 << 10), *t, Algorithm::Nvls, Protocol::Simple, {}).channels, 16);
}

// CollNet's channels (enqueue.cc topoGetAlgoInfo): 2 nodes of an A3 Mega with CollNet, NCCL 2.29, 16 channels, 640
// threads and a threshold of 512 bytes a thread.
// Chain, the ring's loop: a channel wants 640 x 512 = 320 KiB, so 1 MiB keeps 3 (3 x 320 KiB <= 1 MiB < 4 x) and
// 4 MiB 12 (12.8).
// Direct, its own loop over 8 heads (16 channels / 2): a channel wants 640 x 8 x 512 = 2.5 MiB. 16 MiB: nothing at
// the switch point 16; towards 8 the threshold halves when nc reaches 12 (1.25 MiB a channel), and 11 channels
// (13.75 MiB) no longer exceed 16 MiB: 11. 4 MiB goes on: 10, 9, 8 (the switch point), 7, then at 6 the threshold
// halves again (640 KiB a channel) and 5 channels (3.125 MiB) fit: 5.
TEST(NcclModel, CollNetTrimsItsChannelsByItsOwnThreads) {
  Json with_collnet = Json::parse(read_file(shipped("gcp-a3-mega")));
  with_collnet["library"]["collnet"] = true;
  const auto t = load_topology(write_temp_json("a3-mega-collnet-threads.json", with_collnet), 2);
  nccl::use_release(*t, "2.29.7", "test", "");
  ASSERT_EQ(nccl::machine_of(*t).channels, 16);
  const auto channels = [&](Algorithm a, Bytes bytes) {
    return nccl::predict_with(allreduce(bytes), *t, a, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(channels(Algorithm::CollNetChain, 1 << 20), 3);
  EXPECT_EQ(channels(Algorithm::CollNetChain, 4 << 20), 12);
  EXPECT_EQ(channels(Algorithm::CollNetDirect, 16 << 20), 11);
  EXPECT_EQ(channels(Algorithm::CollNetDirect, 4 << 20), 5);
}

// PAT has no thread count in NCCL's table (maxThreads stays 0), so only the traffic trims its channels: 2 nodes of
// one L40S, 8 channels, NCCL 2.27, allgather of 128 KiB: one rank's share 64 KiB, traffic 2 x 64 KiB = 128 KiB, 16 KiB
// a channel, cells of 16 KiB of traffic = 8 KiB of data, 8 of them, one a channel: 8. The ring's rule (512 threads x
// 64 bytes = 32 KiB a channel) would have kept 4.
TEST(NcclModel, PatIsTrimmedByItsTrafficAlone) {
  Json doc = Json::parse(read_file(shipped("r760xa-l40s-socket")));
  doc["library"]["channels"] = 8;
  const auto t = load_topology(write_temp_json("l40s-socket-8-channels.json", doc), 2);
  CollectiveSpec spec = allreduce(128 << 10);
  spec.op = Collective::AllGather;
  EXPECT_EQ(nccl::predict_with(spec, *t, Algorithm::Pat, Protocol::Simple, {}).channels, 8);
}

// NVLS-tree's chunk drops to 64 KiB from 4 nodes, not 3 (enqueue.cc calcCollChunking, nNodes >= 4): DGX H100, NCCL
// 2.29, 1 GiB (no size shrinks the chunk: the first rule needs a chunk above 256 KiB, the next ones less than
// 16 x 128 ops x 128 KiB = 256 MiB), 16 NVLS channels x 8 heads = 128 ops. The fill is 3 chunks more per op (4 stages):
// 3 x 128 KiB x 128 = 48 MiB on 3 nodes, 3 x 64 KiB x 128 = 24 MiB on 4.
TEST(NcclModel, NvlsTreeChunkDropsFromFourNodes) {
  const auto fill_bytes = [](int nodes) {
    auto t = load_topology(shipped("dgx-h100"), nodes);
    nccl::use_release(*t, "2.29.7", "test", "");
    const nccl::Estimate e =
        nccl::predict_with(allreduce(Bytes{1} << 30), *t, Algorithm::NvlsTree, Protocol::Simple, {});
    return e.bandwidth_s * e.algbw_Bps - static_cast<double>(Bytes{1} << 30);
  };
  EXPECT_NEAR(fill_bytes(3), 3.0 * 131072 * 128, 1.0);
  EXPECT_NEAR(fill_bytes(4), 3.0 * 65536 * 128, 1.0);
}

// From 2.29 NCCL's estimate applies its tree size correction to NVLS-tree allreduce too, on Blackwell GPUs with x86
// CPUs (tuning.cc v2.29.7-1:596): HGX B200 (Intel), 2 nodes, 8 MiB, log2(8 MiB / 64) = 17, Simple factor 0.8, so the
// bandwidth term is 1 / 0.8 = 1.25 times that of the same machine with Arm CPUs; 2.28 corrects neither.
TEST(NcclModel, NvlsTreeSizeCorrectionOnBlackwellX86From229) {
  const auto bandwidth_s = [](const char* cpu, const char* release) {
    Json doc = Json::parse(read_file(shipped("hgx-b200")));
    doc["library"]["cpu_vendor"] = cpu;
    const auto t = load_topology(write_temp_json(std::string("hgx-b200-") + cpu + ".json", doc), 2);
    nccl::use_release(*t, release, "test", "");
    for (const nccl::Estimate& e : nccl::candidates(allreduce(8 << 20), *t))
      if (e.algorithm == Algorithm::NvlsTree) return e.bandwidth_s;
    ADD_FAILURE() << "no NVLS-tree candidate";
    return 0.0;
  };
  EXPECT_NEAR(bandwidth_s("intel", "2.29.7") / bandwidth_s("arm", "2.29.7"), 1.25, 1e-9);
  EXPECT_NEAR(bandwidth_s("intel", "2.28.9") / bandwidth_s("arm", "2.28.9"), 1.0, 1e-12);
}

// 2.22-2.27 copy the rings up to the NVLS channels and trim from there (graph/connect.cc, v2.23.4-1:496-498); 2.28
// stops copying and runs NVLS across nodes on no more channels than the rings (enqueue.cc v2.28.3-1:1865). HGX B200,
// 16 ring channels, 1 GiB (no trimming): one node runs its rings on the 32 NVLS channels of 2.26, the 24 of 2.27, its
// own 16 from 2.28; two nodes with SHARP run NVLS on its 32 channels in 2.27 (the rings copied to 32 as well) and on
// min(32, 16) in 2.29.
TEST(NcclModel, RingsFollowTheNvlsChannelsUntil228) {
  const auto channels = [](int nodes, Algorithm a, const char* release) {
    Json doc = Json::parse(read_file(shipped("hgx-b200")));
    doc["library"]["collnet"] = true;
    const auto t = load_topology(write_temp_json("hgx-b200-collnet.json", doc), nodes);
    nccl::use_release(*t, release, "test", "");
    return nccl::predict_with(allreduce(Bytes{1} << 30), *t, a, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(channels(1, Algorithm::Ring, "2.26.2"), 32);
  EXPECT_EQ(channels(1, Algorithm::Ring, "2.27.7"), 24);
  EXPECT_EQ(channels(1, Algorithm::Ring, "2.28.9"), 16);
  EXPECT_EQ(channels(2, Algorithm::Nvls, "2.27.7"), 32);
  EXPECT_EQ(channels(2, Algorithm::Ring, "2.27.7"), 32);
  EXPECT_EQ(channels(2, Algorithm::Nvls, "2.29.7"), 16);
  // The copy starts with 2.22 (enqueue.cc v2.22.3-1:1617 trims from comm->nChannels; from collChannels in 2.21): two
  // DGX H200 nodes over one socket NIC (2 ring channels, 16 NVLS channels) run a 1 GiB tree on 2 channels with 2.21,
  // on the 16 copied with 2.22.
  const auto tree_channels = [](const char* release) {
    const auto t = load_topology(shipped("dgx-h200-socket"));
    nccl::use_release(*t, release, "test", "");
    return nccl::predict_with(allreduce(Bytes{1} << 30), *t, Algorithm::Tree, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(tree_channels("2.21.5"), 2);
  EXPECT_EQ(tree_channels("2.22.3"), 16);
}

// NCCL sets NVLS up only on nodes of more than 2 GPUs up to 2.28.3 ("gpuCount <= 2", transport/nvls.cc
// ncclNvlsInit), of at least 2 from 2.28.7 ("gpuCount < 2"): a communicator of 2 GPUs of one DGX H100 has no NVLS
// candidate with 2.18 or 2.27 and has one with 2.29; one of 4 has one with 2.18.
TEST(NcclModel, NvlsOnTwoGpusFrom2287) {
  auto t = load_topology(shipped("dgx-h100"), 1);
  const auto has_nvls = [&](std::vector<int> ranks, const char* release) {
    nccl::use_release(*t, release, "test", "");
    CollectiveSpec spec = allreduce(64 << 20);
    spec.ranks = std::move(ranks);
    const std::vector<nccl::Estimate> all = nccl::candidates(spec, *t);
    return std::any_of(all.begin(), all.end(), [](const nccl::Estimate& e) { return e.algorithm == Algorithm::Nvls; });
  };
  EXPECT_FALSE(has_nvls({0, 1}, "2.18.6"));
  EXPECT_FALSE(has_nvls({0, 1}, "2.27.7"));
  EXPECT_TRUE(has_nvls({0, 1}, "2.29.7"));
  EXPECT_TRUE(has_nvls({0, 1, 2, 3}, "2.18.6"));
}

// The ring's plateau (latency x 1.4 for a Simple allreduce across nodes from 64 bytes a channel and rank) counts the
// communicator's channels, which 2.23-2.27 copy up to the NVLS channels: 2 HGX B200 nodes (16 ranks, 16 ring
// channels, 32 NVLS channels). With 2.26 the threshold is 64 x 32 x 16 = 32 KiB, so 24 KiB has no plateau and 48 KiB
// has it (latency ratio 1.4); with 2.28 (no copy) it is 64 x 16 x 16 = 16 KiB, so both have it (ratio 1).
TEST(NcclModel, RingPlateauCountsTheCommunicatorsChannels) {
  auto t = load_topology(shipped("hgx-b200"), 2);
  const auto latency_ratio = [&](const char* release) {
    nccl::use_release(*t, release, "test", "");
    const double small = nccl::predict_with(allreduce(24 << 10), *t, Algorithm::Ring, Protocol::Simple, {}).latency_s;
    const double large = nccl::predict_with(allreduce(48 << 10), *t, Algorithm::Ring, Protocol::Simple, {}).latency_s;
    return large / small;
  };
  EXPECT_NEAR(latency_ratio("2.26.2"), 1.4, 1e-12);
  EXPECT_NEAR(latency_ratio("2.28.9"), 1.0, 1e-12);
}

// The latencies NCCL 2.20 printed for two nodes of 8 H100 GPUs (https://github.com/NVIDIA/nccl/issues/1519, the
// issue's first log; the part of it we have: the reduce-scatter and allgather rows of the first block and the first
// five AllReduce cells; the bandwidths are that cluster's 200 Gb/s NICs, not the DGX H100's, so only latencies are
// compared). The machine is told by its cells: ring allreduce LL = baseLat 6.6 + (30 steps - 2 x 2 network steps) x
// max(NVLink LL 0.6, Intel net overhead 1.0) + 4 x NET LL 2.7 = 43.4 (16 ranks on 2 nodes, Intel hosts); tree Simple =
// 2 x ((8 - 1) x 28 + log2(2) x 28) = 448.0 (8 GPUs per node). The 2.20 constants, each cell:
//   AllGather / ReduceScatter ring: 15 steps, one across nodes: LL 6.6 + 14 x 1.0 + 2.7 = 23.3; LL128 14.0 + 14 x
//     max(1.9, 1.0) + 4.0 = 44.6; Simple 8.4 + 14 x max(3.4, 3 x 1.0) + 14.0 = 70.0;
//   CollNet direct (modelled for them from 2.20): 2 x (min(1, 7) x intra + 7 x arity 0.4) + inter: LL and LL128 have
//     no CollNet latencies (0), so 5.6; Simple 2 x (3.7 + 2.8) + 31 = 44.0;
//   AllReduce tree: LL 6.8 + 2 x (7 x 0.6 + 5.0) = 25.2; LL128 14.0 + 2 x (7 x 1.25 + 8.5) = 48.5; Simple 448.0;
//   ring LL 43.4; LL128 14.0 + 26 x 1.9 + 4 x 4.0 = 79.4.
// With the 2.18 constants (which priced 2.19 and 2.20 before they had tables of their own) tree Simple would be
// 2 x (7 x 4 + 14) = 84 and CollNet direct would have no allgather cells.
TEST(NcclTuningTable, LatenciesMatchNcclsOwnOnTwoH100NodesWithNccl220) {
  auto t = load_topology(shipped("dgx-h100"), 2);
  nccl::use_release(*t, "2.20.5", "test", "");
  const nccl::TuningTable table = nccl::tuning_table(*t);
  const auto latency = [&](const std::string& collective, int algorithm, int protocol) {
    const auto row = std::find_if(table.rows.begin(), table.rows.end(),
                                  [&](const nccl::TuningRow& r) { return r.collective == collective; });
    EXPECT_NE(row, table.rows.end()) << collective;
    return row == table.rows.end() ? -1.0 : row->cells[std::size_t(algorithm * 3 + protocol)].latency_us;
  };
  for (const std::string gather : {"AllGather", "ReduceScatter"}) {
    const double nccl_printed[] = {0, 0, 0, 23.3, 44.6, 70.0, 5.6, 5.6, 44.0};  // Tree, Ring, CollNetDirect
    for (int cell = 0; cell < 9; ++cell)
      EXPECT_NEAR(latency(gather, cell / 3, cell % 3), nccl_printed[cell], 0.05) << gather << " cell " << cell;
  }
  const double allreduce_printed[] = {25.2, 48.5, 448.0, 43.4, 79.4};  // Tree LL, LL128, Simple, Ring LL, LL128
  for (int cell = 0; cell < 5; ++cell)
    EXPECT_NEAR(latency("AllReduce", cell / 3, cell % 3), allreduce_printed[cell], 0.05) << "AllReduce cell " << cell;
}

// Patch releases whose tuning.cc differs have tables of their own: within 2.28, v2.28.3-1 has NVLSTree NET hwLat 14
// (tuning.cc:165; 20.9 from v2.28.9-1) and NVLS from 3 GPUs a node (transport/nvls.cc:160 'gpuCount <= 2'; 2 from
// v2.28.7-1:161). A version without its patch is its line's newest release ("2.28" is 2.28.9); 2.18.1, before the
// first table (2.18.3: v2.18.1-1's tuning.cc differs), has none.
TEST(NcclTuningTable, PatchReleasesThatChangeTheConstantsHaveTheirOwnTables) {
  EXPECT_EQ(nccl::table_for("2.28"), "2.28.9");
  EXPECT_EQ(nccl::table_for("2.28.3"), "2.28.3");
  EXPECT_EQ(nccl::table_for("2.28.8"), "2.28.7");
  EXPECT_EQ(nccl::table_for("2.29.3"), "2.29.2");
  EXPECT_EQ(nccl::table_for("2.18"), "2.18.3");
  EXPECT_EQ(nccl::table_for("2.18.1"), "");
  const auto nvls_tree_net_us = [](const char* release) {
    return nccl::detail::find_table(release)->hw_latency_us[nccl::detail::kNetHw][nccl::detail::kNvlsTree][2];
  };
  EXPECT_EQ(nvls_tree_net_us("2.28.3"), 14.0);
  EXPECT_EQ(nvls_tree_net_us("2.28.7"), 14.0);
  EXPECT_EQ(nvls_tree_net_us("2.28.9"), 20.9);
  EXPECT_EQ(nccl::detail::find_table("2.28.3")->nvls_min_gpus_per_node, 3);
  EXPECT_EQ(nccl::detail::find_table("2.28.7")->nvls_min_gpus_per_node, 2);
}

// A Simple ring runs 256 threads, not 512, where its graph's bwIntra x nChannels is at most PCI_BW, 12 GB/s
// (tuning.cc v2.18.6-1:121); across nodes the search sets bwIntra to bwInter (search.cc v2.27.7-1:1052), so a ring
// bound by one socket NIC (dgx-h200-socket: 10.5 GB/s) counts, however fast NVLink is inside. Channels are trimmed
// while bytes < channels x threads x 64 (the Simple threshold): 65536 / (256 x 64) = 4 channels at 64 KiB, 8 at
// 128 KiB, 16 at 256 KiB (with 512 threads it would be 2, 4 and 8).
TEST(NcclModel, ASimpleRingBoundByItsNicRunsFewerThreads) {
  const auto t = load_topology(shipped("dgx-h200-socket"));
  for (const auto& [bytes, channels] : {std::pair{Bytes{64} << 10, 4}, {Bytes{128} << 10, 8}, {Bytes{256} << 10, 16}})
    EXPECT_EQ(nccl::predict_with(allreduce(bytes), *t, Algorithm::Ring, Protocol::Simple, {}).channels, channels)
        << bytes;
}

// Up to 2.27 NCCL's tuning loop prices NVLS and NVLS-tree latencies even without an NVLS graph (bandwidth 0), so its
// printed table shows them: on one DGX A100 (NVLink inside: hwLat NVLINK NVLS Simple 23 to 2.20, 25 from 2.21;
// NVLS's latency is that alone on one node, NVLS-tree's baseLat 0 + it + 2 log2(1) x net = the same). From 2.28
// (tuning.cc v2.28.3-1:288, fewer than 2 channels: skipped) both are 0.
TEST(NcclTuningTable, NvlsLatenciesArePricedWithoutNvlsUntil228) {
  const auto nvls_allreduce = [](const char* release) {
    auto t = load_topology(shipped("dgx-a100"), 1);
    nccl::use_release(*t, release, "--nccl-version", "");
    const nccl::TuningTable table = nccl::tuning_table(*t, "", "", 0);
    for (const nccl::TuningRow& row : table.rows)
      if (row.collective == "AllReduce")
        return std::pair{row.cells[nccl::detail::kNvls * 3 + 2], row.cells[nccl::detail::kNvlsTree * 3 + 2]};
    ADD_FAILURE() << "no AllReduce row";
    return std::pair<nccl::TuningCell, nccl::TuningCell>{};
  };
  for (const auto& [release, latency_us] : {std::pair{"2.18.6", 23.0}, {"2.21.5", 25.0}, {"2.28.9", 0.0}}) {
    const auto [nvls, nvls_tree] = nvls_allreduce(release);
    EXPECT_DOUBLE_EQ(nvls.latency_us, latency_us) << release;
    EXPECT_DOUBLE_EQ(nvls_tree.latency_us, latency_us) << release;
    EXPECT_EQ(nvls.algbw_GBps, 0.0) << release;
  }
}

// NCCL's loop gives reduce-scatter and allgather NVLS from 2.19 and CollNet direct from 2.20 (tuning.cc
// v2.18.6-1:168-169 ring only; v2.19.4-1:168-169 ring and NVLS; v2.20.5-1:169-170 and CollNet direct): on one DGX
// H100 node (NVSwitch with NVLS) NCCL 2.18 cannot run an NVLS allgather, 2.19 can; CollNet direct is priced (and, with
// no SHARP here, disabled) from 2.20 only. Each release uses its own table.
TEST(NcclTuningTable, GathersGainNvlsIn219AndCollNetIn220) {
  EXPECT_EQ(nccl::table_for("2.18.6"), "2.18.3");
  EXPECT_EQ(nccl::table_for("2.19.3"), "2.19");
  EXPECT_EQ(nccl::table_for("2.20.5"), "2.20");
  EXPECT_EQ(nccl::table_for("2.22.3"), "2.22");
  const std::pair<std::string, bool> nvls_allgather[] = {{"2.18.6", false}, {"2.19.3", true}, {"2.20.5", true}};
  for (const auto& [release, has_nvls] : nvls_allgather) {
    auto t = load_topology(shipped("dgx-h100"), 1);
    nccl::use_release(*t, release, "test", "");
    CollectiveSpec spec = allreduce(64 << 20);
    spec.op = Collective::AllGather;
    const auto all = nccl::candidates(spec, *t);
    const bool nvls =
        std::any_of(all.begin(), all.end(), [](const nccl::Estimate& e) { return e.algorithm == Algorithm::Nvls; });
    EXPECT_EQ(nvls, has_nvls) << release;
    const nccl::TuningTable table = nccl::tuning_table(*t);
    ASSERT_GT(table.rows.size(), 2u);
    ASSERT_EQ(table.rows[2].collective, "AllGather");
    ASSERT_GT(table.rows[2].cells.size(), 2u * 3 + 2);
    const nccl::TuningCell& collnet_simple = table.rows[2].cells[2 * 3 + 2];  // AllGather, CollNetDirect, Simple
    EXPECT_EQ(collnet_simple.latency_us > 0, release == "2.20.5") << release;
    EXPECT_EQ(collnet_simple.algbw_GBps, 0) << release;
  }
}

// NCCL_ALGO / NCCL_PROTO act per collective, as NCCL applies them: a disabled cell keeps its latency with bandwidth 0.
// "ring" leaves the tree cells at latency / 0; "^LL" the LL cells; "allreduce:tree" in a second entry turns the
// AllReduce row to tree only while the other collectives keep the first entry's ring.
TEST(NcclTuningTable, NcclAlgoAndProtoZeroTheBandwidthOfWhatTheyDisable) {
  auto t = dgx_a100_one_node();
  const nccl::TuningTable all = nccl::tuning_table(*t);
  const nccl::TuningTable ring = nccl::tuning_table(*t, "ring");
  const nccl::TuningTable no_ll = nccl::tuning_table(*t, "", "^LL");
  const nccl::TuningTable per_op = nccl::tuning_table(*t, "ring;allreduce:tree");
  const auto at = [](const nccl::TuningTable& table, int row, int algorithm, int protocol) {
    return table.rows[std::size_t(row)].cells[std::size_t(algorithm * 3 + protocol)];
  };
  constexpr int kAllReduce = 4, kAllGather = 2, kTree = 0, kRing = 1;
  EXPECT_EQ(at(ring, kAllReduce, kTree, 2).algbw_GBps, 0);
  EXPECT_EQ(at(ring, kAllReduce, kTree, 2).latency_us, at(all, kAllReduce, kTree, 2).latency_us);
  EXPECT_EQ(at(ring, kAllReduce, kRing, 2).algbw_GBps, at(all, kAllReduce, kRing, 2).algbw_GBps);
  EXPECT_EQ(at(no_ll, kAllReduce, kRing, 0).algbw_GBps, 0);
  EXPECT_GT(at(no_ll, kAllReduce, kRing, 1).algbw_GBps, 0);
  EXPECT_EQ(at(per_op, kAllReduce, kRing, 2).algbw_GBps, 0);
  EXPECT_GT(at(per_op, kAllReduce, kTree, 2).algbw_GBps, 0);
  EXPECT_GT(at(per_op, kAllGather, kRing, 2).algbw_GBps, 0);
}

// From 2.23 NCCL has seven algorithms: PAT is a third block of its own, which NCCL still heads with three algorithms'
// protocols (tuning.cc v2.26.2-1:457-463).
TEST(NcclTuningTable, PatJoinsTheTableFrom223) {
  auto t = dgx_a100_one_node();
  nccl::use_release(*t, "2.26.2", "test", "");
  const nccl::TuningTable table = nccl::tuning_table(*t);
  ASSERT_EQ(table.algorithms.size(), 7u);
  EXPECT_EQ(table.algorithms[6], "PAT");
  const std::string text = nccl::format_tuning_table(table);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3 * (2 + 5));
  EXPECT_NE(text.find("                             PAT                  |\n"), std::string::npos) << text;
}

// The choice follows the estimates: LL wins at 1 MiB (46.6 us, above); at 2 MiB LL costs 15.0 + 63.22 = 78.2 and
// LL128 40.6 + 17.18 = 57.8 (Simple 56.0 + 15.8 = 71.8); at 64 MiB LL128 40.6 + 549.8 = 590.4 and Simple
// 56.0 + 505.8 = 561.8. No NVLS on A100, and tree on one node is slower (its LL128 correction at these sizes).
TEST(NcclModel, ChoosesTheProtocolOfLeastEstimatedTime) {
  auto t = dgx_a100_one_node();
  const std::pair<Bytes, Protocol> expected[] = {
      {1 << 20, Protocol::LL}, {2 << 20, Protocol::LL128}, {64 << 20, Protocol::Simple}};
  for (auto [bytes, proto] : expected) {
    const nccl::Estimate e = nccl::choose(allreduce(bytes), *t);
    EXPECT_EQ(e.algorithm, Algorithm::Ring) << bytes;
    EXPECT_EQ(e.protocol, proto) << bytes;
  }
  // Forcing a protocol (NCCL_PROTO=Simple) gives that protocol's estimate.
  CollectiveSpec forced = allreduce(1 << 20);
  forced.protocol = Protocol::Simple;
  EXPECT_EQ(nccl::choose(forced, *t).protocol, Protocol::Simple);
  // NVLS needs NVLink SHARP (Hopper NVSwitch): forcing it on A100 is bad input naming the option.
  forced.algorithm = Algorithm::Nvls;
  EXPECT_THROW(nccl::choose(forced, *t, "--algo"), InputError);
}

// A node of one GPU: NCCL's search gives its graphs typeIntra PATH_LOC (search.cc v2.18.6-1:827), which LL128's test
// typeIntra <= PATH_NVB passes (tuning.cc v2.18.6-1:286); with GPUDirect RDMA to the NIC on the GPU's PCIe switch
// (typeInter PIX) and Hopper, LL128 is on (it was off here: no NVLink in the node). 4 nodes of one H100 (the fixture,
// NCCL 2.18): ring LL's busBw is a quarter of the network's across nodes (tuning.cc's ring LL refinement) where
// LL128 keeps 0.7 of it (ppn < 2), so at 1 MiB ring/LL128 is NCCL's argmin despite its higher latency.
TEST(NcclModel, Ll128RunsOnNodesOfOneGpu) {
  auto t = load_topology(fixture("nccl-tuning/h100-one-gpu-per-node.json"), 4);
  const CollectiveSpec spec = allreduce(1 << 20);
  const std::vector<nccl::Estimate> all = nccl::candidates(spec, *t);
  EXPECT_LT(estimate_us(all, Algorithm::Ring, Protocol::LL128), estimate_us(all, Algorithm::Ring, Protocol::LL));
  const nccl::Estimate chosen = nccl::choose(spec, *t);
  EXPECT_EQ(chosen.algorithm, Algorithm::Ring);
  EXPECT_EQ(chosen.protocol, Protocol::LL128);
}

// Trees on 2 nodes are priced with the node part alone, which NCCL's search raises up to twice the network's
// (tuning.cc: bw = nNodes <= 2 ? bwIntra : bwInter; search.cc: "increase bwIntra for trees (2 nodes or collnet)").
// GCP A3 Mega (gcp-a3-mega.json, NCCL 2.21 table): 369.9 GB/s per GPU inside the node, 188.6 GB/s of network per
// node, 16 channels (8 in the search). Tree Simple: busBw = min(0.92 x bw, 8 x perChMaxTreeBw[Hopper]), algbw =
// busBw / 2:
//   2 nodes: bw = min(369.9, 2 x 188.6) = 369.9 -> min(340.308, 8 x 41.4 = 331.2) / 2 = 165.6 GB/s
//   4 nodes: bw = min(369.9, 188.6) = 188.6     -> min(173.512, 8 x 36.0 = 288) / 2   = 86.756 GB/s
// A ring stays bounded by the network: 188.6 x 16 / (2 x 15) = 100.587 GB/s on 2 nodes.
// CollNet follows the same rule at any node count: the same machine with CollNet (library.collnet), 4 nodes, CollNet
// chain (no refinement of its own): busBw = min(369.9, 2 x 188.6) = 369.9, algbw = busBw / 2 = 184.95 GB/s.
TEST(NcclModel, TreesOnTwoNodesArePricedWithTheNodePart) {
  auto algbw_GBps = [](const Topology& t, Algorithm a) {
    for (const nccl::Estimate& e : nccl::candidates(allreduce(1 << 30), t))
      if (e.algorithm == a && e.protocol == Protocol::Simple) return e.algbw_Bps / 1e9;
    ADD_FAILURE() << to_string(a) << " on " << t.nodes() << " nodes";
    return 0.0;
  };
  EXPECT_NEAR(algbw_GBps(*load_topology(shipped("gcp-a3-mega"), 2), Algorithm::Tree), 165.6, 1e-9);
  EXPECT_NEAR(algbw_GBps(*load_topology(shipped("gcp-a3-mega"), 4), Algorithm::Tree), 86.756, 1e-9);
  EXPECT_NEAR(algbw_GBps(*load_topology(shipped("gcp-a3-mega"), 2), Algorithm::Ring), 188.6 * 16 / 30, 1e-9);
  Json with_collnet = Json::parse(read_file(shipped("gcp-a3-mega")));
  with_collnet["library"]["collnet"] = true;
  const auto collnet = load_topology(write_temp_json("a3-mega-collnet.json", with_collnet), 4);
  EXPECT_NEAR(algbw_GBps(*collnet, Algorithm::CollNetChain), 369.9 / 2, 1e-9);
}

// NCCL_ALGO / NCCL_PROTO lists, on the examples of NCCL's own comment above parseList (src/graph/tuning.cc). Bit i
// is NCCL's i-th algorithm (Tree 0, Ring 1, CollNetDirect 2, CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6) or protocol
// (LL 0, LL128 1, Simple 2).
TEST(NcclList, ParsesAsNcclDoes) {
  auto algos = [](const char* text, Collective op) { return nccl::parse_nccl_list(text, op, false, "--algo"); };
  auto protos = [](const char* text, Collective op) { return nccl::parse_nccl_list(text, op, true, "--proto"); };
  // "Enable ring and collnetdirect for all functions, then select tree and collnetdirect for allreduce and ring for
  // broadcast."
  const char* per_op = "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring";
  EXPECT_EQ(algos(per_op, Collective::AllReduce), 0b0000101u);
  EXPECT_EQ(algos(per_op, Collective::ReduceScatter), 0b0000110u);
  EXPECT_EQ(algos(per_op, Collective::Broadcast), 0b0000010u);
  // "Enable LL and Simple for all functions, but everything except LL for allreduce."
  EXPECT_EQ(protos("LL,Simple;allreduce:^LL", Collective::AllReduce), 0b110u);
  EXPECT_EQ(protos("LL,Simple;allreduce:^LL", Collective::AllGather), 0b101u);
  // "Enable everything but LL128, but only LL128 for allreduce."
  EXPECT_EQ(protos("^LL128;allreduce:LL128", Collective::AllReduce), 0b010u);
  EXPECT_EQ(protos("^LL128;allreduce:LL128", Collective::AllGather), 0b101u);
  // Names ignore case, in NCCL's spelling or commsim's.
  EXPECT_EQ(algos("NVLSTree,nvlstree,collnet_direct,PAT", Collective::AllGather), 0b1100100u);
  // What NCCL refuses (ncclInvalidUsage): bad input naming the option.
  for (const char* bad : {"ring,bogus", "allreduce:tree;ring", "ring;sendrecv:tree", "allreduce:tree:ring"})
    EXPECT_THROW(algos(bad, Collective::AllReduce), InputError) << bad;
  // A list may enable nothing for one collective (0) and something for another; as a spec's set it is bad input.
  const char* none_for_allreduce = "ring;allreduce:^tree,ring,collnetdirect,collnetchain,nvls,nvlstree,pat";
  EXPECT_EQ(algos(none_for_allreduce, Collective::AllReduce), 0u);
  EXPECT_EQ(algos(none_for_allreduce, Collective::AllGather), 0b0000010u);
  EXPECT_THROW(nccl::enabled_by_list(none_for_allreduce, Collective::AllReduce, false, "--algo"), InputError);
  EXPECT_TRUE(nccl::is_nccl_list("^nvls"));
  EXPECT_FALSE(nccl::is_nccl_list("nvlstree"));
}

// A list narrows NCCL's choice to what it enables. One DGX A100 at 1 MiB (hand-worked above): ring LL 46.611 us,
// LL128 49.190, Simple 63.903; LL wins. NCCL_PROTO=^LL leaves LL128, NCCL_PROTO=Simple,LL128;allreduce:Simple leaves
// Simple for an allreduce.
TEST(NcclList, NarrowsNcclsChoice) {
  auto t = dgx_a100_one_node();
  CollectiveSpec spec = allreduce(1 << 20);
  spec.nccl_algorithms = nccl::enabled_by_list("ring", spec.op, false, "--algo");
  EXPECT_EQ(nccl::choose(spec, *t).protocol, Protocol::LL);
  spec.nccl_protocols = nccl::enabled_by_list("^LL", spec.op, true, "--proto");
  nccl::Estimate e = nccl::choose(spec, *t);
  EXPECT_EQ(e.protocol, Protocol::LL128);
  EXPECT_NEAR(e.seconds * 1e6, 40.6 + 1048576 / (1000 * 213.624 * 8 / 14), 1e-6);
  spec.nccl_protocols = nccl::enabled_by_list("Simple,LL128;allreduce:Simple", spec.op, true, "--proto");
  e = nccl::choose(spec, *t);
  EXPECT_EQ(e.protocol, Protocol::Simple);
  EXPECT_NEAR(e.seconds * 1e6, 56.0 + 1048576 / (1000 * 232.2 * 8 / 14), 1e-6);
  // NVLS is not on A100: a list that enables only it leaves NCCL nothing to run, bad input naming the option.
  spec.nccl_algorithms = nccl::enabled_by_list("nvls", spec.op, false, "--algo");
  spec.nccl_protocols = 0;
  EXPECT_THROW(nccl::choose(spec, *t, "--algo"), InputError);
}

// Channels launched (enqueue.cc): fewer while n < nc x threads x threshold. Ring LL: threshold 8 x 8 ranks = 64 B
// per thread, 512 threads, so 32 KiB per channel: 64 KiB -> 2 channels, 256 KiB -> 8, 512 KiB -> 16, 768 KiB and
// more -> all 24.
// Simple: 64 B x 512 threads = 32 KiB per channel as well.
TEST(NcclModel, SmallMessagesLaunchFewerChannels) {
  auto t = dgx_a100_one_node();
  const auto channels = [&](Bytes bytes, Protocol p) {
    return nccl::predict_with(allreduce(bytes), *t, Algorithm::Ring, p, {}).channels;
  };
  EXPECT_EQ(channels(64 << 10, Protocol::LL), 2);
  EXPECT_EQ(channels(256 << 10, Protocol::LL), 8);
  EXPECT_EQ(channels(512 << 10, Protocol::LL), 16);
  EXPECT_EQ(channels(768 << 10, Protocol::LL), 24);
  EXPECT_EQ(channels(8 << 20, Protocol::LL), 24);
  EXPECT_EQ(channels(64 << 10, Protocol::Simple), 2);
  EXPECT_EQ(channels(8, Protocol::Simple), 1);
}

// Fitted scales multiply the two terms: latency 2 and bandwidth 0.5 double both, so the time doubles.
TEST(NcclModel, ScalesMultiplyLatencyAndDivideBandwidth) {
  auto t = dgx_a100_one_node();
  const nccl::Estimate plain = nccl::predict_with(allreduce(1 << 20), *t, Algorithm::Ring, Protocol::LL, {});
  const nccl::Estimate scaled = nccl::predict_with(allreduce(1 << 20), *t, Algorithm::Ring, Protocol::LL, {2.0, 0.5});
  EXPECT_NEAR(scaled.seconds, 2 * plain.seconds, 1e-12);
}

// NVLS on one DGX H100 (8 GPUs, 16 NVLS channels: 16 x 8 heads = 128 concurrent ops) is a pipeline of 3 stages
// for allreduce (scatter, reduce + broadcast through the switch, gather), so the bandwidth term carries 2 extra
// chunks per op. NCCL's chunk (enqueue.cc): 128 KiB, 64 KiB below 64 x 128 x 128 KiB = 1 GiB, 32 KiB below
// 8 x 128 x 64 KiB = 64 MiB, 16 KiB below 2 x 128 x 32 KiB = 8 MiB.
//   8 MiB:   chunk 32 KiB (8 MiB is not below 8 MiB), 64 KiB per op -> fill 2 x 32 KiB x 128 = 8 MiB: the bandwidth
//            term is (8 + 8) MiB / algbw, twice the bytes' own;
//   1 MiB:   chunk 16 KiB, 8 KiB per op (less than a chunk) -> fill 2 x 8 KiB x 128 = 2 MiB: three times;
//   1 GiB:   chunk 128 KiB -> fill 2 x 128 KiB x 128 = 32 MiB: (1024 + 32) / 1024 of the bytes' own.
// Reduce-scatter has 2 stages (scatter, reduce): at 8 MiB one extra chunk, 4 MiB -> 1.5 times. Ring has no fill.
// NVLS-tree on two DGX H100 (NCCL 2.18: largest chunk the Simple step, 512 KiB; 4 stages: scatter, reduce and send,
// receive and broadcast, gather; 128 concurrent ops): 64 MiB is below 32 x 128 x 512 KiB and 16 x 128 x 256 KiB,
// not below 4 x 128 x 128 KiB = 64 MiB -> chunk 128 KiB, fill 3 x 128 KiB x 128 = 48 MiB: (64 + 48) / 64 = 1.75;
// 8 MiB -> 64 KiB (not below 1 x 128 x 64 KiB = 8 MiB), fill 3 x 64 KiB x 128 = 24 MiB: 4 times.
TEST(NcclModel, NvlsPipelineFillsWithNcclsChunks) {
  auto t = load_topology(shipped("dgx-h100"), 1);
  const auto ratio = [&](Collective op, Algorithm a, Bytes bytes) {
    CollectiveSpec s = allreduce(bytes);
    s.op = op;
    const nccl::Estimate e = nccl::predict_with(s, *t, a, Protocol::Simple, {});
    EXPECT_NEAR(e.seconds, e.latency_s + e.bandwidth_s, 1e-15);
    return e.bandwidth_s * e.algbw_Bps / static_cast<double>(bytes);
  };
  EXPECT_NEAR(ratio(Collective::AllReduce, Algorithm::Nvls, 8 << 20), 2.0, 1e-12);
  EXPECT_NEAR(ratio(Collective::AllReduce, Algorithm::Nvls, 1 << 20), 3.0, 1e-12);
  EXPECT_NEAR(ratio(Collective::AllReduce, Algorithm::Nvls, Bytes{1} << 30), 1056.0 / 1024, 1e-12);
  EXPECT_NEAR(ratio(Collective::AllReduce, Algorithm::Ring, 8 << 20), 1.0, 1e-12);
  t = load_topology(shipped("dgx-h100"), 2);
  EXPECT_NEAR(ratio(Collective::AllReduce, Algorithm::NvlsTree, 64 << 20), 1.75, 1e-12);
  EXPECT_NEAR(ratio(Collective::AllReduce, Algorithm::NvlsTree, 8 << 20), 4.0, 1e-12);
  // NVLS reduce-scatter needs NCCL 2.22 or newer: one DGX H200 (8 GPUs, NCCL 2.27, 16 NVLS channels).
  t = load_topology(shipped("dgx-h200-socket"), 1);
  EXPECT_NEAR(ratio(Collective::ReduceScatter, Algorithm::Nvls, 8 << 20), 1.5, 1e-12);
}

// The same chunks set the rounds an NVLS kernel runs: each round moves one chunk on each of the 128 ops (16 channels
// x 8 heads on one DGX H100), so a round is 128 chunks and the rounds are ceil(bytes / (128 x chunk)):
//   1 MiB: chunk 16 KiB, a round 2 MiB -> 1;   8 MiB: 32 KiB, 4 MiB -> 2;   32 MiB: 32 KiB -> 8;
//   64 MiB: 64 KiB (not below 64 MiB), 8 MiB -> 8;   1 GiB: 128 KiB, 16 MiB -> 64.
// NVLS-tree on two DGX H100 at 64 MiB: chunk 128 KiB (above), 128 ops -> 4 rounds. Ring runs none. A fitted cost per
// round (ModelScale::chunk_round_us) adds rounds x that to the time and nothing else: 8 x 5 us at 32 MiB.
TEST(NcclModel, NvlsRunsRoundsOfOneChunkPerOp) {
  auto t = load_topology(shipped("dgx-h100"), 1);
  const auto rounds = [&](Algorithm a, Bytes bytes) {
    return nccl::predict_with(allreduce(bytes), *t, a, Protocol::Simple, {}).chunk_rounds;
  };
  EXPECT_EQ(rounds(Algorithm::Nvls, 1 << 20), 1);
  EXPECT_EQ(rounds(Algorithm::Nvls, 8 << 20), 2);
  EXPECT_EQ(rounds(Algorithm::Nvls, 32 << 20), 8);
  EXPECT_EQ(rounds(Algorithm::Nvls, 64 << 20), 8);
  EXPECT_EQ(rounds(Algorithm::Nvls, Bytes{1} << 30), 64);
  EXPECT_EQ(rounds(Algorithm::Ring, 32 << 20), 0);
  const nccl::Estimate plain = nccl::predict_with(allreduce(32 << 20), *t, Algorithm::Nvls, Protocol::Simple, {});
  const nccl::Estimate with_rounds =
      nccl::predict_with(allreduce(32 << 20), *t, Algorithm::Nvls, Protocol::Simple, {1, 1, 5});
  EXPECT_NEAR(with_rounds.seconds - plain.seconds, 8 * 5e-6, 1e-15);
  EXPECT_EQ(with_rounds.bandwidth_s, plain.bandwidth_s);
  t = load_topology(shipped("dgx-h100"), 2);
  EXPECT_EQ(rounds(Algorithm::NvlsTree, 64 << 20), 4);
}

// NVLS channels by GPU generation (transport/nvls.cc): 16 on Hopper, 32 on Blackwell from NCCL 2.25
// (NVLS_NCHANNELS_SM100); each is one CTA, so it is also the SM count the interference model charges.
TEST(NcclModel, NvlsChannelsFollowTheGpuGeneration) {
  const auto nvls_channels = [](const char* topology) {
    auto t = load_topology(shipped(topology), 1);
    return nccl::predict_with(allreduce(64 << 20), *t, Algorithm::Nvls, Protocol::Simple, {}).channels;
  };
  EXPECT_EQ(nvls_channels("dgx-h100"), 16);
  EXPECT_EQ(nvls_channels("hgx-b200"), 32);
}

// Whatever NCCL picks, the bus bandwidth it reports cannot exceed what the links carry. Each algorithm has every
// rank push a known share of the vector through its own links, and every node push a share through its NICs:
//   ring: each rank sends 2(p-1)/p of the vector (busbw = that / time), so busbw <= the rank's injection rate;
//   tree, NVLS, CollNet: each rank sends at least the whole vector once, so busbw <= factor x injection, with
//   factor = 2(p-1)/p (busbw = algbw x factor);
// and across nodes the same with the node's NIC rate (sum of its NICs' datasheet rates) in place of injection.
// Injection = the datasheet rate of the first link of every route out of rank 0, summed over distinct links.
bool is_nic_link(LinkClass c) {
  return c == LinkClass::Rdma || c == LinkClass::Tcp || c == LinkClass::Efa || c == LinkClass::Tcpx;
}

TEST(NcclModel, BusBandwidthNeverExceedsThePhysicalBound) {
  for (const char* name : kShippedTopologies) {
    for (int nodes : {1, 2, 16}) {
      auto t = load_topology(shipped(name), nodes);
      if (t->library().kind != LibraryKind::Nccl) continue;  // the MPI topologies have no NCCL model to print
      if (t->ranks() < 2) continue;  // one GPU per node on one node: no collective to price (the CLI refuses it)
      const int p = t->ranks(), rpn = t->ranks_per_node();
      std::set<LinkId> first_links, nic_links;
      double injection_Bps = 0, nics_Bps = 0;
      for (int dst = 1; dst < p; ++dst) {
        Route r;
        t->route(0, dst, r);
        if (first_links.insert(r.links.front()).second) injection_Bps += t->link(r.links.front()).bandwidth_Bps;
      }
      for (int i = 0; i < rpn && nodes > 1; ++i) {  // each local rank's way out of the node
        Route r;
        t->route(i, rpn + i, r);
        const auto nic = std::find_if(r.links.begin(), r.links.end(),
                                      [&](LinkId id) { return is_nic_link(t->link(id).link_class); });
        if (nic != r.links.end() && nic_links.insert(*nic).second) nics_Bps += t->link(*nic).bandwidth_Bps;
      }
      const double factor = busbw_factor(Collective::AllReduce, p);
      for (Bytes bytes = 8; bytes <= (Bytes{8} << 30); bytes *= 4) {
        // What the CLI prints: NCCL's choice with the fitted scales of the generation.
        const nccl::Estimate printed = nccl::predict(allreduce(bytes), *t);
        const double printed_share = printed.algorithm == Algorithm::Ring ? 1.0 : factor;
        const double printed_busbw_Bps = static_cast<double>(bytes) / printed.seconds * factor;
        EXPECT_LE(printed_busbw_Bps, printed_share * injection_Bps) << name << " x" << nodes << " " << bytes << " B";
        if (nodes > 1) {
          EXPECT_LE(printed_busbw_Bps, printed_share * nics_Bps) << name << " x" << nodes << " " << bytes << " B";
        }
        for (const nccl::Estimate& c : nccl::candidates(allreduce(bytes), *t)) {
          // NCCL's constants alone, and a fit that claims 1000x NCCL's bandwidth: neither may pass the links.
          for (const ModelScale scale : {ModelScale{}, ModelScale{1, 1000}}) {
            const nccl::Estimate e = nccl::predict_with(allreduce(bytes), *t, c.algorithm, c.protocol, scale);
            const double busbw_Bps = static_cast<double>(bytes) / e.seconds * factor;
            const double share = c.algorithm == Algorithm::Ring ? 1.0 : factor;
            const std::string what = std::string(name) + " x" + std::to_string(nodes) + " " +
                                     std::string(to_string(c.algorithm)) + "/" + std::string(to_string(c.protocol)) +
                                     " " + std::to_string(bytes) + " B, bandwidth scale " +
                                     std::to_string(scale.bandwidth_scale);
            EXPECT_LE(busbw_Bps, share * injection_Bps) << what;
            if (nodes > 1) {
              EXPECT_LE(busbw_Bps, share * nics_Bps) << what;
            }
          }
        }
      }
    }
  }
}

// The links' ceiling on algbw, worked by hand on hgx-b200 (8 ConnectX-7 per node, 50e9 B/s x efficiency 0.96 =
// 48e9 B/s each, so 384e9 B/s out of a node). NVLS-tree's inter-node part is NCCL's double binary tree: on 2 nodes
// each node sends the vector once (algbw <= 384e9), on 4 nodes a node interior in one tree sends it twice (192e9).
// A fitted bandwidth scale of 1000 stops there.
TEST(NcclModel, AFittedScaleStopsAtTheLinksCeiling) {
  for (const auto& [nodes, ceiling_Bps] : {std::pair{2, 384e9}, std::pair{4, 192e9}}) {
    auto t = load_topology(shipped("hgx-b200"), nodes);
    const nccl::Estimate e =
        nccl::predict_with(allreduce(Bytes{1} << 30), *t, Algorithm::NvlsTree, Protocol::Simple, {1, 1000});
    EXPECT_NEAR(e.ceiling_algbw_Bps, ceiling_Bps, 1e3) << nodes << " nodes";
    EXPECT_NEAR(e.algbw_Bps, ceiling_Bps, 1e3) << nodes << " nodes";
  }
}

// nccl-tests -g G: one host thread issues G kernels per operation, so back-to-back operations take at least G x the
// host's issue time per GPU (libraries/nccl.json "fitted"."host"). On one DGX H100 under NVLS a 1 KiB allreduce is
// about 16 us of GPU time and a 1 GiB one milliseconds: with G = 8 the floor (8 x ~4 us) sets the first and not the
// second; without G (a training step's collectives) there is no floor. Hopper's scales were fitted on logs of one
// GPU per thread, so at G = 8 the GPU time keeps their bandwidth scale and NVLS's cost per round of chunks but NCCL's
// own latency (fitted_scale).
TEST(NcclModel, OneThreadDrivingSeveralGpusSetsAFloor) {
  auto t = load_topology(shipped("dgx-h100"), 1);
  const double launch_s = nccl::launch_us_per_gpu(*t) * 1e-6;
  ASSERT_GT(launch_s, 0);
  for (const Bytes bytes : {Bytes{1} << 10, Bytes{1} << 30}) {
    CollectiveSpec spec = allreduce(bytes);
    const nccl::Estimate gpu = nccl::predict(spec, *t);
    EXPECT_EQ(gpu.host_floor_s, 0);
    EXPECT_DOUBLE_EQ(gpu.seconds, gpu.latency_s + gpu.bandwidth_s + gpu.chunk_rounds_s);
    spec.gpus_per_thread = 8;
    const nccl::Estimate issued = nccl::predict(spec, *t);
    EXPECT_DOUBLE_EQ(issued.host_floor_s, 8 * launch_s);
    EXPECT_DOUBLE_EQ(issued.bandwidth_s, gpu.bandwidth_s) << bytes;
    EXPECT_DOUBLE_EQ(issued.chunk_rounds_s, gpu.chunk_rounds_s) << bytes;  // rounds, like bandwidth, hold in both
    const double issued_gpu_s = issued.latency_s + issued.bandwidth_s + issued.chunk_rounds_s;
    EXPECT_DOUBLE_EQ(issued.seconds, std::max(issued_gpu_s, 8 * launch_s)) << bytes;
    EXPECT_EQ(issued.seconds > issued_gpu_s, bytes == Bytes{1} << 10) << bytes;
  }
}

// The Ampere scales were fitted on nccl-tests logs run with -g 8 (libraries/nccl.json "fitted"."ampere"
// "gpus_per_thread"), where one thread's 8 kernel issues overlap each operation's latency: a 64 KiB allreduce on one
// DGX A100 (ring/LL, NCCL's choice) issued that way gets the fitted latency scale; issued by its own process (a
// training step, or nccl-tests -g 1) it keeps NCCL's latency. The bandwidth scale holds in both.
TEST(NcclModel, FittedLatencyScaleHoldsForItsIssueRegime) {
  const Json fit = Json::parse(read_file("libraries/nccl.json"))["fitted"]["ampere"];
  ASSERT_EQ(fit["gpus_per_thread"], 8);
  const double latency_scale = fit["scales"]["allreduce/ring/ll"]["latency_scale"].get<double>();
  ASSERT_GT(latency_scale, 1.5);  // far enough from 1 for the two regimes to differ
  auto t = load_topology(shipped("dgx-a100"), 1);
  CollectiveSpec spec = allreduce(Bytes{64} << 10);
  const nccl::Estimate nccl_own = nccl::predict_with(spec, *t, Algorithm::Ring, Protocol::LL, {1, 1});
  const nccl::Estimate own_process = nccl::predict(spec, *t);
  spec.gpus_per_thread = 8;
  const nccl::Estimate eight_per_thread = nccl::predict(spec, *t);
  ASSERT_EQ(own_process.algorithm, Algorithm::Ring);
  ASSERT_EQ(own_process.protocol, Protocol::LL);
  EXPECT_DOUBLE_EQ(own_process.latency_s, nccl_own.latency_s);
  EXPECT_DOUBLE_EQ(eight_per_thread.latency_s, nccl_own.latency_s * latency_scale);
  EXPECT_DOUBLE_EQ(eight_per_thread.bandwidth_s, own_process.bandwidth_s);
}

// A training step's launch of one NCCL collective (libraries/overheads.json) is the fitted issue time of one GPU's
// collective (libraries/nccl.json "fitted"."host", to the 0.01 us overheads.json keeps): one number, two files, so a
// refit that moves it must move both.
TEST(NcclModel, StepLaunchCostIsTheFittedIssueTime) {
  auto t = load_topology(shipped("dgx-h100"), 1);
  const double fitted_us = nccl::launch_us_per_gpu(*t);
  EXPECT_NEAR(resolve_overheads(Framework{}, LibraryKind::Nccl).launch_s * 1e6, fitted_us, 0.005);
}

TEST(NcclModel, LibraryBlockErrorsNameTheField) {
  TempDir dir;
  const std::string path = (dir.path() / "t.json").string();
  auto write_with = [&](const std::string& library) {
    const std::string text = read_file(shipped("dgx-a100"));
    std::ofstream(path) << text.substr(0, text.find("\"library\"")) << "\"library\": " << library << "\n}\n";
    return path;
  };
  const std::pair<std::string, std::string> cases[] = {
      {R"({"name": "nccl", "gpu_arch": "ampere", "source": "s"})", "library.version"},
      {R"({"name": "nccl", "version": "2.18", "gpu_arch": "pascal", "source": "s"})", "library.gpu_arch"},
      {R"({"name": "nccl", "version": "2.18", "gpu_arch": "ampere", "nvls": true, "source": "s"})", "library.nvls"},
      {R"({"name": "gloo", "source": "s"})", "library.name"},
      {R"({"name": "nccl", "version": "2.18", "gpu_arch": "ampere"})", "library.source"},
      {R"({"name": "nccl", "version": "2.18", "gpu_arch": "ampere", "source": "s", "fitted_source": "f", "fitted":
          {"allreduce/nvls/simple": {"latency_scale": 1, "bandwidth_scale": 1, "chunk_round_us": -2}}})",
       "library.fitted.allreduce/nvls/simple.chunk_round_us"},
  };
  for (const auto& [library, field] : cases) {
    try {
      load_topology(write_with(library));
      ADD_FAILURE() << "accepted " << library;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  // A version with no constants table is bad input when the file is read, whether or not a model prices with it.
  try {
    load_topology(write_with(R"({"name": "nccl", "version": "1.0", "gpu_arch": "ampere", "source": "s"})"));
    ADD_FAILURE() << "accepted NCCL 1.0";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("library.version"), std::string::npos) << e.what();
  }
}

// One GB200 compute tray (topologies/gb200-host4.json, NCCL 2.25 -> the 2.25 table in libraries/nccl.json, the first
// with NCCL's own Blackwell row: v2.25.1-1 src/graph/tuning.cc:155-174, LL128 on sm100 :435). The machine NCCL sees:
//   4 ranks, 1 node, NVLink inside; ring bandwidth per GPU = 900 GB/s x 0.755 = 679.5 GB/s; 8 channels run, 4 as
//   NCCL's search counts them. Ring ratio 4 / 2(4-1) = 4/6; estimate = latency + n / (1000 algbw) us.
//   LL:     busBw = min(llMaxBw[Blackwell][1 node] 2 x 141 = 282, 679.5 x 0.5) = 282   -> algbw 188
//           latency = base 6.6 + 6 steps x hwLat NVLink LL 0.6 = 10.2 us
//   LL128:  busBw = min(679.5 x 0.92 = 625.14, 4 ch x perChMaxRingLL128Bw[Blackwell] 2 x 36.7 = 293.6) = 293.6
//           -> algbw 195.7333; latency = 14.0 + 6 x 1.9 = 25.4 us
// At 1 MiB: LL 10.2 + 1048576 / 188000 = 15.778 us; LL128 25.4 + 1048576 / 195733.3 = 30.757 us.
// The same tray named NCCL 2.24 takes the 2.23 table: Hopper's cap for LL (min(141, 339.75) = 141 -> algbw 94,
// 10.2 + 11.155 = 21.355 us) and no LL128 (sm100 was not in 2.23's LL128 switch).
TEST(NcclModel, HandWorkedBlackwellRowFromNccl225) {
  auto t = load_topology(shipped("gb200-host4"), 1);
  const nccl::Machine m = nccl::machine_of(*t);
  EXPECT_EQ(m.ranks, 4);
  EXPECT_EQ(m.channels, 8);
  EXPECT_TRUE(m.nvlink_intra);
  EXPECT_NEAR(m.intra_GBps, 679.5, 1e-9);
  const auto all = nccl::candidates(allreduce(1 << 20), *t);
  EXPECT_NEAR(estimate_us(all, Algorithm::Ring, Protocol::LL), 10.2 + 1048576 / (1000 * 282.0 * 4 / 6), 1e-6);
  EXPECT_NEAR(estimate_us(all, Algorithm::Ring, Protocol::LL128), 25.4 + 1048576 / (1000 * 293.6 * 4 / 6), 1e-6);

  TempDir dir;
  const std::string path = (dir.path() / "gb200-nccl-2.24.json").string();
  std::string text = read_file(shipped("gb200-host4"));
  const std::string version = "\"version\": \"2.25\"";
  ASSERT_NE(text.find(version), std::string::npos);
  std::ofstream(path) << text.replace(text.find(version), version.size(), "\"version\": \"2.24\"");
  auto older = load_topology(path, 1);
  const auto before = nccl::candidates(allreduce(1 << 20), *older);
  EXPECT_NEAR(estimate_us(before, Algorithm::Ring, Protocol::LL), 10.2 + 1048576 / (1000 * 141.0 * 4 / 6), 1e-6);
  for (const nccl::Estimate& e : before) EXPECT_NE(e.protocol, Protocol::LL128) << to_string(e.algorithm);
}

// Where two GPUs share a NIC (aws-p4d: 8 GPUs, 4 EFA NICs; gcp-a3-high: 8 GPUs, 4 TCPX NICs), the ring's channels
// must leave through different NICs: with 4 channels, channel c leaves node n through GPU 2c - 1 (NIC c - 1 mod 4)
// and enters through GPU 2c (NIC c), so every NIC carries one channel each way. The flow fidelity then drains the
// ring at the same rate as the closed form, which gives each channel one NIC; before the channels were spread, two
// of them met on one NIC and flow took twice as long. And NCCL's model counts the node's network as its 4 NICs.
TEST(NicSharing, ChannelsSpreadOverTheNicsInBothFidelities) {
  for (const char* name : {"aws-p4d", "gcp-a3-high"}) {
    auto t = load_topology(shipped(name), 2);
    CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Ring, Bytes{1} << 30);
    s.channels = t->default_channels();
    ASSERT_EQ(s.channels, 4) << name;
    const double closed = closed_form_seconds(s, *t), flow = simulate(s, *t, Network::Flow);
    EXPECT_NEAR(flow, closed, 1e-3 * closed) << name;
    const nccl::Machine m = nccl::machine_of(*t);
    Route r;
    t->route(0, t->ranks_per_node(), r);
    double nic_GBps = 0;
    for (LinkId id : r.links)
      if (is_nic_link(t->link(id).link_class)) nic_GBps = t->link(id).effective_Bps() / 1e9;
    EXPECT_NEAR(m.inter_GBps, 4 * nic_GBps, 1e-9) << name;
  }
}

// The machine of a sub-communicator (Paddle's hierarchy runs NCCL on the groups and on the leaders), on two DGX
// A100 nodes: the first node's 8 GPUs are one node of 8 ranks on NVSwitch (232.2 GB/s, as the whole node); the
// leaders {0, 8} are 2 nodes of one rank each, whose network is GPU 0's own NIC, 25 GB/s x 0.96 = 24 GB/s; ranks
// {0, 1, 8} have 2 ranks on one node and 1 on the other, which NCCL's model does not describe (ranks = 0).
TEST(NcclModel, SubCommunicatorsHaveTheirOwnMachine) {
  auto t = load_topology(shipped("dgx-a100"), 2);
  const nccl::Machine group = nccl::machine_of(*t, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(group.ranks, 8);
  EXPECT_EQ(group.nodes, 1);
  EXPECT_NEAR(group.intra_GBps, 232.2, 1e-9);
  const nccl::Machine leaders = nccl::machine_of(*t, {0, 8});
  EXPECT_EQ(leaders.ranks, 2);
  EXPECT_EQ(leaders.nodes, 2);
  EXPECT_NEAR(leaders.inter_GBps, 24.0, 1e-9);
  EXPECT_EQ(nccl::machine_of(*t, {0, 1, 8}).ranks, 0);
  // The hierarchical allreduce is then priced as its three collectives: never faster than its group's allreduce.
  CollectiveSpec h = make_spec(*t, Collective::AllReduce, Algorithm::Hierarchical, Bytes{64} << 20);
  CollectiveSpec group_allreduce = h;
  group_allreduce.algorithm = Algorithm::Auto;
  group_allreduce.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  ASSERT_TRUE(uses_library_model(h, *t));
  EXPECT_GT(library_prediction(h, *t).seconds, nccl::predict(group_allreduce, *t).seconds);
}

// Tuner rules appear only where a measured (fitted) candidate beats NCCL's own choice. One DGX A100 node whose
// calibration says LL128 runs at half NCCL's bandwidth and LL and Simple as NCCL prices them: NCCL's table still
// picks LL128 from 2 to 16 MiB (LL below, Simple from 32 MiB on), where LL128's bandwidth term doubles and Simple
// becomes the faster, so rules say ring/simple there; where NCCL picks LL or Simple the fit agrees with NCCL and no
// rule is needed.
TEST(NcclModel, TunerRulesOverrideNcclWhereTheFitDisagrees) {
  auto t = load_topology(shipped("dgx-a100"), 1);
  EXPECT_TRUE(nccl::tuner_rules(Collective::AllReduce, *t, 10.0).empty());  // nothing is 11x faster
  CommLibrary library = t->library();
  // The topology's own fit of every ring protocol, so that the table's Ampere fit (of another issue regime) plays no
  // part.
  library.fitted["allreduce/ring/ll"] = {1.0, 1.0};
  library.fitted["allreduce/ring/ll128"] = {1.0, 0.5};
  library.fitted["allreduce/ring/simple"] = {1.0, 1.0};
  library.fitted_band_rel = 0.05;
  t->set_library(library);
  const std::vector<nccl::TunerRule> rules = nccl::tuner_rules(Collective::AllReduce, *t);
  ASSERT_FALSE(rules.empty());
  for (const nccl::TunerRule& r : rules) {
    EXPECT_EQ(r.algorithm, Algorithm::Ring);
    EXPECT_EQ(r.protocol, Protocol::Simple);
    EXPECT_GT(r.min_bytes, Bytes{1} << 20);
    EXPECT_LE(r.max_bytes, Bytes{32} << 20);
    EXPECT_GT(r.gain, 0.05);
  }
  EXPECT_EQ(nccl::tuner_line(rules.front(), *t).find("allreduce,"), 0u);
  EXPECT_NE(nccl::tuner_line(rules.front(), *t).find(",ring,simple,-1,1,8"), std::string::npos);
}

}  // namespace
// NCCL 2.30 tunes NVLS on Blackwell across nodes (src/transport/nvls.cc v2.30.7-1:164-199) by the nodes, GPUs per
// node, the slowest GPU -> NIC path (minNetBw) and its type; NVLS-tree's chunk is min(NVLS chunk, tuned largest
// chunk) (src/enqueue.cc v2.30.7-1:2281). HGX B200 (hgx-b200.json): 8 GPUs, each with a 400 Gb/s NIC on its PCIe Gen5
// switch (PIX), the path min(63.015 x 0.762, 50 x 0.96) = 48 GB/s, NCCL's 48 for Gen5 x16.
//   3 nodes: not 2 nodes, not >= 96, >= 48: 24 channels, largest tree chunk 64 KiB (PIX <= PXB); chunk 128 KiB.
//   2 nodes: 32 channels, 128 KiB, and ppn 8 <= 8 with PIX and 48 < 96: 64 KiB.
//   2.29.7 (no tuning): 32 channels across nodes, tree chunk 128 KiB below 4 nodes.
// A GB200 tray (gb200-host4.json), 2 nodes of 4 GPUs: 32 channels, and ppn 4 <= 4: chunk and tree chunk 256 KiB.
// The fill NVLS-tree's pipeline adds (nvls_chunking): (4 - 1) stages x chunk x channels x GPUs per node, for 1 GiB
// (no shrinking: 1 GiB >= 32 x channels x GPUs x chunk in every case here).
TEST(NcclModel, Nccl230TunesBlackwellNvlsAcrossNodes) {
  const auto setup = [](const std::string& topology, int nodes, const char* release) {
    auto t = load_topology(shipped(topology), nodes);
    nccl::use_release(*t, release, "test", "");
    const nccl::Machine m = nccl::machine_of(*t);
    const nccl::detail::NvlsSetup s =
        nccl::detail::nvls_setup(*nccl::detail::find_table(release), GpuArch::Blackwell, m);
    const double fill = nccl::detail::nvls_chunking(nccl::detail::kNvlsTree, Collective::AllReduce, Bytes{1} << 30, m,
                                                    *nccl::detail::find_table(release), GpuArch::Blackwell)
                            .fill_bytes;
    return std::tuple{s.channels, s.tree_chunk_bytes, fill};
  };
  EXPECT_EQ(setup("hgx-b200", 3, "2.30"), std::tuple(24, Bytes{65536}, 3.0 * 65536 * 24 * 8));
  EXPECT_EQ(setup("hgx-b200", 2, "2.30"), std::tuple(32, Bytes{65536}, 3.0 * 65536 * 32 * 8));
  EXPECT_EQ(setup("hgx-b200", 3, "2.29.7"), std::tuple(32, Bytes{131072}, 3.0 * 131072 * 32 * 8));
  EXPECT_EQ(setup("gb200-host4", 2, "2.30"), std::tuple(32, Bytes{262144}, 3.0 * 262144 * 32 * 4));
}

// NCCL enables LL128 across nodes only over the NIC paths it trusts (graphs[a]->typeInter): up to PXB, or PXN from sm90
// (tuning.cc v2.26.6-1:429); from 2.27 also P2C, a GPU's path through NVLink-C2C to its Grace CPU and the PCIe NIC
// behind it (v2.27.7-1:459-461; paths.cc v2.27.3-1:677-678 names it P2C, PHB before). A GB200 tray (gb200-host4.json:
// gpu -nvlink (C2C)- grace -pcie- nic) has that path from every GPU. NCCL's estimates of a 1 MiB allreduce on 2 trays
// (its tuning table, latency us / algbw GB/s): at 2.27 Tree LL128 38.5 / 146.8 -> 38.5 + 1048576 / 146.8e3 = 45.6 us,
// the least; at 2.26 LL128 is off, and NVLSTree Simple 53.0 / 160.0 -> 53.0 + 6.55 = 59.6 us is the least (Tree
// Simple 60.4 + 6.33 = 66.7 before tree's correction, which only slows it; Ring LL 24.0 + 47.0 = 71.0; Tree LL
// 20.4 + 53.8 = 74.2). A path through the CPU's host bridge (PHB: GPUDirect RDMA off, the GPU's traffic staged in host
// memory) keeps LL128 off in every release.
TEST(NcclModel, Ll128AcrossNodesFollowsTheNicPath) {
  const auto has_ll128 = [](const Topology& t) {
    for (const nccl::Estimate& e : nccl::candidates(allreduce(1 << 20), t))
      if (e.protocol == Protocol::LL128) return true;
    return false;
  };
  auto tray = load_topology(shipped("gb200-host4"), 2);
  for (int r = 0; r < tray->ranks_per_node(); ++r) EXPECT_EQ(tray->nic_path(r), Topology::NicPath::P2c) << r;
  nccl::use_release(*tray, "2.26.6", "test", "");
  EXPECT_FALSE(has_ll128(*tray));
  nccl::Estimate chosen = nccl::choose(allreduce(1 << 20), *tray);
  EXPECT_EQ(chosen.algorithm, Algorithm::NvlsTree);
  EXPECT_EQ(chosen.protocol, Protocol::Simple);
  nccl::use_release(*tray, "2.27.3", "test", "");
  EXPECT_TRUE(has_ll128(*tray));
  chosen = nccl::choose(allreduce(1 << 20), *tray);
  EXPECT_EQ(chosen.algorithm, Algorithm::Tree);
  EXPECT_EQ(chosen.protocol, Protocol::LL128);

  auto direct = load_topology(shipped("dgx-h100"), 2);  // each GPU's NIC on its PCIe switch: PIX
  EXPECT_EQ(direct->nic_path(0), Topology::NicPath::Pix);
  EXPECT_TRUE(has_ll128(*direct));
  Json staged = Json::parse(read_file(shipped("dgx-h100")));
  staged["gpudirect_rdma"] = false;
  auto through_host = load_topology(write_temp_json("dgx-h100-staged.json", staged), 2);
  EXPECT_EQ(through_host->nic_path(0), Topology::NicPath::Phb);
  EXPECT_FALSE(has_ll128(*through_host));
}

}  // namespace commsim::test
