// Traces (sim/result/trace.hpp): the steps and ranks asked for, the slow rank under its own id, the details of
// each event and the flows from a bucket's gradient computations to its collective; `--json -` / `--trace -`.
//
// scenarios/emulated-tiny.json: mlp-small (fc1 401 408 + 512, fc2 262 144 + 512, fc3 5 120 + 10 elements) on
// 2 nodes x 2 ranks, two buckets on two streams. Bucket 0 holds fc3.bias, fc3.weight, fc2.bias, fc2.weight (backward
// order): 267 786 elements = 1 071 144 bytes of fp32, its gradients made by "bwd fc3" and "bwd fc2"; bucket 1
// holds fc1's two tensors, made by "bwd fc1".
#include "sim/result/trace.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/step/simulation.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

const char* kScenario = "scenarios/emulated-tiny.json";

std::vector<Json> events_of(const Json& trace, const std::string& phase) {
  std::vector<Json> out;
  for (const Json& e : trace.at("traceEvents"))
    if (e.at("ph") == phase) out.push_back(e);
  return out;
}

TEST(Trace, DefaultIsTheFirstThreeStepsOfTheRankTheSimulatorFollows) {
  const SimulationRun run = simulate_scenario(kScenario, {}, 0, Fidelity::Analytical);
  const Json trace = chrome_trace(run.result, run.plan.streams);
  std::set<int> steps, pids;
  for (const Json& e : events_of(trace, "X"))
    steps.insert(e["args"]["step"].get<int>()), pids.insert(e["pid"].get<int>());
  EXPECT_EQ(steps, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(pids, (std::set<int>{0}));  // no stragglers: every rank alike, rank 0 shown
}

// With rank 3 twice as slow, every synchronous step waits for rank 3: the timeline is rank 3's and says so.
TEST(Trace, TheSlowRankIsLabelledWithItsOwnId) {
  const SimulationRun run =
      simulate_scenario(kScenario, {"strategy.stragglers.slow_ranks={\"3\":2}"}, 0, Fidelity::Analytical);
  const Json trace = chrome_trace(run.result, run.plan.streams);
  for (const Json& e : events_of(trace, "X")) EXPECT_EQ(e["pid"], 3);
  bool named = false;
  for (const Json& e : events_of(trace, "M"))
    if (e["name"] == "process_name") named = e["args"]["name"].get<std::string>().find("(rank 3)") != std::string::npos;
  EXPECT_TRUE(named);
  // Asking for another rank is refused: its timeline is not what was simulated.
  TraceSelection other;
  other.ranks = {1};
  EXPECT_THROW(check_trace_ranks(other, run.plan), InputError);
  other.ranks = {3};
  EXPECT_NO_THROW(check_trace_ranks(other, run.plan));
}

TEST(Trace, StepsAndRanksAreSelectable) {
  TraceSelection selection = parse_trace_steps("4:5");
  selection.ranks = parse_trace_ranks("0,2", 4);
  const SimulationRun run = simulate_scenario(kScenario, {"steps=8"}, 0, Fidelity::Analytical, selection);
  const Json trace = chrome_trace(run.result, run.plan.streams);
  std::map<int, std::vector<double>> starts_by_rank;
  std::set<int> steps;
  for (const Json& e : events_of(trace, "X")) {
    steps.insert(e["args"]["step"].get<int>());
    starts_by_rank[e["pid"].get<int>()].push_back(e["ts"].get<double>());
  }
  EXPECT_EQ(steps, (std::set<int>{4, 5}));
  ASSERT_EQ(starts_by_rank.size(), 2u);
  EXPECT_EQ(starts_by_rank[0], starts_by_rank[2]);  // symmetric ranks run the same timeline
  EXPECT_EQ(parse_trace_steps("7").first_step, 7);
  EXPECT_EQ(parse_trace_steps("7").last_step, 7);
  EXPECT_THROW(parse_trace_steps("3:1"), InputError);
  EXPECT_THROW(parse_trace_ranks("0,x", 4), InputError);
  EXPECT_THROW(parse_trace_ranks("4", 4), InputError);
}

TEST(Trace, EventsCarryDetailsAndFlowsLinkGradientsToTheirCollective) {
  const SimulationRun run = simulate_scenario(kScenario, {}, 0, Fidelity::Analytical, parse_trace_steps("0"));
  const Json trace = chrome_trace(run.result, run.plan.streams);
  std::map<std::string, Json> by_name;  // one step traced: names are unique
  for (const Json& e : events_of(trace, "X")) by_name[e["name"].get<std::string>()] = e;
  ASSERT_TRUE(by_name.count("bucket 0")) << trace.dump();
  const Json& b0 = by_name["bucket 0"];
  EXPECT_EQ(b0["args"]["kind"], "collective");
  EXPECT_EQ(b0["args"]["op"], "allreduce");
  EXPECT_EQ(b0["args"]["bytes"], 1071144);  // 267 786 elements x 4 bytes
  EXPECT_EQ(b0["args"]["tensors"], Json({"fc3.bias", "fc3.weight", "fc2.bias", "fc2.weight"}));
  EXPECT_EQ(b0["args"]["bucket"], 0);
  EXPECT_TRUE(b0["args"].contains("algorithm"));
  EXPECT_EQ(b0["args"]["stream"], b0["tid"]);
  EXPECT_EQ(by_name["bwd fc2"]["args"]["gradients"], Json({"fc2.weight", "fc2.bias"}));
  // Flows: an "s" at the start of each gradient computation, an "f" at the start of the collective, same id.
  std::map<std::uint64_t, Json> starts;
  for (const Json& s : events_of(trace, "s")) starts[s["id"].get<std::uint64_t>()] = s;
  std::map<double, std::set<double>> sources_of;  // collective start -> gradient computation starts
  for (const Json& f : events_of(trace, "f")) {
    ASSERT_TRUE(starts.count(f["id"].get<std::uint64_t>()));
    EXPECT_EQ(f["bp"], "e");
    sources_of[f["ts"].get<double>()].insert(starts[f["id"].get<std::uint64_t>()]["ts"].get<double>());
  }
  EXPECT_EQ(sources_of[b0["ts"].get<double>()],
            (std::set<double>{by_name["bwd fc3"]["ts"].get<double>(), by_name["bwd fc2"]["ts"].get<double>()}));
  EXPECT_EQ(sources_of[by_name["bucket 1"]["ts"].get<double>()],
            (std::set<double>{by_name["bwd fc1"]["ts"].get<double>()}));
}

// An NCCL topology: the collective's event names the protocol and channels NCCL's model picked.
TEST(Trace, NcclCollectivesNameTheirProtocol) {
  const SimulationRun run = simulate_scenario("scenarios/resnet50-dgx-a100.json", {"steps=1"}, 0, Fidelity::Analytical,
                                              parse_trace_steps("0"));
  bool seen = false;
  for (const TraceEvent& e : run.result.trace)
    if (e.args.value("kind", "") == "collective") {
      seen = true;
      EXPECT_TRUE(e.args.contains("protocol")) << e.args.dump();
    }
  EXPECT_TRUE(seen);
}

// `-` is standard output: the document alone there (it parses), the table on standard error.
TEST(Trace, DashWritesTheDocumentToStandardOutput) {
  if (!cli_available()) GTEST_SKIP() << "the commsim executable was not built";
  for (const char* flag : {"--json", "--trace"}) {
    const CliResult r = run_cli(std::string("simulate ") + kScenario + " " + flag + " -");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json doc = Json::parse(r.out);
    EXPECT_TRUE(doc.contains(std::string(flag) == "--json" ? "step_time_s" : "traceEvents")) << flag;
    EXPECT_NE(r.err.find("step time"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists("-"));
  }
}

}  // namespace
}  // namespace commsim::test
