// Grids of scenario variants and their parallel evaluation, shared by sweep, recommend and regress.
// A variant is the scenario document plus "dotted.key=value" overrides (the same syntax as `simulate --set`).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "sim/step/simulation.hpp"

namespace commsim::explore {

// The scenario document with --set overrides and, when `steps` > 0, the step count applied: the base of a grid.
Json load_base(const std::string& scenario_file, const std::vector<std::string>& sets, int steps);
// --fidelity's value; InputError naming --fidelity otherwise.
Fidelity fidelity_option(const std::string& text);

// One --vary axis: a dotted scenario key and its values as typed (JSON, or bare strings such as a file name).
struct Axis {
  std::string key;
  std::vector<std::string> values;  // what goes after "key=" in the override
  std::vector<std::string> labels;  // what the tables and charts show (as the user typed it)
};

// Parses "KEY=V1,V2,...". Values split at commas outside brackets and quotes, so JSON lists work:
// strategy.dgc.sparsity=[0.99],[0.999]. For `topology` and `model`, a value naming a file relative to the current
// directory (rather than to the scenario's folder, where the loader looks) is made absolute. Throws InputError
// ("--vary") for a missing '=', an empty key, an empty value or unbalanced brackets.
Axis parse_axis(const std::string& spec, const std::string& scenario_file);
// The cartesian product, first axis slowest: each element lists one "key=value" override per axis.
// Throws InputError when the grid is empty (no axis, or an axis without values), two axes' keys overlap, an axis lists
// a value twice, or the grid would have more than kMaxGridRows rows (checked before anything is allocated).
std::vector<std::vector<std::string>> cartesian(const std::vector<Axis>& axes);
// Whether two dotted keys name the same setting or one lies inside the other (strategy.fusion,
// strategy.fusion.size_mb).
bool keys_overlap(const std::string& a, const std::string& b);
// The most rows a grid may have: each row keeps its overrides and result in memory (a 3-million-row grid took about
// 4 GB before this bound, some 1.3 kB a row), so 2^20 rows stay near 1.4 GB.
inline constexpr std::size_t kMaxGridRows = std::size_t{1} << 20;

// One evaluated variant. `error` holds the loader's message when the variant is impossible (e.g. 3 nodes with a
// bucket split that needs 4); such a variant has no result.
struct Evaluation {
  std::vector<std::string> sets;
  Scenario scenario;
  Result result;
  int buckets = 0;
  int streams = 0;
  std::string error;
  bool ok() const { return error.empty(); }
};

// The document with "key=value" overrides applied (scenario.hpp's apply_overrides), where a value of null removes
// the field: strategy.dgc=null turns DGC off (the loader accepts no null field, so null cannot mean anything else).
Json apply_sets(const Json& base, const std::vector<std::string>& sets, const std::string& file);

Evaluation evaluate(const Json& base, const std::string& file, const std::vector<std::string>& sets, Fidelity fidelity);

// Runs fn(0..n-1) on `jobs` threads (0 = all cores); `progress(done)` is called after each item, serialised.
// The first exception thrown by fn is rethrown after all threads have joined. When `stop` is given and returns true,
// no further item is started (items in flight finish).
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn,
                  const std::function<void(std::size_t)>& progress = {}, const std::function<bool()>& stop = {});

// Evaluates every variant in parallel, in input order; draws a progress bar on a terminal.
std::vector<Evaluation> evaluate_all(const Json& base, const std::string& file,
                                     const std::vector<std::vector<std::string>>& variants, Fidelity fidelity, int jobs,
                                     const std::string& progress_label);

}  // namespace commsim::explore
