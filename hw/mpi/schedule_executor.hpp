// Executes one rank's part of a collective schedule (hw/common/schedule_program.hpp) with MPI point-to-point
// messages and real reductions: the algorithm the simulator timed, run on real data.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "hw/common/schedule_program.hpp"
#include "sim/scenario/scenario.hpp"

namespace commsim::hw {

// Runs `program` on `vector` (elements of `dtype`) over `comm`, whose rank i is the schedule's rank i. `staging`
// holds program.staging_elements elements. Sends and receives are posted as soon as this rank's dependencies allow
// (MPI_Isend / MPI_Irecv, tag = the schedule's op id); completions are collected with MPI_Waitsome; a reduction runs
// on this thread when its operand has arrived. Returns the bytes this rank sent.
std::uint64_t execute_program(const RankProgram& program, MPI_Comm comm, CommDtype dtype, void* vector, void* staging);

}  // namespace commsim::hw
