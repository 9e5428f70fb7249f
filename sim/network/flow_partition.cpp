#include "sim/network/flow_partition.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <span>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace commsim {
namespace {

constexpr std::uint32_t kUnused = 0xffffffffu;  // a link no transfer crosses: in no class

// Adjacency in compressed rows: row i is items[begin[i] .. begin[i + 1]).
struct Rows {
  std::vector<std::uint64_t> begin{0};
  std::vector<std::uint32_t> items;
  std::span<const std::uint32_t> row(std::size_t i) const {
    return {items.data() + begin[i], items.data() + begin[i + 1]};
  }
  void close_row() { begin.push_back(items.size()); }
};

// What an operation is, apart from its neighbours: its schedule, kind, size (bytes; a delay's picoseconds) and, for a
// transfer, its route's latency.
struct OpShape {
  std::uint64_t bytes = 0;
  TimePs latency_ps = 0;
  std::uint32_t schedule = 0;
  OpKind kind = OpKind::Transfer;
  auto operator<=>(const OpShape&) const = default;
};

// The operations of all schedules (numbered in schedule order, then op order) and the links they touch.
struct OpGraph {
  std::vector<std::uint64_t> first_op;  // per schedule: its first operation's number
  std::vector<OpShape> shape;           // per operation
  Rows deps;                            // per operation: the operations it waits for
  Rows route;                           // per operation: the links its transfer crosses
  Rows on_link;                         // per link: the transfers that cross it
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser (Steele, Lea & Flood 2014)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A class signature: two independent 64-bit hashes of the same sequence (a collision needs both to collide; the
// result is checked as equitable anyway).
struct Signature {
  std::uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
  void add(std::uint64_t x) {
    a = mix(a ^ x);
    b = mix(b + x * 0x9fb21c651e98df25ull);
  }
  bool operator==(const Signature&) const = default;
};
struct SignatureHash {
  std::size_t operator()(const Signature& s) const { return static_cast<std::size_t>(s.a); }
};

OpGraph op_graph(const std::vector<const Schedule*>& schedules, const Topology& topology) {
  OpGraph g;
  std::vector<std::vector<std::uint32_t>> on_link(topology.link_count());
  Route route;
  for (std::size_t s = 0; s < schedules.size(); ++s) {
    const Schedule& schedule = *schedules[s];
    const std::uint64_t first = g.shape.size();
    g.first_op.push_back(first);
    for (const Op& op : schedule.ops) {
      const auto id = static_cast<std::uint32_t>(g.shape.size());
      COMMSIM_CHECK(g.shape.size() < kUnused, "too many operations to lump");
      OpShape shape{.bytes = op.bytes, .schedule = static_cast<std::uint32_t>(s), .kind = op.kind};
      for (std::uint32_t d = op.dep_begin; d < op.dep_end(); ++d)
        g.deps.items.push_back(static_cast<std::uint32_t>(first + schedule.deps[d]));
      g.deps.close_row();
      if (op.kind == OpKind::Transfer) {
        route.links.clear();
        topology.route(op.src, op.dst, route);
        shape.latency_ps = seconds_to_ps(route.cost.latency_s, "path latency");
        for (LinkId l : route.links) {
          g.route.items.push_back(l);
          on_link[l].push_back(id);
        }
      }
      g.route.close_row();
      g.shape.push_back(shape);
    }
  }
  for (const std::vector<std::uint32_t>& ops : on_link) {
    g.on_link.items.insert(g.on_link.items.end(), ops.begin(), ops.end());
    g.on_link.close_row();
  }
  return g;
}

// Renumbers signatures densely, in order of first appearance; returns the number of classes.
std::uint32_t renumber(const std::vector<Signature>& signatures, std::vector<std::uint32_t>& classes) {
  std::unordered_map<Signature, std::uint32_t, SignatureHash> ids;
  ids.reserve(1024);
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    if (classes[i] == kUnused) continue;
    classes[i] = ids.try_emplace(signatures[i], static_cast<std::uint32_t>(ids.size())).first->second;
  }
  return static_cast<std::uint32_t>(ids.size());
}

// The multiset of `colours` over `row`, sorted (a canonical order), appended to `into`.
void add_sorted(Signature& into, std::span<const std::uint32_t> row, const std::vector<std::uint32_t>& colours,
                std::vector<std::uint32_t>& scratch) {
  scratch.clear();
  for (std::uint32_t i : row) scratch.push_back(colours[i]);
  std::sort(scratch.begin(), scratch.end());
  into.add(scratch.size());
  for (std::uint32_t c : scratch) into.add(c);
}

struct Colours {
  std::vector<std::uint32_t> op, link;
};

// Colour refinement to the stable partition. Each round, a link's class splits by the multiset of the classes of
// the transfers on it; then the operations, in schedule order, split by the multisets of the classes of what they
// wait for (earlier operations, already recoloured this round: a difference travels down a whole chain of
// dependencies in one round, not one link of it per round) and of the links they cross. Each colour includes the
// previous one, so a round refines the last, and equal class counts mean the partition is stable.
Colours refine(const OpGraph& g, const Topology& topology) {
  Colours c;
  std::vector<Signature> link_signature(topology.link_count());
  c.link.assign(topology.link_count(), kUnused);
  for (std::size_t l = 0; l < c.link.size(); ++l) {
    if (g.on_link.row(l).empty()) continue;
    c.link[l] = 0;
    const LinkParams& p = topology.link(static_cast<LinkId>(l));
    link_signature[l].add(static_cast<std::uint64_t>(p.link_class));
    link_signature[l].add(std::bit_cast<std::uint64_t>(p.effective_Bps()));
  }
  std::map<OpShape, std::uint32_t> shapes;
  for (const OpShape& shape : g.shape)
    c.op.push_back(shapes.try_emplace(shape, static_cast<std::uint32_t>(shapes.size())).first->second);
  auto op_classes = static_cast<std::uint32_t>(shapes.size());
  std::uint32_t link_classes = renumber(link_signature, c.link);
  std::vector<std::uint32_t> scratch, next(c.op.size());
  std::unordered_map<Signature, std::uint32_t, SignatureHash> ids;
  for (;;) {
    for (std::size_t l = 0; l < c.link.size(); ++l) {
      if (c.link[l] == kUnused) continue;
      Signature& s = link_signature[l] = {};
      s.add(c.link[l]);
      add_sorted(s, g.on_link.row(l), c.op, scratch);
    }
    const std::uint32_t links = renumber(link_signature, c.link);
    ids.clear();
    for (std::size_t i = 0; i < c.op.size(); ++i) {
      Signature s;
      s.add(c.op[i]);
      add_sorted(s, g.deps.row(i), next, scratch);
      add_sorted(s, g.route.row(i), c.link, scratch);
      next[i] = ids.try_emplace(s, static_cast<std::uint32_t>(ids.size())).first->second;
    }
    c.op.swap(next);
    const auto ops = static_cast<std::uint32_t>(ids.size());
    if (ops == op_classes && links == link_classes) return c;
    op_classes = ops;
    link_classes = links;
  }
}

// The sorted classes of a row, for the exact check.
std::vector<std::uint32_t> sorted_classes(std::span<const std::uint32_t> row,
                                          const std::vector<std::uint32_t>& classes) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i : row) out.push_back(classes[i]);
  std::sort(out.begin(), out.end());
  return out;
}

