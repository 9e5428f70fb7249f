#include "hw/nccl/gpu_ranks.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include "hw/nccl/checks.hpp"
#include "sim/core/statistics.hpp"

namespace commsim::nccl {

ncclDataType_t nccl_type(Dtype d) {
  switch (d) {
    case Dtype::Float32:
      return ncclFloat32;
    case Dtype::Float16:
      return ncclFloat16;
    case Dtype::Bfloat16:
      return ncclBfloat16;
    case Dtype::Float8e4m3:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
      return ncclFloat8e4m3;
#else
      throw NcclUnavailable("nccl backend: fp8 communication needs NCCL 2.24 or newer (this build has " +
                            std::to_string(NCCL_VERSION_CODE) + ")");
#endif
    case Dtype::Packed32:
      return ncclUint32;
  }
  return ncclFloat32;
}

kernels::Wire wire_of(CommDtype d) {
  switch (d) {
    case CommDtype::Fp32:
      return kernels::Wire::F32;
    case CommDtype::Fp16:
      return kernels::Wire::F16;
    case CommDtype::Bf16:
      return kernels::Wire::BF16;
    case CommDtype::Fp8:
      return kernels::Wire::F8E4M3;
  }
  return kernels::Wire::F32;
}

// Largest integer every value up to which (and every sum up to which) the dtype holds exactly.
double exact_limit(CommDtype d) {
  switch (d) {
    case CommDtype::Fp32:
      return 16777216;  // 2^24
    case CommDtype::Fp16:
      return 2048;  // 11-bit significand
    case CommDtype::Bf16:
      return 256;  // 8-bit significand
    case CommDtype::Fp8:
      return 16;  // e4m3: 4-bit significand
  }
  return 16;
}

std::string fmt(const char* format, double a, double b) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

std::uint64_t words_for(std::uint64_t kept, int wire_bytes) {
  return (kept * (4 + static_cast<std::uint64_t>(wire_bytes)) + 3) / 4;
}

double elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  COMMSIM_CUDA(cudaEventElapsedTime(&ms, a, b));
  return static_cast<double>(ms) * 1e-3;
}

cudaEvent_t Rank::timer() {
  if (next_timer == timers.size()) {
    cudaEvent_t e;
    COMMSIM_CUDA(cudaEventCreate(&e));
    timers.push_back(e);
  }
  return timers[next_timer++];
}

GpuRanks::~GpuRanks() {
  const bool failing = std::uncaught_exceptions() > 0;
  for (Rank& r : ranks_) {
    cudaSetDevice(r.device);
    if (!failing) cudaDeviceSynchronize();
    for (ncclComm_t c : r.comms)
      if (c) failing ? ncclCommAbort(c) : ncclCommDestroy(c);
    for (cudaEvent_t e : r.events) cudaEventDestroy(e);
    for (cudaEvent_t e : r.timers) cudaEventDestroy(e);
    for (auto& s : r.scratch) kernels::topk_scratch_destroy(s);
    for (Buffers& b : r.buffers)
      for (void* p : {static_cast<void*>(b.f32), b.comm, static_cast<void*>(b.packed), static_cast<void*>(b.gathered),
                      static_cast<void*>(b.dense)})
        if (p) cudaFree(p);
    if (r.wrong) cudaFree(r.wrong);
    for (cudaStream_t s : r.streams) cudaStreamDestroy(s);
  }
}

