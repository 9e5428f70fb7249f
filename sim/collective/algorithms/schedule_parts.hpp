// What the schedule generators share. Each is a pure function from (collective, participants, size) to operations;
// dependency rules mirror how NCCL and MPI implementations progress: a rank forwards a piece only after receiving
// (and reducing) it, and pieces on one connection leave in order (FIFO).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/collective/collective.hpp"

namespace commsim::schedule_parts {

// Splits `total` into `parts` whole-byte pieces that differ by at most one byte and sum exactly to `total`.
inline Bytes piece(Bytes total, std::uint64_t parts, std::uint64_t index) {
  return total / parts + (index < total % parts ? 1 : 0);
}
// Where piece `index` of piece(total, parts, .) starts: the sum of the pieces before it.
inline Bytes piece_offset(Bytes total, std::uint64_t parts, std::uint64_t index) {
  return index * (total / parts) + std::min(index, total % parts);
}

// The block (mod p) that ring position i sends at step `step`: the classic ring schedule's (i - step) mod p, shifted
// by `first_step` (p - 1 for an allgather alone, which runs the allreduce's second half; 0 otherwise).
inline std::uint64_t ring_block(std::int64_t i, std::int64_t step, std::int64_t first_step, std::int64_t p) {
  return static_cast<std::uint64_t>(((i - first_step - step) % p + p) % p);
}

// `bytes`: what one pipeline moves (one channel's share; for the double tree, one tree's half), as the closed form
// (closed_form_steps.hpp pipeline_chunks) counts it.
inline int default_chunks(const CollectiveSpec& s, bool pipeline, Bytes bytes) {
  if (s.chunks > 0) return s.chunks;
  if (!pipeline) return 1;
  // Pipelined algorithms move ~512 KiB slices, the order of NCCL's Simple-protocol chunk (NCCL_BUFFSIZE 4 MiB / 8
  // steps).
  const Bytes in_bytes = bytes * static_cast<Bytes>(std::max(1, s.unit_bytes));
  return static_cast<int>(std::clamp<Bytes>((in_bytes + (512u << 10) - 1) / (512u << 10), 1, 64));
}

// The collective's participants in order: its rank list, else the topology's ring order.
inline std::vector<int> participants(const CollectiveSpec& s, const Topology& t) {
  if (!s.ranks.empty()) return s.ranks;
  return t.ring_order();
}

// Ring order for one channel: when the participants are whole nodes, channel c rotates the order inside every
// node by c x stride, so that different channels leave and enter nodes through different GPUs and NICs. With fewer
// channels than GPUs per node (a NIC per pair of GPUs, say) the stride spreads them over the node, as NCCL's search
// spreads its rings over the NICs: with 4 channels on 8 GPUs whose pairs share a NIC, channel c leaves through GPU
// 2c - 1 and enters through GPU 2c, one NIC each.
// The position of channel 0's order that position i of channel `channel`'s order takes its rank from.
inline std::int64_t channel_position(std::int64_t i, std::int64_t p, int ranks_per_node, int channel, int channels) {
  if (ranks_per_node <= 1 || p % ranks_per_node != 0 || channel == 0) return i;
  const std::int64_t shift = static_cast<std::int64_t>(channel) * std::max(1, ranks_per_node / std::max(1, channels));
  return (i / ranks_per_node) * ranks_per_node + (i % ranks_per_node + shift) % ranks_per_node;
}
inline std::vector<int> channel_order(const std::vector<int>& ranks, int ranks_per_node, int channel, int channels) {
  const auto p = static_cast<std::int64_t>(ranks.size());
  std::vector<int> order(ranks.size());
  for (std::int64_t i = 0; i < p; ++i) order[i] = ranks[channel_position(i, p, ranks_per_node, channel, channels)];
  return order;
}

// One channel's generation state.
struct Gen {
  const CollectiveSpec& spec;
  const Topology& topo;
  Schedule& s;
  std::vector<OpId>& frontier;
  Bytes base = 0;  // where this channel's share starts in the vector (Op::offset)
  // Rings only: generate positions [0, positions) alone, one per orbit of a rotation of the ring by `positions`
  // (generate_ring_representatives); 0 = every position.
  int positions = 0;
  bool reduces() const { return spec.reduce_Bps > 0; }
  OpId maybe_reduce(int rank, Bytes bytes, OpId after, OpId also = kNoOp, Bytes offset = 0) {
    return reduces() ? s.reduce(rank, bytes, {after, also}, offset) : after;
  }
};

// Runs channel(g, order, bytes) for each of the spec's channels, each with its share of the bytes and its rotated
// order (channel_order), all starting from the entry frontier; a rank then holds its result when every channel has
// delivered: a zero-byte reduce joins the channels.
template <typename Channel>
void for_each_channel(const CollectiveSpec& s, const Topology& topology, const std::vector<int>& ranks,
                      Schedule& schedule, std::vector<OpId>& frontier, Channel channel) {
  const std::vector<OpId> entry = frontier;
  for (int c = 0; c < s.channels; ++c) {
    std::vector<OpId> channel_frontier = entry;
    Gen g{s, topology, schedule, channel_frontier, s.offset + piece_offset(s.bytes, s.channels, c)};
    const Bytes bytes = piece(s.bytes, s.channels, c);
    std::vector<int> order = channel_order(ranks, s.ranks_per_node, c, s.channels);
    channel(g, order, bytes);
    for (int r : ranks)
      frontier[r] = c == 0 ? channel_frontier[r] : schedule.reduce(r, 0, {frontier[r], channel_frontier[r]});
  }
}

}  // namespace commsim::schedule_parts
