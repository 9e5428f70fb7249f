// `commsim report`: one self-contained HTML page from simulated and measured Results, side by side: a summary
// table, prediction-against-measurement errors, breakdown bars, per-step times and a timeline of one step.
#pragma once

#include <string>
#include <vector>

#include "sim/result/result.hpp"

namespace commsim::reports {

struct ReportInput {
  std::string file;
  Result result;
  std::vector<std::string> lanes;  // stream names of the timeline (from the trace's thread names)
  std::string trace_file;          // where result.trace came from, if anywhere
};

// Reads Result JSON files (commsim simulate/run --json) and Chrome traces (simulate --trace): a file holding
// "traceEvents" is the timeline of the result before it. A result may also carry its own "trace" array
// ({name, stream, start_s, duration_s}). Throws InputError naming the file for anything else.
std::vector<ReportInput> load_report_inputs(const std::vector<std::string>& files);

// The events of one step, shifted to start at 0: the first steady-state step if the trace covers it, else the first
// traced step; `shown_step` receives which step that is.
std::vector<TraceEvent> step_events(const Result& r, int* shown_step = nullptr);

// A column label per input: scenario, backend and fidelity, and where inputs share those, the settings
// (Result::settings) whose values differ between them, e.g. "resnet50 (sim, analytical; strategy.nccl_comm_num=2)".
std::vector<std::string> input_labels(const std::vector<ReportInput>& inputs);

std::string results_html(const std::vector<ReportInput>& inputs, const std::string& title);

}  // namespace commsim::reports
