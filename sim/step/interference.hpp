// Compute-communication interference on a GPU. NCCL runs a collective as one kernel whose grid has one block (CTA)
// per channel, each block on an SM of its own for the kernel's life (NVIDIA/nccl src/enqueue.cc: the launch grid is
// {nChannels, 1, 1}; src/device/common.h: a block is one channel's work, NCCL_MAX_NTHREADS = 640 threads). So while
// collectives with K channels in all run, a compute kernel that would fill all S SMs gets S - K of them: it runs at
// (S - K) / S of its speed, and the compute stream is slowed by the factor S / (S - K). Measured on an H100, a
// training step slows more than that beside blocks that hold SMs and stream memory (docs/hardware-nccl.md, "Checked
// on an H100"): by S / (S - K) x (1 + c), c the library's `concurrent_slowdown` (0.038 for ResNet-50 there, fitted
// at K = 1, 4, 16 and within 2.1 % at 2, 8, 32: `commsim calibrate --interference`, validate/interference_fit.hpp).
// The collective's own slowdown when compute saturates memory is not modelled. S is the topology library's `sms`;
// without it compute runs at full speed.
#pragma once

#include <functional>

#include "sim/engine/event_queue.hpp"

namespace commsim {

// The share of a GPU of `sms` SMs that compute keeps while collectives hold `channels` blocks (one SM each):
// (S - K) / S; with as many blocks as SMs or more, the blocks and the compute kernel take turns, 1 / (K + 1), which
// meets (S - K) / S at K = S - 1 and keeps the share from rising as SMs are taken away.
double compute_share(int sms, int channels);

// The running compute task of the compute stream, progressing at the rate the collectives leave it.
class SlowedCompute final : public EventHandler {
 public:
  SlowedCompute(EventQueue& queue, int sms, double concurrent_slowdown, std::function<void(int)> done)
      : queue_(queue), sms_(sms), concurrent_slowdown_(concurrent_slowdown), done_(std::move(done)) {}
  // Starts compute task `task` that would take `work_ps` at full speed.
  void start(int task, TimePs work_ps);
  // A collective with `channels` channels started (+) or finished (-).
  void add_channels(int channels);
  // The fraction of full speed compute runs at now: compute_share / (1 + c) beside collectives, 1 without.
  double rate() const;
  void on_event(std::uint64_t version) override;

 private:
  void advance();
  void reschedule();
  EventQueue& queue_;
  int sms_ = 0;
  double concurrent_slowdown_ = 0;
  std::function<void(int)> done_;
  int channels_ = 0;
  int task_ = -1;
  double remaining_ps_ = 0;
  TimePs last_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace commsim
