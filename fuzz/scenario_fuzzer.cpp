// libFuzzer harness: the scenario loader (sim/scenario/scenario.cpp) and what a loaded scenario feeds, the training
// plan and the analytical step simulation (sim/plan/plan.cpp, simulation.cpp). The input sits in scenarios/
// beside the shipped scenarios, so "../topologies/..." and "models/..." resolve to the shipped files.
#include "fuzz/sandbox.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/step/simulation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("scenarios/fuzz-input.json", data, size);
  commsim::fuzz::expect_clean_refusal(
      [&] { commsim::simulate_document(commsim::read_json_file(file), file, commsim::Fidelity::Analytical); });
  return 0;
}
