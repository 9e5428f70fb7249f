// The ranks of one NCCL run as this process sees them: which GPUs it drives, their global ranks, and host-side
// collectives across processes (MPI under mpirun, trivial in a single process). Internal to the NCCL backend.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "hw/nccl/nccl_backend.hpp"
#include "sim/core/error.hpp"

namespace commsim::nccl {

class World {
 public:
  // Starts the ranks: under MPI one GPU per process (the process's index among those on its host picks the GPU, or
  // the only GPU it sees when the launcher gave each process its own), else `gpus` GPUs of this process (0 =
  // `default_gpus`, and 0 for that too = every visible one). Throws NcclUnavailable when no GPU can be used.
  World(Launch launch, int gpus, int default_gpus = 0);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  bool mpi() const { return mpi_; }
  bool root() const { return process_ == 0; }
  int process() const { return process_; }
  int nranks() const { return nranks_; }                        // NCCL ranks in all processes
  int nodes() const { return nodes_; }                          // distinct hosts
  int ranks_per_host() const { return ranks_per_host_; }        // NCCL ranks on this host
  const std::vector<int>& devices() const { return devices_; }  // CUDA devices of this process
  const std::vector<int>& ranks() const { return ranks_; }      // global rank of each of them
  const std::string& host() const { return host_; }

  // One communicator over all ranks per local device (ncclCommInitAll, or ncclCommInitRank with the unique id from
  // rank 0 broadcast over MPI).
  std::vector<ncclComm_t> init_comms() const;

  // Host-side reductions over processes (identity in a single process).
  void barrier() const;
  void max(std::vector<double>& values) const;
  void sum(std::vector<double>& values) const;
  std::uint64_t sum(std::uint64_t value) const;
  // Lines of every process, in process order, at the root (others get an empty list).
  std::vector<std::string> gather(const std::vector<std::string>& lines) const;
  // "single process, 8 GPUs" / "MPI, 16 processes on 2 hosts, one GPU each".
  std::string describe() const;
  // Under MPI with several processes, a failure on one rank would leave the others waiting in NCCL or MPI: print
  // the failure (one line, naming rank and host) and abort the whole job with `code`. Returns otherwise.
  void abort_job(const std::string& message, int code) const;
  // Runs `body`; bad input aborts the job with exit code 2 on every rank, any other failure with 3, then rethrows.
  template <typename Body>
  decltype(auto) run_or_abort(Body&& body) const {
    try {
      return body();
    } catch (const InputError& e) {
      abort_job(e.what(), 2);
      throw;
    } catch (const std::exception& e) {
      abort_job(e.what(), 3);
      throw;
    }
  }

 private:
  bool mpi_ = false, mpi_owned_ = false;
  int process_ = 0, processes_ = 1;
  int nranks_ = 0, nodes_ = 1, ranks_per_host_ = 0;
  std::vector<int> devices_, ranks_;
  std::string host_;
};

// True when the environment says this process was started by mpirun/srun with more than one process.
bool launched_by_mpi();

}  // namespace commsim::nccl
