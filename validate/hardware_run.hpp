// The one way calibrate, validate and regress reach the hardware: a HardwareRunRequest executed by a `commsim hw-run`
// child process (a hardware job may be killed, takes signals and runs mpirun; it never shares this process, and
// validate/ links no backend). The run's record lies beside its log: STEM.request.json (what was asked; `commsim
// hw-run STEM.request.json` repeats it), STEM.log (everything the job printed), STEM.response.json (what came back).
#pragma once

#include <optional>
#include <string>

#include "hw/common/hardware_request.hpp"
#include "sim/result/result.hpp"

namespace commsim::validate {

struct HardwareRun {
  int exit_code = -1;  // the child's (0 ok, 1 a check failed, 2 bad input, 3 the job failed, 128 + signal)
  hw::HardwareRunResponse response;  // the network the job ran on (exit code -1: the child left no response)
  bool timed_out = false;            // stopped after the caller's time limit
  double wall_s = 0;
  std::string log_file;
  std::string error;             // one line when !ok(): the exit code, the log's last line, the log's path
  std::optional<Result> result;  // a Run job's measured Result, when ok()
  bool ok() const { return error.empty(); }
};

// Runs `request` with the executable `commsim`; `stem` names the record's files (its folder must exist).
// `timeout_s` > 0 limits the child (SIGTERM, SIGKILL 10 s later). A run that exits non-zero, leaves no result file
// or, asked for the emulated cluster, ran elsewhere, is not ok(); nothing throws but a record that cannot be written.
HardwareRun run_on_hardware(const std::string& commsim, const hw::HardwareRunRequest& request, const std::string& stem,
                            double timeout_s);

}  // namespace commsim::validate
