// What the NCCL backend's kernel files share (kernels.cu, bench_kernels.cu): the launch check, grid-stride
// helpers, verifiable values and conversions between fp32 and the element types. Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "hw/nccl/kernels.hpp"

namespace commsim::nccl::kernels::detail {

// Throws std::runtime_error naming the call, the CUDA error, the source line (from hw/nccl/) and the host.
inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  std::string f = file;
  if (auto at = f.rfind("hw/nccl/"); at != std::string::npos) f = f.substr(at);
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ") (" + f +
                           ":" + std::to_string(line) + " on " + host + ")");
}

constexpr int kThreads = 256;

// Grid-stride loops: enough blocks to fill a large GPU, never more than the work needs.
inline unsigned blocks_for(std::uint64_t n) {
  const std::uint64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(b, 4096)));
}

__device__ inline std::uint64_t global_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::uint64_t grid_stride() { return static_cast<std::uint64_t>(gridDim.x) * blockDim.x; }

__device__ inline int verifiable(std::uint64_t i, int rank, int modulus) {
  const std::uint64_t m = static_cast<std::uint64_t>(modulus);
  return static_cast<int>(((i % m) * 7 + (static_cast<std::uint64_t>(rank) % m) * 13) % m);
}

template <typename T>
__device__ inline T from_float(float x) {
  return static_cast<T>(x);
}
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
  return __nv_fp8_e4m3(x);  // round to nearest, saturate to the finite range
}
template <>
__device__ inline __nv_fp8_e5m2 from_float<__nv_fp8_e5m2>(float x) {
  return __nv_fp8_e5m2(x);
}
template <typename T>
__device__ inline float to_float(T x) {
  return static_cast<float>(x);
}
// The value `v` in type T: integers wrap (as NCCL's integer sums do), floating types round (exact for the small
// integers the checks use).
template <typename T>
__device__ inline T make(long long v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(v);
  else
    return from_float<T>(static_cast<float>(v));
}
template <>
__device__ inline float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename F>
void by_wire(Wire w, F&& f) {
  switch (w) {
    case Wire::F32:
      f(static_cast<float*>(nullptr));
      break;
    case Wire::F16:
      f(static_cast<__half*>(nullptr));
      break;
    case Wire::BF16:
      f(static_cast<__nv_bfloat16*>(nullptr));
      break;
    case Wire::F8E4M3:
      f(static_cast<__nv_fp8_e4m3*>(nullptr));
      break;
  }
}

}  // namespace commsim::nccl::kernels::detail

#define COMMSIM_KERNEL_CHECK(call, what) ::commsim::nccl::kernels::detail::check((call), what, __FILE__, __LINE__)
#define COMMSIM_LAUNCHED(name) COMMSIM_KERNEL_CHECK(cudaPeekAtLastError(), "launch of " name)
