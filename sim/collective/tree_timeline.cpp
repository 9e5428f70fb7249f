#include "sim/collective/tree_timeline.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/hop_classes.hpp"
#include "sim/core/error.hpp"

namespace commsim::closed_form {
namespace {

// Per order and tree: piece 0 up, where a parent joins its children one after the other (receive, then reduce g),
// then the last piece down from the root `between` after it got there, a parent sending to its children at once.
// hop_ps(h, tree, down, child): the time of hop h (tree_hop_index); span(h, start, end) is told when each hop runs.
// Returns when the last rank of the slowest tree holds the last piece. `trees` 1: tree B costs what tree A does.
template <typename HopPs, typename Span>
TimePs walk_trees(int p, int orders, int trees, TimePs g, TimePs between, HopPs hop_ps, Span span) {
  std::vector<TimePs> held(static_cast<std::size_t>(p));
  TimePs last = 0;
  for (int order = 0; order < orders; ++order)
    for (int tree = 0; tree < trees; ++tree) {
      std::fill(held.begin(), held.end(), 0);
      for (int i = p - 1; i >= 0; --i)
        for (int child : {2 * i + 1, 2 * i + 2})
          if (child < p) {
            const std::size_t h = tree_hop_index(p, order, tree, false, child);
            const TimePs end = add_ps(held[child], hop_ps(h, tree, false, child));
            span(h, held[child], end);
            held[i] = add_ps(std::max(held[i], end), g);
          }
      held[0] = add_ps(held[0], between);
      for (int child = 1; child < p; ++child) {
        const std::size_t h = tree_hop_index(p, order, tree, true, child);
        const TimePs start = held[(child - 1) / 2];
        held[child] = add_ps(start, hop_ps(h, tree, true, child));
        span(h, start, held[child]);
        last = std::max(last, held[child]);
      }
    }
  return last;
}

}  // namespace

TreeHops route_tree_hops(const Topology& topology, const std::vector<int>& order, int rotation_block, int channels) {
  TreeHops t;
  t.p = static_cast<int>(order.size());
  t.orders = std::max(1, channels);
  t.link_begin.push_back(0);
  Route route;
  for (int c = 0; c < t.orders; ++c) {
    const std::vector<int> channel = schedule_parts::channel_order(order, rotation_block, c, t.orders);
    for (int tree = 0; tree < 2; ++tree) {
      auto rank = [&](int position) {  // tree B runs over the channel's order reversed
        return channel[static_cast<std::size_t>(tree == 0 ? position : t.p - 1 - position)];
      };
      for (bool down : {false, true})
        for (int child = 1; child < t.p; ++child) {  // in tree_hop_index order
          int from = rank(child), to = rank((child - 1) / 2);
          if (down) std::swap(from, to);
          COMMSIM_CHECK(from != to, "a tree's ranks are distinct");
          t.wave.push_back(2 * tree_wave(t.p, child, down) + down);
          t.cost.push_back(topology.path_cost(from, to));
          t.same_node.push_back(topology.node_of(from) == topology.node_of(to));
          route.links.clear();
          topology.route(from, to, route);
          t.links.insert(t.links.end(), route.links.begin(), route.links.end());
          t.link_begin.push_back(static_cast<std::uint32_t>(t.links.size()));
        }
    }
  }
  t.crossing_begin.assign(topology.link_count() + 1, 0);
  for (LinkId id : t.links) ++t.crossing_begin[id + 1];
  for (std::size_t l = 1; l < t.crossing_begin.size(); ++l) t.crossing_begin[l] += t.crossing_begin[l - 1];
  t.crossings.resize(t.links.size());
  t.hop_of.resize(t.links.size());
  std::vector<std::uint32_t> next(t.crossing_begin.begin(), t.crossing_begin.end() - 1);
  for (std::size_t h = 0; h + 1 < t.link_begin.size(); ++h)
    for (std::uint32_t k = t.link_begin[h]; k < t.link_begin[h + 1]; ++k) {
      t.crossings[next[t.links[k]]++] = k;
      t.hop_of[k] = static_cast<std::uint32_t>(h);
    }
  // 1. Each crossing counts the hops of its hop's wave (direction and wave, both trees, every order) on its link.
  t.wave_count.assign(t.links.size(), 0);
  std::map<int, std::vector<std::size_t>> waves;
  for (std::size_t h = 0; h < t.wave.size(); ++h) waves[t.wave[h]].push_back(h);
  std::vector<std::uint32_t> on_link(topology.link_count(), 0);
  auto each_crossing = [&](const std::vector<std::size_t>& members, auto visit) {
    for (std::size_t h : members)
      for (std::uint32_t k = t.link_begin[h]; k < t.link_begin[h + 1]; ++k) visit(k, on_link[t.links[k]]);
  };
  for (const auto& [key, members] : waves) {
    each_crossing(members, [](std::uint32_t, std::uint32_t& on) { ++on; });
    each_crossing(members, [&](std::uint32_t k, std::uint32_t& on) { t.wave_count[k] = on; });
    each_crossing(members, [](std::uint32_t, std::uint32_t& on) { on = 0; });
  }
  for (LinkId id : t.links) t.link_Bps.push_back(topology.link(id).effective_Bps());
  // 2. needs the links crossed by hops of more than one wave: on the others no hop has more beside it than its wave.
  for (LinkId l = 0; l + 1 < t.crossing_begin.size(); ++l)
    for (std::uint32_t c = t.crossing_begin[l] + 1; c < t.crossing_begin[l + 1]; ++c)
      if (t.wave[t.hop_of[t.crossings[c]]] != t.wave[t.hop_of[t.crossings[t.crossing_begin[l]]]]) {
        t.mixed_links.push_back(l);
        break;
      }
  return t;
}

namespace {

// The hops on one link, by their spans: how long they run beside each other. Up to t, the hops together have run
// sum over starts s < t of (t - s) minus sum over ends e < t of (t - e): sorted starts and ends with their prefix
// sums answer it with two searches.
class LinkLoad {
 public:
  void reset(const std::vector<TimePs>& starts, const std::vector<TimePs>& ends) {
    fill(starts, starts_, start_sums_);
    fill(ends, ends_, end_sums_);
  }
  // How many hops run on the link on average over [start, end), the hop itself included.
  double average(TimePs start, TimePs end) const {
    return (run_until(end) - run_until(start)) / static_cast<double>(end - start);
  }

