// libFuzzer harness: the model loader (sim/model/model.cpp).
#include "fuzz/sandbox.hpp"
#include "sim/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("scenarios/model.json", data, size);
  commsim::fuzz::expect_clean_refusal([&] { commsim::load_model(file); });
  return 0;
}
