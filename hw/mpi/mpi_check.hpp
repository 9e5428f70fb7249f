// Every MPI call of the backend goes through COMMSIM_MPI_CHECK: a failure becomes an MpiError whose one-line
// message names the call, the source line and the host (after nccl/src/include/checks.h), so that the error a rank
// hits on one emulated node can be told from another's. Communicators use MPI_ERRORS_RETURN so errors reach it.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace commsim::hw {

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws MpiError("<file>:<line> on <host>: <call> failed: <MPI error string>") unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* call, const char* file, int line);

}  // namespace commsim::hw

#define COMMSIM_MPI_CHECK(call) ::commsim::hw::mpi_check((call), #call, __FILE__, __LINE__)
