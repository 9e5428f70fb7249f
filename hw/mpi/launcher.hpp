// Starting an MPI job of commsim itself: `commsim run|bench --backend mpi` outside mpirun re-executes itself under
// mpirun, one rank per rank of the topology -- on plain loopback (all ranks on this host, shared memory, unshaped),
// or inside an emulated cluster (hw/cluster) that lives exactly as long as the job. The launcher forwards Ctrl-C and
// SIGTERM to the job, stops it at a time limit, and learns the job's outcome from a status file rank 0 writes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/common/emulation.hpp"

namespace commsim::hw {

struct Launch {
  int ranks = 2;
  std::optional<Emulation> cluster;      // set: run inside an emulated cluster of this shape
  std::vector<std::string> worker_args;  // arguments after the executable, e.g. {"run", "--backend", "mpi", ...}
  double timeout_s = 0;                  // > 0: stop the job after this long
};

// The absolute path of `name` found in $PATH, or "" when it is not there.
std::string find_in_path(const std::string& name);

// Runs the job and returns the exit code for commsim: what rank 0 reported (0 ok, 1 a check failed, 2 bad input),
// 3 when the job ended without a report (a rank died) or ran out of time, 128 + signal when interrupted.
// Throws InputError when mpirun is missing (before anything is created).
int launch_mpi_job(const Launch& launch);

// Called by rank 0 of the job: records the exit code for the launcher (no-op when not launched by it).
void report_job_status(int exit_code);

}  // namespace commsim::hw
