// Correctness of every schedule generator, for every collective x algorithm x rank count (2, 3, 4, 5, 8, 16) x
// node layout x channels x pieces:
//  - dependency: through the DAG, every rank's final operation (the frontier generate returns) depends on every
//    rank's input (allreduce, reduce-scatter, allgather), on the root's (broadcast), and the root's on everyone's
//    (reduce). Each rank's input is a zero-byte marker operation put in the entry frontier.
//  - byte conservation: the bytes of all transfers equal the algorithm's formula, and the engine delivers every
//    one of them (both fidelities).
//  - well-formedness: dependencies point to earlier operations, transfers join two different valid ranks.
#include <map>
#include <sstream>

#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

struct Layout {
  int ranks_per_node;
  int nodes;
};

// Rank counts x node layouts: one node of p ranks; p nodes of one rank; and p/2 nodes of two ranks when p is even
// and > 2. The topology is an ASTRA-sim Switch(ranks_per_node) x Switch(nodes), 1 us and 10 GB/s per link.
std::vector<Layout> layouts(int p) {
  std::vector<Layout> out{{p, 1}, {1, p}};
  if (p % 2 == 0 && p > 2) out.push_back({2, p / 2});
  return out;
}

AstraTopology make_topology(Layout l) {
  const LinkParams link{LinkClass::Fabric, 1e-6, 10e9, 1};
  return AstraTopology("test", "test",
                       {{BlockKind::Switch, l.ranks_per_node, link}, {BlockKind::Switch, l.nodes, link}});
}

// 2882880 = 4 * lcm(1..16): divisible by every p, channel count and piece count used here, and by every power of
// two up to 16 after a split into 3 channels (halving-doubling halves it log2(q) times).
constexpr Bytes kEven = 2'882'880;
constexpr Bytes kOdd = 1'000'003;  // prime: no split is even

void check_structure(const Schedule& s, int ranks) {
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    for (std::uint32_t d = op.dep_begin; d < op.dep_end(); ++d)
      ASSERT_LT(s.deps[d], i) << "op " << i << " waits for a later op";
    ASSERT_GE(op.src, 0);
    ASSERT_LT(op.src, ranks);
    ASSERT_GE(op.dst, 0);
    ASSERT_LT(op.dst, ranks);
    if (op.kind == OpKind::Transfer) {
      ASSERT_NE(op.src, op.dst) << "op " << i;
    }
    if (op.kind == OpKind::Reduce) {
      ASSERT_EQ(op.src, op.dst) << "op " << i;
    }
  }
}

void check_dependencies(const CollectiveSpec& s, const Generated& g, int p) {
  const int root = s.root % p;  // participants are all ranks, in ring order = identity here
  for (int r = 0; r < p; ++r) {
    const std::vector<bool> from = depends_on_inputs(g, g.frontier[r]);
    switch (s.op) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::AllGather:
        for (int q = 0; q < p; ++q) EXPECT_TRUE(from[q]) << "rank " << r << " misses rank " << q << "'s input";
        break;
      case Collective::Broadcast:
        EXPECT_TRUE(from[root]) << "rank " << r << " misses the root's input";
        break;
      case Collective::Reduce:
        if (r == root) {
          for (int q = 0; q < p; ++q) EXPECT_TRUE(from[q]) << "the root misses rank " << q << "'s input";
        }
        break;
    }
  }
}

struct Case {
  Collective op;
  Algorithm algo;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                        Collective::Reduce})
    out.push_back({op, Algorithm::Ring});
  for (Algorithm a : {Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical, Algorithm::Ring2D})
    out.push_back({Collective::AllReduce, a});
  return out;
}

class EverySchedule : public ::testing::TestWithParam<int> {};

