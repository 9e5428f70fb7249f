// Which steps and ranks a simulation traces, and the Chrome trace JSON (Perfetto and chrome://tracing open it):
// one process per rank, one thread per stream, complete events ("X") with their details in `args`, and flow
// events ("s" -> "f") from a bucket's gradient computations to the collective that sends them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/plan/plan.hpp"
#include "sim/result/result.hpp"

namespace commsim {

struct TraceSelection {
  int first_step = 0, last_step = 2;  // inclusive; the default is the first three steps
  bool steps_given = false;           // named by the user: then every step must be in the run, not just the first
  // Ranks to show. Empty: each step's critical rank (the one the simulator follows). The simulator computes one
  // timeline per step; a rank other than the critical one is shown only where every rank runs the same timeline
  // (no stragglers), which check_trace_ranks enforces.
  std::vector<int> ranks;
  bool traces(int step) const { return step >= first_step && step <= last_step; }
  // No step: for the callers that keep no timeline (sweep, recommend, regress), which then pay nothing for it.
  static TraceSelection none() { return {1, 0, false, {}}; }
};

// "N" (step N), "A:B" (steps A to B), "" (the default). Throws InputError naming --trace-steps.
TraceSelection parse_trace_steps(const std::string& text);
// "0,5,7". Throws InputError naming --trace-ranks on a rank outside [0, ranks).
std::vector<int> parse_trace_ranks(const std::string& text, int ranks);

// After planning: every rank asked for exists, and where stragglers make ranks differ, is one the simulator
// followed (a traced step's critical rank). Throws InputError naming --trace-ranks.
void check_trace_ranks(const TraceSelection& selection, const Plan& plan);

// Chrome trace of r.trace; `streams` communication streams besides the compute stream 0.
nlohmann::json chrome_trace(const Result& r, int streams);

}  // namespace commsim
