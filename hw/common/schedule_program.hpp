// A collective's Schedule (sim/collective/schedule.hpp) seen from one rank, ready to execute on real data: the
// transfers it sends and receives and the reductions it performs, each waiting for earlier actions of this rank.
// Both hardware backends execute these programs, so they run the very algorithm the simulator timed.
//
// Units: the schedule is generated with CollectiveSpec::bytes = the element count, so every op's `bytes` and
// `offset` count elements and no piece splits an element; a backend multiplies by the dtype's size.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/collective/schedule.hpp"

namespace commsim::hw {

struct Range {
  std::uint64_t offset = 0;  // first element in the collective's vector
  std::uint64_t count = 0;   // elements
  bool operator==(const Range&) const = default;
};

struct Action {
  enum class Kind : std::uint8_t {
    Send,     // send `range` of the vector to `peer`; done when the send has completed
    Receive,  // receive from `peer` into `range` of the vector, or into staging when a Reduce adds it
    Reduce,   // vector[range] += staging (the Receive `operand` filled it)
    Join,     // orders others only (a zero-byte reduce joining two dependencies)
  };
  Kind kind = Kind::Join;
  int peer = -1;  // Send / Receive
  Range range;
  std::int64_t staging_offset = -1;  // Receive / Reduce: elements into the staging area; -1 = into the vector
  int operand = -1;                  // Reduce: the Receive whose staging it adds
  std::uint32_t tag = 0;             // the schedule's op id, which both sides of a transfer share
  std::vector<int> deps;             // earlier actions of this program that must be done first
};

struct RankProgram {
  int rank = 0;
  std::vector<Action> actions;
  std::uint64_t staging_elements = 0;  // size of the staging area the Receives into staging use
  std::uint64_t sent_elements = 0;     // what this rank sends in total
  std::vector<Range> contributed;      // ranges it sends before receiving them: its own block in an allgather
  std::vector<Range> reduced;          // ranges it reduced and never sent on: its block of a reduce-scatter
};

// Builds the program of `rank`. Dependencies on other ranks' ops are dropped (a rank learns of those through the
// message itself); dependencies that protect this rank's buffer are added: a write (a Receive into the vector, a
// Reduce) waits for earlier Sends and writes of overlapping ranges, and a Send for earlier overlapping writes. All
// of them point to earlier op ids, so executing the programs of all ranks cannot deadlock.
// Throws CheckFailure if a Reduce has no received operand of its own range.
RankProgram rank_program(const Schedule& schedule, int rank);

}  // namespace commsim::hw
