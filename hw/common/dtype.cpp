#include "hw/common/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace commsim::hw {

// fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Normal numbers keep the top 10 of float's 23 mantissa bits,
// rounded to nearest even by adding 0xfff plus the lowest kept bit before the shift; the exponent is rebiased
// by 127 - 15 = 112. Values below 2^-14 are subnormal: a multiple of 2^-24.
std::uint16_t float_to_half(float value) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN stays NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds past 65504: infinity
  if (x < 0x38800000u) {                        // below 2^-14: subnormal (or zero)
    const float magnitude = std::bit_cast<float>(x);
    return sign | static_cast<std::uint16_t>(std::nearbyint(magnitude * 16777216.0f));  // units of 2^-24
  }
  const std::uint32_t rounded = x + 0xfffu + ((x >> 13) & 1u);
  return sign | static_cast<std::uint16_t>((rounded >> 13) - (112u << 10));
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// bf16 is the top half of a float: round the dropped 16 bits to nearest even.
std::uint16_t float_to_bf16(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

// fp8 E4M3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; exponent 15 with mantissa 7 is NaN, so the largest finite
// value is 1.75 x 2^8 = 448. Normal numbers keep the top 3 mantissa bits (round at bit 20), rebiased by 127 - 7 =
// 120; below 2^-6 the value is a multiple of 2^-9.
std::uint8_t float_to_fp8_e4m3(float value) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7fu;   // NaN
  if (x >= 0x43e00000u) return sign | 0x7eu;  // >= 448 (and infinity): saturate
  if (x < 0x3c800000u) {                      // below 2^-6: subnormal (or zero)
    const float magnitude = std::bit_cast<float>(x);
    return sign | static_cast<std::uint8_t>(std::nearbyint(magnitude * 512.0f));  // units of 2^-9
  }
  const std::uint32_t rounded = ((x + 0x7ffffu + ((x >> 20) & 1u)) >> 20) - (120u << 3);
  return sign | static_cast<std::uint8_t>(rounded > 0x7eu ? 0x7eu : rounded);
}

float fp8_e4m3_to_float(std::uint8_t bits) {
  const bool negative = bits & 0x80u;
  const std::uint32_t exponent = (bits >> 3) & 0xfu, mantissa = bits & 0x7u;
  float magnitude;
  if (exponent == 15 && mantissa == 7) {
    magnitude = NAN;
  } else if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * 0.001953125f;  // 2^-9
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, static_cast<int>(exponent) - 7);
  }
  return negative ? -magnitude : magnitude;
}

std::size_t element_bytes(CommDtype dtype) { return static_cast<std::size_t>(dtype_bytes(dtype)); }

float round_to(CommDtype dtype, float value) {
  switch (dtype) {
    case CommDtype::Fp32:
      return value;
    case CommDtype::Fp16:
      return half_to_float(float_to_half(value));
    case CommDtype::Bf16:
      return bf16_to_float(float_to_bf16(value));
    case CommDtype::Fp8:
      return fp8_e4m3_to_float(float_to_fp8_e4m3(value));
  }
  return value;
}

namespace {

// One loop per dtype, so that the compiler sees the element type (and vectorises the fp32 case).
template <typename Bits, Bits (*Encode)(float)>
void encode_all(const float* in, void* out, std::size_t count) {
  auto* o = static_cast<Bits*>(out);
  for (std::size_t i = 0; i < count; ++i) o[i] = Encode(in[i]);
}
template <typename Bits, float (*Decode)(Bits)>
void decode_all(const void* in, float* out, std::size_t count) {
  const auto* b = static_cast<const Bits*>(in);
  for (std::size_t i = 0; i < count; ++i) out[i] = Decode(b[i]);
}
template <typename Bits, float (*Decode)(Bits)>
void decode_all_divided(const void* in, float* out, std::size_t count, float divisor) {
  const auto* b = static_cast<const Bits*>(in);
  for (std::size_t i = 0; i < count; ++i) out[i] = Decode(b[i]) / divisor;
}
float identity(float value) { return value; }
template <typename Bits, Bits (*Encode)(float), float (*Decode)(Bits)>
void sum_all(void* accumulator, const void* addend, std::size_t count) {
  auto* a = static_cast<Bits*>(accumulator);
  const auto* b = static_cast<const Bits*>(addend);
  for (std::size_t i = 0; i < count; ++i) a[i] = Encode(Decode(a[i]) + Decode(b[i]));
}

}  // namespace

void cast_from_float(CommDtype dtype, const float* in, void* out, std::size_t count) {
  switch (dtype) {
    case CommDtype::Fp32:
      std::memcpy(out, in, count * sizeof(float));
      return;
    case CommDtype::Fp16:
      return encode_all<std::uint16_t, float_to_half>(in, out, count);
    case CommDtype::Bf16:
      return encode_all<std::uint16_t, float_to_bf16>(in, out, count);
    case CommDtype::Fp8:
      return encode_all<std::uint8_t, float_to_fp8_e4m3>(in, out, count);
  }
}

void cast_to_float(CommDtype dtype, const void* in, float* out, std::size_t count) {
  switch (dtype) {
    case CommDtype::Fp32:
      std::memcpy(out, in, count * sizeof(float));
      return;
    case CommDtype::Fp16:
      return decode_all<std::uint16_t, half_to_float>(in, out, count);
    case CommDtype::Bf16:
      return decode_all<std::uint16_t, bf16_to_float>(in, out, count);
    case CommDtype::Fp8:
      return decode_all<std::uint8_t, fp8_e4m3_to_float>(in, out, count);
  }
}

void cast_to_float_divided(CommDtype dtype, const void* in, float* out, std::size_t count, float divisor) {
  switch (dtype) {
    case CommDtype::Fp32:
      return decode_all_divided<float, identity>(in, out, count, divisor);
    case CommDtype::Fp16:
      return decode_all_divided<std::uint16_t, half_to_float>(in, out, count, divisor);
    case CommDtype::Bf16:
      return decode_all_divided<std::uint16_t, bf16_to_float>(in, out, count, divisor);
    case CommDtype::Fp8:
      return decode_all_divided<std::uint8_t, fp8_e4m3_to_float>(in, out, count, divisor);
  }
}

void sum_into(CommDtype dtype, void* accumulator, const void* addend, std::size_t count) {
  switch (dtype) {
    case CommDtype::Fp32: {
      auto* a = static_cast<float*>(accumulator);
      const auto* b = static_cast<const float*>(addend);
      for (std::size_t i = 0; i < count; ++i) a[i] += b[i];
      return;
    }
    case CommDtype::Fp16:
      return sum_all<std::uint16_t, float_to_half, half_to_float>(accumulator, addend, count);
    case CommDtype::Bf16:
      return sum_all<std::uint16_t, float_to_bf16, bf16_to_float>(accumulator, addend, count);
    case CommDtype::Fp8:
      return sum_all<std::uint8_t, float_to_fp8_e4m3, fp8_e4m3_to_float>(accumulator, addend, count);
  }
}

}  // namespace commsim::hw
