// The algorithm registry (sim/collective/registry.hpp): every algorithm has one entry that names, parses, checks,
// prices and generates it, and what the entry says agrees with what its generator does.
#include "sim/collective/registry.hpp"

#include <set>
#include <sstream>

#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// Every value of Algorithm but Auto has exactly one entry, so to_string and parse_algorithm know every algorithm,
// and the names round-trip.
TEST(AlgorithmRegistry, OneEntryPerAlgorithmAndNamesRoundTrip) {
  std::set<std::string_view> names;
  for (int i = 0; i < static_cast<int>(Algorithm::Auto); ++i) {
    const auto a = static_cast<Algorithm>(i);
    int entries = 0;
    for (const AlgorithmEntry& e : algorithm_entries()) entries += e.id == a ? 1 : 0;
    EXPECT_EQ(entries, 1) << "algorithm value " << i;
    Algorithm parsed = Algorithm::Auto;
    ASSERT_TRUE(parse_algorithm(to_string(a), parsed)) << to_string(a);
    EXPECT_EQ(parsed, a);
    EXPECT_TRUE(names.insert(to_string(a)).second) << "duplicate name " << to_string(a);
  }
  Algorithm parsed = Algorithm::Ring;
  EXPECT_TRUE(parse_algorithm("auto", parsed));
  EXPECT_EQ(parsed, Algorithm::Auto);
  EXPECT_FALSE(parse_algorithm("rings", parsed));
}

// The names are those the README documents for `--algo` and scenarios' `strategy.algorithm` (a renamed entry
// would break every scenario that spells the old name).
TEST(AlgorithmRegistry, NamesAreTheDocumentedOnes) {
  std::set<std::string> listed;
  std::istringstream in(algorithm_names(" "));
  for (std::string name; in >> name;) listed.insert(name);
  const std::set<std::string> documented = {"ring",           "tree",          "nvls", "nvlstree",
                                            "collnet_direct", "collnet_chain", "pat",  "hd",
                                            "hierarchical",   "2d-ring",       "auto"};
  EXPECT_EQ(listed, documented);
}

// `auto` weighs the entries with a schedule in registry order, and a tie keeps the earlier one, so the order is
// part of every prediction: ring, tree, halving-doubling, hierarchical, 2D ring (simplest first). NCCL's own
// algorithms have neither a schedule nor a closed form here.
TEST(AlgorithmRegistry, ScheduleAlgorithmsInAutosTieOrder) {
  std::vector<Algorithm> with_schedule;
  for (const AlgorithmEntry& e : algorithm_entries()) {
    EXPECT_EQ(e.has_schedule(), e.step_closed_form_ps != nullptr) << e.name;
    EXPECT_EQ(e.has_schedule(), e.full_walk_step_ps != nullptr) << e.name;
    EXPECT_NE(e.transfer_bytes, nullptr) << e.name;
    EXPECT_EQ(library_only(e.id), !e.has_schedule()) << e.name;
    if (e.has_schedule()) with_schedule.push_back(e.id);
  }
  const std::vector<Algorithm> expected = {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling,
                                           Algorithm::Hierarchical, Algorithm::Ring2D};
  EXPECT_EQ(with_schedule, expected);
}

// A collective the entry does not list is refused with its supported set named: the double tree implements
// allreduce alone.
TEST(AlgorithmRegistry, UnsupportedCollectiveNamesWhatIsSupported) {
  CollectiveSpec s;
  s.op = Collective::ReduceScatter;
  s.algorithm = Algorithm::Tree;
  try {
    check_supported(s, 8, "collective");
    FAIL() << "tree reduce-scatter accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tree is implemented for allreduce only (use ring for reducescatter)"),
              std::string::npos)
        << e.what();
  }
}

TEST(AlgorithmRegistry, LibraryOnlyAlgorithmsHaveNoSchedule) {
  auto t = load_topology(shipped("dgx-a100"));
  for (const AlgorithmEntry& e : algorithm_entries()) {
    if (e.has_schedule()) continue;
    Schedule schedule;
    std::vector<OpId> frontier(t->ranks(), kNoOp);
    EXPECT_THROW(generate(make_spec(*t, Collective::AllReduce, e.id, 1 << 20), *t, schedule, frontier), InputError)
        << e.name;
  }
}

// Each entry's traffic formula is what its generator moves. On 2 nodes of 8 ranks (16 = a power of two, groups and
// nodes of 8) with 1 MiB (2^20 divides by every piece count here: 16 ranks, 8 per node, 2 trees, 1 channel, and
// the 2 chunks of 512 KiB a pipeline cuts) every piece is whole, so formula and schedule agree exactly.
TEST(AlgorithmRegistry, TrafficFormulaIsWhatTheScheduleMoves) {
  auto t = load_topology(shipped("dgx-a100"), 2);
  ASSERT_EQ(t->ranks(), 16);
  for (const AlgorithmEntry& e : algorithm_entries()) {
    if (!e.has_schedule()) continue;
    for (int op = 0; op < 5; ++op) {
      CollectiveSpec s = make_spec(*t, static_cast<Collective>(op), e.id, Bytes{1} << 20);
      if (!e.supports(s.op)) continue;
      Schedule schedule;
      std::vector<OpId> frontier(t->ranks(), kNoOp);
      generate(s, *t, schedule, frontier);
      EXPECT_EQ(static_cast<double>(schedule.bytes_transferred()), total_transfer_bytes(s, t->ranks()))
          << e.name << " " << to_string(s.op);
    }
  }
}

}  // namespace
}  // namespace commsim::test
