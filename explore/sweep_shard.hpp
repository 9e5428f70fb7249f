// Sweeps split over processes: `--shard I/N` (Slurm job arrays, CI matrices) and MPI ranks. Rows are dealt round
// robin -- grid row r to shard (r mod N) + 1 -- so that the expensive corner of a grid (its last rows: the first axis
// varies slowest) is spread over every shard. A shard writes its rows with what identifies its sweep; `--merge`
// checks that the shards are one sweep, complete and non-overlapping, and rebuilds the whole Sweep.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "explore/sweep.hpp"

namespace commsim::explore {

// Shard `index` of `count`, 1-based: 1/3, 2/3, 3/3.
struct ShardSpec {
  std::size_t index = 1, count = 1;
};

// "I/N" with 1 <= I <= N; InputError naming --shard otherwise.
ShardSpec parse_shard(const std::string& text);
// The rows of a grid of `grid_size` rows that `shard` evaluates, ascending.
std::vector<std::size_t> shard_rows(std::size_t grid_size, ShardSpec shard);
// "sweep.shard-2-of-3.json"
std::string shard_file_name(ShardSpec shard);

// One evaluated row and its grid row, as JSON and back (Result::to_json and from_json keep every number exactly).
Json row_record(std::size_t grid_row, const Evaluation& e);
std::pair<std::size_t, Evaluation> parse_row_record(const Json& record, const std::string& file,
                                                    const std::string& field);

// The shard file: sweep identity (hash, scenario, fidelity, axes, version), shard, total rows, its rows.
Json shard_document(const Sweep& part, const std::string& sweep_hash, ShardSpec shard);
// Reads every sweep.shard-*-of-*.json in `folders` and returns the whole sweep. InputError (one line naming the file
// and what is wrong) when a folder has none, the files come from different sweeps or commsim versions, a shard is
// partial, missing or given twice, or a row is missing, repeated or in the wrong shard.
Sweep merge_shards(const std::vector<std::string>& folders);

}  // namespace commsim::explore
