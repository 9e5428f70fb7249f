// libFuzzer harness: the comparison reader of `commsim compare` (cli/compare_cmd.cpp), driven through its command
// line as a user runs it; each variant is simulated (analytical). The input sits in scenarios/ beside the shipped
// scenarios it may name. The table goes to stdout, which the harness sends to /dev/null.
#include <cstdio>

#include "cli/commands.hpp"
#include "fuzz/sandbox.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!std::freopen("/dev/null", "w", stdout)) return 1;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("scenarios/compare.json", data, size);
  commsim::fuzz::expect_clean_refusal([&] {
    CLI::App app;
    int exit_code = 0;
    commsim::cli::register_compare(app, exit_code);
    std::vector<std::string> args = {file, "compare"};  // CLI11 takes them last to first
    app.parse(args);
  });
  return 0;
}
