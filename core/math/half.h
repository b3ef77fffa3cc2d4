// half.h: IEEE 754 binary16 (F16) and bfloat16 (BF16) <-> float, exactly as the formats
// define them: round to nearest, ties to even; subnormals, infinities and NaN kept.
#pragma once
#include <cstdint>
#include <cstring>

namespace headmap {

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// F16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1F) return bits_to_float(sign | 0x7F800000u | (man << 13));  // inf, NaN
  if (exp != 0) return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
  // Subnormal (or zero): man * 2^-24.
  const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

inline uint16_t float_to_half(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u);  // NaN, inf
  if (a >= 0x477FF000u) return sign | 0x7C00u;                                // rounds past 65504
  if (a < 0x38800000u) {
    // Result is subnormal or zero: value / 2^-24, rounded to nearest even.
    const float v = bits_to_float(a) * 16777216.0f;  // exact: a power-of-two scale
    uint32_t m = static_cast<uint32_t>(v);
    const float rest = v - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;
    return sign | static_cast<uint16_t>(m);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  uint32_t h = ((a - 0x38000000u) >> 13);
  const uint32_t dropped = a & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: still right
  return sign | static_cast<uint16_t>(h);
}

// BF16: the top 16 bits of a float.
inline float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }
// Round to nearest, ties to even; NaN stays NaN (quiet).
inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace headmap
