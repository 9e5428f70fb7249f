// Real conversions between fp32 gradients and the narrower communication dtypes (fp16, bf16, fp8 e4m3), and sums
// carried out in those dtypes, so that a backend moves and reduces the very bytes a low-precision allreduce would.
// Rounding is to nearest, ties to even (IEEE 754 default, as CUDA's __float2half_rn / __float2bfloat16_rn);
// fp8 is OCP E4M3 (bias 7, no infinities, largest finite 448), saturating as CUDA's __NV_SATFINITE.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/scenario/scenario.hpp"

namespace commsim::hw {

std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);
float bf16_to_float(std::uint16_t bits);
std::uint8_t float_to_fp8_e4m3(float value);
float fp8_e4m3_to_float(std::uint8_t bits);

// Bytes of one element of `dtype` (fp32 4, fp16/bf16 2, fp8 1).
std::size_t element_bytes(CommDtype dtype);
// Rounds a float to the nearest value `dtype` can hold (identity for fp32).
float round_to(CommDtype dtype, float value);

// out[i] = value of in[i] in `dtype`; `out` holds count * element_bytes(dtype) bytes.
void cast_from_float(CommDtype dtype, const float* in, void* out, std::size_t count);
// out[i] = in[i] read as `dtype`, widened to float.
void cast_to_float(CommDtype dtype, const void* in, float* out, std::size_t count);
// out[i] = (in[i] read as `dtype`, widened to float) / divisor: the same values as cast_to_float then a division,
// in one pass that reads `in` and writes `out` once.
void cast_to_float_divided(CommDtype dtype, const void* in, float* out, std::size_t count, float divisor);
// accumulator[i] += addend[i], both in `dtype`: widened to float, added, rounded back (as NCCL sums half types).
void sum_into(CommDtype dtype, void* accumulator, const void* addend, std::size_t count);

}  // namespace commsim::hw
