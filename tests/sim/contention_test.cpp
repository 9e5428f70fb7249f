// Contention in the flow-level network, driven directly through make_network and a TransferListener: flows that
// share a link share its bandwidth max-min fairly; the analytical network never shares.
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "sim/topology/topology_document.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// Records when each transfer (by tag) is delivered.
class Recorder final : public TransferListener {
 public:
  explicit Recorder(const EventQueue& queue) : queue_(queue) {}
  void on_transfer_done(std::uint64_t tag) override { done_at[tag] = ps_to_seconds(queue_.now()); }
  std::map<std::uint64_t, double> done_at;

 private:
  const EventQueue& queue_;
};

// Starts a transfer at a later simulated time.
class StartLater final : public EventHandler {
 public:
  StartLater(NetworkModel& net, int src, int dst, double bytes, TransferListener* l, std::uint64_t tag)
      : net_(net), src_(src), dst_(dst), bytes_(bytes), listener_(l), tag_(tag) {}
  void on_event(std::uint64_t) override { net_.start(src_, dst_, bytes_, listener_, tag_); }

 private:
  NetworkModel& net_;
  int src_, dst_;
  double bytes_;
  TransferListener* listener_;
  std::uint64_t tag_;
};

constexpr double kTol = 1e-12;  // 1 ps: the engine's quantum

// astra-switch4: four NPUs on a switch; each NPU has an up-link (to the switch) and a down-link (from it), 500 ns
// and 10 GB/s each, so a path NPU -> switch -> NPU costs alpha = 1 us, beta = 10 GB/s.
//
//      0     1     2     3
//      |     |     |     |          0 -> 2 uses up(0), down(2)
//      +-----+--+--+-----+          1 -> 2 uses up(1), down(2): they share down(2)
//            switch
TEST(Contention, TwoFlowsOnOneLinkEachTakeTwiceAsLong) {
  auto t = load_topology(fixture("astra-switch4.json"));
  EventQueue queue;
  auto net = make_test_network(Network::Flow, *t, queue);
  Recorder rec(queue);
  // Alone: alpha + m/beta = 1 us + 1e6 B / 1e10 B/s = 1 + 100 = 101 us.
  net->start(0, 2, 1e6, &rec, 1);
  queue.run();
  EXPECT_NEAR(rec.done_at[1], 101e-6, kTol);

  // Together on down(2): each gets 10/2 = 5 GB/s, so the bandwidth part doubles: 1 + 1e6/5e9 s = 1 + 200 = 201 us.
  EventQueue q2;
  auto net2 = make_test_network(Network::Flow, *t, q2);
  Recorder rec2(q2);
  net2->start(0, 2, 1e6, &rec2, 1);
  net2->start(1, 2, 1e6, &rec2, 2);
  q2.run();
  EXPECT_NEAR(rec2.done_at[1], 201e-6, kTol);
  EXPECT_NEAR(rec2.done_at[2], 201e-6, kTol);
  EXPECT_NEAR(rec2.done_at[1] - 1e-6, 2 * (rec.done_at[1] - 1e-6), kTol);  // twice the alone drain time
}

TEST(Contention, FlowsOnDisjointLinksDoNotInterfere) {
  // 0 -> 1 (up(0), down(1)) and 2 -> 3 (up(2), down(3)) share nothing: both 101 us, as alone. Likewise 0 -> 1 and
  // 1 -> 0: opposite directions of a full-duplex link are independent resources.
  auto t = load_topology(fixture("astra-switch4.json"));
  EventQueue queue;
  auto net = make_test_network(Network::Flow, *t, queue);
  Recorder rec(queue);
  net->start(0, 1, 1e6, &rec, 1);
  net->start(2, 3, 1e6, &rec, 2);
  net->start(1, 0, 1e6, &rec, 3);
  queue.run();
  for (std::uint64_t tag : {1, 2, 3}) EXPECT_NEAR(rec.done_at[tag], 101e-6, kTol) << tag;
}

TEST(Contention, ContentionFreeNetworkNeverShares) {
  // The contention-free oracle prices each transfer alone: the two flows into NPU 2 both take 101 us.
  auto t = load_topology(fixture("astra-switch4.json"));
  EventQueue queue;
  auto net = make_test_network(Network::ContentionFree, *t, queue);
  Recorder rec(queue);
  net->start(0, 2, 1e6, &rec, 1);
  net->start(1, 2, 1e6, &rec, 2);
  queue.run();
  EXPECT_NEAR(rec.done_at[1], 101e-6, kTol);
  EXPECT_NEAR(rec.done_at[2], 101e-6, kTol);
}

