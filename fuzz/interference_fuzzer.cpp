// libFuzzer harness: the GPU interference measurement that `calibrate --interference` fits
// (validate/interference_fit.cpp).
#include "fuzz/sandbox.hpp"
#include "validate/interference_fit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("interference.json", data, size);
  commsim::fuzz::expect_clean_refusal(
      [&] { commsim::validate::fit_interference(commsim::read_json_file(file), file, "resnet50_bf16_b256_step"); });
  return 0;
}
