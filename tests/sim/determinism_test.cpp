// Determinism: the same input gives byte-identical output. The engine's time is integer picoseconds and ties are
// broken by (time, class, insertion order), routing ties by device index, so nothing depends on addresses, hash
// order or the clock.
#include <cstring>

#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

bool same_ops(const Schedule& a, const Schedule& b) {
  if (a.ops.size() != b.ops.size() || a.deps != b.deps) return false;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    if (x.kind != y.kind || x.src != y.src || x.dst != y.dst || x.bytes != y.bytes || x.dep_begin != y.dep_begin ||
        x.dep_count != y.dep_count || x.offset != y.offset)
      return false;
  }
  return true;
}

TEST(Determinism, GenerateTwiceGivesTheSameSchedule) {
  auto t = load_topology(shipped("dgx-a100"), 2);
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical,
                      Algorithm::Ring2D, Algorithm::Auto}) {
    CollectiveSpec s = make_spec(*t, Collective::AllReduce, a, 33'554'433, 50e9);
    s.channels = t->default_channels();
    Schedule x, y;
    std::vector<OpId> fx(t->ranks(), kNoOp), fy(t->ranks(), kNoOp);
    generate(s, *t, x, fx);
    generate(s, *t, y, fy);
    EXPECT_TRUE(same_ops(x, y)) << to_string(a);
    EXPECT_EQ(fx, fy);
  }
}

TEST(Determinism, SimulateTwiceIsBitIdentical) {
  // A contended case (the double tree over 8 channels on two DGX A100s shares NVSwitch ports and NICs), where the
  // order in which simultaneous events are handled matters.
  auto t = load_topology(shipped("dgx-a100"), 2);
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling}) {
    CollectiveSpec s = make_spec(*t, Collective::AllReduce, a, Bytes(32) << 20, 50e9);
    s.channels = t->default_channels();
    Schedule sched;
    std::vector<OpId> frontier(t->ranks(), kNoOp);
    generate(s, *t, sched, frontier);
    for (Network f : {Network::ContentionFree, Network::Flow}) {
      const ScheduleResult r1 = run_schedule(sched, *t, f, s.reduce_Bps);
      const ScheduleResult r2 = run_schedule(sched, *t, f, s.reduce_Bps);
      EXPECT_EQ(std::memcmp(&r1.seconds, &r2.seconds, sizeof(double)), 0) << to_string(a);
      EXPECT_EQ(r1.events, r2.events);
      EXPECT_EQ(std::memcmp(&r1.usage, &r2.usage, sizeof(LinkUsage)), 0);
    }
  }
}

TEST(Determinism, LoadTwiceGivesTheSameRoutes) {
  auto a = load_topology(shipped("dgx-a100"), 2);
  auto b = load_topology(shipped("dgx-a100"), 2);
  ASSERT_EQ(a->link_count(), b->link_count());
  EXPECT_EQ(a->ring_order(), b->ring_order());
  for (int src = 0; src < a->ranks(); ++src)
    for (int dst = 0; dst < a->ranks(); ++dst) {
      if (src == dst) continue;
      Route x, y;
      a->route(src, dst, x);
      b->route(src, dst, y);
      EXPECT_EQ(x.links, y.links);
      EXPECT_EQ(std::memcmp(&x.cost, &y.cost, sizeof(PathCost)), 0);
    }
}

TEST(Determinism, CliJsonTwiceIsByteIdentical) {
  if (!cli_available()) GTEST_SKIP() << "the commsim executable was not built";
  TempDir dir;
  const std::string a = (dir.path() / "a.json").string(), b = (dir.path() / "b.json").string();
  for (const char* fidelity : {"analytical", "flow"}) {
    const std::string args = std::string("collective --topology topologies/dgx-a100.json --nodes 2 --algo auto ") +
                             "--sizes 1K:64M --fidelity " + fidelity + " --json ";
    const CliResult r1 = run_cli(args + "'" + a + "'");
    const CliResult r2 = run_cli(args + "'" + b + "'");
    ASSERT_EQ(r1.exit_code, 0) << r1.err;
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    EXPECT_EQ(r1.out, r2.out);
    const std::string ja = read_file(a), jb = read_file(b);
    EXPECT_FALSE(ja.empty());
    EXPECT_EQ(ja, jb) << fidelity;
  }
}

}  // namespace
}  // namespace commsim::test
