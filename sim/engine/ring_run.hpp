// Runs the representatives of a ring allreduce, reduce-scatter or allgather (one channel, positions [0, n) of its
// ring, position n standing for position 0) as they are generated, without materialising their schedule: the
// operations that generate_ring_representatives (sim/collective/representatives.hpp) would make, issued in the order
// ScheduleRun would issue them, so the network and the event queue see the same calls in the same order and every
// result is the same (tests/sim/ring_run_test.cpp compares the two). Memory is O(n): per position, the index of its
// next transfer, whether one is in flight and which pieces it has received, instead of 2(p - 1) x n operations
// and their dependency lists (134 M operations for one channel of 8192 GPUs).
//
// The dependencies, as ring() in sim/collective/algorithms/ring.cpp makes them: transfer (s, i, k) (step s,
// position i, chunk k) waits for position i's previous transfer (pieces leave one connection in order) and, after
// step 0, for the piece k that position i received at step s - 1 (transfer (s - 1, i - 1, k), or the reduce of it
// when reduce-scatter steps reduce). Operation ids grow with (s, i, k), a reduce right after its transfer, and
// ScheduleRun issues the dependents of a finished operation in id order; so does this.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/network/network.hpp"

namespace commsim {

// Steady state (`fast_forward`: a run alone on its network, with equal pieces). Every step sends the same pieces along
// the same edges, so after a transient the run repeats itself with a period of q pieces (1 or 2 steps on dgx-a100 at
// 128 and 1024 nodes, measured; periods up to kMaxPeriodPieces are looked for): each position issues each piece after
// the same interval as q pieces before. When every position's last q n issues repeated their intervals of q issues
// back, the run compares its own state (pieces next, received, reductions pending) and the network's
// (NetworkModel::steady_state), relative to position 0's piece and the instant, with those it saw q pieces before; if
// they are equal, what follows is what followed then, shifted by the period P, for as long as every piece involved is
// of one kind (reduce-scatter pieces whose reduction takes time, or pieces without). The run then skips k whole periods
// (as many as end before the kind's last piece): every position k q pieces on, the clock and every pending event k P
// later, k periods' usage and operations counted; then it looks again, in the next kind. The compared state leaves out
// one thing: the order in which pending events of one picosecond were scheduled, which the same repeating history also
// repeats. Times come out the same to the picosecond and bytes exactly; busy time as k x one period's rather than a sum
// of k (tests/sim/ring_run_test.cpp against step-by-step runs, symmetry_test.cpp against the full schedules of every
// shipped topology).
class RingRun final : public TransferListener, public EventHandler {
 public:
  // `positions`: n, the representatives' positions of `channel` (RingRepresentatives with one channel: channel 0; a
  // ring with no symmetry: every position of each channel, one run per channel).
  RingRun(const CollectiveSpec& spec, const Topology& topology, int positions, NetworkModel& network, EventQueue& queue,
          bool fast_forward = false, int channel = 0);
  void start();
  bool done() const { return remaining_ == 0; }
  TimePs finished_at() const { return finished_at_; }
  // Transfers the representatives' schedule has (what simulate_flow_collectives counts).
  std::uint64_t transfers() const { return std::uint64_t{n_} * steps_ * chunks_; }

  // Steps not simulated because the steady state repeats them (pieces / chunks).
  std::uint64_t skipped_steps() const { return skipped_steps_; }

  void on_transfer_done(std::uint64_t position) override;
  // A reduce finished: (piece << 32) | receiving position; or kSteadyStateCheck.
  void on_event(std::uint64_t payload) override;

 private:
  // Issues position i's next transfer if both its dependencies are done.
  void try_issue(std::uint32_t i);
  void issue(std::uint32_t i);
  // Piece `piece` (s * chunks + k) has arrived at position j, reduced if that step reduces. Pieces arrive in order
  // but for one case: the last reduce-scatter step's reductions may still run when the first allgather step's
  // transfers, which wait for none, deliver theirs.
  void deliver(std::uint32_t j, std::uint32_t piece);
  bool has_received(std::uint32_t i, std::uint32_t piece) const {
    return piece < received_[i] || (!received_early_[i].empty() && received_early(i, piece));
  }
  bool received_early(std::uint32_t i, std::uint32_t piece) const;
  void finish_one();
  Bytes piece_bytes(std::uint32_t i, std::uint32_t piece) const;
  // Steady state: per issue, which of its position's earlier intervals it repeats; at position 0's issue after q n
  // issues in a row repeated the one q back, a check at the end of that instant (after the network's rate update).
  void note_issue(std::uint32_t i);
  void check_steady_state();
  std::vector<double> relative_state() const;
  // The last piece of the kind `piece` belongs to: the reduce-scatter's while its reductions take time, else the run's.
  std::uint32_t kind_last_piece(std::uint32_t piece) const;
  void start_watching();  // (again) from no history

  NetworkModel& network_;
  EventQueue& queue_;
  std::vector<int> order_;  // the channel's ring order
  Bytes bytes_ = 0;         // the channel's share of the vector
  // Every piece's size when blocks and chunks divide evenly (always under a symmetry), else -1: piece_bytes cuts.
  std::int64_t uniform_piece_bytes_ = -1;
  double reduce_Bps_ = 0;
  std::uint32_t p_ = 0, n_ = 0, chunks_ = 1, steps_ = 0;
  std::uint32_t first_step_ = 0;         // p - 1 for an allgather alone (it runs the allreduce's second half)
  bool reduce_scatter_ = false;          // steps [0, p - 1) reduce (when reduce_Bps > 0)
  std::vector<std::uint32_t> next_;      // per position: index s * chunks + k of its next transfer
  std::vector<std::uint32_t> received_;  // per position: pieces [0, received_) have arrived (and are reduced)
  std::vector<std::vector<std::uint32_t>> received_early_;  // per position: pieces arrived beyond that prefix
  std::vector<std::uint8_t> sending_;                       // per position: a transfer in flight
  std::uint64_t remaining_ = 0;                             // operations not yet finished
  TimePs finished_at_ = 0;

  static constexpr std::uint64_t kSteadyStateCheck = ~std::uint64_t{0};  // no reduce has this payload
  static constexpr std::uint32_t kMaxPeriodPieces = 8;
  static constexpr int kSteadyStateChecks = 64;  // compared states per kind before giving up (each O(n + links))
  bool fast_forward_ = false;
  std::vector<TimePs> last_issue_at_;  // per position
  std::vector<TimePs> intervals_;      // per position, its last kMaxPeriodPieces intervals (piece % kMaxPeriodPieces)
  // Per period q: issues in a row whose interval equals their position's interval q issues before.
  std::array<std::uint32_t, kMaxPeriodPieces + 1> repeated_issues_{};
  int checks_left_ = kSteadyStateChecks;
  struct PendingReduce {
    TimePs due;
    std::uint32_t piece;
  };
  std::vector<std::vector<PendingReduce>> pending_reduces_;  // per receiving position, in the order scheduled
  struct Instant {                                           // at one of position 0's issues
    std::uint32_t piece = 0;
    TimePs at = 0;
    std::vector<double> state;  // relative_state()
    LinkUsage usage;
    std::uint64_t remaining = 0;
    std::uint32_t lowest_piece = 0;  // the lowest piece any position still waits for
  };
  std::vector<Instant> checked_;  // the last kMaxPeriodPieces checked, oldest first
  std::uint64_t skipped_steps_ = 0;
};

}  // namespace commsim
