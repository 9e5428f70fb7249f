// The MPI job around a rank's run: the session, the loading of a run and the reporting of a rank's failure. The
// run itself is measure_plan (rank_runner.cpp).
#include "hw/mpi/mpi_backend.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "hw/mpi/mpi_check.hpp"
#include "sim/core/error.hpp"

namespace commsim::hw {

SimulationRun load_run(const RunOptions& options) { return prepare_run(options.scenario, options.sets, options.steps); }

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  COMMSIM_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  COMMSIM_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw MpiError(
        "this MPI library does not provide MPI_THREAD_MULTIPLE (one thread per communication stream needs it)");
  }
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int run_on_rank(const MpiSession& session, const std::function<int()>& body) {
  int code = 0;
  try {
    code = body();
  } catch (const InputError& e) {
    if (session.rank() == 0) std::fprintf(stderr, "commsim: %s\n", e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commsim: rank %d: %s\n", session.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return code;
}

}  // namespace commsim::hw
