// `commsim sweep`, shared by its one-process path (cli/sweep_cmd.cpp) and its MPI path (cli/sweep_mpi.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "explore/sweep_run.hpp"
#include "explore/sweep_shard.hpp"

namespace commsim::cli {

struct SweepOptions {
  explore::SweepRequest request;
  std::string out = "sweep";
  std::string shard;               // "I/N" or empty
  std::vector<std::string> merge;  // shard folders to merge
  int jobs = 0;
};

// Checks that a sweep (not a merge) has its scenario and axes; returns --shard's value when given.
std::optional<explore::ShardSpec> checked_shard(const SweepOptions& o);
// The rows this run evaluates: the whole grid, or the shard's rows.
std::vector<std::size_t> rows_to_run(std::size_t grid_size, const std::optional<explore::ShardSpec>& shard);
// A whole sweep: the table and DIR/sweep.{csv,json,html}. A shard: its table and DIR/sweep.shard-I-of-N.json.
void write_results(const explore::Sweep& sweep, const std::string& sweep_hash,
                   const std::optional<explore::ShardSpec>& shard, const std::string& dir);

// Under mpirun: the rows dealt round robin over the ranks, gathered and written by rank 0. Returns the exit code.
int run_sweep_on_ranks(const SweepOptions& o);

}  // namespace commsim::cli