TEST_P(EverySchedule, DependsOnEveryInputAndConservesBytes) {
  const int p = GetParam();
  for (Layout l : layouts(p)) {
    const AstraTopology t = make_topology(l);
    ASSERT_EQ(t.ranks(), p);
    for (Case c : cases())
      for (int channels : {1, 3})
        for (int chunks : {0, 2})
          for (Bytes m : {kEven, kOdd})
            for (int root : {0, p - 1}) {
              if (root != 0 && c.op != Collective::Broadcast && c.op != Collective::Reduce) continue;
              CollectiveSpec s = make_spec(t, c.op, c.algo, m, 10e9, chunks);
              s.channels = channels;
              s.root = root;
              std::ostringstream trace;
              trace << to_string(c.op) << "/" << to_string(c.algo) << " p=" << p << " rpn=" << l.ranks_per_node
                    << " channels=" << channels << " chunks=" << chunks << " m=" << m << " root=" << root;
              SCOPED_TRACE(trace.str());
              const Generated g = generate_with_inputs(s, t);
              check_structure(g.schedule, p);
              check_dependencies(s, g, p);
              const Bytes total = g.schedule.bytes_transferred();
              if (c.algo == Algorithm::HalvingDoubling && m == kOdd) {
                // Uneven halves: both partners of a pair continue with the larger half's size, so each of the
                // 2 q log2(q) exchanges per channel may carry one byte more than m / 2^j.
                int q = 1, log2q = 0;
                while (q * 2 <= p) q *= 2, ++log2q;
                EXPECT_GE(total, expected_bytes(s, p, m));
                EXPECT_LE(total, expected_bytes(s, p, m) + static_cast<Bytes>(2 * q * log2q * channels));
              } else {
                EXPECT_EQ(total, expected_bytes(s, p, m));
              }
              // Every transfer is delivered, once, with all its bytes, and every operation runs.
              for (Network f : {Network::ContentionFree, Network::Flow}) {
                const CountedRun run = run_counted(g.schedule, t, f, s.reduce_Bps);
                EXPECT_TRUE(run.finished);
                EXPECT_EQ(run.delivered, run.started);
                EXPECT_EQ(run.delivered_bytes, static_cast<double>(total));
              }
            }
  }
}

INSTANTIATE_TEST_SUITE_P(RankCounts, EverySchedule, ::testing::Values(2, 3, 4, 5, 8, 16),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string("p").append(std::to_string(param.param));
                         });

TEST(ScheduleBytes, RingAllReduceMovesExactly2pMinus1TimesM) {
  // The brief's example, on its own: p=4, m divisible by p: 2(p-1) m = 6 * 4e6 = 24e6 bytes, every rank sending
  // (and receiving) 2(p-1)/p m = 6e6 of them.
  auto t = load_topology(fixture("star4.json"));
  const Generated g = generate_with_inputs(make_spec(*t, Collective::AllReduce, Algorithm::Ring, 4'000'000), *t);
  EXPECT_EQ(g.schedule.bytes_transferred(), 24'000'000u);
  std::vector<Bytes> sent(4, 0), received(4, 0);
  for (const Op& op : g.schedule.ops)
    if (op.kind == OpKind::Transfer) sent[op.src] += op.bytes, received[op.dst] += op.bytes;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(sent[r], 6'000'000u);
    EXPECT_EQ(received[r], 6'000'000u);
  }
}

TEST(ScheduleBytes, AutoResolvesToAnApplicableAlgorithm) {
  // Auto picks by the closed form among the algorithms that support the collective; whatever it picks must still
  // be a complete schedule: for broadcast that is the ring chain, (p-1) m bytes.
  auto t = load_topology(fixture("two-level-2x4.json"));
  for (Collective op : {Collective::AllReduce, Collective::Broadcast, Collective::AllGather}) {
    CollectiveSpec s = make_spec(*t, op, Algorithm::Auto, kEven);
    const Generated g = generate_with_inputs(s, *t);
    check_dependencies(s, g, t->ranks());
    s.algorithm = choose_algorithm(s, *t);
    EXPECT_NE(s.algorithm, Algorithm::Auto);
    EXPECT_EQ(g.schedule.bytes_transferred(), expected_bytes(s, t->ranks(), kEven));
  }
}

// The aggregated ring (one transfer per ring edge, CollectiveSpec::aggregate) carries over each edge exactly the
// bytes the step-by-step ring sends over it in all its steps: the sum of the pieces position i sends, which the
// generator takes from the pieces' prefix sums instead of adding them step by step. Uneven sizes (pieces differing
// by a byte) and rings up to 16 ranks, for the three ring collectives.
TEST(AggregatedRing, EachEdgeCarriesWhatTheStepsSendOverIt) {
  for (int p : {2, 3, 5, 8, 16})
    for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
      for (Bytes bytes : {Bytes(1) << 20, (Bytes(1) << 20) + 7, Bytes(p - 1)}) {
        const AstraTopology t = make_topology({1, p});
        CollectiveSpec spec = make_spec(t, op, Algorithm::Ring, bytes);
        std::map<std::pair<int, int>, Bytes> stepped, aggregated;
        for (const Op& o : generate_with_inputs(spec, t).schedule.ops)
          if (o.kind == OpKind::Transfer) stepped[{o.src, o.dst}] += o.bytes;
        spec.aggregate = true;
        for (const Op& o : generate_with_inputs(spec, t).schedule.ops)
          if (o.kind == OpKind::Transfer) aggregated[{o.src, o.dst}] += o.bytes;
        EXPECT_EQ(aggregated, stepped) << to_string(op) << " p " << p << " bytes " << bytes;
      }
}

}  // namespace
}  // namespace commsim::test
