#include "sim/collective/registry.hpp"

#include "sim/core/error.hpp"

namespace commsim {
namespace {

// NCCL's algorithms without a schedule here, priced by sim/collective/nccl_model on topologies whose library is
// NCCL (which keeps its own table of what each supports); only their names and traffic are known here.
AlgorithmEntry library_algorithm(Algorithm id, std::string_view name,
                                 double (*transfer_bytes)(const CollectiveSpec&, int)) {
  return {.id = id, .name = name, .transfer_bytes = transfer_bytes};
}
double once_to_the_switch(const CollectiveSpec& s, int p) {
  return 1.0 * p * static_cast<double>(s.bytes);  // each rank sends its vector once, to the switch that reduces it
}
double up_and_down(const CollectiveSpec& s, int p) {
  return 2.0 * (p - 1) * static_cast<double>(s.bytes);  // as a chain/tree: up and down every edge once
}
double as_the_ring(const CollectiveSpec& s, int p) {
  return (p - 1) * static_cast<double>(s.bytes);  // as the ring: every rank sends p-1 blocks of m/p ... of the others
}

// The registry. The order of the entries with a schedule is `auto`'s tie order: the earlier, simpler one wins.
const std::vector<AlgorithmEntry>& entries() {
  static const std::vector<AlgorithmEntry> table = {
      ring_algorithm(),
      tree_algorithm(),
      halving_doubling_algorithm(),
      hierarchical_algorithm(),
      ring_2d_algorithm(),
      library_algorithm(Algorithm::Nvls, "nvls", once_to_the_switch),
      library_algorithm(Algorithm::NvlsTree, "nvlstree", up_and_down),
      library_algorithm(Algorithm::CollNetDirect, "collnet_direct", once_to_the_switch),
      library_algorithm(Algorithm::CollNetChain, "collnet_chain", up_and_down),
      library_algorithm(Algorithm::Pat, "pat", as_the_ring),
  };
  return table;
}

std::string op_names(unsigned ops) {
  std::string out;
  for (int i = 0; i < 5; ++i)
    if (ops & AlgorithmEntry::op_bit(static_cast<Collective>(i)))
      out += (out.empty() ? "" : ", ") + std::string(to_string(static_cast<Collective>(i)));
  return out;
}

}  // namespace

std::span<const AlgorithmEntry> algorithm_entries() { return entries(); }

const AlgorithmEntry& algorithm_entry(Algorithm a) {
  for (const AlgorithmEntry& e : entries())
    if (e.id == a) return e;
  COMMSIM_CHECK(false, "algorithm_entry needs a resolved algorithm");
  return entries().front();
}

std::string_view to_string(Algorithm a) { return a == Algorithm::Auto ? "auto" : algorithm_entry(a).name; }

bool parse_algorithm(std::string_view s, Algorithm& out) {
  if (s == "auto") return (out = Algorithm::Auto), true;
  for (const AlgorithmEntry& e : entries())
    if (e.name == s) return (out = e.id), true;
  return false;
}

std::string algorithm_names(std::string_view separator) {
  std::string out;
  for (const AlgorithmEntry& e : entries()) out += std::string(e.name) + std::string(separator);
  return out + "auto";
}

bool library_only(Algorithm a) { return a != Algorithm::Auto && !algorithm_entry(a).has_schedule(); }

void check_supported(const CollectiveSpec& spec, int ranks, const std::string& field) {
  if (ranks < 1) throw InputError(field, "", "a collective needs at least one rank");
  if (spec.channels < 1) throw InputError(field, "channels", "must be >= 1");
  if (spec.algorithm == Algorithm::Auto) return;
  const AlgorithmEntry& entry = algorithm_entry(spec.algorithm);
  if (!entry.supports(spec.op))
    throw InputError(field, "algo",
                     std::string(entry.name) + " is implemented for " + op_names(entry.ops) + " only (use ring for " +
                         std::string(to_string(spec.op)) + ")");
  if (entry.check) entry.check(spec, ranks, field);
}

double total_transfer_bytes(const CollectiveSpec& spec, int p) {
  COMMSIM_CHECK(spec.algorithm != Algorithm::Auto, "total_transfer_bytes needs a resolved algorithm");
  return algorithm_entry(spec.algorithm).transfer_bytes(spec, p);
}

}  // namespace commsim
