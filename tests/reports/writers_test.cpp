// The writers: CSV, terminal tables, grids of variants, SVG charts, HTML pages, JUnit XML, sweep outputs, and the
// result report with its timeline.
#include <gtest/gtest.h>

#include <cmath>

#include "explore/grid.hpp"
#include "explore/sweep.hpp"
#include "reports/format.hpp"
#include "reports/html.hpp"
#include "reports/junit.hpp"
#include "reports/result_report.hpp"
#include "reports/svg.hpp"
#include "sim/core/error.hpp"
#include "tests/reports/test_helpers.hpp"

namespace commsim::reports {
namespace {

using namespace commsim::explore;  // the sweep writers are checked here with the other writers

using test::check_xml;

TEST(Csv, QuotesOnlyWhatNeedsIt) {
  // RFC 4180: a field with a comma or a quote is quoted and its quotes doubled; plain fields stay bare.
  EXPECT_EQ(csv_field("ring"), "ring");
  EXPECT_EQ(csv_field("[0.99,0.999]"), "\"[0.99,0.999]\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv({"a", "b"}, {{"1", "x,y"}}), "a,b\n1,\"x,y\"\n");
}

TEST(TextTable, AlignsNumbersRightAndTextLeft) {
  TextTable t({"name", "ms"});
  t.add({"ring", "1.5"});
  t.add({"tree", "12.25"});
  // column widths: "name"/"ring"/"tree" = 4, "12.25" = 5; "1.5" is padded on the left to 5
  EXPECT_EQ(t.str(), "name  ms\n----  -----\nring    1.5\ntree  12.25\n");
}

TEST(Grid, SplitsValuesOutsideJsonBrackets) {
  const Axis a = parse_axis("strategy.dgc.sparsity=[0.99,0.999],[0.9]", "scenarios/x.json");
  EXPECT_EQ(a.key, "strategy.dgc.sparsity");
  // two values: the comma inside the first list does not split it
  ASSERT_EQ(a.values.size(), 2u);
  EXPECT_EQ(a.values[0], "[0.99,0.999]");
  EXPECT_EQ(a.values[1], "[0.9]");
}

TEST(Grid, TopologyRelativeToTheCurrentDirectoryBecomesAbsolute) {
  // The loader resolves paths against the scenario's folder; a path the user typed relative to the current
  // directory (the source root here) is made absolute so that it still names the same file. The label stays.
  const Axis a =
      parse_axis("topology=topologies/dgx-h100.json,../topologies/dgx-a100.json", "scenarios/resnet50-dgx-a100.json");
  EXPECT_TRUE(std::filesystem::path(a.values[0]).is_absolute());
  EXPECT_EQ(a.labels[0], "topologies/dgx-h100.json");
  EXPECT_EQ(a.values[1], "../topologies/dgx-a100.json");  // already relative to the scenario's folder
}

TEST(Grid, CartesianProductFirstAxisSlowest) {
  const std::vector<Axis> axes = {parse_axis("nodes=1,2", "s.json"),
                                  parse_axis("strategy.nccl_comm_num=1,2,3", "s.json")};
  const auto grid = cartesian(axes);
  // 2 x 3 = 6 variants; row 4 = node value 1 (4 / 3), stream value 1 (4 % 3)
  ASSERT_EQ(grid.size(), 6u);
  EXPECT_EQ(grid[4], (std::vector<std::string>{"nodes=2", "strategy.nccl_comm_num=2"}));
  EXPECT_EQ(coordinates(axes, 4), (std::vector<std::size_t>{1, 1}));
}

TEST(Grid, BadVarySpecsAreInputErrors) {
  EXPECT_THROW(parse_axis("nodes", "s.json"), InputError);                       // no '='
  EXPECT_THROW(parse_axis("=1,2", "s.json"), InputError);                        // no key
  EXPECT_THROW(parse_axis("nodes=", "s.json"), InputError);                      // no values: empty grid
  EXPECT_THROW(parse_axis("nodes=1,,2", "s.json"), InputError);                  // empty value
  EXPECT_THROW(parse_axis("strategy.dgc.sparsity=[0.9", "s.json"), InputError);  // unbalanced
  EXPECT_THROW(cartesian({}), InputError);                                       // nothing varied
  EXPECT_THROW(cartesian({parse_axis("nodes=1", "s.json"), parse_axis("nodes=2", "s.json")}), InputError);  // twice
}

TEST(Grid, NullRemovesAField) {
  const Json base = {{"strategy", {{"dgc", {{"sparsity", {0.999}}}}, {"nccl_comm_num", 2}}}};
  const Json doc = apply_sets(base, {"strategy.dgc=null"}, "s.json");
  EXPECT_FALSE(doc["strategy"].contains("dgc"));
  EXPECT_EQ(doc["strategy"]["nccl_comm_num"], 2);
}

TEST(Grid, ParallelForRunsEveryItemOnceAndRethrows) {
  std::vector<int> hits(100, 0);
  std::size_t last = 0;
  parallel_for(
      hits.size(), 4, [&](std::size_t i) { ++hits[i]; }, [&](std::size_t done) { last = done; });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_EQ(last, 100u);  // progress is serialised, so its last call saw all items done
  EXPECT_THROW(parallel_for(10, 2,
                            [](std::size_t i) {
                              if (i == 7) throw InputError("boom");
                            }),
               InputError);
}

TEST(Svg, LineChartIsWellFormedAndCarriesItsNumbers) {
  const std::string markup = svg(LineChart{"step-time-vs-nodes",
                                           "Step <time> & nodes",
                                           "nodes",
                                           "ms",
                                           false,
                                           {{"a=1", {1, 2, 4}, {10, 12.5, 20}}, {"a=2", {1, 2, 4}, {9, 9, 9}}}});
  const auto doc = check_xml(markup);
  ASSERT_EQ(doc.error, "");
  // one point per (series, x): 2 series x 3 nodes = 6 circles with the y values as data-value
  const auto circles = doc.named("circle");
  ASSERT_EQ(circles.size(), 6u);
  EXPECT_EQ(circles[1]->attrs.at("data-value"), "12.5");
  EXPECT_EQ(circles[1]->attrs.at("data-x"), "2");
  EXPECT_EQ(doc.named("polyline").size(), 2u);
}

TEST(Svg, StackedBarsSegmentsSumToTheBar) {
  const auto doc = check_xml(svg(
      StackedBars{"breakdown", "t", "ms", {"compute", "exposed communication"}, {"x", "y"}, {{80, 0.25}, {40, 10}}}));
  ASSERT_EQ(doc.error, "");
  std::vector<std::string> values;
  for (const auto* r : doc.named("rect"))
    if (r->attrs.count("data-series")) values.push_back(r->attrs.at("data-value"));
  // 2 bars x 2 segments, in order: compute then exposed communication
  EXPECT_EQ(values, (std::vector<std::string>{"80", "0.25", "40", "10"}));
}

TEST(Svg, TimelineDrawsOneBoxPerEventInItsLane) {
  Timeline t{"timeline-0",
             "one step",
             {"compute", "comm stream 1"},
             {{"fwd", 0, 0.0, 0.002}, {"bwd", 0, 0.002, 0.004}, {"allreduce b0", 1, 0.004, 0.003}}};
  const auto doc = check_xml(svg(t));
  ASSERT_EQ(doc.error, "");
  std::vector<const test::Element*> boxes;
  for (const auto* r : doc.named("rect"))
    if (r->attrs.count("class") && r->attrs.at("class") == "event") boxes.push_back(r);
  ASSERT_EQ(boxes.size(), 3u);
  // the allreduce starts at 4 ms and lasts 3 ms
  EXPECT_EQ(boxes[2]->attrs.at("data-start"), "4");
  EXPECT_EQ(boxes[2]->attrs.at("data-value"), "3");
}

TEST(Html, PageIsWellFormedXhtmlWithoutExternalReferences) {
  HtmlPage page("a & b <c>");
  page.heading("h");
  page.paragraph("5 < 6 & \"q\"");
  page.table({"k", "v"}, {{"x", "1"}});
  page.figure(svg(StackedBars{"b", "t", "ms", {"s"}, {"x"}, {{1}}}));
  const std::string html = page.str();
  const auto doc = check_xml(html);
  ASSERT_EQ(doc.error, "");
  // self-contained: no scripts, no links, no fetches of any kind
  EXPECT_TRUE(doc.named("script").empty());
  EXPECT_TRUE(doc.named("link").empty());
  EXPECT_EQ(html.find("http://www.w3.org/") != std::string::npos, true);  // namespaces only
  for (const char* fetch : {"src=", "href=", "url(", "@import"})
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
}

TEST(JUnit, CountsFailuresAndSkips) {
  const auto doc = check_xml(junit_xml(
      "commsim.regress", {{"a", 0.5, "", "", ""}, {"b", 0.25, "slower & worse", "", ""}, {"c", 0, "", "no data", ""}}));
  ASSERT_EQ(doc.error, "");
  const auto suite = doc.named("testsuite");
  ASSERT_EQ(suite.size(), 1u);
  EXPECT_EQ(suite[0]->attrs.at("tests"), "3");
  EXPECT_EQ(suite[0]->attrs.at("failures"), "1");
  EXPECT_EQ(suite[0]->attrs.at("skipped"), "1");
  EXPECT_EQ(suite[0]->attrs.at("time"), "0.750");  // 0.5 + 0.25 + 0
  EXPECT_EQ(doc.named("failure")[0]->attrs.at("message"), "slower &amp; worse");
}

// A sweep of the shipped scenario over two node counts, analytical, 2 steps: small enough for a unit test.
Sweep small_sweep() {
  const std::string file = "scenarios/resnet50-dgx-a100.json";
  const Json base = load_base(file, {}, 2);
  std::vector<Axis> axes = {parse_axis("nodes=1,2", file), parse_axis("strategy.fusion.size_mb=4,64", file)};
  return {file, "analytical", axes, evaluate_all(base, file, cartesian(axes), Fidelity::Analytical, 2, "")};
}

TEST(Sweep, CsvHasOneRowPerVariantWithTheResultNumbers) {
  const Sweep s = small_sweep();
  const std::string text = sweep_csv(s);
  // header + 2 x 2 variants
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "nodes,strategy.fusion.size_mb,step_time_s,throughput_samples_s,scaling_efficiency,compute_s,comm_s,"
            "exposed_comm_s,overlap_ratio,bytes_sent_per_rank,buckets,streams,error");
  EXPECT_NE(text.find("\n2,64," + number(s.rows[3].result.step_time_s) + ","), std::string::npos);
}

TEST(Sweep, HtmlChartsHoldTheNumbersOfTheResults) {
  const Sweep s = small_sweep();
  const auto doc = check_xml(sweep_html(s));
  ASSERT_EQ(doc.error, "");
  std::map<std::string, const test::Element*> charts;
  for (const auto* e : doc.named("svg")) charts[e->attrs.at("data-chart")] = e;
  // nodes varies: step time and scaling efficiency against nodes; fusion size varies: step time against it;
  // and the breakdown bars
  for (const char* id :
       {"step-time-vs-nodes", "scaling-efficiency-vs-nodes", "step-time-vs-strategy.fusion.size_mb", "breakdown"})
    EXPECT_TRUE(charts.count(id)) << id;
  // every configuration's step time (ms) appears as a point, and its compute as a bar segment
  std::multiset<std::string> points, compute;
  for (const auto* c : doc.named("circle")) points.insert(c->attrs.at("data-value"));
  for (const auto* r : doc.named("rect"))
    if (r->attrs.count("data-series") && r->attrs.at("data-series") == "compute")
      compute.insert(r->attrs.at("data-value"));
  for (const Evaluation& e : s.rows) {
    ASSERT_TRUE(e.ok()) << e.error;
    EXPECT_TRUE(points.count(number(e.result.step_time_s * 1e3))) << e.result.step_time_s;
    EXPECT_TRUE(compute.count(number(e.result.compute_s * 1e3)));
  }
}

TEST(Sweep, JsonKeepsSettingsAndResults) {
  const Sweep s = small_sweep();
  const Json j = sweep_json(s);
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][2]["settings"]["nodes"], "2");
  EXPECT_DOUBLE_EQ(j["rows"][2]["result"]["step_time_s"].get<double>(), s.rows[2].result.step_time_s);
}

