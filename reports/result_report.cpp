#include "reports/result_report.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "reports/format.hpp"
#include "reports/html.hpp"
#include "reports/svg.hpp"
#include "sim/core/json_fields.hpp"

namespace commsim::reports {

namespace {

void read_chrome_trace(const Json& doc, const std::string& file, ReportInput& into) {
  // A trace commsim wrote names its run: one of another run must not become this result's timeline.
  if (doc.contains("otherData") && doc["otherData"].is_object() && doc["otherData"].contains("scenario_hash")) {
    const Json& run = doc["otherData"];
    const std::string hash = run["scenario_hash"].is_string() ? run["scenario_hash"].get<std::string>() : "";
    if (!into.result.scenario_hash.empty() && hash != into.result.scenario_hash)
      throw InputError(file, "otherData.scenario_hash",
                       "is the trace of another run (" + run.value("scenario", std::string("?")) + ", " + hash +
                           ") than the result before it (" + into.result.scenario + ", " + into.result.scenario_hash +
                           ")");
  }
  try {
    std::vector<TraceEvent> events;
    std::vector<std::string> lanes;
    for (const Json& e : doc.at("traceEvents")) {
      const int tid = e.value("tid", 0);
      if (tid < 0 || tid > 1024) throw InputError(file, "traceEvents", "tid " + std::to_string(tid) + " out of range");
      if (lanes.size() <= static_cast<std::size_t>(tid)) lanes.resize(tid + 1);
      const std::string ph = e.at("ph").get<std::string>();
      if (ph == "M" && e.at("name") == "thread_name") lanes[tid] = e.at("args").at("name").get<std::string>();
      if (ph == "X") {
        events.push_back(
            {e.at("name").get<std::string>(), tid, e.at("ts").get<double>() * 1e-6, e.at("dur").get<double>() * 1e-6});
        events.back().rank = e.value("pid", 0);
        if (e.contains("args") && e["args"].is_object()) events.back().step = e["args"].value("step", 0);
      }
    }
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].empty()) lanes[i] = i == 0 ? "compute" : "stream " + std::to_string(i);
    into.result.trace = std::move(events);
    into.lanes = std::move(lanes);
    into.trace_file = file;
  } catch (const Json::exception& e) {
    throw InputError(file, "traceEvents", std::string("not a Chrome trace: ") + e.what());
  }
}

std::string base_label(const Result& r) {
  return r.scenario + " (" + r.backend + (r.backend == "sim" ? ", " + r.fidelity : "");
}

std::string ms(double s) { return fixed(s * 1e3, 3); }

// Whose step it is and where it stands: a step before the steady state (DGC's dense warm-up, the steps before
// Local SGD begins) is not what the steady-state step time measures, and says so.
std::string timeline_caption(const Result& r, const std::vector<TraceEvent>& events, int step) {
  const int rank = events.empty() ? 0 : events.front().rank;
  std::string who =
      rank < 0 || (r.ranks > 0 && rank >= r.ranks) ? std::string("Mean of the ranks") : "Rank " + std::to_string(rank);
  std::string when = "step " + std::to_string(step);
  if (step >= r.steady_from)
    when += r.steady_from > 0 ? " (steady state, from step " + std::to_string(r.steady_from) + ")" : " (steady state)";
  else
    when += " (before the steady state, which starts at step " + std::to_string(r.steady_from) +
            ": e.g. DGC's dense steps before its ramp-up, or the steps before Local SGD begins; trace later steps with "
            "simulate --trace-steps)";
  return who + ", " + when + " (hover a box for its name and times)";
}

}  // namespace

std::vector<ReportInput> load_report_inputs(const std::vector<std::string>& files) {
  std::vector<ReportInput> inputs;
  for (const std::string& file : files) {
    const Json doc = read_json_file(file);
    if (doc.is_object() && doc.contains("traceEvents")) {
      if (inputs.empty()) throw InputError(file, "", "a Chrome trace must follow the result it belongs to");
      if (!inputs.back().trace_file.empty())
        throw InputError(file, "", "the result before it already has a trace (" + inputs.back().trace_file + ")");
      read_chrome_trace(doc, file, inputs.back());
      continue;
    }
    if (!doc.is_object()) throw InputError(file, "", "not a commsim result: must be a JSON object");
    ReportInput in{file, Result::from_json(doc, file), {}, {}};
    if (doc.contains("trace")) {
      try {
        int streams = 0;
        for (const Json& e : doc.at("trace")) {
          in.result.trace.push_back({e.at("name").get<std::string>(), e.at("stream").get<int>(),
                                     e.at("start_s").get<double>(), e.at("duration_s").get<double>()});
          // A lane per stream up to the highest: compute and at most 64 communication streams (nccl_comm_num).
          if (in.result.trace.back().stream < 0 || in.result.trace.back().stream > 64)
            throw InputError(file, "trace", "stream " + e.at("stream").dump() + " is not 0 (compute) to 64");
          streams = std::max(streams, in.result.trace.back().stream);
        }
        for (int s = 0; s <= streams; ++s) in.lanes.push_back(s == 0 ? "compute" : "comm stream " + std::to_string(s));
        in.trace_file = file;
      } catch (const Json::exception& e) {
        throw InputError(file, "trace", std::string("malformed: ") + e.what());
      }
    }
    inputs.push_back(std::move(in));
  }
  if (inputs.empty()) throw InputError("report", "", "no result given");
  return inputs;
}

