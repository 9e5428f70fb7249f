// The Open MPI backend: every rank of an MPI job executes the scenario's Plan for real and the job measures it.
// Per rank: a flat fp32 gradient buffer of the model's real size; the compute stream (this thread) waits each
// Compute task's scenario time -- a GPU computes without the CPU, so waiting is the honest emulation; one thread per
// communication stream, each with its own communicator, executing that stream's tasks in the Plan's order once their
// dependencies are done. Collectives run the simulator's schedules (point-to-point + real reductions) or Open MPI's
// own; DGC selects a real top-k and gathers (value, index) pairs; Local SGD averages real parameters.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/step/simulation.hpp"

namespace commsim::hw {

enum class CollectiveImpl : std::uint8_t {
  Schedule,  // the simulator's schedules, with MPI_Isend/MPI_Irecv and this backend's reductions
  Native,    // MPI_Allreduce, MPI_Reduce_scatter(_block), MPI_Allgather(v); hierarchical over the Plan's groups
};

struct RunOptions {
  std::string scenario;           // scenario file
  std::vector<std::string> sets;  // --set key=value overrides, as `commsim simulate` takes them
  int steps = 0;                  // > 0: overrides the scenario's step count
  std::string json;               // where rank 0 writes the Result (empty: nowhere)
  bool check = false;             // verifiable inputs; every collective's output is compared element by element
  CollectiveImpl impl = CollectiveImpl::Schedule;
  int warmup = 2;       // steps run first and left out of the result (each distinct step kind in turn)
  std::string network;  // what the job runs on (the launcher's words), noted in the Result; empty: not noted
};

// Loads scenario, topology and plan exactly as `commsim simulate` does (same overrides, same scenario hash), so
// that the measured Result and the predicted one describe the same run.
SimulationRun load_run(const RunOptions& options);

struct CheckCounts {
  std::uint64_t wrong_elements = 0;    // summed over ranks
  std::uint64_t checked_elements = 0;  // summed over ranks
  std::uint64_t collectives = 0;       // checked collectives, summed over ranks
};

// Measures run.plan in an MPI job of exactly run.plan.ranks ranks (MPI initialised with MPI_THREAD_MULTIPLE).
// On rank 0 fills run.result (backend "mpi", fidelity "measured"); every rank returns the job's check counts.
// For tests, the environment variable COMMSIM_TEST_KILL_RANK=r makes rank r abort in its first measured step, and
// COMMSIM_TEST_CORRUPT_RANK=r makes rank r change one element of its first collective result before the check.
CheckCounts measure_plan(SimulationRun& run, const RunOptions& options);

// RAII MPI_Init_thread(MPI_THREAD_MULTIPLE) / MPI_Finalize; throws MpiError if the library cannot give that level.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

// Runs `body` (returning the rank's exit code) on one rank of the job. Bad input (the same on every rank) is reported
// once, by rank 0, as exit 2; any other failure is reported by the rank that hit it, which then aborts the job so
// that no rank waits forever. Returns the exit code (the caller's rank 0 reports it to the launcher).
int run_on_rank(const MpiSession& session, const std::function<int()>& body);

// True inside a job mpirun started (Open MPI sets OMPI_COMM_WORLD_SIZE in every rank's environment).
bool under_mpirun();

}  // namespace commsim::hw
