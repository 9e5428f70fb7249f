// `commsim validate --trace TRACE.json SCENARIO`: a prediction against one traced PyTorch step (Kineto trace,
// sim/model/kineto_trace.hpp): step time, exposed communication (step minus compute, as Result defines it) and
// each collective of the step (the n-th traced one against the n-th predicted one, both in start order).
#pragma once

#include <string>
#include <vector>

#include "sim/model/kineto_trace.hpp"
#include "sim/step/simulation.hpp"

namespace commsim::validate {

struct TraceRow {
  std::string what;
  double measured_s = 0, predicted_s = 0;
  double error() const { return measured_s > 0 ? (predicted_s - measured_s) / measured_s : 0; }
};

struct TraceComparison {
  std::vector<TraceRow> rows;      // step time, exposed communication, then one per collective
  std::vector<std::string> notes;  // mismatches worth saying (collective counts, sizes)
};

TraceComparison compare_with_trace(const KinetoTrace& trace, const SimulationRun& run);
std::string trace_table(const TraceComparison& comparison);

}  // namespace commsim::validate
