// Starting an MPI job of commsim itself: `commsim run|bench --backend mpi` outside mpirun re-executes itself under
// mpirun, one rank per rank of the topology -- on plain loopback (all ranks on this host, shared memory, unshaped),
// or inside an emulated cluster (hw/cluster) that lives exactly as long as the job. The launcher forwards Ctrl-C and
// SIGTERM to the job, stops it at a time limit, and learns the job's outcome from a status file rank 0 writes.
// Every rank gets the request as a file (`commsim hw-run JOB_DIR/request.json`), with the launcher's job context:
// the network it runs on and the status file; nothing travels in environment variables or an argument list.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/common/emulation.hpp"
#include "hw/common/hardware_request.hpp"

namespace commsim::hw {

struct Launch {
  int ranks = 2;
  std::optional<Emulation> cluster;  // set: run inside an emulated cluster of this shape
  HardwareRunRequest request;        // what every rank runs (its paths absolute)
  double timeout_s = 0;              // > 0: stop the job after this long
};

// The absolute path of `name` found in $PATH, or "" when it is not there.
std::string find_in_path(const std::string& name);

// Runs the job. The response's exit code: what rank 0 reported (0 ok, 1 a check failed, 2 bad input), 3 when the
// job ended without a report (a rank died) or ran out of time, 128 + signal when interrupted; its network: what the
// job ran on (loopback when an emulated cluster was asked for but cannot be made here).
// Throws InputError when mpirun is missing (before anything is created).
HardwareRunResponse launch_mpi_job(const Launch& launch);

// Called by rank 0 of the job: records the exit code for the launcher (no-op outside a launched job).
void report_job_status(const JobContext& context, int exit_code);

}  // namespace commsim::hw
