// Closed-form alpha-beta-gamma model of every schedule generator, evaluated on the topology's actual paths
// (closed_form_steps.hpp), and `auto`. Each algorithm's step closed form is in its own file (registry.hpp), priced
// from the distinct hops of its patterns (step_pricer.hpp); the walk over every hop stays as the reference
// (closed_form_reference.cpp) that the tests hold this to, bit for bit. Here: the caches per topology and spec,
// the library model's dispatch and `auto`.
#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/closed_form_reference.hpp"
#include "sim/collective/collective.hpp"
#include "sim/collective/nccl_model.hpp"
#include "sim/collective/registry.hpp"
#include "sim/collective/step_pricer.hpp"
#include "sim/core/error.hpp"

namespace commsim {
namespace {

constexpr std::size_t kMaxCachedSpecs = 1 << 16;  // a cache that grows past this is cleared (bounded memory)

// The step closed form of a resolved algorithm with a schedule: its registry entry's, priced from hop classes.
TimePs step_closed_form_ps(const CollectiveSpec& spec, const Topology& topo) {
  const int p = spec.ranks.empty() ? topo.ranks() : static_cast<int>(spec.ranks.size());
  check_supported(spec, p, "collective");
  COMMSIM_CHECK(spec.algorithm != Algorithm::Auto && algorithm_entry(spec.algorithm).step_closed_form_ps,
                "closed form of auto and of NCCL-only algorithms is not a schedule's");
  StepPricer pricer(spec, topo, p);
  return algorithm_entry(spec.algorithm).step_closed_form_ps(pricer);
}

// The closed form of a resolved algorithm, once per topology and spec.
TimePs cached_closed_form_ps(const CollectiveSpec& spec, const Topology& topo) {
  ClosedFormCache& cache = closed_form_cache_of(topo);
  if (cache.closed_ps.size() > kMaxCachedSpecs) cache.closed_ps.clear();
  const CollectiveKey key = collective_key(spec);
  if (auto it = cache.closed_ps.find(key); it != cache.closed_ps.end()) return it->second;
  const TimePs t = closed_form::closed_form_ps(spec, topo, step_closed_form_ps(spec, topo));
  // The cache may have been replaced meanwhile (a busiest-link schedule of `auto` resolves on the same thread).
  return closed_form_cache_of(topo).closed_ps[key] = t;
}

}  // namespace

bool uses_library_model(const CollectiveSpec& spec, const Topology& topology) {
  if (topology.library().kind != LibraryKind::Nccl) return false;
  if (spec.algorithm == Algorithm::Hierarchical) return spec.ranks.empty();  // three NCCL collectives (below)
  const bool nccl_algorithm = spec.algorithm == Algorithm::Auto || spec.algorithm == Algorithm::Ring ||
                              spec.algorithm == Algorithm::Tree || library_only(spec.algorithm);
  return nccl_algorithm && (spec.ranks.empty() || nccl::machine_of(topology, spec.ranks).ranks > 0);
}

LibraryPrediction library_prediction(const CollectiveSpec& spec, const Topology& topology) {
  COMMSIM_CHECK(uses_library_model(spec, topology), "library_prediction needs a collective the library prices");
  if (spec.algorithm != Algorithm::Hierarchical) {
    const nccl::Estimate e = nccl::predict(spec, topology);
    return {e.latency_s, e.seconds};
  }
  // Paddle's hierarchical allreduce on NCCL: an allreduce inside each group, one between the groups' leaders, a
  // broadcast inside each group, each a collective NCCL prices on its own communicator. Groups have one shape (the
  // nodes repeat one template), so the first group stands for all.
  const std::vector<int> ranks = schedule_parts::participants(spec, topology);
  const int p = static_cast<int>(ranks.size());
  check_supported(spec, p, "collective");
  const int groups = hierarchy_group_count(spec, p);
  const int size = p / groups;
  CollectiveSpec phase = spec;
  phase.hierarchy_groups = 0;
  LibraryPrediction total{0, 0};
  auto add = [&](Collective op, std::vector<int> members) {
    if (members.size() < 2) return;
    phase.op = op;
    phase.algorithm = op == Collective::Broadcast ? Algorithm::Ring : Algorithm::Auto;
    phase.ranks = std::move(members);
    const nccl::Estimate e = nccl::predict(phase, topology);
    total.latency_s += e.latency_s;
    total.seconds += e.seconds;
  };
  std::vector<int> leaders;
  for (int g = 0; g < groups; ++g) leaders.push_back(ranks[g * size]);
  add(Collective::AllReduce, std::vector<int>(ranks.begin(), ranks.begin() + size));
  add(Collective::AllReduce, leaders);
  add(Collective::Broadcast, std::vector<int>(ranks.begin(), ranks.begin() + size));
  return total;
}

double predict_seconds(const CollectiveSpec& spec, const Topology& topology) {
  if (uses_library_model(spec, topology)) return library_prediction(spec, topology).seconds;
  return closed_form_seconds(spec, topology);
}

Algorithm choose_algorithm(const CollectiveSpec& spec, const Topology& topology, bool need_schedule) {
  if (spec.algorithm != Algorithm::Auto) return spec.algorithm;
  if (uses_library_model(spec, topology)) return nccl::choose(spec, topology, "collective", need_schedule).algorithm;
  ClosedFormCache& cache = closed_form_cache_of(topology);
  if (cache.choice.size() > kMaxCachedSpecs) cache.choice.clear();
  const std::pair<CollectiveKey, bool> key{collective_key(spec), need_schedule};
  if (auto it = cache.choice.find(key); it != cache.choice.end()) return it->second;
  const int p = spec.ranks.empty() ? topology.ranks() : static_cast<int>(spec.ranks.size());
  const Algorithm best = closed_form::cheapest_algorithm(
      spec, p, [&](const CollectiveSpec& candidate) { return cached_closed_form_ps(candidate, topology); });
  return closed_form_cache_of(topology).choice[key] = best;
}

CollectiveKey collective_key(const CollectiveSpec& s) {
  return {s.op,         s.algorithm, s.protocol,         s.bytes,           s.ranks,           s.channels,
          s.chunks,     s.root,      s.hierarchy_groups, s.reduce_Bps,      s.ranks_per_node,  s.offset,
          s.unit_bytes, s.aggregate, s.nccl_channels,    s.gpus_per_thread, s.nccl_algorithms, s.nccl_protocols,
          s.hop_delay_s};
}

double step_closed_form_seconds(const CollectiveSpec& spec, const Topology& topology) {
  CollectiveSpec s = spec;
  s.algorithm = choose_algorithm(spec, topology);
  COMMSIM_CHECK(!library_only(s.algorithm), "NCCL-only algorithms have no step closed form");
  return ps_to_seconds(step_closed_form_ps(s, topology));
}

double closed_form_seconds(const CollectiveSpec& spec, const Topology& topology) {
  CollectiveSpec s = spec;
  s.algorithm = choose_algorithm(spec, topology);
  if (library_only(s.algorithm)) return nccl::predict(s, topology).seconds;
  return ps_to_seconds(cached_closed_form_ps(s, topology));
}

}  // namespace commsim
