// Closed forms of every schedule on small uniform networks: the hand-derived alpha-beta-gamma formula, the model's
// closed_form_seconds, and the engine (contention-free: no contention; Flow: max-min sharing) must agree to 1e-9
// relative wherever the network is uncontended.
//
// Notation: p ranks, alpha = path latency, beta = path bandwidth (bytes/s), gamma = reduction rate (bytes/s),
// m = bytes of the full vector, k = pipeline pieces. Every test uses one channel (channels > 1 share the links in
// the closed form and in Flow, but not in the contention-free engine, which never shares).
//
// Path latency: in the cluster format a path's latency is the MAX of its links' latencies (cluster_topology.cpp,
// chain(): each class gives the end-to-end latency of one step); in the ASTRA-sim format latencies add per hop.
//
// The fixtures (tests/data):
//
//   star4 / star8 (cluster format)          astra-switch8 (ASTRA-sim)          astra-fc8 (ASTRA-sim)
//        r0  r1  r2  r3                       0  1  2 ... 7                     every pair of the 8 NPUs has its
//         \   \  /   /                         \ |  |     /                     own link, 1000 ns, 10 GB/s
//          `--cpu0--'                            switch
//   every link 1 us, 10 GB/s:                 each link 500 ns, 10 GB/s:
//   alpha = max(1, 1) = 1 us, beta = 10 GB/s  alpha = 500 + 500 ns = 1 us, beta = 10 GB/s
//
//   two-level-2x4 (cluster format): 2 nodes of 4 ranks; rank ri and its NIC ni hang off the node's cpu0; NICs on one
//   switch; every link 1 us, 10 GB/s, so a path inside a node (2 links) and across (6 links) both cost alpha = 1 us,
//   beta = 10 GB/s, and each rank has its own NIC.
//      node0: r0 r1 r2 r3 n0 n1 n2 n3        node1: same        n0..n3 of both nodes -- switch
//              \  \  /  /  /  /  /  /
//                  cpu0
#include <cmath>
#include <map>
#include <tuple>

#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/tree_timeline.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

constexpr Bytes kM = 4'000'000;  // m = 4 MB
constexpr double kGamma = 20e9;  // gamma = 20 GB/s
constexpr double kRel = 1e-9;    // agreement asked for on uncontended uniform networks

// Checks the closed form and both engine fidelities against the hand formula (seconds).
// The step closed form and the contention-free engine (neither shares links) must equal the hand formula; the closed
// form (which adds the busiest-link bound) equals it too where no link is shared, and is never below it.
void expect_all(const CollectiveSpec& spec, const Topology& t, double hand_s, bool flow_uncontended = true) {
  const double cf = step_closed_form_seconds(spec, t);
  const double an = simulate(spec, t, Network::ContentionFree);
  EXPECT_NEAR(cf, hand_s, hand_s * kRel) << "step closed form vs hand formula";
  EXPECT_GE(closed_form_seconds(spec, t), cf * (1 - kRel));
  EXPECT_NEAR(an, hand_s, hand_s * kRel) << "contention-free engine vs hand formula";
  if (flow_uncontended) {
    EXPECT_NEAR(closed_form_seconds(spec, t), hand_s, hand_s * kRel) << "closed form vs hand formula";
    const double fl = simulate(spec, t, Network::Flow);
    EXPECT_NEAR(fl, hand_s, hand_s * kRel) << "flow engine vs hand formula";
  }
}

TEST(Paths, ClusterLatencyIsTheMaxAstraLatencyIsTheSum) {
  // star4: r0 -> cpu0 -> r1 crosses 2 links of 1 us each; the cluster format takes the max: 1 us.
  auto star = load_topology(fixture("star4.json"));
  Route r;
  star->route(0, 1, r);
  EXPECT_EQ(r.links.size(), 2u);
  EXPECT_DOUBLE_EQ(r.cost.latency_s, 1 * kUs);
  EXPECT_DOUBLE_EQ(r.cost.bottleneck_Bps, 10 * kGBps);
  // astra-switch8: NPU 0 -> switch -> NPU 1 crosses 2 links of 500 ns; ASTRA-sim adds them: 1 us.
  auto sw = load_topology(fixture("astra-switch8.json"));
  Route a;
  sw->route(0, 1, a);
  EXPECT_EQ(a.links.size(), 2u);
  EXPECT_DOUBLE_EQ(a.cost.latency_s, 1 * kUs);
  // two-level-2x4: r0 (node 0) -> r1 (node 1) is r0->cpu0->n0->switch->n1->cpu0->r1, 6 links, latency max = 1 us.
  auto two = load_topology(fixture("two-level-2x4.json"));
  Route x;
  two->route(0, 5, x);
  EXPECT_EQ(x.links.size(), 6u);
  EXPECT_DOUBLE_EQ(x.cost.latency_s, 1 * kUs);
  EXPECT_DOUBLE_EQ(x.cost.bottleneck_Bps, 10 * kGBps);
}

