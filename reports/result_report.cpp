#include "reports/result_report.hpp"

#include <algorithm>
#include <numeric>

#include "reports/format.hpp"
#include "reports/html.hpp"
#include "reports/svg.hpp"
#include "sim/core/json_fields.hpp"

namespace commsim::reports {

namespace {

void read_chrome_trace(const Json& doc, const std::string& file, ReportInput& into) {
  try {
    std::vector<TraceEvent> events;
    std::vector<std::string> lanes;
    for (const Json& e : doc.at("traceEvents")) {
      const int tid = e.value("tid", 0);
      if (tid < 0 || tid > 1024) throw InputError(file, "traceEvents", "tid " + std::to_string(tid) + " out of range");
      if (lanes.size() <= static_cast<std::size_t>(tid)) lanes.resize(tid + 1);
      const std::string ph = e.at("ph").get<std::string>();
      if (ph == "M" && e.at("name") == "thread_name") lanes[tid] = e.at("args").at("name").get<std::string>();
      if (ph == "X")
        events.push_back({e.at("name").get<std::string>(), tid, e.at("ts").get<double>() * 1e-6, e.at("dur").get<double>() * 1e-6});
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

std::string label_of(const Result& r) { return r.scenario + " (" + r.backend + (r.backend == "sim" ? ", " + r.fidelity : "") + ")"; }

std::string ms(double s) { return fixed(s * 1e3, 3); }

}  // namespace

std::vector<ReportInput> load_report_inputs(const std::vector<std::string>& files) {
  std::vector<ReportInput> inputs;
  for (const std::string& file : files) {
    const Json doc = read_json_file(file);
    if (doc.is_object() && doc.contains("traceEvents")) {
      if (inputs.empty()) throw InputError(file, "", "a Chrome trace must follow the result it belongs to");
      if (!inputs.back().trace_file.empty()) throw InputError(file, "", "the result before it already has a trace (" + inputs.back().trace_file + ")");
      read_chrome_trace(doc, file, inputs.back());
      continue;
    }
    if (!doc.is_object()) throw InputError(file, "", "not a commsim result: must be a JSON object");
    ReportInput in{file, Result::from_json(doc, file), {}, {}};
    if (doc.contains("trace")) {
      try {
        int streams = 0;
        for (const Json& e : doc.at("trace")) {
          in.result.trace.push_back({e.at("name").get<std::string>(), e.at("stream").get<int>(), e.at("start_s").get<double>(),
                                     e.at("duration_s").get<double>()});
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

std::vector<TraceEvent> step_events(const Result& r) {
  auto window = [&](int step) {
    const double begin = std::accumulate(r.steps_s.begin(), r.steps_s.begin() + step, 0.0);
    std::vector<TraceEvent> out;
    for (const TraceEvent& e : r.trace)
      if (e.start_s >= begin - 1e-12 && (step + 1 >= static_cast<int>(r.steps_s.size()) || e.start_s < begin + r.steps_s[step] - 1e-12))
        out.push_back({e.name, e.stream, e.start_s - begin, e.duration_s});
    return out;
  };
  if (r.steps_s.empty()) return r.trace;
  if (r.steady_from > 0 && r.steady_from < static_cast<int>(r.steps_s.size())) {
    std::vector<TraceEvent> steady = window(r.steady_from);
    if (!steady.empty()) return steady;
  }
  return window(0);
}

std::string results_html(const std::vector<ReportInput>& inputs, const std::string& title) {
  HtmlPage page(title);
  std::string files;
  for (const ReportInput& in : inputs) files += (files.empty() ? "" : ", ") + in.file + (in.trace_file.empty() || in.trace_file == in.file ? "" : " + " + in.trace_file);
  page.paragraph(std::to_string(inputs.size()) + (inputs.size() == 1 ? " result: " : " results: ") + files + ".");

  std::vector<std::string> header = {"quantity"};
  for (const ReportInput& in : inputs) header.push_back(label_of(in.result));
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

  // Each measurement against the predictions of the same scenario.
  std::vector<std::vector<std::string>> errors;
  for (const ReportInput& hw : inputs) {
    if (hw.result.backend == "sim") continue;
    for (const ReportInput& sim : inputs) {
      if (sim.result.backend != "sim" || sim.result.scenario != hw.result.scenario) continue;
      const double err = sim.result.step_time_s / hw.result.step_time_s - 1;
      errors.push_back({hw.result.scenario, sim.result.fidelity, ms(sim.result.step_time_s), hw.result.backend,
                        ms(hw.result.step_time_s), (err >= 0 ? "+" : "") + percent(err, 2),
                        std::abs(sim.result.step_time_s - hw.result.step_time_s) <= hw.result.step_time_spread_s ? "yes" : "no"});
    }
  }
  if (!errors.empty()) {
    page.heading("Prediction against measurement");
    page.table({"scenario", "fidelity", "predicted (ms)", "backend", "measured (ms)", "prediction error", "within noise band"}, errors);
  }

  StackedBars bars{"breakdown", "Step time: compute and exposed communication", "ms", {"compute", "exposed communication"}, {}, {}};
  for (const ReportInput& in : inputs) {
    bars.labels.push_back(label_of(in.result));
    bars.values.push_back({in.result.compute_s * 1e3, in.result.exposed_comm_s * 1e3});
  }
  page.heading("Breakdown");
  page.figure(svg(bars));

  LineChart steps{"step-times", "Time of each step", "step", "step time (ms)", false, {}};
  bool several = false;
  for (const ReportInput& in : inputs) {
    Series s{label_of(in.result), {}, {}};
    for (std::size_t i = 0; i < in.result.steps_s.size(); ++i) {
      s.x.push_back(static_cast<double>(i));
      s.y.push_back(in.result.steps_s[i] * 1e3);
    }
    several |= s.x.size() > 1;
    steps.series.push_back(s);
  }
  if (several) {
    page.heading("Step times");
    page.figure(svg(steps));
  }

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ReportInput& in = inputs[i];
    if (in.result.trace.empty()) continue;
    page.heading("Timeline of one step: " + label_of(in.result));
    page.figure(svg(Timeline{"timeline-" + std::to_string(i), "Rank 0, one step (hover a box for its name and times)", in.lanes,
                             step_events(in.result)}));
  }
  for (const ReportInput& in : inputs) {
    if (in.result.notes.empty()) continue;
    page.heading("Notes: " + label_of(in.result));
    for (const std::string& n : in.result.notes) page.paragraph(n);
  }
  return page.str();
}

}  // namespace commsim::reports