// Whether every member of a class has its representative's (first member's) shape and neighbour classes: the
// partition is equitable, whatever the hashes did.
bool equitable(const OpGraph& g, const Colours& c, const Topology& topology) {
  std::vector<std::uint32_t> first_op(g.shape.size(), kUnused), first_link(c.link.size(), kUnused);
  for (std::size_t i = 0; i < c.op.size(); ++i) {
    std::uint32_t& r = first_op[c.op[i]];
    if (r == kUnused) {
      r = static_cast<std::uint32_t>(i);
      continue;
    }
    if (g.shape[i] != g.shape[r] || sorted_classes(g.deps.row(i), c.op) != sorted_classes(g.deps.row(r), c.op) ||
        sorted_classes(g.route.row(i), c.link) != sorted_classes(g.route.row(r), c.link))
      return false;
  }
  for (std::size_t l = 0; l < c.link.size(); ++l) {
    if (c.link[l] == kUnused) continue;
    std::uint32_t& r = first_link[c.link[l]];
    if (r == kUnused) {
      r = static_cast<std::uint32_t>(l);
      continue;
    }
    const LinkParams &p = topology.link(static_cast<LinkId>(l)), &q = topology.link(static_cast<LinkId>(r));
    if (p.link_class != q.link_class || p.effective_Bps() != q.effective_Bps() ||
        sorted_classes(g.on_link.row(l), c.op) != sorted_classes(g.on_link.row(r), c.op))
      return false;
  }
  return true;
}

