// libFuzzer harness: the validation suite reader (validate/suite.cpp), which also loads and plans each scenario
// with its overrides. The input sits in suites/ beside links to the shipped suite's scenarios, topologies, models.
#include "fuzz/sandbox.hpp"
#include "validate/suite.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("suites/suite.json", data, size);
  commsim::fuzz::expect_clean_refusal([&] { commsim::validate::load_suite(file); });
  return 0;
}