std::vector<std::string> input_labels(const std::vector<ReportInput>& inputs) {
  std::vector<std::string> labels;
  for (const ReportInput& in : inputs) {
    std::string differs;
    for (const ReportInput& other : inputs) {
      if (&other == &in || base_label(other.result) != base_label(in.result)) continue;
      for (const auto& [key, value] : in.result.settings) {
        const auto it = other.result.settings.find(key);
        const std::string item = key + "=" + value;
        if ((it == other.result.settings.end() || it->second != value) && differs.find(item) == std::string::npos)
          differs += (differs.empty() ? "; " : ", ") + item;
      }
    }
    labels.push_back(base_label(in.result) + differs + ")");
  }
  return labels;
}

std::vector<TraceEvent> step_events(const Result& r, int* shown_step) {
  auto window = [&](int step) {
    const double begin = std::accumulate(r.steps_s.begin(), r.steps_s.begin() + step, 0.0);
    std::vector<TraceEvent> out;
    for (const TraceEvent& e : r.trace)
      if (e.start_s >= begin - 1e-12 &&
          (step + 1 >= static_cast<int>(r.steps_s.size()) || e.start_s < begin + r.steps_s[step] - 1e-12)) {
        out.push_back(e);
        out.back().start_s -= begin;
      }
    return out;
  };
  if (shown_step) *shown_step = 0;
  if (r.steps_s.empty()) return r.trace;
  if (r.steady_from > 0 && r.steady_from < static_cast<int>(r.steps_s.size())) {
    std::vector<TraceEvent> steady = window(r.steady_from);
    if (!steady.empty()) {
      if (shown_step) *shown_step = r.steady_from;
      return steady;
    }
  }
  // The first step the trace covers (simulate --trace-steps may start later than 0).
  for (int step = 0; step < static_cast<int>(r.steps_s.size()); ++step) {
    std::vector<TraceEvent> events = window(step);
    if (events.empty()) continue;
    if (shown_step) *shown_step = step;
    return events;
  }
  return {};
}

namespace {

void summary_section(HtmlPage& page, const std::vector<ReportInput>& inputs, const std::vector<std::string>& labels) {
  std::vector<std::string> header = {"quantity"};
  header.insert(header.end(), labels.begin(), labels.end());
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& name, auto cell) {
    std::vector<std::string> r = {name};
    for (const ReportInput& in : inputs) r.push_back(cell(in.result));
    rows.push_back(r);
  };
  row("file", [&](const Result&) { return std::string(); });
  for (std::size_t i = 0; i < inputs.size(); ++i) rows.back()[i + 1] = inputs[i].file;
  row("ranks", [](const Result& r) { return std::to_string(r.ranks); });
  row("step time (ms)", [](const Result& r) { return ms(r.step_time_s); });
  row("step time spread (ms)", [](const Result& r) { return ms(r.step_time_spread_s); });
  row("throughput (samples/s)", [](const Result& r) { return fixed(r.throughput_samples_s, 1); });
  row("scaling efficiency", [](const Result& r) { return percent(r.scaling_efficiency); });
  row("compute (ms)", [](const Result& r) { return ms(r.compute_s); });
  row("communication (ms)", [](const Result& r) { return ms(r.comm_s); });
  row("exposed communication (ms)", [](const Result& r) { return ms(r.exposed_comm_s); });
  row("overlap", [](const Result& r) { return percent(r.overlap_ratio); });
  row("bytes sent (MB per rank per step)", [](const Result& r) { return fixed(r.bytes_sent_per_rank / 1e6, 2); });
  row("steps", [](const Result& r) { return std::to_string(r.steps_s.size()); });
  page.heading("Summary");
  page.table(header, rows);
}

