// The step-by-step closed forms of the schedule generators, written once over "the slowest hop of a step" so that
// two ways of finding that hop share every rounding: the reference visits every hop of every group
// (closed_form_reference.cpp), the fast path prices each distinct hop once (hop_classes.hpp). A step costs what its
// slowest hop costs (latency + bytes / bottleneck bandwidth), rounded to the engine's picosecond quantum exactly as
// the engine rounds. Channels: a ring's channels all pass through every rank, so they share each rank's intra-node
// links (bandwidth / channels); across nodes each channel leaves through a different GPU and NIC (rotated order),
// so NIC links are shared only when channels outnumber the ranks of a node. The ring over the topology's own order
// counts instead the edges of all channels that cross each link of a hop (ring_link_shares.hpp, `shared_Bps`).
//
// Every formula here is non-decreasing in the slowest hop, so the largest of one formula over several groups of the
// same size is the formula at the slowest hop of all the groups together: that is what lets the fast path price the
// union of the groups' distinct hops once.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/collective/collective.hpp"

namespace commsim::closed_form {

inline Bytes ceil_div(Bytes a, Bytes b) { return (a + b - 1) / b; }

struct Steps {
  const CollectiveSpec& spec;
  int channels;

  // One hop of `bytes` over a path of cost c, inside a node or not; `shared_Bps` > 0: the rate the channels leave
  // it on its links (ring_link_shares.hpp) instead of the bottleneck over the share above.
  TimePs hop_time(const PathCost& c, bool same_node, Bytes bytes, double shared_Bps = 0) const {
    const double share =
        same_node ? channels : std::max(1.0, std::ceil(static_cast<double>(channels) / spec.ranks_per_node));
    // The engine enters a flow after its latency, then drains it at its rate: the same two roundings here. A hop's
    // delay is bytes its path moves in that time, carried beside the hop's own.
    const double carried = static_cast<double>(bytes) + spec.hop_delay_s * c.bottleneck_Bps;
    const double rate = shared_Bps > 0 ? shared_Bps : c.bottleneck_Bps / share;
    return add_ps(seconds_to_ps(c.latency_s), transfer_ps(carried, rate));
  }
  TimePs reduce(Bytes bytes) const {
    return spec.reduce_Bps > 0 ? transfer_ps(static_cast<double>(bytes), spec.reduce_Bps) : 0;
  }
  int pipeline_chunks(Bytes bytes) const {
    if (spec.chunks > 0) return spec.chunks;
    return static_cast<int>(std::clamp<Bytes>(ceil_div(bytes, 512u << 10), 1, 64));
  }

  // Ring reduce-scatter and/or allgather (both: allreduce) of `bytes` over p ranks, one channel's share, whose
  // slowest hop takes slowest_hop(piece) for a piece of that many bytes.
  template <typename SlowestHop>
  TimePs ring(Bytes p, Bytes bytes, bool rs, bool ag, SlowestHop slowest_hop) const {
    if (p < 2) return 0;
    const int chunks = spec.chunks > 0 ? spec.chunks : 1;
    const Bytes piece = ceil_div(ceil_div(ceil_div(bytes, channels), p), chunks);
    const TimePs steps = (rs ? p - 1 : 0) + (ag ? p - 1 : 0);
    // A rank sends the `chunks` pieces of a step back to back on one connection (FIFO: each after the previous one
    // has arrived), so a step occupies chunks hops: the ring gains nothing from pipelining, as every link is busy at
    // every step already. Step s+1 starts once the step-s piece 0 from the left has arrived (and been reduced) and
    // the rank's own step-s pieces are out: max(g, (chunks - 1) h) + h after a reducing step, chunks * h otherwise.
    const TimePs h = slowest_hop(piece), g = reduce(piece), k = chunks;
    const TimePs reducing_gaps = rs ? static_cast<TimePs>(p) - (ag ? 1 : 2) : 0;  // step starts after a reducing step
    const TimePs plain_gaps = steps - 1 - reducing_gaps;
    const TimePs reducing_step = add_ps(std::max(g, times_ps(k - 1, h)), h);
    TimePs total = add_ps(h, times_ps(reducing_gaps, reducing_step));
    total = add_ps(total, times_ps(plain_gaps, times_ps(k, h)));
    total = add_ps(total, times_ps(k - 1, h));
    return add_ps(total, rs && !ag ? g : 0);
  }

  // Pipelined chain broadcast / reduce over p ranks.
  template <typename SlowestHop>
  TimePs chain(Bytes p, Bytes bytes, bool reducing, SlowestHop slowest_hop) const {
    if (p < 2) return 0;
    const Bytes per_channel = ceil_div(bytes, channels);
    const int k = pipeline_chunks(per_channel);
    const Bytes piece = ceil_div(per_channel, k);
    const TimePs worst = slowest_hop(piece);
    return add_ps(times_ps(static_cast<TimePs>(p - 2 + k), worst),
                  reducing ? times_ps(static_cast<TimePs>(p - 1), reduce(piece)) : 0);
  }

  // Double binary tree over p ranks: k pipelined pieces, each tree half the data. first_and_last(piece, between):
  // from the start until the last piece has reached every rank, piece 0 climbing and the last descending `between`
  // after it reached the root (tree_timeline.hpp); stream_hop(piece): the slowest hop while every edge of both trees
  // runs, up and down (a pipeline of pieces keeps every edge busy), which the k - 1 pieces after the first add.
  template <typename FirstAndLast, typename StreamHop>
  TimePs tree(int p, Bytes bytes, FirstAndLast first_and_last, StreamHop stream_hop) const {
    if (p < 2) return 0;
    const Bytes half = ceil_div(ceil_div(bytes, channels), 2);
    const int k = pipeline_chunks(half);
    const Bytes piece = ceil_div(half, k);
    return first_and_last(piece, times_ps(k - 1, k > 1 ? stream_hop(piece) : 0));
  }

  // Rabenseifner halving-doubling over p ranks with the fold for non-powers of two: fold_hop(bytes) is the slowest
  // hop of the fold (ranks q.. p-1 to 0 .. p-q-1), exchange_hop(distance, bytes) that of the exchange at a distance.
  template <typename FoldHop, typename ExchangeHop>
  TimePs halving_doubling(int p, Bytes bytes, FoldHop fold_hop, ExchangeHop exchange_hop) const {
    if (p < 2) return 0;
    bytes = ceil_div(bytes, channels);
    const int q = largest_power_of_two_at_most(p);
    TimePs total = 0;
    if (q < p) total = add_ps(total, add_ps(times_ps(2, fold_hop(bytes)), reduce(bytes)));
    Bytes owned = bytes;
    std::vector<Bytes> kept;
    for (int distance = q / 2; distance >= 1; distance /= 2) {
      const Bytes send = owned - owned / 2;  // the larger half, as the upper rank of each pair sends it
      total = add_ps(total, add_ps(exchange_hop(distance, send), reduce(send)));
      kept.push_back(owned - owned / 2);
      owned -= owned / 2;
    }
    for (int distance = 1; distance < q; distance *= 2) {
      total = add_ps(total, exchange_hop(distance, kept.back()));
      kept.pop_back();
    }
    return total;
  }
};

}  // namespace commsim::closed_form
