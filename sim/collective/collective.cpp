// The collectives' names and shared rules, and generate(): the registry's algorithm expands the collective into
// operations (sim/collective/algorithms/, one file each).
#include "sim/collective/collective.hpp"

#include <algorithm>

#include "sim/collective/algorithms/schedule_parts.hpp"
#include "sim/collective/registry.hpp"
#include "sim/core/error.hpp"

namespace commsim {

std::string_view to_string(Collective c) {
  static constexpr std::string_view names[] = {"allreduce", "reducescatter", "allgather", "broadcast", "reduce"};
  return names[static_cast<int>(c)];
}
std::string_view to_string(Protocol p) {
  static constexpr std::string_view names[] = {"ll", "ll128", "simple", "auto"};
  return names[static_cast<int>(p)];
}
bool parse_protocol(std::string_view s, Protocol& out) {
  for (int i = 0; i <= static_cast<int>(Protocol::Auto); ++i)
    if (to_string(static_cast<Protocol>(i)) == s) return (out = static_cast<Protocol>(i)), true;
  return false;
}
bool parse_collective(std::string_view s, Collective& out) {
  for (int i = 0; i < 5; ++i)
    if (to_string(static_cast<Collective>(i)) == s) return (out = static_cast<Collective>(i)), true;
  return false;
}
double busbw_factor(Collective op, int n) {
  switch (op) {
    case Collective::AllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::ReduceScatter:
    case Collective::AllGather:
      return static_cast<double>(n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce:
      return 1.0;
  }
  return 1.0;
}

int hierarchy_group_count(const CollectiveSpec& spec, int ranks) {
  return spec.hierarchy_groups > 0 ? spec.hierarchy_groups : std::max(1, ranks / spec.ranks_per_node);
}

int largest_power_of_two_at_most(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

void generate(const CollectiveSpec& spec, const Topology& topology, Schedule& schedule, std::vector<OpId>& frontier) {
  COMMSIM_CHECK(static_cast<int>(frontier.size()) == topology.ranks(), "frontier must have one entry per rank");
  CollectiveSpec s = spec;
  if (s.algorithm == Algorithm::Auto) s.algorithm = choose_algorithm(spec, topology, true);
  const AlgorithmEntry& algorithm = algorithm_entry(s.algorithm);
  if (!algorithm.has_schedule())
    throw InputError(
        "collective", "algo",
        std::string(algorithm.name) +
            " is priced by the NCCL model only: use the analytical fidelity (it has no schedule for flow)");
  const std::vector<int> ranks = schedule_parts::participants(s, topology);
  check_supported(s, static_cast<int>(ranks.size()), "collective");
  algorithm.generate(s, topology, ranks, schedule, frontier);
}

Bytes Schedule::bytes_transferred() const {
  Bytes total = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::Transfer) total += op.bytes;
  return total;
}

int floored_chunks(int chunks, Bytes bytes, int channels, int ranks) {
  if (chunks <= 1) return chunks;
  // The smallest share an algorithm pipelines is the ring's: bytes / (channels x ranks), cut into `chunks` pieces.
  const Bytes share = bytes / static_cast<Bytes>(std::max(1, channels) * std::max(1, ranks));
  return static_cast<int>(std::clamp<Bytes>(share / kMinPieceBytes, 1, static_cast<Bytes>(chunks)));
}

}  // namespace commsim