 private:
  static void fill(const std::vector<TimePs>& times, std::vector<TimePs>& sorted, std::vector<double>& sums) {
    sorted = times;
    std::sort(sorted.begin(), sorted.end());
    sums.assign(1, 0);
    for (TimePs t : sorted) sums.push_back(sums.back() + static_cast<double>(t - sorted.front()));
  }
  static double before(const std::vector<TimePs>& sorted, const std::vector<double>& sums, TimePs t) {
    const auto count = std::lower_bound(sorted.begin(), sorted.end(), t) - sorted.begin();
    return static_cast<double>(count) * static_cast<double>(t - sorted.front()) - sums[static_cast<std::size_t>(count)];
  }
  double run_until(TimePs t) const { return before(starts_, start_sums_, t) - before(ends_, end_sums_, t); }

  std::vector<TimePs> starts_, ends_;
  std::vector<double> start_sums_, end_sums_;  // of the times after the first, for precision
};

}  // namespace

TimePs tree_first_and_last_ps(const Steps& steps, const TreeHops& hops, Bytes piece, TimePs between, int rounds) {
  if (hops.p < 2) return 0;
  const std::size_t n = hops.cost.size();
  std::vector<double> count(hops.wave_count.begin(), hops.wave_count.end());  // per crossing
  std::vector<TimePs> hop_ps(n), start(n), end(n);
  std::vector<TimePs> starts, ends;
  LinkLoad load;
  const TimePs g = steps.reduce(piece);
  for (int round = 1;; ++round) {
    for (std::size_t h = 0; h < n; ++h) {
      double rate = std::numeric_limits<double>::infinity();
      for (std::uint32_t k = hops.link_begin[h]; k < hops.link_begin[h + 1]; ++k)
        rate = std::min(rate, hops.link_Bps[k] / count[k]);
      hop_ps[h] = steps.hop_time(hops.cost[h], hops.same_node[h] != 0, piece, rate);
    }
    const TimePs total = walk_trees(
        hops.p, hops.orders, 2, g, between, [&](std::size_t h, int, bool, int) { return hop_ps[h]; },
        [&](std::size_t h, TimePs s, TimePs e) { start[h] = s, end[h] = e; });
    if (round >= rounds) return total;
    // 2. Each crossing's count grows to the hops on its link on average while its hop runs.
    bool grew = false;
    for (LinkId l : hops.mixed_links) {
      const std::uint32_t first = hops.crossing_begin[l], last = hops.crossing_begin[l + 1];
      starts.clear();
      ends.clear();
      for (std::uint32_t c = first; c < last; ++c) {
        const std::size_t h = hops.hop_of[hops.crossings[c]];
        starts.push_back(start[h]);
        ends.push_back(end[h]);
      }
      load.reset(starts, ends);
      for (std::uint32_t c = first; c < last; ++c) {
        const std::uint32_t k = hops.crossings[c];
        const std::size_t h = hops.hop_of[k];
        if (end[h] <= start[h]) continue;
        const double beside = load.average(start[h], end[h]);
        if (beside > count[k] * (1 + kCountTolerance)) count[k] = beside, grew = true;
      }
    }
    if (!grew) return total;
  }
}

TimePs tree_first_and_last_ps(const Steps& steps, int p, Bytes piece, TimePs between,
                              const std::function<TimePs(int tree, int wave, bool down)>& wave_ps) {
  if (p < 2) return 0;
  std::vector<int> height(static_cast<std::size_t>(p), 0);  // tree_wave going up, found from the leaves
  for (int i = p - 1; i >= 0; --i)
    if (2 * i + 1 < p) height[i] = height[2 * i + 1] + 1;
  const int waves = height[0] + 1;  // up: heights 0 .. height[0] - 1; down: depths 1 .. height[0]
  std::vector<TimePs> priced(static_cast<std::size_t>(2 * 2 * waves), 0);  // [(tree * 2 + down) * waves + wave]
  for (int tree = 0; tree < 2; ++tree)
    for (bool down : {false, true})
      for (int wave = down ? 1 : 0; wave < (down ? waves : waves - 1); ++wave)
        priced[static_cast<std::size_t>((tree * 2 + down) * waves + wave)] = wave_ps(tree, wave, down);
  const bool same_trees = std::equal(priced.begin(), priced.begin() + 2 * waves, priced.begin() + 2 * waves);
  return walk_trees(
      p, 1, same_trees ? 1 : 2, steps.reduce(piece), between,
      [&](std::size_t, int tree, bool down, int child) {
        const int wave = down ? heap_depth(child) : height[child];
        return priced[static_cast<std::size_t>((tree * 2 + down) * waves + wave)];
      },
      [](std::size_t, TimePs, TimePs) {});
}

}  // namespace commsim::closed_form