// A result with a two-step trace: step 0 lasts 10 ms, step 1 lasts 8 ms.
Result traced_result() {
  Result r;
  r.scenario = "toy";
  r.fidelity = "analytical";
  r.ranks = 8;
  r.steps_s = {0.010, 0.008};
  r.step_time_s = 0.009;
  r.compute_s = 0.007;
  r.comm_s = 0.003;
  r.exposed_comm_s = 0.002;
  r.trace = {{"fwd", 0, 0.000, 0.004}, {"bwd", 0, 0.004, 0.004}, {"ar", 1, 0.006, 0.004},
             {"fwd", 0, 0.010, 0.003}, {"bwd", 0, 0.013, 0.004}, {"ar", 1, 0.015, 0.003}};
  return r;
}

TEST(ResultReport, StepEventsCutOneStepAndShiftItToZero) {
  Result r = traced_result();
  // steady state from step 0: the first three events, unshifted
  EXPECT_EQ(step_events(r).size(), 3u);
  // steady state from step 1: the last three, shifted by step 0's 10 ms
  r.steady_from = 1;
  const std::vector<TraceEvent> e = step_events(r);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NEAR(e[2].start_s, 0.005, 1e-12);
}

TEST(ResultReport, SimulationAndHardwareSideBySide) {
  test::ScratchDir dir("report");
  Result sim = traced_result();
  sim.settings["nodes"] = "2";
  Result hw = sim;
  hw.backend = "mpi";
  hw.fidelity = "";
  hw.step_time_s = 0.010;  // measured 10 ms against the predicted 9 ms: prediction error 9/10 - 1 = -10 %
  hw.step_time_spread_s = 0.0005;
  hw.trace.clear();
  write_file(dir / "sim.json", sim.to_json().dump(), "t");
  write_file(dir / "sim.trace.json", chrome_trace(sim, 1).dump(), "t");
  write_file(dir / "hw.json", hw.to_json().dump(), "t");
  const auto inputs = load_report_inputs({dir / "sim.json", dir / "sim.trace.json", dir / "hw.json"});
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].result.trace.size(), 6u);  // the trace joined the result before it
  EXPECT_EQ(inputs[0].lanes, (std::vector<std::string>{"compute", "comm stream 1"}));
  const std::string html = results_html(inputs, "t");
  const auto doc = check_xml(html);
  ASSERT_EQ(doc.error, "");
  // summary table has one column per result; the error table names the -10 % and "no" (1 ms > 0.5 ms band)
  EXPECT_NE(html.find("<th>toy (sim, analytical)</th><th>toy (mpi)</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>-10.00 %</td><td>no</td>"), std::string::npos);
  // the timeline of step 0 (steady from 0): three boxes
  std::size_t boxes = 0;
  for (const auto* r : doc.named("rect")) boxes += r->attrs.count("class") && r->attrs.at("class") == "event";
  EXPECT_EQ(boxes, 3u);
  // The same scenario on 4 nodes is another run: no prediction error between it and the 2-node measurement.
  Result other = sim;
  other.settings["nodes"] = "4";
  other.trace.clear();
  write_file(dir / "other.json", other.to_json().dump(), "t");
  const std::string apart = results_html(load_report_inputs({dir / "other.json", dir / "hw.json"}), "t");
  EXPECT_EQ(apart.find("<td>-10.00 %</td>"), std::string::npos);
  // A trace names its run (otherData.scenario_hash): after a result of another run it is refused, not drawn.
  Result elsewhere = sim;
  elsewhere.scenario_hash = "0123456789abcdef";
  sim.scenario_hash = "fedcba9876543210";
  write_file(dir / "elsewhere.json", elsewhere.to_json().dump(), "t");
  write_file(dir / "sim.trace.json", chrome_trace(sim, 1).dump(), "t");
  EXPECT_THROW(load_report_inputs({dir / "elsewhere.json", dir / "sim.trace.json"}), InputError);
  write_file(dir / "sim.json", sim.to_json().dump(), "t");
  EXPECT_EQ(load_report_inputs({dir / "sim.json", dir / "sim.trace.json"}).at(0).trace_file, dir / "sim.trace.json");
}