void GpuRanks::check_device_support(std::vector<std::string>& notes) const {
  // The library loaded may be older than the headers built against: ncclFloat8e4m3 is 2.24's (its code is 24400).
  int loaded_version = 0;
  if (program_.comm_dtype == CommDtype::Fp8 && ncclGetVersion(&loaded_version) == ncclSuccess &&
      loaded_version < NCCL_VERSION(2, 24, 0))
    throw InputError(plan_.scenario_file, "strategy.comm_dtype",
                     "fp8 communication needs NCCL 2.24 or newer; the libnccl loaded is version code " +
                         std::to_string(loaded_version));
  for (int d : world_.devices()) {
    cudaDeviceProp prop;
    COMMSIM_CUDA(cudaGetDeviceProperties(&prop, d));
    if (program_.comm_dtype == CommDtype::Fp8) {
      if (!kHaveFp8)
        throw InputError(plan_.scenario_file, "strategy.comm_dtype", "fp8 communication needs NCCL 2.24 or newer");
      if (prop.major < 9)
        throw InputError(plan_.scenario_file, "strategy.comm_dtype",
                         "NCCL reduces fp8 only on compute capability 9.0 or newer; GPU " + std::to_string(d) + " (" +
                             prop.name + ") is " + std::to_string(prop.major) + "." + std::to_string(prop.minor));
    }
    if (d == world_.devices().front())
      notes.push_back(std::string("GPU: ") + prop.name + " (compute capability " + std::to_string(prop.major) + "." +
                      std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs)");
  }
}

void GpuRanks::create(std::vector<std::string>& notes) {
  const std::vector<ncclComm_t> world_comms = world_.init_comms();
  create_streams();
  split_comms(world_comms);
  allocate();
  calibrate(notes);
}

void GpuRanks::create_streams() {
  ranks_.resize(world_.devices().size());
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    r.device = world_.devices()[i];
    r.rank = world_.ranks()[i];
    r.comms.assign(program_.comms.size(), nullptr);
    COMMSIM_CUDA(cudaSetDevice(r.device));
    for (int s = 0; s <= program_.streams; ++s) {
      cudaStream_t stream;
      COMMSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      r.streams.push_back(stream);
      r.scratch.push_back(kernels::topk_scratch_create());
    }
    COMMSIM_CUDA(cudaMalloc(&r.wrong, sizeof(unsigned long long)));
  }
}

// One communicator per (stream, scope) of the program, split from the world communicator (ncclCommSplit, which
// every rank calls in the same order; in one process, inside one group for all its GPUs).
void GpuRanks::split_comms(const std::vector<ncclComm_t>& world_comms) {
  const int gs = program_.group_size;
  bool world_used = false;
  for (std::size_t c = 0; c < program_.comms.size(); ++c) {
    const CommSpec& spec = program_.comms[c];
    if (spec.scope == Scope::World && !world_used) {  // the first world communicator is the one NCCL made
      for (std::size_t i = 0; i < ranks_.size(); ++i) ranks_[i].comms[c] = world_comms[i];
      world_used = true;
      continue;
    }
    COMMSIM_NCCL(ncclGroupStart());
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      const int rank = ranks_[i].rank;
      int color = 0;
      if (spec.scope == Scope::Intra) color = rank / gs;
      if (spec.scope == Scope::Inter) color = rank % gs == 0 ? 0 : NCCL_SPLIT_NOCOLOR;
      COMMSIM_CUDA(cudaSetDevice(ranks_[i].device));
      COMMSIM_NCCL(ncclCommSplit(world_comms[i], color, rank, &ranks_[i].comms[c], nullptr));
    }
    COMMSIM_NCCL(ncclGroupEnd());
  }
  if (!world_used)
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      // Keep it for destruction: the program used only split communicators.
      ranks_[i].comms.push_back(world_comms[i]);
    }
}

