// `commsim validate --trace TRACE.json SCENARIO`: a prediction against one traced PyTorch step (Kineto trace,
// sim/model/kineto_trace.hpp): step time, exposed communication (step minus compute, as Result defines it) and
// each collective of the step (the n-th traced one against the n-th predicted one, both in start order).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "sim/model/kineto_trace.hpp"
#include "sim/step/simulation.hpp"

namespace commsim::validate {

struct TraceRow {
  std::string what;
  double measured_s = 0, predicted_s = 0;
  // Relative to the measured time; NaN ("n/a") where that is under 1 ns, which no ratio describes.
  double error() const {
    return measured_s >= 1e-9 ? (predicted_s - measured_s) / measured_s : std::numeric_limits<double>::quiet_NaN();
  }
};

struct TraceComparison {
  std::vector<TraceRow> rows;      // step time, exposed communication, then one per collective
  std::vector<std::string> notes;  // mismatches worth saying (collective counts, sizes)
};

// The steps to trace in the prediction: those the trace holds (ProfilerStep#N), so that each is compared with its
// own predicted step; the default selection where they are not numbered.
TraceSelection trace_selection_for(const KinetoTrace& trace);
TraceComparison compare_with_trace(const KinetoTrace& trace, const SimulationRun& run);
std::string trace_table(const TraceComparison& comparison);

}  // namespace commsim::validate
