// The collective algorithms, one entry each: the name scenarios and `--algo` use, the collectives it implements,
// when it applies, its closed form and its schedule generator. `auto` (without a library model) is the argmin of
// the closed forms over the entries with a schedule, in registry order; names are parsed and printed from here.
//
// Adding an algorithm: a value in `Algorithm` (collective.hpp), one file under sim/collective/algorithms/ that
// defines its entry (generator, closed form and full-walk reference side by side), its declaration below and one
// line in registry.cpp's table.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collective/collective.hpp"

namespace commsim {

class StepPricer;  // step_pricer.hpp

struct AlgorithmEntry {
  Algorithm id;
  std::string_view name;  // in scenarios (`strategy.algorithm`), `--algo` and every report
  // The collectives it implements, a bit per Collective value (op_bit); check_supported rejects the others.
  unsigned ops = kAllOps;
  // Beyond the collective: throws InputError naming `field` where the rank count or spec does not fit (nullptr:
  // any).
  void (*check)(const CollectiveSpec& spec, int ranks, const std::string& field) = nullptr;
  // Beyond check: whether `auto` weighs it for this spec (nullptr: whenever it is supported).
  bool (*auto_candidate)(const CollectiveSpec& spec, int ranks) = nullptr;
  // Whether its closed form is at least the busiest link's load (closed_form_reference.hpp): false where the
  // steps already share the links (the ring).
  bool load_bound = true;
  // The step closed form priced from hop classes (cost_model.cpp caches it), and the reference that visits every
  // hop over `ranks` (the participants in order); the two must agree bit for bit.
  TimePs (*step_closed_form_ps)(StepPricer& pricer) = nullptr;
  TimePs (*full_walk_step_ps)(const CollectiveSpec& spec, const Topology& topology,
                              const std::vector<int>& ranks) = nullptr;
  // Appends the schedule over `ranks` (supported, resolved): see generate() in collective.hpp. nullptr: priced by
  // the NCCL model only (no schedule, no closed form).
  void (*generate)(const CollectiveSpec& spec, const Topology& topology, const std::vector<int>& ranks,
                   Schedule& schedule, std::vector<OpId>& frontier) = nullptr;
  // Bytes its schedule moves over the network, summed over ranks (total_transfer_bytes).
  double (*transfer_bytes)(const CollectiveSpec& spec, int ranks) = nullptr;

  static constexpr unsigned op_bit(Collective op) { return 1u << static_cast<unsigned>(op); }
  static constexpr unsigned kAllOps = 0x1f;
  bool supports(Collective op) const { return (ops & op_bit(op)) != 0; }
  bool has_schedule() const { return generate != nullptr; }
};

// Every algorithm but `auto`, in registry order.
std::span<const AlgorithmEntry> algorithm_entries();
// The entry of a resolved algorithm (not Auto).
const AlgorithmEntry& algorithm_entry(Algorithm a);

// Every name parse_algorithm takes (the registry's, then `auto`), joined by `separator`.
std::string algorithm_names(std::string_view separator);

// One entry per file under sim/collective/algorithms/.
AlgorithmEntry ring_algorithm();
AlgorithmEntry tree_algorithm();
AlgorithmEntry halving_doubling_algorithm();
AlgorithmEntry hierarchical_algorithm();
AlgorithmEntry ring_2d_algorithm();

}  // namespace commsim
