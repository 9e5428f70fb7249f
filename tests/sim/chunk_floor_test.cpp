// `--chunks` on small messages: a piece is never cut below kMinPieceBytes (4 KiB, NCCL's smallest ring
// chunk), so asking for 1024 pipeline pieces of an 8-byte allreduce no longer prices 1024 one-byte hops per step.
#include <gtest/gtest.h>

#include "reports/collective_table.hpp"
#include "sim/collective/collective.hpp"
#include "sim/topology/topology.hpp"

namespace commsim {
namespace {

TEST(ChunkFloor, PiecesOfARingShareStayAtFourKiB) {
  // 8 ranks, 1 channel: the ring's share of 8 B is 1 B, below one 4 KiB piece: 1 chunk.
  EXPECT_EQ(floored_chunks(1024, 8, 1, 8), 1);
  // 64 KiB: shares of 8 KiB hold 2 pieces of 4 KiB.
  EXPECT_EQ(floored_chunks(1024, 64 << 10, 1, 8), 2);
  // 64 MiB: shares of 8 MiB hold 2048 pieces of 4 KiB, more than asked: the 1024 asked for.
  EXPECT_EQ(floored_chunks(1024, 64 << 20, 1, 8), 1024);
  // Two channels halve the share: 64 KiB over 8 ranks and 2 channels is 4 KiB, one piece.
  EXPECT_EQ(floored_chunks(1024, 64 << 10, 2, 8), 1);
  // 0 (the algorithm's default) and 1 are kept as they are.
  EXPECT_EQ(floored_chunks(0, 8, 1, 8), 0);
  EXPECT_EQ(floored_chunks(1, 8, 1, 8), 1);
}

TEST(ChunkFloor, AnEightByteAllreduceCostsWhatOnePieceCosts) {
  // On the emulated cluster (8 ranks, 1 channel) an 8-byte ring allreduce with --chunks 1024 is floored to one
  // piece, so it is priced exactly as with --chunks 1; unfloored it paid 1024 hops per step (215 ms against
  // 210 us in the closed form). A 64 MiB one keeps its 1024 chunks: a different time than with 1.
  const auto topology = load_topology("topologies/emulated-cpu-cluster.json", 0);
  CollectiveSpec spec;
  spec.algorithm = Algorithm::Ring;
  spec.channels = topology->default_channels();
  spec.ranks_per_node = topology->ranks_per_node();
  ASSERT_EQ(topology->ranks(), 8);
  ASSERT_EQ(spec.channels, 1);
  auto seconds = [&](int chunks, Bytes bytes) {
    CollectiveSpec s = spec;
    s.chunks = chunks;
    return reports::predict_collective(s, *topology, Fidelity::Analytical, {bytes}, 0).rows.at(0).seconds;
  };
  EXPECT_EQ(seconds(1024, 8), seconds(1, 8));
  EXPECT_NE(seconds(1024, 64 << 20), seconds(1, 64 << 20));
}

}  // namespace
}  // namespace commsim
