// What every loader harness shares: a private copy of the repository's input layout in a temporary directory, so
// that a fuzzed file can name the shipped files beside it ("../topologies/dgx-a100.json", "models/resnet50.json")
// without anything being written into the source tree, and the one rule a harness checks on every input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace commsim::fuzz {

// The temporary directory (created on first use, removed at exit):
//   scenarios/   links to each shipped scenario and to scenarios/models
//   topologies   link to the shipped topologies/
//   baselines/   empty
//   suites/      links to validate/suites/{models,scenarios,topologies}
// Writes `data` to `relative_path` inside it and returns the file's full path.
std::string write_input(const std::string& relative_path, const std::uint8_t* data, std::size_t size);

// Runs `load` on the input. An InputError is the contract for bad input (the CLI prints it as one line and exits
// 2), so it passes if its message is one line; any other exception escapes and libFuzzer reports it as a crash.
void expect_clean_refusal(const std::function<void()>& load);

}  // namespace commsim::fuzz