// ---- Ring ---------------------------------------------------------------------------------------------------

TEST(ClosedForm, RingAllReduceStar4) {
  auto t = load_topology(fixture("star4.json"));
  // ring allreduce = 2(p-1)(alpha + m/(p beta)) + (p-1)(m/p)/gamma
  // p=4, alpha=1 us, beta=10 GB/s, m=4 MB: m/(p beta) = 1e6 B / 1e10 B/s = 100 us -> 2*3*(1 + 100) = 606 us.
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM), *t, 606 * kUs);
  // gamma = 20 GB/s: (m/p)/gamma = 1e6 / 2e10 = 50 us, (p-1) of them on the critical path -> 606 + 150 = 756 us.
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM, kGamma), *t, 756 * kUs);
}

TEST(ClosedForm, RingAllReduceEightRanksClusterAndAstra) {
  // p=8: m/(p beta) = 5e5 / 1e10 = 50 us -> 2*7*(1 + 50) = 714 us; with gamma: 7 * (5e5 / 2e10 = 25 us) = 175 us
  // more -> 889 us. The same on the cluster star, the ASTRA-sim switch and the ASTRA-sim fully connected block:
  // each has alpha = 1 us and beta = 10 GB/s per ring hop and no link shared by two ring hops.
  for (const char* file : {"star8.json", "astra-switch8.json", "astra-fc8.json"}) {
    SCOPED_TRACE(file);
    auto t = load_topology(fixture(file));
    ASSERT_EQ(t->ranks(), 8);
    expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM), *t, 714 * kUs);
    expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM, kGamma), *t, 889 * kUs);
  }
}

TEST(ClosedForm, RingReduceScatterAndAllGatherStar4) {
  auto t = load_topology(fixture("star4.json"));
  // reduce-scatter = (p-1)(alpha + m/(p beta)) + (p-1)(m/p)/gamma: 3*(1 + 100) = 303 us; + 3*50 = 453 us.
  expect_all(make_spec(*t, Collective::ReduceScatter, Algorithm::Ring, kM), *t, 303 * kUs);
  expect_all(make_spec(*t, Collective::ReduceScatter, Algorithm::Ring, kM, kGamma), *t, 453 * kUs);
  // allgather = (p-1)(alpha + m/(p beta)) = 303 us, no reductions whatever gamma.
  expect_all(make_spec(*t, Collective::AllGather, Algorithm::Ring, kM), *t, 303 * kUs);
  expect_all(make_spec(*t, Collective::AllGather, Algorithm::Ring, kM, kGamma), *t, 303 * kUs);
}

TEST(ClosedForm, RingWithPiecesGainsNothingFromPipelining) {
  auto t = load_topology(fixture("star4.json"));
  // k=4 pieces per step: a rank sends them back to back on its one connection, each after the previous one has
  // arrived (FIFO), so every piece pays alpha: h = alpha + m/(p k beta) = 1 + 2.5e5/1e10 s = 26 us, and a step
  // takes k h = 104 us. 6 steps -> 624 us (more than 606 us with k=1: the extra 3 alphas per step). Every ring link
  // is busy at every step already, so pieces cannot overlap anything (the closed form used to claim
  // (2(p-1) + k - 1) h = 234 us, below the link-load bound 2(p-1) m/(p beta) = 600 us).
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM, 0, 4), *t, 624 * kUs);
  // gamma = 20 GB/s: a piece's reduction g = 2.5e5/2e10 = 12.5 us hides behind the rank's other 3 pieces
  // ((k-1) h = 78 us), so still 624 us.
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM, kGamma, 4), *t, 624 * kUs);
  // gamma = 1 GB/s: g = 250 us > (k-1) h. Step s+1 starts max(g, (k-1)h) + h = 276 us after step s when step s
  // reduced (steps 0..2), k h = 104 us otherwise (steps 3, 4); the last step takes k h = 104 us:
  // 3*276 + 2*104 + 104 = 1140 us.
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring, kM, 1e9, 4), *t, 1140 * kUs);
}

