// libFuzzer harness: NCCL's printed tuning table and per-size choices read back from a log
// (sim/collective/nccl_printed_table.cpp).
#include <sstream>

#include "fuzz/sandbox.hpp"
#include "sim/collective/nccl_printed_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream table(text), choices(text);
  commsim::fuzz::expect_clean_refusal([&] { commsim::nccl::read_printed_tuning_table(table, "nccl.log"); });
  commsim::fuzz::expect_clean_refusal([&] { commsim::nccl::read_printed_choices(choices, "nccl.log"); });
  return 0;
}
