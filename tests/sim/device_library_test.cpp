// The device library (devices/*.json, compiled in) and scenarios that name a device instead of giving numbers.
#include "sim/model/device_library.hpp"

#include "sim/step/simulation.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

TEST(DeviceLibrary, EveryAssignedDeviceIsThereWithItsDatasheetFigures) {
  // The datasheet figures (devices/*.json gives each with its URL): A100 80GB SXM 312 TFLOP/s dense BF16 and
  // 2039 GB/s; H100 SXM 1979 TFLOP/s FP8 with sparsity, i.e. 989.5 dense BF16 (half of 1979), 3.35 TB/s;
  // MI300X 1307.4 TFLOP/s dense BF16, 5.3 TB/s; L40S 362.05 TFLOP/s dense BF16, 864 GB/s.
  for (const char* name : {"v100-sxm2", "a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "mi300x",
                           "l40s", "cpu-emulation"}) {
    SCOPED_TRACE(name);
    const LibraryDevice* d = find_device(name);
    ASSERT_NE(d, nullptr);
    EXPECT_GT(d->memory_Bps, 0);
    EXPECT_TRUE(d->peak_dense_flops.count("fp32"));
    // Lower precision is never slower than fp32 on the same device.
    for (const auto& [dtype, flops] : d->peak_dense_flops) EXPECT_GE(flops, d->peak_dense_flops.at("fp32")) << dtype;
  }
  EXPECT_EQ(find_device("a100-sxm-80gb")->peak_dense_flops.at("bf16"), 312e12);
  EXPECT_EQ(find_device("a100-sxm-80gb")->memory_Bps, 2039e9);
  EXPECT_EQ(find_device("h100-sxm")->peak_dense_flops.at("bf16"), 1979e12 / 2);
  EXPECT_EQ(find_device("h100-sxm")->memory_Bps, 3.35e12);
  EXPECT_EQ(find_device("mi300x")->peak_dense_flops.at("bf16"), 1307.4e12);
  EXPECT_EQ(find_device("l40s")->memory_Bps, 864e9);
  EXPECT_EQ(find_device("not-a-device"), nullptr);
}

Json tiny_with_device(const Json& device) {
  Json doc = parse_json_text(read_file("scenarios/emulated-tiny.json"), "scenarios/emulated-tiny.json");
  doc["device"] = device;
  return doc;
}

TEST(DeviceLibrary, ANamedDevicePredictsExactlyWhatItsNumbersPredict) {
  // The same device given by name and by the library's own numbers: the plan sees the same doubles, so the step
  // times must be bit-identical (this is what lets the shipped scenarios name their device).
  const Json named = tiny_with_device({{"name", "a100-sxm-80gb"}, {"dtype", "bf16"}, {"efficiency", 0.25}});
  const Json explicit_numbers = tiny_with_device({{"name", "A100"},
                                                  {"peak_flops", 312e12},
                                                  {"efficiency", 0.25},
                                                  {"memory_Bps", 2039e9},
                                                  {"source", "datasheet"}});
  const SimulationRun a = simulate_document(named, "scenarios/emulated-tiny.json", Fidelity::Analytical);
  const SimulationRun b = simulate_document(explicit_numbers, "scenarios/emulated-tiny.json", Fidelity::Analytical);
  EXPECT_EQ(a.scenario.device.peak_flops, 312e12);
  EXPECT_EQ(a.scenario.device.memory_Bps, 2039e9);
  EXPECT_EQ(a.result.steps_s, b.result.steps_s);
  EXPECT_EQ(a.result.step_time_s, b.result.step_time_s);
}

TEST(DeviceLibrary, ExplicitNumbersWinOverTheLibrary) {
  // memory_Bps given beside a library name replaces the library's (with its source); peak from the library.
  const Json doc = tiny_with_device(
      {{"name", "h100-sxm"}, {"dtype", "fp8"}, {"efficiency", 0.5}, {"memory_Bps", 1e12}, {"source", "measured"}});
  const Scenario s = parse_scenario(doc, "scenarios/emulated-tiny.json");
  EXPECT_EQ(s.device.peak_flops, 1979e12);
  EXPECT_EQ(s.device.memory_Bps, 1e12);
}

TEST(DeviceLibrary, BadDevicesNameTheField) {
  auto error = [](const Json& device) {
    try {
      parse_scenario(tiny_with_device(device), "scenarios/emulated-tiny.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error({{"name", "h100-pcie"}, {"dtype", "bf16"}, {"efficiency", 0.5}}).find("device.name"),
            std::string::npos);
  EXPECT_NE(error({{"name", "v100-sxm2"}, {"dtype", "bf16"}, {"efficiency", 0.5}}).find("device.dtype"),
            std::string::npos);  // V100 has no bf16
  EXPECT_NE(error({{"name", "h100-sxm"}, {"efficiency", 0.5}}).find("device.dtype"), std::string::npos);
  EXPECT_NE(
      error({{"name", "h100-sxm"}, {"dtype", "bf16"}, {"efficiency", 0.5}, {"memory_Bps", 1e12}}).find("device.source"),
      std::string::npos);  // a number given here needs its source
}

}  // namespace
}  // namespace commsim::test
