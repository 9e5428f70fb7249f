// Runs another program (the `commsim` executable, for the hardware side of calibration and validation) as a child
// process, its output going to a log file. validate/ never links the hardware backends: it runs them.
#pragma once

#include <string>
#include <vector>

namespace commsim::validate {

struct ProcessResult {
  int exit_code = -1;      // the child's exit status, or 128 + signal when a signal ended it
  bool timed_out = false;  // stopped after `timeout_s` (SIGTERM, then SIGKILL 10 s later)
  double seconds = 0;      // wall-clock time
};

// Starts argv[0] with argv (PATH is not searched) and waits. stdout and stderr go to `log_path` (truncated).
// `timeout_s` <= 0: no limit. Throws std::runtime_error when the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& log_path, double timeout_s);

// The last `lines` lines of a text file (for error messages naming what the child said).
std::string tail_lines(const std::string& path, int lines);

// The path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace commsim::validate