// Each schedule reduced to the first operation of each class, waiting for the first operations of the classes
// its own dependencies are in (they finish together), standing for its class.
Schedule lumped(const Schedule& full, std::uint64_t first, const Colours& c, const std::vector<std::uint32_t>& size,
                std::vector<std::uint32_t>& lumped_id, std::vector<std::uint32_t>& representative) {
  Schedule out;
  for (std::size_t i = 0; i < full.ops.size(); ++i) {
    const std::uint32_t cls = c.op[first + i];
    if (representative[cls] != kUnused) continue;
    representative[cls] = static_cast<std::uint32_t>(first + i);
    Op op = full.ops[i];
    op.dep_begin = static_cast<std::uint32_t>(out.deps.size());
    for (std::uint32_t d = full.ops[i].dep_begin; d < full.ops[i].dep_end(); ++d) {
      const OpId dep = lumped_id[representative[c.op[first + full.deps[d]]]];
      if (std::find(out.deps.begin() + op.dep_begin, out.deps.end(), dep) == out.deps.end()) out.deps.push_back(dep);
    }
    op.dep_count = static_cast<std::uint16_t>(out.deps.size() - op.dep_begin);
    lumped_id[first + i] = static_cast<std::uint32_t>(out.ops.size());
    out.ops.push_back(op);
    out.copies.push_back(size[cls]);
  }
  return out;
}

}  // namespace

std::optional<LumpedSchedules> lump_schedules(const std::vector<const Schedule*>& schedules, const Topology& topology) {
  // A token bucket's tokens are one link's own history, which a class of links cannot stand for.
  for (std::size_t l = 0; l < topology.link_count(); ++l)
    if (topology.link(static_cast<LinkId>(l)).burst_bytes > 0) return std::nullopt;
  const OpGraph g = op_graph(schedules, topology);
  const Colours c = refine(g, topology);
  if (!equitable(g, c, topology)) return std::nullopt;
  LumpedSchedules out;
  out.operations = g.shape.size();
  std::vector<std::uint32_t> size(g.shape.size(), 0), representative(g.shape.size(), kUnused);
  std::vector<std::uint32_t> lumped_id(g.shape.size(), kUnused);
  for (std::uint32_t cls : c.op) ++size[cls];
  for (std::size_t s = 0; s < schedules.size(); ++s)
    out.schedules.push_back(lumped(*schedules[s], g.first_op[s], c, size, lumped_id, representative));
  for (const Schedule& s : out.schedules) out.classes += s.ops.size();
  LinkQuotient& q = out.quotient;
  q.representative.assign(c.link.size(), kNoLinkInQuotient);
  q.orbit_size.assign(c.link.size(), 0);
  std::vector<std::uint32_t> link_size(c.link.size(), 0);
  std::vector<LinkId> first(c.link.size(), kNoLinkInQuotient);
  for (std::size_t l = 0; l < c.link.size(); ++l)
    if (c.link[l] != kUnused) {
      ++link_size[c.link[l]];
      if (first[c.link[l]] == kNoLinkInQuotient) first[c.link[l]] = static_cast<LinkId>(l);
    }
  for (std::size_t l = 0; l < c.link.size(); ++l)
    if (c.link[l] != kUnused) {
      q.representative[l] = first[c.link[l]];
      q.orbit_size[l] = link_size[c.link[l]];
    }
  return out;
}

}  // namespace commsim