// Whether a prediction and a measurement are of one run: the same scenario on as many ranks with the same settings
// (but the step count, which only lengthens a run). Results without settings (older files) are paired by name and
// ranks.
bool same_run(const Result& a, const Result& b) {
  if (a.scenario != b.scenario || a.ranks != b.ranks) return false;
  if (a.settings.empty() || b.settings.empty()) return true;
  std::map<std::string, std::string> left = a.settings, right = b.settings;
  left.erase("steps");
  right.erase("steps");
  return left == right;
}

void prediction_errors_section(HtmlPage& page, const std::vector<ReportInput>& inputs) {
  // Each measurement against the predictions of the same run (same_run).
  std::vector<std::vector<std::string>> errors;
  for (const ReportInput& hw : inputs) {
    if (hw.result.backend == "sim") continue;
    for (const ReportInput& sim : inputs) {
      if (sim.result.backend != "sim" || !same_run(sim.result, hw.result)) continue;
      const double err = sim.result.step_time_s / hw.result.step_time_s - 1;
      errors.push_back(
          {hw.result.scenario, sim.result.fidelity, ms(sim.result.step_time_s), hw.result.backend,
           ms(hw.result.step_time_s), (err >= 0 ? "+" : "") + percent(err, 2),
           std::abs(sim.result.step_time_s - hw.result.step_time_s) <= hw.result.step_time_spread_s ? "yes" : "no"});
    }
  }
  if (!errors.empty()) {
    page.heading("Prediction against measurement");
    page.table(
        {"scenario", "fidelity", "predicted (ms)", "backend", "measured (ms)", "prediction error", "within noise band"},
        errors);
  }
}

void breakdown_section(HtmlPage& page, const std::vector<ReportInput>& inputs, const std::vector<std::string>& labels) {
  StackedBars bars{
      "breakdown", "Step time: compute and exposed communication", "ms", {"compute", "exposed communication"}, {}, {}};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ReportInput& in = inputs[i];
    bars.labels.push_back(labels[i]);
    bars.values.push_back({in.result.compute_s * 1e3, in.result.exposed_comm_s * 1e3});
  }
  page.heading("Breakdown");
  page.figure(svg(bars));
}

void step_times_section(HtmlPage& page, const std::vector<ReportInput>& inputs,
                        const std::vector<std::string>& labels) {
  LineChart steps{"step-times", "Time of each step", "step", "step time (ms)", false, {}};
  bool several = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ReportInput& in = inputs[i];
    Series s{labels[i], {}, {}};
    for (std::size_t step = 0; step < in.result.steps_s.size(); ++step) {
      s.x.push_back(static_cast<double>(step));
      s.y.push_back(in.result.steps_s[step] * 1e3);
    }
    several |= s.x.size() > 1;
    steps.series.push_back(s);
  }
  if (several) {
    page.heading("Step times");
    page.figure(svg(steps));
  }
}

void timelines_and_notes(HtmlPage& page, const std::vector<ReportInput>& inputs,
                         const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ReportInput& in = inputs[i];
    if (in.result.trace.empty()) continue;
    int step = 0;
    std::vector<TraceEvent> events = step_events(in.result, &step);
    page.heading("Timeline of step " + std::to_string(step) + ": " + labels[i]);
    page.figure(svg(Timeline{"timeline-" + std::to_string(i), timeline_caption(in.result, events, step), in.lanes,
                             std::move(events)}));
  }
  for (const ReportInput& in : inputs) {
    if (in.result.notes.empty()) continue;
    page.heading("Notes: " + labels[&in - inputs.data()]);
    for (const std::string& n : in.result.notes) page.paragraph(n);
  }
}

}  // namespace

std::string results_html(const std::vector<ReportInput>& inputs, const std::string& title) {
  HtmlPage page(title);
  const std::vector<std::string> labels = input_labels(inputs);
  std::string files;
  for (const ReportInput& in : inputs)
    files += (files.empty() ? "" : ", ") + in.file +
             (in.trace_file.empty() || in.trace_file == in.file ? "" : " + " + in.trace_file);
  page.paragraph(std::to_string(inputs.size()) + (inputs.size() == 1 ? " result: " : " results: ") + files + ".");
  summary_section(page, inputs, labels);
  prediction_errors_section(page, inputs);
  breakdown_section(page, inputs, labels);
  step_times_section(page, inputs, labels);
  timelines_and_notes(page, inputs, labels);
  return page.str();
}

}  // namespace commsim::reports
