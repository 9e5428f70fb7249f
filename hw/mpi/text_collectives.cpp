#include "hw/mpi/text_collectives.hpp"

#include <limits>

#include "hw/mpi/mpi_check.hpp"

namespace commsim::hw {

namespace {
int checked_int(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw MpiError("text of " + std::to_string(n) + " bytes is beyond MPI's int count");
  return static_cast<int>(n);
}
}  // namespace

std::vector<std::string> gather_text_to_root(const std::string& text) {
  int rank = 0, size = 1;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  const int length = checked_int(text.size());
  std::vector<int> lengths(rank == 0 ? size : 0), offsets(rank == 0 ? size : 0);
  COMMSIM_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  std::string all;
  if (rank == 0) {
    std::size_t total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = checked_int(total);
      total += static_cast<std::size_t>(lengths[r]);
    }
    all.resize(total);
    checked_int(total);
  }
  COMMSIM_MPI_CHECK(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                                MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; rank == 0 && r < size; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
  return out;
}

std::string broadcast_text_from_root(const std::string& text) {
  int rank = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  int length = checked_int(text.size());
  COMMSIM_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD));
  std::string out = rank == 0 ? text : std::string(static_cast<std::size_t>(length), '\0');
  COMMSIM_MPI_CHECK(MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD));
  return out;
}

}  // namespace commsim::hw