// ---- Halving-doubling ---------------------------------------------------------------------------------------

TEST(ClosedForm, HalvingDoublingPowersOfTwo) {
  // hd = 2 log2(p) alpha + 2 (p-1)/p m/beta + (p-1)/p m/gamma
  // p=8: 2*3*1 + 2*(7/8)*400 + (7/8)*200 us (m/beta = 4e6/1e10 = 400 us, m/gamma = 200 us) = 6 + 700 + 175 = 881 us;
  // without gamma 706 us. Each exchange pairs i with i^d: every rank sends once and receives once per step, on its
  // own up- and down-link, so the star is uncontended.
  auto t8 = load_topology(fixture("star8.json"));
  expect_all(make_spec(*t8, Collective::AllReduce, Algorithm::HalvingDoubling, kM), *t8, 706 * kUs);
  expect_all(make_spec(*t8, Collective::AllReduce, Algorithm::HalvingDoubling, kM, kGamma), *t8, 881 * kUs);
  // p=4: 2*2*1 + 2*(3/4)*400 + (3/4)*200 = 4 + 600 + 150 = 754 us; without gamma 604 us.
  auto t4 = load_topology(fixture("star4.json"));
  expect_all(make_spec(*t4, Collective::AllReduce, Algorithm::HalvingDoubling, kM), *t4, 604 * kUs);
  expect_all(make_spec(*t4, Collective::AllReduce, Algorithm::HalvingDoubling, kM, kGamma), *t4, 754 * kUs);
}

TEST(ClosedForm, HalvingDoublingFoldsTheRanksBeyondAPowerOfTwo) {
  // p=6 on an ASTRA-sim switch (500 ns per link -> alpha = 1 us, beta = 10 GB/s): q = 4. Ranks 4, 5 first send
  // their whole vector to 0, 1 (alpha + m/beta = 401 us), which reduce it (m/gamma = 200 us); then hd over 4 ranks
  // (754 us, above); then 0, 1 send the result back (401 us): 401 + 200 + 754 + 401 = 1756 us.
  // Without gamma: 401 + 604 + 401 = 1406 us.
  AstraTopology t("switch6", "switch6", {{BlockKind::Switch, 6, {LinkClass::Fabric, 500e-9, 10 * kGBps, 1}}});
  expect_all(make_spec(t, Collective::AllReduce, Algorithm::HalvingDoubling, kM, kGamma), t, 1756 * kUs);
  expect_all(make_spec(t, Collective::AllReduce, Algorithm::HalvingDoubling, kM), t, 1406 * kUs);
}

// ---- Double binary tree -------------------------------------------------------------------------------------

