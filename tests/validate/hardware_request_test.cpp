// The typed seam to the hardware (hw/common/hardware_request.hpp): a request and a response survive their JSON
// exactly, the strict reader names the file and the field of every bad one; and validation's prediction from a
// calibrated topology held in memory is bit-identical to the one from the same topology written and read back.
#include "hw/common/hardware_request.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "sim/step/simulation.hpp"
#include "tests/validate/test_helpers.hpp"
#include "validate/calibration.hpp"
#include "validate/suite.hpp"
#include "validate/validation.hpp"

using namespace commsim;
using commsim::validate::test_support::TempDir;

namespace {

hw::HardwareRunRequest every_field_set() {
  hw::HardwareRunRequest r;
  r.job = hw::HardwareJob::Run;
  r.backend = "nccl";
  r.scenario = "/s/a.json";
  r.sets = {"steps=4", "strategy.algorithm=ring"};
  r.steps = 7;
  r.warmup = 0;
  r.impl = "native";
  r.check = true;
  r.trace_file = "/t/trace.json";
  r.trace_format = "kineto";
  r.topology = "/t/topo.json";
  r.nodes = 3;
  r.max_bytes = "64K";
  r.cluster = true;
  r.timeout_s = 12.5;
  r.result_file = "/r/result.json";
  r.response_file = "/r/response.json";
  r.job_context = {"emulated cluster cs123456: 2 nodes", "/j/status"};
  return r;
}

// The message of the InputError `read` throws, or "" when it throws none.
std::string error_of(const Json& doc) {
  try {
    hw::read_hardware_request(doc, "req.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Every field differs from its default, so a field the writer or the reader dropped would come back as the default.
TEST(HardwareRequest, EveryFieldSurvivesItsJson) {
  const hw::HardwareRunRequest a = every_field_set();
  const hw::HardwareRunRequest b = hw::read_hardware_request(hw::to_json(a), "req.json");
  EXPECT_EQ(b.job, a.job);
  EXPECT_EQ(b.backend, a.backend);
  EXPECT_EQ(b.scenario, a.scenario);
  EXPECT_EQ(b.sets, a.sets);
  EXPECT_EQ(b.steps, a.steps);
  EXPECT_EQ(b.warmup, a.warmup);
  EXPECT_EQ(b.impl, a.impl);
  EXPECT_EQ(b.check, a.check);
  EXPECT_EQ(b.trace_file, a.trace_file);
  EXPECT_EQ(b.trace_format, a.trace_format);
  EXPECT_EQ(b.topology, a.topology);
  EXPECT_EQ(b.nodes, a.nodes);
  EXPECT_EQ(b.max_bytes, a.max_bytes);
  EXPECT_EQ(b.cluster, a.cluster);
  EXPECT_EQ(b.timeout_s, a.timeout_s);
  EXPECT_EQ(b.result_file, a.result_file);
  EXPECT_EQ(b.response_file, a.response_file);
  EXPECT_EQ(b.job_context.network, a.job_context.network);
  EXPECT_EQ(b.job_context.status_file, a.job_context.status_file);
  // Without a job context the document has none (only the launcher gives one to its ranks).
  hw::HardwareRunRequest plain = a;
  plain.job_context = {};
  EXPECT_FALSE(hw::to_json(plain).contains("job_context"));
}

TEST(HardwareRequest, ResponseSurvivesItsJson) {
  const hw::HardwareRunResponse a{3, "loopback: all 4 ranks on this host", true};
  const hw::HardwareRunResponse b = hw::read_hardware_response(hw::to_json(a), "resp.json");
  EXPECT_EQ(b.exit_code, 3);
  EXPECT_EQ(b.network, a.network);
  EXPECT_TRUE(b.cluster);
}

// Each bad document names the file and the field; the good one it was made from reads.
TEST(HardwareRequest, StrictReaderNamesFileAndField) {
  const Json good = {{"job", "run"}, {"scenario", "a.json"}};
  ASSERT_EQ(error_of(good), "");
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"job", "run"}, {"scenario", "a.json"}, {"stepz", 3}}, "req.json: stepz: unknown field"},
      {{{"job", "train"}, {"scenario", "a.json"}}, "req.json: job: \"train\" is not a job"},
      {{{"job", "run"}}, "req.json: scenario: missing"},
      {{{"job", "bench"}}, "req.json: topology: missing"},
      {{{"job", "run"}, {"scenario", "a.json"}, {"impl", "mpi"}}, "req.json: impl: \"mpi\" is not one of"},
      {{{"job", "run"}, {"scenario", "a.json"}, {"sets", {1}}}, "req.json: sets[0]: must be a string"},
      {{{"job", "run"}, {"scenario", "a.json"}, {"steps", -1}}, "req.json: steps"},
      {{{"job", "run"}, {"scenario", "a.json"}, {"timeout_s", -1}}, "req.json: timeout_s: must be >= 0"},
      {{{"job", "run"}, {"scenario", "a.json"}, {"job_context", {{"network", "x"}}}},
       "req.json: job_context.status_file"},
  };
  for (const auto& [doc, expected] : cases) {
    const std::string message = error_of(doc);
    EXPECT_EQ(message.rfind(expected, 0), 0u) << doc.dump() << " -> \"" << message << "\"";
  }
}

