// The closed forms priced from distinct hop classes (and, on regular topologies, from one node and one column) must
// equal the reference that visits every hop of every group, bit for bit, and `auto` must pick what the reference
// picks: a step costs its slowest hop, so the maximum over a pattern's distinct (path cost, same node) classes is the
// maximum over its hops, and every formula is non-decreasing in that hop (closed_form_steps.hpp).
#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/hop_classes.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

// Every shipped topology and the ASTRA-sim fixtures (dimensions: not regular, so the fast path visits every hop).
std::vector<std::string> topology_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator("topologies"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const char* f : {"astra-fc8.json", "astra-switch4.json", "two-level-2x4.json", "star8.json"})
    files.push_back(fixture(f));
  return files;
}

// 1, 2 and 45 nodes: 45 spans three leaves of 20 (dgx-a100) and two of 32 (dgx-h100), so groups of 3 nodes (15
// groups) straddle a leaf boundary and the columns' rings cross leaves and wrap.
std::vector<std::unique_ptr<Topology>> topologies() {
  std::vector<std::unique_ptr<Topology>> out;
  for (const std::string& f : topology_files())
    for (int nodes : {1, 2, 45}) {
      try {
        out.push_back(load_topology(f, nodes));
      } catch (const InputError&) {
        continue;  // single-node designs refuse other node counts (ShippedTopologies checks why)
      }
      out.back()->set_library(CommLibrary{});  // the generic closed forms (NCCL's model is priced elsewhere)
    }
  return out;
}

// Group counts for hierarchical: one per node (0), 1, 2 and 4 per node, groups of 3 and 5 nodes, and groups of 12
// ranks (neither inside one node nor whole nodes of 8: the fast path visits every hop).
std::vector<int> group_counts(const Topology& t) {
  const int p = t.ranks(), nodes = t.nodes();
  std::vector<int> out = {0, 1};
  for (int g : {nodes, 2 * nodes, 4 * nodes, nodes / 3, nodes / 5, p / 12})
    if (g >= 1 && g <= p && p % g == 0 && (g != nodes / 3 || nodes % 3 == 0) && (g != nodes / 5 || nodes % 5 == 0))
      out.push_back(g);
  return out;
}

std::string describe(const Topology& t, const CollectiveSpec& s) {
  return t.name() + " x" + std::to_string(t.nodes()) + " " + std::string(to_string(s.op)) + "/" +
         std::string(to_string(s.algorithm)) + " " + std::to_string(s.bytes) + " B, " + std::to_string(s.channels) +
         " ch, groups " + std::to_string(s.hierarchy_groups) + ", rpn " + std::to_string(s.ranks_per_node) + ", root " +
         std::to_string(s.root) + ", ranks " + std::to_string(s.ranks.size());
}

// Specs over every algorithm, op, size and group shape the closed forms take; unsupported ones are left out.
std::vector<CollectiveSpec> specs(const Topology& t) {
  std::vector<CollectiveSpec> out;
  const int rpn = t.ranks_per_node();
  std::vector<int> shuffled = t.ring_order();  // an explicit rank list: the fast path collects from its hops
  std::reverse(shuffled.begin(), shuffled.end());
  for (Bytes bytes : {Bytes{0}, Bytes{1}, Bytes{1000}, Bytes{1} << 20, (Bytes{1} << 30) + 7})
    for (int channels : {1, t.default_channels()})
      for (const std::vector<int>& ranks : {std::vector<int>{}, shuffled}) {
        auto add = [&](Collective op, Algorithm a, int groups, int spec_rpn, int root) {
          CollectiveSpec s = make_spec(t, op, a, bytes, bytes % 2 ? 1e11 : 0);
          s.channels = channels, s.hierarchy_groups = groups, s.ranks_per_node = spec_rpn, s.root = root;
          s.ranks = ranks;
          try {
            check_supported(s, t.ranks(), "test");
          } catch (const InputError&) {
            return;
          }
          out.push_back(s);
        };
        for (Collective op : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
          add(op, Algorithm::Ring, 0, rpn, 0);
        for (Collective op : {Collective::Broadcast, Collective::Reduce})
          for (int root : {0, 3}) add(op, Algorithm::Ring, 0, rpn, root % t.ranks());
        add(Collective::AllReduce, Algorithm::Tree, 0, rpn, 0);
        add(Collective::AllReduce, Algorithm::HalvingDoubling, 0, rpn, 0);
        for (int groups : group_counts(t)) add(Collective::AllReduce, Algorithm::Hierarchical, groups, rpn, 0);
        for (int spec_rpn : {rpn, 2, 1}) add(Collective::AllReduce, Algorithm::Ring2D, 0, spec_rpn, 0);
      }
  return out;
}

TEST(ClosedFormFastPath, EqualsTheFullWalkOnEveryTopologyAlgorithmSizeAndGroupShape) {
  int compared = 0;
  for (const auto& t : topologies())
    for (const CollectiveSpec& s : specs(*t)) {
      SCOPED_TRACE(describe(*t, s));
      // Both are ps_to_seconds of an integer count of picoseconds: equal doubles when the counts are equal.
      ASSERT_EQ(step_closed_form_seconds(s, *t), ps_to_seconds(closed_form::full_walk_step_ps(s, *t)));
      ++compared;
    }
  EXPECT_GT(compared, 1000);  // the loops above really ran over the files
}

TEST(ClosedFormFastPath, TreeBeyondTheRoutedLimitEqualsTheFullWalk) {
  // Beyond kRoutedMaxRanks participants the tree prices each wave of its climb and descent at the wave's slowest hop
  // (tree_timeline.hpp): from hop classes on the fast path, by visiting every hop on the full walk. 130 dgx-a100 nodes
  // are 1040 ranks.
  const auto t = load_topology("topologies/dgx-a100.json", 130);
  ASSERT_GT(t->ranks(), closed_form::kRoutedMaxRanks);
  for (Bytes bytes : {Bytes{1000}, Bytes{1} << 20, Bytes{64} << 20})
    for (double reduce_Bps : {0.0, 1e11}) {
      CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Tree, bytes, reduce_Bps);
      s.channels = t->default_channels();
      SCOPED_TRACE(describe(*t, s));
      ASSERT_EQ(step_closed_form_seconds(s, *t), ps_to_seconds(closed_form::full_walk_step_ps(s, *t)));
    }
}

