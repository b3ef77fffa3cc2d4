// weight_dtype_scalar.h: the scalar dequantizers behind widen_weights (weight_dtype.h), one
// value at a time as ggml's reference dequantize_row_* writes them. widen_weights runs their
// vectorised twins where the build has them (AVX2); the floats are the same bit for bit, which
// test_weight_dtype.cpp checks against this reference. Also the sub-block scales of Q4_K and
// Q5_K and IQ4_XS, and IQ4_NL's table, which block_gemm.cpp's kernels read as widen_weights does.
#pragma once
#include <cstdint>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/math/weight_dtype.h"

namespace headmap {

// widen_weights' contract, always scalar.
void widen_weights_scalar(WeightDtype t, const uint8_t* src, int64_t n, float* out);

// The 6-bit scale and min of sub-block j (0-7) from Q4_K's and Q5_K's 12 bytes.
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}
// The scales and minimums of Q4_K's and Q5_K's sub-blocks is and is + 1, times d and dmin.
inline void k4_pair(float d, float dmin, const uint8_t* sc, int is, float* d1, float* m1, float* d2, float* m2) {
  uint8_t s, m;
  scale_min_k4(is, sc, &s, &m);
  *d1 = d * s, *m1 = dmin * m;
  scale_min_k4(is + 1, sc, &s, &m);
  *d2 = d * s, *m2 = dmin * m;
}

// IQ4_NL's and IQ4_XS's 16 non-linear values by nibble (ggml-common.h's kvalues_iq4nl).
alignas(16) inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// IQ4_XS's 6-bit scale of sub-block ib (0-7), unbiased (-32 .. 31): the low 4 bits are nibble
// ib of scales_l (byte ib / 2, low nibble first), the high 2 bits are bits 2 ib, 2 ib + 1 of
// scales_h.
inline int iq4_xs_scale(int ib, uint16_t scales_h, const uint8_t* scales_l) {
  return (((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4)) - 32;
}
#if defined(__AVX2__)
// The 32 values of an IQ4_NL block or an IQ4_XS sub-block from its 16 bytes at qs, as int8 in
// element order (the low nibbles are elements 0-15, the high nibbles 16-31), looked up in
// kIq4nlValues: for widen_weights' vectorised twin and block_gemm.cpp's kernels.
inline __m256i iq4_values32(const uint8_t* qs) {
  const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0xF)));
}
#endif

}  // namespace headmap
