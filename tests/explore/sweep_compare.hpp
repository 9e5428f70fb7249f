// What the sharded, merged and MPI sweeps are compared with: one grid, run by one process, and a byte-by-byte
// comparison of every output (the table on stdout and sweep.csv, sweep.json, sweep.html).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/reports/test_helpers.hpp"

namespace commsim::test {

// 4 node counts x 2 stream counts x 2 topologies = 16 rows, covering every kind of row a sweep writes: results on an
// uncalibrated topology, results with an error band (the calibrated one adds the "band ms" column), and impossible
// variants (nodes=0 is out of range, so those 4 rows carry the loader's message instead of a result).
inline const std::string kGridArgs =
    "sweep scenarios/emulated-tiny.json --steps 2 --vary nodes=1,2,3,0 --vary strategy.nccl_comm_num=1,2 --vary "
    "topology=../topologies/emulated-cpu-cluster.json,"
    "../reports/validation/emulated/calibration/emulated-cpu-cluster-calibrated.json";
inline constexpr std::size_t kGridRows = 16;

// The summary line names the output folder; everything else on stdout must not depend on where the files went.
inline std::string without_folder(std::string text, const std::string& folder) {
  for (std::size_t at; (at = text.find(folder)) != std::string::npos;) text.replace(at, folder.size(), "DIR");
  return text;
}

// `other` (its stdout and folder) reproduces `reference` byte for byte.
inline void expect_same_outputs(const std::string& reference_out, const std::string& reference_dir,
                                const std::string& other_out, const std::string& other_dir) {
  EXPECT_EQ(without_folder(other_out, other_dir), without_folder(reference_out, reference_dir));
  for (const char* file : {"sweep.csv", "sweep.json", "sweep.html"}) {
    const std::string reference = read_text(std::filesystem::path(reference_dir) / file);
    ASSERT_FALSE(reference.empty()) << file;
    EXPECT_TRUE(read_text(std::filesystem::path(other_dir) / file) == reference) << file << " differs";
  }
}

}  // namespace commsim::test
