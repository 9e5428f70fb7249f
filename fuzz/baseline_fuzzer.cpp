// libFuzzer harness: the performance baseline reader (reports/baseline.cpp), then each entry's scenario with its
// settings, as `commsim regress` loads them. The input sits in baselines/, so "../scenarios/..." resolves.
#include "explore/baseline.hpp"
#include "fuzz/sandbox.hpp"
#include "sim/scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("baselines/baseline.json", data, size);
  commsim::fuzz::expect_clean_refusal([&] {
    const commsim::explore::Baseline baseline = commsim::explore::load_baseline(file, false);
    for (const commsim::explore::BaselineEntry& e : baseline.entries) commsim::load_scenario(e.scenario_path, e.sets);
  });
  return 0;
}
