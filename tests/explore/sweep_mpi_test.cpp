// `mpirun -n 4 commsim sweep ...`: the ranks share the grid and rank 0 writes the outputs, which must equal the
// one-process run byte for byte. Runs the built commsim from the source root, with mpirun's options for this machine
// (as the other MPI tests: oversubscribed, allowed as root, unbound).
#include <gtest/gtest.h>

#include "tests/explore/sweep_compare.hpp"

namespace commsim::test {
namespace {

std::string mpirun(int ranks) {
  return std::string(COMMSIM_MPIEXEC) + " -n " + std::to_string(ranks) +
         " --oversubscribe --allow-run-as-root --bind-to none --mca mpi_yield_when_idle 1 " + COMMSIM_CLI_PATH + " ";
}

// Runs a shell command line, capturing stdout and stderr.
CliRun shell(const std::string& command, const ScratchDir& dir) {
  const int status = std::system((command + " >" + (dir / "stdout") + " 2>" + (dir / "stderr")).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir / "stdout"), read_text(dir / "stderr")};
}

TEST(SweepMpi, FourRanksWriteTheOneProcessOutputsByteForByte) {
  ScratchDir dir("sweep-mpi");
  const CliRun whole = commsim(kGridArgs + " -o " + (dir / "whole"));
  ASSERT_EQ(whole.code, 0) << whole.err;
  // 16 rows over 4 ranks: each evaluates 4 (rank k the rows k, k+4, k+8, k+12)
  const CliRun ranks = shell(mpirun(4) + kGridArgs + " -o " + (dir / "mpi"), dir);
  ASSERT_EQ(ranks.code, 0) << ranks.err;
  expect_same_outputs(whole.out, dir / "whole", ranks.out, dir / "mpi");
}

// --shard and MPI together: 2 ranks share shard 2/3's rows; the shard file equals the one-process shard's.
TEST(SweepMpi, RanksShareAShard) {
  ScratchDir dir("sweep-mpi-shard");
  ASSERT_EQ(commsim(kGridArgs + " --shard 2/3 -o " + (dir / "one")).code, 0);
  const CliRun ranks = shell(mpirun(2) + kGridArgs + " --shard 2/3 -o " + (dir / "mpi"), dir);
  ASSERT_EQ(ranks.code, 0) << ranks.err;
  const std::string file = "sweep.shard-2-of-3.json";
  const std::string one = read_text(std::filesystem::path(dir / "one") / file);
  ASSERT_FALSE(one.empty());
  EXPECT_TRUE(read_text(std::filesystem::path(dir / "mpi") / file) == one);
}

// Bad input is found by every rank alike and reported once, by rank 0 (mpirun adds its own report of the exit code).
TEST(SweepMpi, BadInputIsReportedOnce) {
  ScratchDir dir("sweep-mpi-bad");
  const CliRun ranks = shell(mpirun(2) + kGridArgs + " --shard 3/2 -o " + (dir / "mpi"), dir);
  EXPECT_NE(ranks.code, 0);
  const std::string line = "commsim: --shard: \"3/2\": I counts from 1 and must be in [1, 2]\n";
  const std::size_t first = ranks.err.find(line);
  ASSERT_NE(first, std::string::npos) << ranks.err;
  EXPECT_EQ(ranks.err.find(line, first + 1), std::string::npos) << "reported twice:\n" << ranks.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "mpi"));
}

}  // namespace
}  // namespace commsim::test