TEST(Contention, AFlowJoiningLaterSlowsTheFirstFromThatInstant) {
  // F1: 0 -> 2, 2e6 B, started at 0, enters at 1 us alone at 10 GB/s. F2: 1 -> 2, 1e6 B, started at 51 us, enters at
  // 52 us. By 52 us F1 has sent 51 us * 10 GB/s = 5.1e5 B (1.49e6 left). Both now get 5 GB/s: F2 needs
  // 1e6/5e9 = 200 us -> done at 252 us; meanwhile F1 sends 1e6 (4.9e5 left), then alone at 10 GB/s: 49 us ->
  // done at 301 us (= 1 us + all 3e6 B through down(2) at 10 GB/s: the link never idles).
  auto t = load_topology(fixture("astra-switch4.json"));
  EventQueue queue;
  auto net = make_test_network(Network::Flow, *t, queue);
  Recorder rec(queue);
  net->start(0, 2, 2e6, &rec, 1);
  StartLater later(*net, 1, 2, 1e6, &rec, 2);
  queue.schedule(seconds_to_ps(51e-6), &later, 0);
  queue.run();
  EXPECT_NEAR(rec.done_at[2], 252e-6, kTol);
  EXPECT_NEAR(rec.done_at[1], 301e-6, kTol);
}

// maxmin-star: four ranks on one switch device; per-direction link bandwidths differ; every link 1 us, so every
// path has alpha = max(1, 1) = 1 us.
//
//                 r1
//                 | 30 GB/s
//    r0 --------- sw --------- r3
//       10 GB/s   |   30 GB/s
//                 | 4 GB/s
//                 r2
//
//   F1: r0 -> r2, 4e5 B    links up(r0) [10], down(r2) [4]
//   F2: r0 -> r3, 1.2e6 B  links up(r0) [10], down(r3) [30]
//   F3: r1 -> r3, 4.8e6 B  links up(r1) [30], down(r3) [30]
//
// Progressive filling at t = 1 us (all three enter together), fair shares per link: down(r2) 4/1 = 4,
// up(r0) 10/2 = 5, down(r3) 30/2 = 15, up(r1) 30/1 = 30.
//   - down(r2) is the bottleneck: F1 = 4 GB/s.           up(r0) has 10 - 4 = 6 left for F2 alone: share 6.
//   - up(r0) is next: F2 = 6 GB/s.                       down(r3) has 30 - 6 = 24 left for F3: share 24.
//   - down(r3) is next: F3 = 24 GB/s (up(r1) allows 30).
// Three links, each the bottleneck of one flow: (4, 6, 24) GB/s.
//   F1 finishes after 4e5 / 4e9 = 100 us -> at 101 us. By then F2 sent 6e5 (6e5 left), F3 2.4e6 (2.4e6 left).
//   Refill: up(r0) 10/1 = 10 for F2, down(r3) 30/2 = 15 -> F2 = 10 GB/s; F3 = 30 - 10 = 20 GB/s.
//   F2 needs 6e5 / 1e10 = 60 us -> done at 161 us. F3 sent 20e9 * 60e-6 = 1.2e6 (1.2e6 left).
//   F3 alone: min(30, 30) = 30 GB/s, 1.2e6 / 3e10 = 40 us -> done at 201 us.
TEST(Contention, MaxMinFairSharingOverThreeLinks) {
  auto t = load_topology(fixture("maxmin-star.json"));
  EventQueue queue;
  auto net = make_test_network(Network::Flow, *t, queue);
  Recorder rec(queue);
  net->start(0, 2, 4e5, &rec, 1);
  net->start(0, 3, 1.2e6, &rec, 2);
  net->start(1, 3, 4.8e6, &rec, 3);
  queue.run();
  EXPECT_NEAR(rec.done_at[1], 101e-6, kTol);
  EXPECT_NEAR(rec.done_at[2], 161e-6, kTol);
  EXPECT_NEAR(rec.done_at[3], 201e-6, kTol);
  // Bytes per link: down(r3) carried F2 and F3, 6e6 B; usage counts bytes per link crossed, summed by class:
  // F1 2 links * 4e5 + F2 2 * 1.2e6 + F3 2 * 4.8e6 = 0.8e6 + 2.4e6 + 9.6e6 = 12.8e6 B of pcie.
  EXPECT_DOUBLE_EQ(net->usage().bytes[static_cast<int>(LinkClass::Pcie)], 12.8e6);
}

TEST(Contention, ScheduleOnASharedLinkSerializesThroughput) {
  // Through the executor: a reduce-to-one pattern where ranks 1, 2, 3 each send 1e6 B to rank 0 at once on
  // astra-switch4. down(0) carries 3e6 B at 10 GB/s: 300 us after the 1 us latency -> 301 us. The analytical
  // network ignores the sharing: 101 us.
  auto t = load_topology(fixture("astra-switch4.json"));
  Schedule s;
  for (int r = 1; r < 4; ++r) s.transfer(r, 0, 1'000'000, {});
  EXPECT_NEAR(run_schedule(s, *t, Network::Flow, 0).seconds, 301e-6, kTol);
  EXPECT_NEAR(run_schedule(s, *t, Network::ContentionFree, 0).seconds, 101e-6, kTol);
}