// Tree A over 8 ranks in heap layout (parent of i is (i-1)/2); tree B is the same over the reversed order:
//
//                 0                         depth 0
//             /       \                     (edges: child -> parent up, parent -> child down)
//            1         2                    depth 1
//          /   \     /   \                 (positions in the order)
//         3     4   5     6                 depth 2
//         |
//         7                                 depth 3 = D
//
// Each tree carries m/2 = 2e6 B in k = ceil(2e6 / 512 KiB) = 4 pieces of 5e5 B: hop h = 1 + 5e5/1e10 s = 51 us.
// Without gamma a piece climbs D hops and descends D hops, and the k pieces follow one hop apart:
// (2D + k - 1) h = 9 * 51 = 459 us.
// With gamma (g = 5e5 / 2e10 = 25 us per piece), a parent reduces its children's pieces one after the other:
//   up(7) = 0; up(3) = up(7) + h + g = h + g (one child); up(4..6) = 0;
//   up(1): child 3 -> max(0, up(3) + h) + g = 2h + 2g; child 4 -> max(2h + 2g, h) + g = 2h + 3g;
//   up(2): child 5 -> h + g; child 6 -> max(h + g, h) + g = h + 2g;
//   up(0): child 1 -> 2h + 3g + h + g = 3h + 4g; child 2 -> max(3h + 4g, h + 2g + h) + g = 3h + 5g.
// The last piece then reaches the deepest leaf (D + k - 1) h later: 3h + 5g + 6h = 9h + 5g = 459 + 125 = 584 us.
//
// The closed form (closed_form_steps.hpp Steps::tree, tree_timeline.hpp) walks the first piece up and the last one
// down hop by hop, each hop at its share of the links among the hops of its wave (up: those whose child's subtree is as
// high; down: whose child is as deep) of both trees, or among the hops that run beside it in the walk where that is
// more, and the k - 1 pieces between at the slowest hop while every edge of both trees, up and down, is busy (the
// pipeline's steady state); the slowest tree ends it. Without shared links that is up(0) + D h + (k - 1) h, the
// formula above.
TEST(ClosedForm, DoubleTreeOnDedicatedLinks) {
  // astra-fc8 gives every ordered pair its own link. The engines: with k=4 pieces the two trees' edges in the same
  // direction between the same pair never carry pieces at the same time, so nothing is shared: 459 and 584 us.
  // The closed form's steady state counts every edge of both trees, up and down, as busy at once: tree B's edge up
  // from position 2 to 5 (the mirror of 5 -> 2) and tree A's edge down from 2 to 5 share the link 2 -> 5 (and 5 -> 2
  // likewise), so the k - 1 = 3 pieces after the first stream at 1 + 5e5 / 5e9 s = 101 us a hop, the levels at 51:
  // up(0) + 3 x 51 + 3 x 101 = 153 + 153 + 303 = 609 us; with gamma up(0) = 3h + 5g = 278, 734 us. 33 % slow here,
  // where the pieces' timing keeps the shared pairs apart.
  auto t = load_topology(fixture("astra-fc8.json"));
  for (const auto& [gamma, engines_us, closed_us] : {std::tuple{0.0, 459.0, 609.0}, std::tuple{kGamma, 584.0, 734.0}}) {
    const CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Tree, kM, gamma);
    EXPECT_NEAR(simulate(s, *t, Network::ContentionFree), engines_us * kUs, engines_us * kUs * kRel);
    EXPECT_NEAR(simulate(s, *t, Network::Flow), engines_us * kUs, engines_us * kUs * kRel);
    EXPECT_NEAR(step_closed_form_seconds(s, *t), closed_us * kUs, closed_us * kUs * kRel);
    EXPECT_NEAR(closed_form_seconds(s, *t), closed_us * kUs, closed_us * kUs * kRel);
  }
}

TEST(ClosedForm, DoubleTreeFourRanks) {
  // p=4: heap 0 -> (1, 2), 1 -> 3; D = 2. k = 4 pieces of 5e5 B, g = 25 us. Tree B mirrors A over the reversed order
  // (3, 2, 1, 0): its edges are 2 -> 3 and 1 -> 3 at depth 1, 0 -> 2 at depth 2.
  // The contention-free engine shares nothing: h = 1 + 5e5 / 1e10 s = 51 us, (2D + k - 1) h = 7 * 51 = 357 us; with
  // gamma up(1) = h + g, up(0) = max(max(0, up(1) + h) + g, h) + g = 2h + 3g, total 7h + 3g = 432 us.
  // The closed form on the star (each rank one link to cpu0 and one back; a hop a -> b crosses a's and b's):
  //  - up, wave 0 (the leaves' edges: A 3 -> 1, 2 -> 0; B 0 -> 2, 1 -> 3): every rank sends one and receives one,
  //    51 us; wave 1 (A 1 -> 0, B 2 -> 3) shares nothing, 51 us, and runs after wave 0 on every rank's links;
  //  - down, depth 1 (A 0 -> 1, 0 -> 2; B 3 -> 2, 3 -> 1): ranks 0 and 3 send two, 1 and 2 receive two: 1 + 5e5 / 5e9
  //    s = 101 us; depth 2 (A 1 -> 3, B 2 -> 0) shares nothing: 51 us;
  //  - the steady state, every edge of both trees up and down: each rank sends three and receives three (rank 0
  //    sends 0 -> 2 up in B, 0 -> 1 and 0 -> 2 down in A): 1 + 5e5 / (1e10 / 3) s = 151 us.
  //  Each tree: up(1) = 51, up(0) = max(51 + 51, 51) = 102, descent 101 + 51 = 152, so 102 + 3 x 151 + 152 = 707 us;
  //  with gamma up(1) = 51 + 25 = 76, up(0) = max(max(0, 76 + 51) + 25, 51) + 25 = 177, 177 + 453 + 152 = 782 us.
  //  No hop's span overlaps another's on a link beyond its wave's, so the walk's second round changes nothing. Above
  //  the busiest link's load: rank 0's link from the switch carries the first tree's two downward edges (0 -> 1,
  //  0 -> 2) and the second tree's upward edge 0 -> 2, 3 x m/2 = 6 MB, 600 us at 10 GB/s; and above flow, 656.5 and
  //  681 us.
  auto t = load_topology(fixture("star4.json"));
  for (const auto& [gamma, free_us, closed_us] : {std::tuple{0.0, 357.0, 707.0}, std::tuple{kGamma, 432.0, 782.0}}) {
    const CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Tree, kM, gamma);
    EXPECT_NEAR(simulate(s, *t, Network::ContentionFree), free_us * kUs, free_us * kUs * kRel);
    EXPECT_NEAR(step_closed_form_seconds(s, *t), closed_us * kUs, closed_us * kUs * kRel);
    EXPECT_NEAR(closed_form_seconds(s, *t), closed_us * kUs, closed_us * kUs * kRel);
  }
}

