// Executing a HardwareRunRequest in this process: `commsim run`, `commsim bench` and the hidden `commsim hw-run
// REQUEST.json` (what calibrate, validate and regress start as a child process, and what every rank of an MPI job
// runs) all end here. With the MPI backend, outside mpirun this launches the job; under mpirun it is one rank of it.
#pragma once

#include <CLI/CLI.hpp>

#include "hw/common/hardware_request.hpp"

namespace commsim::cli {

// Runs the request; writes its response file when it names one; returns the exit code.
int execute_request(const hw::HardwareRunRequest& request);

// `commsim hw-run REQUEST.json`: reads the request strictly (bad field: exit 2, one line) and executes it.
void register_hw_run(CLI::App& app, int& exit_code);

}  // namespace commsim::cli
