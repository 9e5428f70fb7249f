// The search behind `commsim recommend`: which communication settings give the fastest step.
//
// Knobs are discrete (fusion bucket size, communication streams, collective algorithm or hierarchical allreduce, and
// only when lossy settings are allowed: communication dtype, DGC or Local SGD). A grid within the budget is
// evaluated whole; a larger one is searched by coordinate descent with a beam: from the given settings, every
// single-knob change of each of the best `kBeam` configurations found so far is evaluated (in parallel), until
// no such change enters the best `kBeam` or the budget is spent. Interactions between two knobs (bucket size and
// streams, say) are found because several configurations are improved at once. The search uses the analytical
// fidelity; the best few are then re-evaluated with the requested fidelity and ranked by it.
#pragma once

#include <string>
#include <vector>

#include "explore/grid.hpp"
#include "sim/topology/library.hpp"

namespace commsim::explore {

struct Choice {
  std::string label;              // "25 MB buckets"
  std::vector<std::string> sets;  // overrides that select it (empty: the scenario's own setting)
};

struct Knob {
  std::string name;
  bool lossy = false;  // changes what training computes: convergence must be checked
  std::vector<Choice> choices;
  std::size_t given = 0;  // the choice that matches the scenario as given
};

// `ranks` and `nodes` of the given cluster pick the hierarchical-allreduce group counts worth trying.
// `library`: the topology's communication library; the collective knob offers only the algorithms it has.
std::vector<Knob> search_space(const Scenario& given, int ranks, int nodes, bool allow_lossy,
                               const CommLibrary& library = {});
std::size_t grid_size(const std::vector<Knob>& knobs);

struct Candidate {
  std::vector<std::size_t> choice;  // per knob
  Evaluation eval;
  bool lossy = false;  // a lossy knob differs from the given settings
};

struct Recommendation {
  Evaluation given;               // the scenario as given, at the requested fidelity
  std::vector<Candidate> ranked;  // fastest first, at the requested fidelity; impossible ones left out
  std::size_t grid = 0;           // configurations in the full grid
  std::size_t evaluated = 0;      // evaluated with the analytical fidelity
  std::size_t refined = 0;        // re-evaluated with the requested fidelity (0 when it is analytical)
  std::string method;
};

inline constexpr std::size_t kBeam = 3;
inline constexpr std::size_t kRefine = 8;

Recommendation recommend(const Json& base, const std::string& file, const std::vector<Knob>& knobs, Fidelity fidelity,
                         std::size_t budget, int jobs);

// Adds the candidates of a search of the lossless knobs alone (search_space without allow_lossy: the same knobs but
// the lossy ones, which come last) to a search that also tried the lossy ones, as lossless candidates at the given
// lossy settings, and ranks them together. A search with the lossy knobs spends its budget on them too and may stop
// short of the fastest lossless settings, which is what a lossy pick must beat (snippet_choice).
void add_lossless_search(Recommendation& rec, const Recommendation& lossless, const std::vector<Knob>& knobs);

// The best `n` of rec.ranked that are not slower than the given settings, leaving out near-duplicates: a candidate
// within `rel` of the step time of one already listed that changes no fewer knobs adds nothing (e.g. 3 streams
// where 2 give the same time).
std::vector<const Candidate*> top_distinct(const Recommendation& rec, const std::vector<Knob>& knobs, std::size_t n,
                                           double rel = 0.001);

// Which candidate's settings become the ready-to-paste snippet. A lossy candidate (one that changes a lossy knob)
// is taken only when it is faster than the fastest lossless configuration (a lossless candidate or the given
// settings) by more than `band_rel` of that configuration's step time: a smaller gain is within what the prediction
// can be wrong by, so it does not justify changing what training computes. Lossy knobs are searched only with
// --allow-lossy, so without it no candidate is lossy.
struct SnippetChoice {
  const Candidate* candidate = nullptr;          // nullptr: the given settings
  const Candidate* lossy_passed_over = nullptr;  // the fastest lossy candidate left out for a gain within the band
  double lossy_gain = 0;                         // its gain over the fastest lossless configuration (fraction)
  double lossless_s = 0;                         // the step time of the fastest lossless configuration
};
SnippetChoice snippet_choice(const Recommendation& rec, const std::vector<const Candidate*>& top, double band_rel);

// One sentence from the numbers: how exposed communication and communication change, and the knob changes that
// cause it, e.g. "Exposed communication falls from 38.0 % to 6.0 % of the step (communication 41.20 ms -> 30.10 ms)
// because 25 MB buckets (9 instead of 1) start during backward."
std::string reason(const Evaluation& given, const Candidate& c, const std::vector<Knob>& knobs);
// "64 MB buckets, 2 streams" (the changed knobs) or "the given settings".
std::string changes(const Candidate& c, const std::vector<Knob>& knobs);

}  // namespace commsim::explore