TEST(ClosedForm, DoubleTreeOnAStarSharesItsLinks) {
  // On a star each rank has one link to the switch and one back: both children of a parent send their pieces up
  // into it at once, and the two trees' edges meet on the same links, so the flow model shares bandwidth and is
  // slower than the contention-free engine. The closed form prices each hop at its share of the links (a lower
  // bound of its max-min rate), with every edge busy in the pipeline's steady state: slower than flow here, never
  // faster.
  for (const char* file : {"star4.json", "star8.json", "astra-switch8.json"}) {
    SCOPED_TRACE(file);
    auto t = load_topology(fixture(file));
    for (double gamma : {0.0, kGamma}) {
      const CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Tree, kM, gamma);
      const double flow = simulate(s, *t, Network::Flow);
      EXPECT_GT(flow, simulate(s, *t, Network::ContentionFree) * (1 + 1e-3));
      EXPECT_GE(closed_form_seconds(s, *t), flow * (1 - kRel));
    }
  }
}

TEST(ClosedForm, DoubleTreeHopsShareLinksWithTheHopsBesideThem) {
  // split-star4: r0, r1 on hub cpu0 and r2, r3 on hub cpu1 (rank links 100 GB/s, the trunk between the hubs 10 GB/s,
  // 1 us each). Allreduce of 1e6 B over one channel, no reduction time: each tree carries one piece of 5e5 B (k = 1).
  // Order r0 r1 r2 r3: tree A is 0 -> (1, 2), 1 -> 3; tree B over (r3, r2, r1, r0) is r3 -> (r2, r1), r2 -> r0.
  // A hop inside a hub alone on its links takes 1 + 5e5 / 1e11 s = 6 us; across the trunk 1 + 5e5 / 1e10 s = 51 us.
  //  - Up, wave 0 (the leaves' edges): A r3 -> r1 and r2 -> r0 share the trunk cpu1 -> cpu0, B r0 -> r2 and r1 -> r3
  //    the other direction: 1 + 5e5 / 5e9 s = 101 us each. Wave 1: A r1 -> r0, B r2 -> r3, 6 us. The roots hold the
  //    piece at 107 us.
  //  - Down, depth 1: A r0 -> r1 and r0 -> r2 share r0's link (50 GB/s each), r0 -> r2 is then held to the trunk's
  //    10 GB/s: 11 and 51 us. Depth 2: r1 -> r3 alone in its wave on the trunk: 51 us, from 118 to 169 us.
  //    Tree B mirrors it on the other direction. Waves alone: 169 us.
  //  - But r1 -> r3 starts at 118 us, while r0 -> r2 (from 107 us) still runs on the same trunk: the flow engine shares
  //    it. The walk's next rounds count on the trunk the hops that run beside each: with both of duration D, r0 -> r2
  //    runs alone for 11 us and beside r1 -> r3 for D - 11, so each has 2 - 11 / D hops beside it on average and
  //    D = 1 + 50 (2 - 11 / D) us, D^2 - 101 D + 550 = 0, D = (101 + sqrt(8001)) / 2 = 95.2242 us: 118 + D = 213.224
  //    us. The counts grow toward it round by round (1, 1.784, 1.878, 1.8841, ...), each step about 6 % of the one
  //    before, and the walk stops once the next round would add less than 0.1 % (kCountTolerance) to every count, so
  //    its counts are within 0.1 % / (1 - 0.06) of the fixed point and D within 50 x 1.884 x 0.0011 = 0.1 us of it
  //    (213.205 us here). No other link has more hops beside a hop than its wave (r0's link: r0 -> r1 and r0 -> r2,
  //    both counted at depth 1).
  // The flow engine: r0 -> r1 takes 1 + 5e5 / 9e10 s = 6.56 us (r0 -> r2 keeps 10 of r0's 100 GB/s), r1 -> r3 joins
  // the trunk at 114.6 us, and both share it to the end: 208.0 us, between the two.
  auto t = load_topology(fixture("split-star4.json"));
  ASSERT_EQ(t->ring_order(), (std::vector<int>{0, 1, 2, 3}));
  CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Tree, 1'000'000);
  s.channels = 1;
  const closed_form::Steps steps{s, 1};
  const closed_form::TreeHops hops = closed_form::route_tree_hops(*t, t->ring_order(), s.ranks_per_node, 1);
  EXPECT_NEAR(ps_to_seconds(closed_form::tree_first_and_last_ps(steps, hops, 500'000, 0, 1)), 169 * kUs, 1e-12);
  const double d_us = (101 + std::sqrt(8001.0)) / 2;
  EXPECT_NEAR(closed_form_seconds(s, *t), (118 + d_us) * kUs, 0.1 * kUs);
  EXPECT_NEAR(simulate(s, *t, Network::Flow), 208.0 * kUs, 0.1 * kUs);
}

// ---- Chain broadcast / reduce -------------------------------------------------------------------------------

TEST(ClosedForm, PipelinedChainBroadcastAndReduce) {
  auto t = load_topology(fixture("star8.json"));
  // broadcast = (p - 2 + k) (alpha + m/(k beta)): k = ceil(4e6 / 512 KiB) = 8 pieces of 5e5 B, h = 51 us:
  // (8 - 2 + 8) * 51 = 714 us, from any root (the chain starts at the root and follows the ring).
  for (int root : {0, 3}) {
    CollectiveSpec s = make_spec(*t, Collective::Broadcast, Algorithm::Ring, kM);
    s.root = root;
    expect_all(s, *t, 714 * kUs);
    // reduce = the same chain towards the root, plus (p-1) reductions of a piece on the critical path:
    // 714 + 7 * (5e5 / 2e10 = 25 us) = 889 us.
    CollectiveSpec r = make_spec(*t, Collective::Reduce, Algorithm::Ring, kM, kGamma);
    r.root = root;
    expect_all(r, *t, 889 * kUs);
  }
}

// ---- Two-level algorithms: the sum of their phases ----------------------------------------------------------

TEST(ClosedForm, HierarchicalIsTheSumOfItsThreePhases) {
  auto t = load_topology(fixture("two-level-2x4.json"));
  // Groups = nodes = 2 of 4 ranks (Paddle's hierarchical allreduce):
  //  1. ring allreduce inside each node: 2*3*(1 + 1e6/1e10 s) = 606 us        (+ 3 * 1e6/2e10 = 150 us with gamma)
  //  2. ring allreduce of the 2 leaders: 2*1*(1 + 2e6/1e10 s) = 402 us        (+ 1 * 2e6/2e10 = 100 us with gamma)
  //  3. chain broadcast from each leader: k = 8 pieces of 5e5 B, (4 - 2 + 8) * 51 = 510 us
  // total 606 + 402 + 510 = 1518 us; with gamma 756 + 502 + 510 = 1768 us. The two nodes run phases 1 and 3 on
  // disjoint links, and each rank has its own NIC, so nothing is shared.
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Hierarchical, kM), *t, 1518 * kUs);
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Hierarchical, kM, kGamma), *t, 1768 * kUs);
}

