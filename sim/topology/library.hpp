// The communication library a topology's collectives run on, and what that library detects of the machine. The
// collective model is the library's: for NCCL its protocols, channels and algorithms (sim/collective/nccl_model).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace commsim {

enum class LibraryKind : std::uint8_t {
  Generic,  // no library named: alpha-beta schedules of the generic algorithms (ring, tree, hd, ...)
  Nccl,     // NVIDIA NCCL
  Mpi,      // an MPI library (Open MPI): the generic schedules, as the MPI backend runs them
};

// GPU generation, as NCCL's tuning tables index it (compute capability 70 / 80 / 90 / 100).
enum class GpuArch : std::uint8_t { Volta, Ampere, Hopper, Blackwell };
std::string_view to_string(GpuArch a);
bool parse_gpu_arch(std::string_view s, GpuArch& out);

// Fitted corrections of one (algorithm, protocol) of the library's model: time = latency_scale * latency +
// bytes / (bandwidth_scale * bandwidth) + rounds * chunk_round_us, where rounds are the rounds of chunks an NVLS or
// NVLS-tree kernel runs (0 for other algorithms). 1/1/0 is the library's own model.
struct ModelScale {
  double latency_scale = 1;
  double bandwidth_scale = 1;
  double chunk_round_us = 0;
};

struct CommLibrary {
  LibraryKind kind = LibraryKind::Generic;
  std::string version;  // e.g. "2.18"; selects the constants table
  GpuArch gpu_arch = GpuArch::Ampere;
  bool cpu_amd = false;            // NCCL prices the network proxy and LL across nodes by CPU vendor (AMD or not)
  bool cpu_arm = false;            // an Arm CPU (Grace): not x86, where 2.29 corrects NVLS-tree on Blackwell
  int channels = 0;                // NCCL's channel count for rings/trees (comm->nChannels); 0 = 2 per NIC of a node
  bool nvls = false;               // NVLink SHARP: NVSwitch gen3+ reduces in the switch (NCCL's NVLS algorithms)
  bool collnet = false;            // SHARP in the network switches (NCCL's CollNet algorithms)
  int sms = 0;                     // streaming multiprocessors per GPU: a collective's channels take SMs from compute
                                   // (sim/step/interference.hpp); 0 = not stated, compute is not slowed
  double concurrent_slowdown = 0;  // compute's further slowdown beside a running collective (interference.hpp)
  // An MPI library: the time the network loses to each transfer of a collective that runs beside another (the
  // transfer carries what its path moves in that time beside its bytes): measured, not explained, on the emulated
  // cluster, where two streams' collectives move their bytes more slowly together than one at a time, the more so
  // the smaller the pieces. `commsim calibrate` fits it from the bench's two-stream sweep (docs/calibration.md).
  // 0 = concurrent collectives lose nothing but their share of the links.
  double concurrent_step_delay_s = 0;
  // Fitted scales by "collective/algorithm/protocol" (e.g. "allreduce/ring/ll128"), from `commsim calibrate
  // --from-nccl-tests`; they replace the library table's fitted scales for this GPU generation.
  std::map<std::string, ModelScale> fitted;
  std::string fitted_source;
  double fitted_band_rel = 0;  // +- relative error band of the fitted model (2 x RMS relative residual)
  // The host time one thread spends issuing one GPU's kernel, fitted from logs of one thread driving several GPUs
  // (nccl-tests -g); 0 = the library table's.
  double fitted_launch_us_per_gpu = 0;
  // The GPUs per thread (nccl-tests -g) of the logs the scales were fitted on; 0 = not one value. Where one thread
  // drives several GPUs, its kernel issues overlap the collective's own latency, so a latency scale fitted there
  // holds for that regime only (nccl::fitted_scale).
  int fitted_gpus_per_thread = 0;
};

}  // namespace commsim
