// libFuzzer harness: the topology loader (sim/topology/loader.cpp), cluster and ASTRA-sim formats.
#include "fuzz/sandbox.hpp"
#include "sim/topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("topology.json", data, size);
  commsim::fuzz::expect_clean_refusal([&] { commsim::load_topology(file); });
  return 0;
}
