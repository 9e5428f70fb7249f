// The GPUs one process drives in an NCCL run, and what each holds for it: streams (0 = compute, 1..n =
// communication), communicators, dependency and timing events, buffers, and the compute clock the busy-wait
// kernels are calibrated with. GpuRanks sets them up and tears them down; internal to the NCCL backend.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hw/nccl/kernels.hpp"
#include "hw/nccl/launch_plan.hpp"
#include "hw/nccl/world.hpp"

namespace commsim::nccl {

constexpr bool kHaveFp8 = NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0);  // ncclFloat8e4m3 / e5m2

ncclDataType_t nccl_type(Dtype d);
kernels::Wire wire_of(CommDtype d);
// Largest integer every value up to which (and every sum up to which) the dtype holds exactly.
double exact_limit(CommDtype d);
// printf-style formatting of one or two numbers.
std::string fmt(const char* format, double a, double b = 0);
// 32-bit words of `kept` (int32 index, value) pairs with values of `wire_bytes` bytes.
std::uint64_t words_for(std::uint64_t kept, int wire_bytes);
// Seconds between two recorded CUDA events.
double elapsed(cudaEvent_t a, cudaEvent_t b);

// Device memory of one LaunchProgram::buffers entry on one GPU.
struct Buffers {
  float* f32 = nullptr;
  void* comm = nullptr;
  unsigned* packed = nullptr;
  unsigned* gathered = nullptr;
  float* dense = nullptr;
};

// One GPU driven by this process.
struct Rank {
  int device = 0, rank = 0;
  std::vector<cudaStream_t> streams;  // 0 = compute, 1..n = communication
  std::vector<ncclComm_t> comms;      // per LaunchProgram::comms; nullptr where this rank is not a member
  std::vector<cudaEvent_t> events;    // dependency events (timing disabled)
  std::vector<cudaEvent_t> timers;    // timing events, reused every repeat
  std::size_t next_timer = 0;
  std::vector<Buffers> buffers;
  std::vector<kernels::TopkScratch> scratch;  // per stream
  unsigned long long* wrong = nullptr;
  double cycles_per_s = 0;

  // The next timing event of this repeat, created when none is left.
  cudaEvent_t timer();
};

class GpuRanks {
 public:
  GpuRanks(const Plan& plan, const LaunchProgram& program, const World& world)
      : plan_(plan), program_(program), world_(world) {}
  // Aborts rather than destroys the communicators when unwinding from an error: a peer may never arrive.
  ~GpuRanks();
  GpuRanks(const GpuRanks&) = delete;
  GpuRanks& operator=(const GpuRanks&) = delete;

  // Refuses what the GPUs cannot run (fp8 below compute capability 9.0 or NCCL 2.24); notes the GPU.
  void check_device_support(std::vector<std::string>& notes) const;
  // Streams, communicators, buffers and the calibrated clock of every GPU of this process; notes the clock.
  void create(std::vector<std::string>& notes);
  void synchronize();

  std::vector<Rank>& ranks() { return ranks_; }
  Rank& front() { return ranks_.front(); }

 private:
  void create_streams();
  void split_comms(const std::vector<ncclComm_t>& world_comms);
  void allocate();
  void calibrate(std::vector<std::string>& notes);

  const Plan& plan_;
  const LaunchProgram& program_;
  const World& world_;
  std::vector<Rank> ranks_;
};

}  // namespace commsim::nccl