TEST(ClosedForm, TwoDimensionalRingIsTheSumOfItsThreePhases) {
  auto t = load_topology(fixture("two-level-2x4.json"));
  // R = 4 ranks per node, N = 2 nodes:
  //  1. ring reduce-scatter inside each node: (R-1)(alpha + m/(R beta)) = 3*(1 + 100) = 303 us  (+ 3*50 with gamma)
  //  2. ring allreduce across the nodes of each rank's block m/R = 1e6 B: 2(N-1)(alpha + (m/R)/(N beta))
  //     = 2*(1 + 50) = 102 us (+ 1 * 5e5/2e10 = 25 us with gamma); the 4 rings use 4 different NICs
  //  3. ring allgather inside each node: 303 us
  // total 303 + 102 + 303 = 708 us; with gamma 453 + 127 + 303 = 883 us.
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring2D, kM), *t, 708 * kUs);
  expect_all(make_spec(*t, Collective::AllReduce, Algorithm::Ring2D, kM, kGamma), *t, 883 * kUs);
}

// ---- Uneven splits: the closed form is a tight upper bound --------------------------------------------------

// The busiest link's bound (closed_form_reference.hpp): every transfer's bytes on every link of its route, summed per
// link, the largest sum over its link's rate. Summed here transfer by transfer; busiest_link_ps sums per pair of ranks
// and routes each pair once. 5 bytes over 8 ranks cut into pieces of 0 and 1 byte, in 4 chunks and 2 channels, so
// pairs carry empty pieces beside full ones: they must count nothing, and no pair twice.
TEST(ClosedForm, BusiestLinkCountsEveryByteOnce) {
  auto t = load_topology("tests/data/two-level-2x4.json");
  for (Algorithm a : {Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical, Algorithm::Ring2D})
    for (Bytes m : {Bytes{5}, kM}) {
      CollectiveSpec s = make_spec(*t, Collective::AllReduce, a, m, 0, 4);
      s.channels = 2;
      Schedule schedule;
      std::vector<OpId> frontier(t->ranks(), kNoOp);
      generate(s, *t, schedule, frontier);
      std::map<LinkId, double> load;
      Route route;
      for (const Op& op : schedule.ops) {
        if (op.kind != OpKind::Transfer) continue;
        route.links.clear();
        t->route(op.src, op.dst, route);
        for (LinkId id : route.links) load[id] += static_cast<double>(op.bytes);
      }
      TimePs busiest = 0;
      for (const auto& [id, bytes] : load) busiest = std::max(busiest, transfer_ps(bytes, t->link(id).effective_Bps()));
      EXPECT_EQ(closed_form::busiest_link_ps(s, *t), busiest) << to_string(a) << " " << m;
    }
}

