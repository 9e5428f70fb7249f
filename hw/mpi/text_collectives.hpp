// Text between the ranks of MPI_COMM_WORLD, for work that is split over ranks and reported by rank 0 (`commsim
// sweep` under mpirun). Collective: every rank calls each function in the same order. MPI must be initialised.
#pragma once

#include <string>
#include <vector>

namespace commsim::hw {

// Every rank's `text` on rank 0, in rank order; other ranks get an empty vector.
std::vector<std::string> gather_text_to_root(const std::string& text);
// Rank 0's `text` on every rank.
std::string broadcast_text_from_root(const std::string& text);

}  // namespace commsim::hw