// A hand-edited result is read field by field: each of these names its field instead of printing a -5000 ms step,
// a rank count past int, a key nobody reads or a lane per stream up to two billion.
TEST(ResultReport, ResultFieldsAreCheckedByName) {
  test::ScratchDir dir("report-fields");
  const Json good = [] {
    Result r;
    r.scenario = "s";
    r.fidelity = "analytical";
    r.ranks = 8;
    r.step_time_s = 0.02;
    r.steps_s = {0.02, 0.02};
    return r.to_json();
  }();
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"step_time_s", -5}}, "step_time_s"},
      {{{"ranks", 1e300}}, "ranks"},
      {{{"colour", "red"}}, "colour"},
      {{{"steps", {0.02, -1}}}, "steps[1]"},
      {{{"breakdown", {{"comm_s", "x"}}}}, "breakdown.comm_s"},
      {{{"trace", {{{"name", "a"}, {"stream", 2000000000}, {"start_s", 0}, {"duration_s", 1}}}}}, "trace"},
  };
  for (const auto& [patch, field] : cases) {
    Json doc = good;
    doc.merge_patch(patch);
    write_file(dir / "r.json", doc.dump(), "t");
    try {
      load_report_inputs({dir / "r.json"});
      ADD_FAILURE() << patch.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("r.json: " + field), std::string::npos) << e.what();
    }
  }
  write_file(dir / "r.json", good.dump(), "t");
  EXPECT_EQ(load_report_inputs({dir / "r.json"}).at(0).result.ranks, 8);  // the unpatched result loads
}

TEST(ResultReport, BadInputsNameTheFile) {
  test::ScratchDir dir("report-bad");
  write_file(dir / "trace.json", "{\"traceEvents\": []}", "t");
  write_file(dir / "other.json", "{\"hello\": 1}", "t");
  // a trace with no result before it; a JSON that is not a result
  EXPECT_THROW(load_report_inputs({dir / "trace.json"}), InputError);
  try {
    load_report_inputs({dir / "other.json"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("other.json: not a commsim result"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commsim::reports
