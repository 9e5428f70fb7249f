// libFuzzer harness: NCCL's printed tuning table read back from a log (sim/collective/nccl_printed_table.cpp).
#include <sstream>

#include "fuzz/sandbox.hpp"
#include "sim/collective/nccl_printed_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream log(std::string(reinterpret_cast<const char*>(data), size));
  commsim::fuzz::expect_clean_refusal([&] { commsim::nccl::read_printed_tuning_table(log, "nccl.log"); });
  return 0;
}