TEST(ClosedFormFastPath, AutoChoosesAndPricesAsTheFullWalk) {
  // A latency-bound and a bandwidth-bound size, the latter also with two groups per node (up to 1024 ranks both
  // sides route every candidate's schedule for the busiest-link bound, which is what takes this test's time).
  for (const auto& t : topologies())
    for (Bytes bytes : {Bytes{1024}, Bytes{64} << 20})
      for (int groups : {0, 2 * t->nodes()}) {
        if (groups > 0 && (bytes < (Bytes{64} << 20) || t->ranks() % groups != 0)) continue;
        CollectiveSpec s = make_spec(*t, Collective::AllReduce, Algorithm::Auto, bytes, 1e11);
        s.channels = t->default_channels();
        s.hierarchy_groups = groups;
        SCOPED_TRACE(describe(*t, s));
        const Algorithm reference = closed_form::full_walk_choose_algorithm(s, *t);
        ASSERT_EQ(choose_algorithm(s, *t), reference);
        CollectiveSpec chosen = s;
        chosen.algorithm = reference;
        const TimePs steps = closed_form::full_walk_step_ps(chosen, *t);
        EXPECT_EQ(closed_form_seconds(s, *t), ps_to_seconds(closed_form::closed_form_ps(chosen, *t, steps)));
        // A second call answers from the cache: the same choice.
        EXPECT_EQ(choose_algorithm(s, *t), reference);
      }
}

using ClassSet = std::set<std::tuple<bool, double, double>>;
ClassSet as_set(const closed_form::HopClasses& classes) {
  ClassSet out;
  for (const closed_form::HopClass& c : classes) out.insert({c.same_node, c.cost.latency_s, c.cost.bottleneck_Bps});
  return out;
}

TEST(ClosedFormFastPath, RegularShortcutsFindEveryDistinctHop) {
  // Stronger than equal times (a missing class that is never the slowest would not show there): the classes found
  // from one node and one column are exactly those of visiting every hop of every group.
  int regular = 0;
  for (const auto& t : topologies()) {
    SCOPED_TRACE(t->name() + " x" + std::to_string(t->nodes()));
    const std::vector<int> order = t->ring_order();
    const int p = t->ranks(), rpn = t->ranks_per_node(), nodes = t->nodes();
    auto visited = [&](auto positions) {
      closed_form::HopCollector every(*t);
      positions([&](int i, int j) { every.add(order[i], order[j]); });
      return as_set(every.take());
    };
    closed_form::HopCollector probe(*t);
    const bool is_regular = closed_form::regular_column_hops(*t, probe);
    EXPECT_EQ(is_regular, t->node_relation(0, 0) >= 0);
    if (!is_regular) continue;  // ASTRA-sim dimensions: every hop is visited (the tests above cover them)
    ++regular;
    EXPECT_EQ(as_set(probe.take()), visited([&](auto visit) {
                for (int j = 0; j < rpn; ++j)
                  closed_form::ring_positions(nodes, [&](int a, int b) { visit(a * rpn + j, b * rpn + j); });
              }));
    for (int groups : group_counts(*t)) {
      const int size = p / (groups > 0 ? groups : nodes);
      SCOPED_TRACE("groups of " + std::to_string(size));
      for (bool closed : {true, false}) {
        closed_form::HopCollector fast(*t);
        if (!closed_form::regular_group_hops(*t, size, closed, fast)) {
          EXPECT_TRUE(size < 2 || (rpn % size != 0 && size % rpn != 0));  // only shapes it does not know
          continue;
        }
        EXPECT_EQ(as_set(fast.take()), visited([&](auto visit) {
                    for (int g = 0; g < p / size; ++g) {
                      auto shifted = [&](int i, int j) { visit(g * size + i, g * size + j); };
                      closed ? closed_form::ring_positions(size, shifted) : closed_form::chain_positions(size, shifted);
                    }
                  }));
      }
      closed_form::HopCollector leaders(*t);
      if (closed_form::regular_leader_hops(*t, size, leaders)) {
        EXPECT_EQ(as_set(leaders.take()), visited([&](auto visit) {
                    closed_form::ring_positions(p / size, [&](int i, int j) { visit(i * size, j * size); });
                  }));
      }
    }
  }
  EXPECT_GT(regular, 20);
}

}  // namespace
}  // namespace commsim::test