// Two nodes of one rank each behind a token-bucket NIC (tc tbf, as the emulated cluster shapes them): sustained
// r = 1e8 B/s, bucket B = 1 001 514 B, burst_Bps P = 1.1e9 B/s; every other link `shm_Bps` (1e12 B/s) and no
// latency anywhere. A transfer crosses two bucket links (node 0's egress, the switch's egress to node 1), which drain
// alike.
std::unique_ptr<Topology> bucket_pair(double shm_Bps = 1e12) {
  const Json doc = {
      {"name", "bucket-pair"},
      {"link_classes",
       {{"shm", {{"latency_s", 0}, {"bandwidth_Bps", shm_Bps}, {"source", "test"}}},
        {"tcp",
         {{"latency_s", 0},
          {"bandwidth_Bps", 1e8},
          {"burst_bytes", 1001514},
          {"burst_Bps", 1.1e9},
          {"source", "test"}}}}},
      {"node",
       {{"devices",
         {{{"name", "rank0"}, {"kind", "cpu_rank"}},
          {{"name", "cpu0"}, {"kind", "cpu"}},
          {{"name", "nic0"}, {"kind", "nic"}}}},
        {"links",
         {{{"a", "rank0"}, {"b", "cpu0"}, {"class", "shm"}}, {{"a", "nic0"}, {"b", "cpu0"}, {"class", "shm"}}}}}},
      {"nodes", 2},
      {"fabric", {{"kind", "single_switch"}, {"link_class", "tcp"}}}};
  return load_topology_document(doc, "bucket-pair.json");
}

// Transfers from rank 0 to rank 1 of bucket_pair(shm_Bps), each (bytes, start time in s); when each is delivered.
std::vector<double> bucket_pair_delivered_s(const std::vector<std::pair<double, double>>& transfers,
                                            double shm_Bps = 1e12) {
  auto t = bucket_pair(shm_Bps);
  EventQueue queue;
  auto net = make_test_network(Network::Flow, *t, queue);
  Recorder rec(queue);
  std::vector<std::unique_ptr<StartLater>> starts;
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    starts.push_back(std::make_unique<StartLater>(*net, 0, 1, transfers[i].first, &rec, i));
    queue.schedule(seconds_to_ps(transfers[i].second, "start"), starts.back().get(), 0);
  }
  queue.run();
  std::vector<double> delivered;
  for (std::size_t i = 0; i < transfers.size(); ++i) delivered.push_back(rec.done_at[i]);
  return delivered;
}

// From a full bucket the flow gets P until one frame's tokens (1514 B) are left: the tokens fall at P - r = 1e9 B/s
// from B, so that takes (B - 1514) / 1e9 = 1 ms and moves 1.1e6 B. The other 2e6 B of 3.1e6 go at r: 20 ms. 21 ms.
TEST(TokenBucket, AFullBucketPassesItsBurstThenTheSustainedRate) {
  EXPECT_NEAR(bucket_pair_delivered_s({{3.1e6, 0}})[0], 21e-3, 1e-9);
}

// After the first transfer (21 ms, above) one frame's tokens are left; the link then idles 5 ms and the bucket
// fills at r: 1514 + 1e8 x 5e-3 = 501 514 B. The second transfer (1.55e6 B, at 26 ms) gets P for 5e5 / 1e9 = 0.5 ms
// (5.5e5 B), then 1e6 B at r: 10 ms. Done at 26 + 0.5 + 10 = 36.5 ms. Without the bucket: 26 + 15.5 = 41.5 ms.
TEST(TokenBucket, AnIdleSpellRefillsTheBucketAtTheSustainedRate) {
  const std::vector<double> delivered = bucket_pair_delivered_s({{3.1e6, 0}, {1.55e6, 26e-3}});
  EXPECT_NEAR(delivered[0], 21e-3, 1e-9);
  EXPECT_NEAR(delivered[1], 36.5e-3, 1e-9);
}

// Two transfers at once from a full bucket share P: each at P / 2 = 5.5e8 while the tokens fall at P - r = 1e9 B/s,
// 1 ms as alone, 5.5e5 B each; then r / 2 each for the remaining 1e6 B each: 2e6 / 1e8 = 20 ms. Both done at 21 ms.
// The bucket is the link's, not the flow's: two flows drain it no faster than one at the same total rate.
TEST(TokenBucket, FlowsSharingTheLinkShareItsBucket) {
  const std::vector<double> delivered = bucket_pair_delivered_s({{1.55e6, 0}, {1.55e6, 0}});
  EXPECT_NEAR(delivered[0], 21e-3, 1e-9);
  EXPECT_NEAR(delivered[1], 21e-3, 1e-9);
}

// A flow held by another link at 0.1 B/s above the sustained rate drains the bucket so slowly (1e6 B / 0.1 B/s =
// 1e7 s, past the 100 days simulated time can reach) that it never runs down: the flow keeps its 1e8 + 0.1 B/s, and
// 3.1e6 B take 3.1e6 / (1e8 + 0.1) s = 31 ms (less 3.1e-11 s). No event is scheduled past the end of time.
TEST(TokenBucket, ABucketThatWouldOutlastSimulatedTimeNeverRunsDown) {
  EXPECT_NEAR(bucket_pair_delivered_s({{3.1e6, 0}}, 1e8 + 0.1)[0], 3.1e6 / (1e8 + 0.1), 1e-9);
}

}  // namespace
}  // namespace commsim::test