TEST(ClosedForm, UnevenSplitsAreBoundedByOneBytePerHop) {
  // When p, the channels or the pieces do not divide m, pieces differ by one byte; the closed form prices every
  // piece as the largest one, so it may exceed the engine by at most one byte's time (plus one picosecond of
  // rounding) per operation on the critical path, which has at most as many operations as the schedule. The tree's
  // closed form counts its edges' shared links in the steady state, which the contention-free engine does not: it is
  // held to itself one byte below (every piece then the same or one byte smaller).
  auto t = load_topology(fixture("star8.json"));
  const double beta = 10 * kGBps;
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Hierarchical})
    for (Bytes m : {Bytes(4'000'001), Bytes(33'554'431), Bytes(1'000'003)})
      for (int chunks : {0, 3}) {
        SCOPED_TRACE(std::string(to_string(a)) + " m=" + std::to_string(m) + " chunks=" + std::to_string(chunks));
        CollectiveSpec s = make_spec(*t, Collective::AllReduce, a, m, kGamma, chunks);
        if (a == Algorithm::Hierarchical) s.hierarchy_groups = 2;
        Schedule sched;
        std::vector<OpId> frontier(t->ranks(), kNoOp);
        generate(s, *t, sched, frontier);
        const double cf = step_closed_form_seconds(s, *t);
        CollectiveSpec even = s;
        even.bytes = m - 1;
        const double an = a == Algorithm::Tree ? step_closed_form_seconds(even, *t)
                                               : run_schedule(sched, *t, Network::ContentionFree, s.reduce_Bps).seconds;
        const double slack = static_cast<double>(sched.ops.size()) * (1 / beta + 1 / kGamma + 2e-12);
        EXPECT_GE(cf, an);
        EXPECT_LE(cf - an, slack);
      }
}

}  // namespace
}  // namespace commsim::test