void GpuRanks::allocate() {
  const std::uint64_t wb = static_cast<std::uint64_t>(kernels::wire_bytes(wire_of(program_.comm_dtype)));
  std::uint64_t bytes = 0;
  for (const BufferSpec& b : program_.buffers)
    bytes += b.elements * 4 + (b.comm_copy ? b.elements * wb : 0) + (b.packed_words + b.gathered_words) * 4 +
             (b.dense_output ? b.elements * 4 : 0);
  for (Rank& r : ranks_) {
    COMMSIM_CUDA(cudaSetDevice(r.device));
    std::size_t free_bytes = 0, total = 0;
    COMMSIM_CUDA(cudaMemGetInfo(&free_bytes, &total));
    if (static_cast<double>(bytes) > 0.9 * static_cast<double>(free_bytes))
      throw InputError(plan_.scenario_file, "model",
                       fmt("needs %.2f GiB of GPU memory per rank for its gradient buffers; GPU has %.2f GiB free",
                           static_cast<double>(bytes) / (1 << 30), static_cast<double>(free_bytes) / (1 << 30)));
    r.buffers.resize(program_.buffers.size());
    for (std::size_t i = 0; i < program_.buffers.size(); ++i) {
      const BufferSpec& spec = program_.buffers[i];
      Buffers& b = r.buffers[i];
      const std::uint64_t n = std::max<std::uint64_t>(spec.elements, 1);
      COMMSIM_CUDA(cudaMalloc(&b.f32, n * 4));
      kernels::fill_random(b.f32, n, 0x5eed0000ull + static_cast<std::uint64_t>(r.rank) * 7919 + i, r.streams[0]);
      if (spec.comm_copy) COMMSIM_CUDA(cudaMalloc(&b.comm, n * wb));
      if (spec.packed_words) COMMSIM_CUDA(cudaMalloc(&b.packed, spec.packed_words * 4));
      if (spec.gathered_words) COMMSIM_CUDA(cudaMalloc(&b.gathered, spec.gathered_words * 4));
      if (spec.dense_output) COMMSIM_CUDA(cudaMalloc(&b.dense, n * 4));
    }
    int events = 0;
    for (const LaunchStep& k : program_.step_plans) events = std::max(events, k.events);
    r.events.resize(static_cast<std::size_t>(events));
    for (cudaEvent_t& e : r.events) COMMSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  synchronize();
}

// SM clock cycles per second of each GPU: two busy-waits of C and 2C cycles; the difference cancels the launch
// overhead. The clock can change under load (boost), which the compute check in the notes shows.
void GpuRanks::calibrate(std::vector<std::string>& notes) {
  constexpr long long kCycles = 20'000'000;
  std::vector<double> rates;
  for (Rank& r : ranks_) {
    COMMSIM_CUDA(cudaSetDevice(r.device));
    cudaStream_t s = r.streams[0];
    cudaEvent_t a, b, c;
    COMMSIM_CUDA(cudaEventCreate(&a));
    COMMSIM_CUDA(cudaEventCreate(&b));
    COMMSIM_CUDA(cudaEventCreate(&c));
    kernels::spin(kCycles, s);  // wake the clocks up
    std::vector<double> samples;
    for (int i = 0; i < 3; ++i) {
      COMMSIM_CUDA(cudaEventRecord(a, s));
      kernels::spin(kCycles, s);
      COMMSIM_CUDA(cudaEventRecord(b, s));
      kernels::spin(2 * kCycles, s);
      COMMSIM_CUDA(cudaEventRecord(c, s));
      COMMSIM_CUDA(cudaEventSynchronize(c));
      const double one = elapsed(a, b), two = elapsed(b, c);
      if (two > one) samples.push_back(static_cast<double>(kCycles) / (two - one));
    }
    for (cudaEvent_t e : {a, b, c}) cudaEventDestroy(e);
    r.cycles_per_s = samples.empty() ? 1.4e9 : median(samples);
    rates.push_back(r.cycles_per_s);
  }
  notes.push_back(
      "compute is emulated: each layer's Plan time is spent by a busy-wait kernel on one SM of the compute stream "
      "(clock64 loop calibrated at " +
      fmt("%.3f GHz", median(rates) / 1e9) +
      "); the GPU does no arithmetic for it, so compute does not contend with NCCL for SMs or memory");
}

void GpuRanks::synchronize() {
  for (Rank& r : ranks_) {
    COMMSIM_CUDA(cudaSetDevice(r.device));
    for (cudaStream_t s : r.streams) COMMSIM_CUDA(cudaStreamSynchronize(s));
  }
}

}  // namespace commsim::nccl
