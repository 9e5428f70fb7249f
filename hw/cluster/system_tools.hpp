// The system tools the emulated cluster drives (ip, tc, unshare, hostname): found by absolute path and run without
// a shell. Internal to hw/cluster.
#pragma once

#include <string>
#include <vector>

namespace commsim::hw {

// `text` on one line: newlines become spaces, trailing spaces go.
std::string one_line(std::string text);

// The words separated by single spaces.
std::string join(const std::vector<std::string>& words);

// Finds a system tool by absolute path, so that a PATH without sbin (non-login shells, sudo) still works.
std::string find_tool(const std::string& name);

// Runs a helper (ip, tc) from an argument vector, without a shell, and throws ClusterError with its stderr when it
// fails. Fatal signals stay blocked in this thread meanwhile, so cleanup never races a helper that is still
// creating something; a signal that arrived is handled (cleanup, re-raise) as soon as the helper is done.
void run_helper(const std::vector<std::string>& argv);

}  // namespace commsim::hw
