// Every CUDA, NCCL and MPI call of the backend goes through one of these: a failure becomes a HardwareError whose
// one-line message names the call, the error, the file, the line and the host (as nccl/src/include/checks.h does).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "hw/nccl/nccl_backend.hpp"
#include "sim/core/host.hpp"

namespace commsim::nccl::detail {

[[noreturn]] inline void fail(const char* call, const std::string& error, const char* file, int line) {
  std::string f = file;
  if (auto slash = f.rfind("hw/nccl/"); slash != std::string::npos) f = f.substr(slash);
  throw HardwareError(std::string(call) + ": " + error + " (" + f + ":" + std::to_string(line) + " on " +
                      commsim::host_name() + ")");
}

}  // namespace commsim::nccl::detail

#define COMMSIM_CUDA(call)                                                                                          \
  do {                                                                                                              \
    const cudaError_t commsim_e_ = (call);                                                                          \
    if (commsim_e_ != cudaSuccess)                                                                                  \
      ::commsim::nccl::detail::fail(                                                                                \
          #call, std::string(cudaGetErrorString(commsim_e_)) + " (" + cudaGetErrorName(commsim_e_) + ")", __FILE__, \
          __LINE__);                                                                                                \
  } while (0)

#define COMMSIM_NCCL(call)                                                                                       \
  do {                                                                                                           \
    const ncclResult_t commsim_r_ = (call);                                                                      \
    if (commsim_r_ != ncclSuccess && commsim_r_ != ncclInProgress)                                               \
      ::commsim::nccl::detail::fail(                                                                             \
          #call, std::string(ncclGetErrorString(commsim_r_)) + " (" + ncclGetLastError(nullptr) + ")", __FILE__, \
          __LINE__);                                                                                             \
  } while (0)
