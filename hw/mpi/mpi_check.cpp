#include "hw/mpi/mpi_check.hpp"

#include <unistd.h>

namespace commsim::hw {

void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw MpiError(std::string(file) + ":" + std::to_string(line) + " on " + host + ": " + call + " failed: " + text);
}

}  // namespace commsim::hw