// A scenario's nccl_version reaches validation's prediction too: on the calibrated emulated topology, which names no
// NCCL library, it is refused with one line (it was silently ignored), as `commsim simulate` refuses it.
TEST(InMemoryCalibration, ScenarioNcclVersionIsAppliedToTheCalibratedTopology) {
  const std::string topology_file = "validate/suites/topologies/emulated-cpu-cluster-2x2.json";
  const Json bench = validate::test_support::bench_report([](double b) { return 1e-6 + b / 5e9; },
                                                          [](double b) { return 40e-6 + b / 112.5e6; });
  const validate::Calibration cal = validate::calibrate(read_json_file(topology_file), topology_file, bench, "b.json");
  const validate::CalibrationSummary summary = validate::summarise_calibration(cal.calibrated_topology, "cal.json");
  validate::Suite suite = validate::load_suite("validate/suites/smoke.json");
  ASSERT_FALSE(suite.entries.empty());
  validate::SuiteEntry entry = suite.entries.front();
  EXPECT_NO_THROW(validate::predict(suite, entry, summary));
  entry.set["nccl_version"] = "2.26.2";
  try {
    validate::predict(suite, entry, summary);
    ADD_FAILURE() << "a release on a topology without NCCL was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("names no NCCL library"), std::string::npos) << e.what();
  }
}

// The prediction used to simulate the calibrated topology (and its band's scaled copies) written to files and read
// back; it now simulates them from memory. Both are the same document, and JSON numbers survive dump and parse
// exactly, so the step times must be equal to the last bit -- here against the old route, spelled out.
TEST(InMemoryCalibration, PredictsExactlyAsTheTopologyReadBackFromAFile) {
  TempDir dir("in-memory");
  const std::string topology_file = "validate/suites/topologies/emulated-cpu-cluster-2x2.json";
  // +-4 % alternating from size to size: a trusted fit whose residuals give the band a width (band_rel ~ 8 %).
  auto noisy = [](double t, double b) { return t * (static_cast<long>(std::log2(b)) % 2 ? 1.04 : 0.96); };
  const Json bench = validate::test_support::bench_report(
      [&](double b) { return noisy(1e-6 + b / 5e9, b); },
      [&](double b) { return noisy(b < 524288 ? 30e-6 + b / 200e6 : 60e-6 + b / 118e6, b); });
  const validate::Calibration cal = validate::calibrate(read_json_file(topology_file), topology_file, bench, "b.json");
  ASSERT_TRUE(cal.trusted()) << cal.classes[0].why_not << cal.classes[1].why_not;
  const std::string file = dir.file("cal.json");
  validate::test_support::write(file, cal.calibrated_topology);
  const validate::CalibrationSummary in_memory = validate::summarise_calibration(cal.calibrated_topology, file);
  const validate::CalibrationSummary from_file = validate::read_calibration(file);
  const validate::Suite suite = validate::load_suite("validate/suites/smoke.json");
  ASSERT_FALSE(suite.entries.empty());
  for (const validate::SuiteEntry& e : suite.entries) {
    auto old_route = [&](const Json& topology) {  // topology written, the scenario document patched to name it
      const std::string path = dir.file("t.json");
      validate::test_support::write(path, topology);
      Json doc = suite.document(e);
      doc["topology"] = std::filesystem::absolute(path).string();
      doc["device"]["memory_Bps"] = 3 * from_file.reduce_Bps;
      if (from_file.dgc_Bps > 0) doc["device"]["dgc_Bps"] = from_file.dgc_Bps;
      return simulate_document(doc, e.scenario, Fidelity::Flow).result.step_time_s;
    };
    const validate::Prediction p = validate::predict(suite, e, in_memory);
    EXPECT_EQ(p.step_time_s, validate::predict(suite, e, from_file).step_time_s) << e.name;
    EXPECT_EQ(p.step_time_s, old_route(from_file.topology)) << e.name;
    EXPECT_EQ(p.fast_s, old_route(validate::scale_link_classes(from_file.topology, from_file, -1))) << e.name;
    EXPECT_EQ(p.slow_s, old_route(validate::scale_link_classes(from_file.topology, from_file, +1))) << e.name;
    EXPECT_LT(p.fast_s, p.step_time_s) << e.name;  // the band is not empty: the scaled copies differ
  }
}
