// `commsim report`: two settings of one scenario are told apart by the setting that differs, and the timeline says
// which step it shows and whether that step is in the steady state (DGC's dense warm-up is not).
#include <gtest/gtest.h>

#include "reports/result_report.hpp"
#include "sim/step/simulation.hpp"

namespace commsim::reports {
namespace {

Result with_settings(const std::string& scenario, std::map<std::string, std::string> settings) {
  Result r;
  r.scenario = scenario;
  r.fidelity = "analytical";
  r.settings = std::move(settings);
  return r;
}

TEST(ReportLabels, TwoSettingsOfOneScenarioAreLabelledByWhatDiffers) {
  const std::vector<ReportInput> inputs = {
      {"a.json", with_settings("resnet50", {{"nodes", "4"}, {"strategy.nccl_comm_num", "1"}}), {}, {}},
      {"b.json", with_settings("resnet50", {{"nodes", "4"}, {"strategy.nccl_comm_num", "2"}}), {}, {}},
      {"c.json", with_settings("vgg16", {{"nodes", "4"}}), {}, {}}};
  const std::vector<std::string> labels = input_labels(inputs);
  // The shared setting (nodes=4) is left out; the one that differs names each column.
  EXPECT_EQ(labels[0], "resnet50 (sim, analytical; strategy.nccl_comm_num=1)");
  EXPECT_EQ(labels[1], "resnet50 (sim, analytical; strategy.nccl_comm_num=2)");
  EXPECT_EQ(labels[2], "vgg16 (sim, analytical)");  // alone of its scenario: nothing to tell apart
  const std::string html = results_html(inputs, "t");
  EXPECT_NE(html.find("strategy.nccl_comm_num=2"), std::string::npos);
}

// DGC from step 3 (rampup_begin_step 3): every step before 3 is dense, so the steady state starts at step 3 or
// later (3 + rampup_step 1 = 4 as simulate_plan counts it today). The default trace (steps 0-2) holds only dense
// steps, so the page shows step 0 and says it precedes the steady state; tracing from the steady step shows it as
// the steady state.
TEST(ReportLabels, TheTimelineSaysWhichStepItShows) {
  const std::vector<std::string> dgc = {"strategy.dgc={\"rampup_begin_step\":3,\"rampup_step\":1,\"sparsity\":[0.999]}",
                                        "steps=8"};
  SimulationRun early = simulate_scenario("scenarios/emulated-tiny.json", dgc, 0, Fidelity::Analytical);
  const int steady = early.result.steady_from;
  ASSERT_GE(steady, 3);
  int step = -1;
  EXPECT_FALSE(step_events(early.result, &step).empty());
  EXPECT_EQ(step, 0);
  const std::string html_early = results_html({{"r.json", early.result, {"compute", "comm stream 1"}, "r.json"}}, "t");
  EXPECT_NE(html_early.find("Timeline of step 0"), std::string::npos);
  EXPECT_NE(html_early.find("before the steady state, which starts at step " + std::to_string(steady)),
            std::string::npos);

  SimulationRun late = simulate_scenario("scenarios/emulated-tiny.json", dgc, 0, Fidelity::Analytical,
                                         parse_trace_steps(std::to_string(steady) + ":" + std::to_string(steady + 1)));
  EXPECT_FALSE(step_events(late.result, &step).empty());
  EXPECT_EQ(step, steady);
  const std::string html_late = results_html({{"r.json", late.result, {"compute", "comm stream 1"}, "r.json"}}, "t");
  const std::string s = std::to_string(steady);
  EXPECT_NE(html_late.find("step " + s + " (steady state, from step " + s + ")"), std::string::npos);
}

}  // namespace
}  // namespace commsim::reports
