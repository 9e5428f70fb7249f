// The commands as users run them: exit codes (0 success, 1 the check failed, 2 bad input with one line on
// stderr), the files they write and what they print. Runs the built commsim from the source root.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/reports/test_helpers.hpp"

namespace commsim::test {
namespace {

using nlohmann::json;

const std::string kScenario = "scenarios/resnet50-dgx-a100.json";

// Bad input: exit code 2 and exactly one line on stderr that contains `expected`.
void expect_bad_input(const CliRun& r, const std::string& expected) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(SweepCli, WritesTableCsvJsonAndHtml) {
  ScratchDir dir("sweep");
  const CliRun r =
      commsim("sweep " + kScenario + " --vary nodes=1,2 --vary strategy.nccl_comm_num=1,2 --steps 2 --jobs 2 -o " +
              dir.path.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // 2 x 2 = 4 configurations: table header, rule, 4 rows, then the summary line
  EXPECT_EQ(lines(r.out), 7u) << r.out;
  EXPECT_NE(r.out.find("4 configurations, fidelity analytical"), std::string::npos);
  EXPECT_EQ(r.err, "");                                // no progress bar: stderr is not a terminal here
  EXPECT_EQ(lines(read_text(dir / "sweep.csv")), 5u);  // header + 4 rows
  EXPECT_EQ(json::parse(read_text(dir / "sweep.json"))["rows"].size(), 4u);
  const XmlCheck html = check_xml(read_text(dir / "sweep.html"));
  EXPECT_EQ(html.error, "");
  EXPECT_GE(html.named("svg").size(), 3u);  // step time and efficiency against nodes, breakdown
}

TEST(SweepCli, ImpossibleVariantsAreListedNotFatal) {
  ScratchDir dir("sweep-impossible");
  // nodes=0 is out of range; as a later combination it is reported in its row, the others still run
  const CliRun r = commsim("sweep " + kScenario + " --vary nodes=1,0 --steps 2 -o " + dir.path.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("impossible: " + kScenario + ": nodes: must be in [1,"), std::string::npos) << r.out;
}

TEST(SweepCli, BadInputIsExitTwoWithOneLine) {
  ScratchDir dir("sweep-bad");
  const std::string run = "sweep " + kScenario + " --steps 2 -o " + dir.path.string() + " ";
  // an unknown field: the strict loader names it (checked on the first combination, before any simulation)
  expect_bad_input(commsim(run + "--vary strategy.fuson.size_mb=1,2"),
                   "--vary: " + kScenario + ": strategy.fuson: unknown field");
  // an empty grid
  expect_bad_input(commsim(run + "--vary nodes="), "--vary: nodes: no values: the grid is empty");
  // malformed specs
  expect_bad_input(commsim(run + "--vary nodes"), "\"nodes\" is not KEY=V1,V2,...");
  expect_bad_input(commsim(run + "--vary 'strategy.dgc.sparsity=[0.9'"), "unbalanced brackets");
  expect_bad_input(commsim(run + "--vary nodes=1 --vary nodes=2"), "--vary: nodes: varied twice");
  // a first value the loader rejects, and no --vary at all
  expect_bad_input(commsim(run + "--vary nodes=0,1"), "nodes: must be in [1,");
  expect_bad_input(commsim(run), "--vary is required");
}

const std::string kCloud = kScenario + " --set topology=../topologies/cloud-tcp-10gbe.json --set nodes=8 --steps 2";

TEST(RecommendCli, TopFiveWithReasonsAndSnippets) {
  const CliRun r = commsim("recommend " + kCloud + " --budget 60");
  ASSERT_EQ(r.code, 0) << r.err;
  // full grid 10 sizes x 4 streams x 5 algorithms = 200 > budget 60: the descent evaluates at most 60
  EXPECT_NE(r.out.find("200 configurations in the full grid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("by coordinate descent"), std::string::npos);
  for (const char* rank : {"\n1 ", "\n5 ", "\n1. ", "\n5. "}) EXPECT_NE(r.out.find(rank), std::string::npos) << rank;
  EXPECT_NE(r.out.find(" because "), std::string::npos);
  for (const char* snippet : {"# Paddle (fleet)", "strategy.fuse_grad_size_in_MB = ", "# MindSpore",
                              "comm_fusion=", "# PyTorch DDP", "bucket_cap_mb=", "# NCCL environment"})
    EXPECT_NE(r.out.find(snippet), std::string::npos) << snippet;
  EXPECT_EQ(r.out.find("[changes convergence"), std::string::npos);  // nothing lossy without --allow-lossy
  // The search's speed on stderr, counting what stdout says was evaluated (analytical only: no re-evaluation).
  const std::size_t at = r.out.find("\nevaluated ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string count = r.out.substr(at + 11, r.out.find(' ', at + 11) - at - 11);
  EXPECT_LE(std::stoi(count), 60);  // within the budget
  EXPECT_NE(r.err.find("evaluated " + count + " configurations in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" configurations per second\n"), std::string::npos) << r.err;
}

TEST(RecommendCli, LossyOnlyWhenAllowedAndFlagged) {
  const CliRun r = commsim("recommend " + kCloud + " --budget 80 --allow-lossy");
  ASSERT_EQ(r.code, 0) << r.err;
  // 200 x 4 dtypes x 6 compression choices = 4800 in the full grid
  EXPECT_NE(r.out.find("4800 configurations in the full grid"), std::string::npos) << r.out;
  // on 10 GbE, compressing the gradients wins, and is flagged as changing convergence
  EXPECT_NE(r.out.find("[changes convergence: check accuracy]"), std::string::npos) << r.out;
  // the cloud topology has no calibration and no fitted NCCL band: the 5 % rule is stated with the pick
  EXPECT_NE(
      r.out.find("more than the prediction's band (no calibrated band for this topology, so commsim's rule: 5 %)"),
      std::string::npos);
}

// A lossy pick is weighed against the fastest lossless settings, which a search of the lossless knobs alone finds:
// on resnet50-cloud-p3 with a budget of 60, the search that also tries the lossy knobs stopped at 82.493 ms while the
// lossless search reaches 76.134 ms; the lossy pick's margin is now measured from the latter, as recommend without
// --allow-lossy ranks it first.
TEST(RecommendCli, LossyPickIsWeighedAgainstTheLosslessSearchsBest) {
  const std::string args = "recommend scenarios/resnet50-cloud-p3.json --budget 60";
  const CliRun lossless = commsim(args);
  const CliRun lossy = commsim(args + " --allow-lossy");
  ASSERT_EQ(lossless.code, 0) << lossless.err;
  ASSERT_EQ(lossy.code, 0) << lossy.err;
  const std::size_t first = lossless.out.find("\n1 ");
  ASSERT_NE(first, std::string::npos) << lossless.out;
  std::istringstream row(lossless.out.substr(first + 3));
  std::string best_ms;
  row >> best_ms;
  EXPECT_NE(lossy.out.find("fastest lossless settings (" + best_ms + " ms)"), std::string::npos) << best_ms << "\n"
                                                                                                 << lossy.out;
}

TEST(RecommendCli, ShardedScenarioTunesShardingKnobsAndPrintsShardingSnippets) {
  const CliRun r = commsim("recommend " + kCloud + " --set 'strategy.sharding={\"stage\": 3}' --budget 30");
  ASSERT_EQ(r.code, 0) << r.err;
  // 7 all-gather sizes x 7 reduce-scatter sizes x 4 streams x 4 prefetch depths
  EXPECT_NE(r.out.find("searched allgather (7), reducescatter (7), streams (4), prefetch (4): 784 configurations"),
            std::string::npos)
      << r.out;
  for (const char* snippet :
       {"# PyTorch FSDP", "sharding_strategy=ShardingStrategy.FULL_SHARD",
        "limit_all_gathers=", "forward_prefetch=", "backward_prefetch=", "# DeepSpeed ZeRO", "\"reduce_bucket_size\"",
        "\"allgather_bucket_size\"", "\"overlap_comm\"", "\"stage3_prefetch_bucket_size\"",
        "# Paddle (dygraph sharding)", "group_sharded_parallel", "# MindSpore (optimizer parallel)",
        "\"allgather\": {\"mode\": \"size\"", "\"reducescatter\": {\"mode\": \"size\""})
    EXPECT_NE(r.out.find(snippet), std::string::npos) << snippet;
  // none of the allreduce settings: a sharded step has no allreduce
  for (const char* allreduce : {"bucket_cap_mb", "fuse_grad_size_in_MB", "\"allreduce\":", "NCCL_ALGO"})
    EXPECT_EQ(r.out.find(allreduce), std::string::npos) << allreduce;
}

TEST(RecommendCli, LossyWithinTheCalibratedBandIsNotPrinted) {
  // The committed calibration of the emulated cluster has a band per link class (+-15.7 % shm and +-10.8 % tcp in
  // the report of 2026-11-27): a lossy setting must win by more than the widest. With batch 256 per rank the compute
  // dominates and DGC wins by about 11 % only: it is named, and the snippets are those of the fastest lossless
  // settings, without DGC. The band printed is the widest class's, read here from the file.
  const std::string calibration = "reports/validation/emulated/calibration/emulated-cpu-cluster-calibrated.json";
  const json document = json::parse(read_text(calibration));
  double widest = 0;
  for (const auto& [name, c] : document["sources"]["calibration"]["link_classes"].items())
    widest = std::max(widest, c["band_rel"].get<double>());
  ASSERT_GT(widest, 0.11);  // else DGC's ~11 % win would be printed and this test would test nothing
  char band[32];
  std::snprintf(band, sizeof band, "+-%.1f %%", 100 * widest);
  const CliRun r = commsim("recommend scenarios/emulated-tiny.json --set topology=../" + calibration +
                           " --set batch_per_gpu=256 --allow-lossy --budget 40 --steps 4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Not printed: the lossy"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("within the prediction's band (" + std::string(band) + " from the calibration of " + calibration),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Settings of the fastest lossless settings found ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("strategy.dgc = True"), std::string::npos);
  EXPECT_EQ(r.out.find("(lossy: changes what training computes"), std::string::npos);
}

TEST(RecommendCli, BadInputIsExitTwoWithOneLine) {
  expect_bad_input(commsim("recommend " + kScenario + " --budget 0"), "--budget");
  expect_bad_input(commsim("recommend scenarios/nope.json"), "scenarios/nope.json: cannot open file");
  expect_bad_input(commsim("recommend " + kScenario + " --fidelity exact"), "--fidelity: unknown fidelity \"exact\"");
}

// baselines/ci.json with absolute scenario paths (so that a copy elsewhere still finds them), edited by `edit`.
std::string ci_copy(const ScratchDir& dir, const std::function<void(json&)>& edit) {
  json b = json::parse(read_text("baselines/ci.json"));
  for (json& e : b["scenarios"])
    e["scenario"] = std::filesystem::absolute(std::filesystem::path("baselines") / e["scenario"].get<std::string>())
                        .lexically_normal()
                        .string();
  edit(b);
  std::ofstream(dir / "b.json") << b.dump(2);
  return dir / "b.json";
}

TEST(RegressCli, ShippedBaselinePassesAndWritesJUnit) {
  ScratchDir dir("regress");
  const CliRun r = commsim("regress --baseline baselines/ci.json --junit " + (dir / "j.xml"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 scenarios: 3 pass, 0 faster, 0 regressions, 0 skipped"), std::string::npos) << r.out;
  const XmlCheck junit = check_xml(read_text(dir / "j.xml"));
  ASSERT_EQ(junit.error, "");
  EXPECT_EQ(junit.named("testsuite")[0]->attrs.at("tests"), "3");
  EXPECT_EQ(junit.named("testsuite")[0]->attrs.at("failures"), "0");
}

TEST(RegressCli, SlowerThanStoredIsExitOne) {
  ScratchDir dir("regress-slow");
  // store 10 % less than the simulation gives: every scenario is now 1 / 0.9 - 1 = 11.1 % slower, beyond 1 %
  const std::string b = ci_copy(dir, [](json& j) {
    for (json& e : j["scenarios"]) e["step_time_s"] = e["step_time_s"].get<double>() * 0.9;
  });
  const CliRun r = commsim("regress --baseline " + b + " --junit " + (dir / "j.xml"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("+11.11 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 pass, 0 faster, 3 regressions"), std::string::npos);
  EXPECT_EQ(check_xml(read_text(dir / "j.xml")).named("failure").size(), 3u);
  // a 12 % tolerance lets the same slowdown pass
  EXPECT_EQ(commsim("regress --baseline " + b + " --tolerance 12").code, 0);
}

TEST(RegressCli, UpdateRebasesAnOldBaseline) {
  ScratchDir dir("regress-update");
  const std::string b = ci_copy(dir, [](json& j) {
    j["commsim_version"] = "0.0.1";
    for (json& e : j["scenarios"]) e["step_time_s"] = 1.0;
  });
  const CliRun r = commsim("regress --baseline " + b + " --update");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json updated = json::parse(read_text(b));
  EXPECT_EQ(updated["commsim_version"], json::parse(read_text("baselines/ci.json"))["commsim_version"]);
  EXPECT_LT(updated["scenarios"][0]["step_time_s"].get<double>(), 1.0);  // the simulated time, not the stale 1 s
  EXPECT_EQ(commsim("regress --baseline " + b).code, 0);                 // and it now passes
}

TEST(RegressCli, BackendRunsTheHardwareEntriesNow) {
  // A baseline with one hardware entry: the 4-rank emulated-tiny scenario, 3 steps, Open MPI on loopback.
  ScratchDir dir("regress-backend");
  auto with_stored = [&](double stored_s) {
    return ci_copy(dir, [&](json& j) {
      json entry = {
          {"name", "tiny-mpi"},      {"scenario", std::filesystem::absolute("scenarios/emulated-tiny.json").string()},
          {"set", {"steps=3"}},      {"backend", "mpi"},
          {"step_time_s", stored_s}, {"step_time_spread_s", 0.0}};
      j["scenarios"] = json::array({entry});
    });
  };
  // Stored 1 us: a step waits for the scenario's ~26 ms of emulated compute, so any measurement is > 1000x slower.
  const CliRun slow = commsim("regress --baseline " + with_stored(1e-6) + " --backend mpi --timeout-s 120");
  if (slow.err.find("no MPI backend") != std::string::npos || slow.err.find("mpirun") != std::string::npos)
    GTEST_SKIP() << "the MPI backend cannot run here: " << slow.err;
  EXPECT_EQ(slow.code, 1) << slow.out << slow.err;
  EXPECT_NE(slow.out.find("0 pass, 0 faster, 1 regressions, 0 skipped"), std::string::npos) << slow.out;
  // Stored 1000 s: the measurement is faster, which passes; --update then stores the measured time and its spread.
  const std::string b = with_stored(1000);
  const CliRun fast = commsim("regress --baseline " + b + " --backend mpi --timeout-s 120 --update");
  ASSERT_EQ(fast.code, 0) << fast.out << fast.err;
  const json updated = json::parse(read_text(b))["scenarios"][0];
  EXPECT_GT(updated["step_time_s"].get<double>(), 0.02);  // at least most of the ~26 ms of compute
  EXPECT_LT(updated["step_time_s"].get<double>(), 10.0);
  EXPECT_TRUE(updated.contains("step_time_spread_s"));
  // Without --backend the entry has no measurement and is skipped, not failed.
  EXPECT_NE(commsim("regress --baseline " + b).out.find("1 skipped"), std::string::npos);
}

TEST(RegressCli, BadBaselineIsExitTwoWithOneLine) {
  ScratchDir dir("regress-bad");
  expect_bad_input(commsim("regress --baseline " + ci_copy(dir, [](json& j) { j["commsim_version"] = "0.0.1"; })),
                   "commsim_version: baseline is from commsim 0.0.1, this is commsim");
  expect_bad_input(commsim("regress --baseline " +
                           ci_copy(dir, [](json& j) { j["scenarios"][1]["scenario"] = "/nonexistent/x.json"; })),
                   "scenarios[1].scenario: no such file /nonexistent/x.json");
  expect_bad_input(commsim("regress --baseline " + ci_copy(dir, [](json& j) { j["scenarios"] = json::object(); })),
                   "scenarios: must be an array");
  std::ofstream(dir / "broken.json") << "{\"commsim_version\": ";
  expect_bad_input(commsim("regress --baseline " + (dir / "broken.json")), "invalid JSON");
  expect_bad_input(commsim("regress --baseline baselines/ci.json --measured nope=x.json"),
                   "--measured: nope: no hardware entry");
  expect_bad_input(commsim("regress --baseline baselines/ci.json --cluster"), "--cluster requires --backend");
}

TEST(ReportCli, SimulationResultWithTraceBecomesOnePage) {
  ScratchDir dir("report-cli");
  ASSERT_EQ(
      commsim("simulate " + kScenario + " --steps 2 --json " + (dir / "r.json") + " --trace " + (dir / "t.json")).code,
      0);
  const CliRun r = commsim("report " + (dir / "r.json") + " " + (dir / "t.json") + " -o " + (dir / "report.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 result(s), 1 timeline(s)"), std::string::npos);
  const XmlCheck html = check_xml(read_text(dir / "report.html"));
  ASSERT_EQ(html.error, "");
  std::set<std::string> charts;
  for (const Element* s : html.named("svg")) charts.insert(s->attrs.at("data-chart"));
  EXPECT_EQ(charts, (std::set<std::string>{"breakdown", "step-times", "timeline-0"}));
  // the summary table holds the result's step time in ms, to 3 decimals
  const double step_ms = json::parse(read_text(dir / "r.json"))["step_time_s"].get<double>() * 1e3;
  char cell[64];
  std::snprintf(cell, sizeof cell, "%.3f", step_ms);
  bool found = false;
  for (const Element* td : html.named("td")) found |= td->text == cell;
  EXPECT_TRUE(found) << cell;
}

TEST(ReportCli, BadInputIsExitTwoWithOneLine) {
  ScratchDir dir("report-cli-bad");
  expect_bad_input(commsim("report " + (dir / "none.json") + " -o " + (dir / "x.html")), "none.json: cannot open file");
  std::ofstream(dir / "t.json") << "{\"traceEvents\": []}";
  expect_bad_input(commsim("report " + (dir / "t.json") + " -o " + (dir / "x.html")), "must follow the result");
  expect_bad_input(commsim("report -o " + (dir / "x.html")), "results is required");
}

}  // namespace
}  // namespace commsim::test
