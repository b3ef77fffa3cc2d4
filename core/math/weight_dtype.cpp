// weight_dtype.cpp: the block dequantizers (weight_dtype.h). Within a block, element j of the
// output is written as ggml's reference dequantize_row_* writes it; the arithmetic is float,
// a product plus a minimum one fused multiply-add. Each has a vectorised twin (AVX2).
// QK = elements per block; d, dmin = F16 scale and minimum; qs = packed quants.
#include "core/math/weight_dtype.h"

#include <cmath>
#include <cstring>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "core/math/finite_blocks.h"
#include "core/math/weight_dtype_scalar.h"

namespace headmap {
namespace {
float f16_at(const char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}
const uint8_t* u8(const char* p) { return reinterpret_cast<const uint8_t*>(p); }

// ---- 32-element blocks ----
// Q8_0 (34 bytes): d, int8 qs[32]; x = d * q.
void q8_0(const char* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(b[2 + j]));
}
// Q4_0 (18): d, qs[16]; low nibbles are elements 0-15, high nibbles 16-31; x = d * (q - 8).
void q4_0(const char* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = u8(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0xF) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}
// Q4_1 (20): d, m, qs[16]; x = d * q + m.
void q4_1(const char* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint8_t* qs = u8(b + 4);
  for (int j = 0; j < 16; ++j) {
    y[j] = std::fma(d, static_cast<float>(qs[j] & 0xF), m);
    y[j + 16] = std::fma(d, static_cast<float>(qs[j] >> 4), m);
  }
}
// Q5_0 (22): d, qh (u32: bit j = the fifth bit of element j), qs[16]; x = d * (q - 16).
void q5_0(const char* b, float* y) {
  const float d = f16_at(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  const uint8_t* qs = u8(b + 6);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) << 4) & 0x10, h1 = ((qh >> (j + 12))) & 0x10;
    y[j] = d * static_cast<float>(((qs[j] & 0xF) | h0) - 16);
    y[j + 16] = d * static_cast<float>(((qs[j] >> 4) | h1) - 16);
  }
}
// Q5_1 (24): d, m, qh, qs[16]; x = d * q + m.
void q5_1(const char* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const uint8_t* qs = u8(b + 8);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) << 4) & 0x10, h1 = ((qh >> (j + 12))) & 0x10;
    y[j] = std::fma(d, static_cast<float>((qs[j] & 0xF) | h0), m);
    y[j + 16] = std::fma(d, static_cast<float>((qs[j] >> 4) | h1), m);
  }
}
// Values 0-31 of an IQ4_NL block or an IQ4_XS sub-block: qs[16] as Q4_0's, each nibble an
// index into a fixed non-linear table; x = d * kIq4nlValues[q].
void iq4_values(float d, const uint8_t* qs, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
    y[j + 16] = d * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
  }
}
// IQ4_NL (18): d, qs[16].
void iq4_nl(const char* b, float* y) { iq4_values(f16_at(b), u8(b + 2), y); }

// ---- 256-element super-blocks ----
// Q2_K (84): scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64] (2 bits),
// d, dmin. x = d * sc * q - dmin * m.
void q2_k(const char* b, float* y) {
  const uint8_t* sc = u8(b);
  const uint8_t* q = u8(b + 16);
  const float d = f16_at(b + 80), dmin = f16_at(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t s = sc[is++];
        const float dl = d * static_cast<float>(s & 0xF), ml = dmin * static_cast<float>(s >> 4);
        for (int l = 0; l < 16; ++l) *y++ = std::fma(dl, static_cast<float>((q[l + 16 * half] >> shift) & 3), -ml);
      }
    }
    q += 32;
  }
}
// Q3_K's 16 six-bit scales from its 12 bytes, unbiased.
void q3_k_scales(const uint8_t* raw, int8_t* scales) {
  for (int j = 0; j < 16; ++j) {
    // low 4 bits: byte j (j < 8: low nibble of raw[j], else high nibble of raw[j - 8]);
    // high 2 bits: raw[8 + j % 4], bits 2 * (j / 4).
    const int lo = j < 8 ? (raw[j] & 0xF) : (raw[j - 8] >> 4);
    const int hi = (raw[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
}
// Q3_K (110): hmask[32] (the third bit), qs[64] (low 2 bits), scales[12] (16 six-bit
// scales, biased by 32), d. x = d * (sc - 32) * (q - (hbit ? 0 : 4)).
void q3_k(const char* b, float* y) {
  const uint8_t* hm = u8(b);
  const uint8_t* q = u8(b + 32);
  const uint8_t* raw = u8(b + 96);
  const float d_all = f16_at(b + 108);
  int8_t scales[16];
  q3_k_scales(raw, scales);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * static_cast<float>(scales[is++]);
        for (int l = 16 * half; l < 16 * half + 16; ++l)
          *y++ = dl * static_cast<float>(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      }
    }
    q += 32;
  }
}
// Q4_K (144): d, dmin, scales[12], qs[128]; 8 sub-blocks of 32, x = d * sc * q - dmin * m.
void q4_k(const char* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = u8(b + 4);
  const uint8_t* q = u8(b + 16);
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    float d1, m1, d2, m2;
    k4_pair(d, dmin, sc, is, &d1, &m1, &d2, &m2);
    for (int l = 0; l < 32; ++l) *y++ = std::fma(d1, static_cast<float>(q[l] & 0xF), -m1);
    for (int l = 0; l < 32; ++l) *y++ = std::fma(d2, static_cast<float>(q[l] >> 4), -m2);
  }
}
// Q5_K (176): d, dmin, scales[12], qh[32] (the fifth bits), qs[128].
void q5_k(const char* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = u8(b + 4);
  const uint8_t* qh = u8(b + 16);
  const uint8_t* ql = u8(b + 48);
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32, u1 = static_cast<uint8_t>(u1 << 2), u2 = static_cast<uint8_t>(u2 << 2)) {
    float d1, m1, d2, m2;
    k4_pair(d, dmin, sc, is, &d1, &m1, &d2, &m2);
    for (int l = 0; l < 32; ++l) *y++ = std::fma(d1, static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)), -m1);
    for (int l = 0; l < 32; ++l) *y++ = std::fma(d2, static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)), -m2);
  }
}
// Q6_K (210): ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], d; x = d * sc * (q - 32).
void q6_k(const char* b, float* y) {
  const uint8_t* ql = u8(b);
  const uint8_t* qh = u8(b + 128);
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

// IQ4_XS (136): d, scales_h (u16), scales_l[4], qs[128]; 8 sub-blocks of 32, each 16 bytes of
// qs as an IQ4_NL block under its own scale: x = (d * (ls - 32)) * kIq4nlValues[q].
template <void (*Values)(float, const uint8_t*, float*)>
void iq4_xs_with(const char* b, float* y) {
  const float d = f16_at(b);
  uint16_t scales_h;
  std::memcpy(&scales_h, b + 2, 2);
  for (int ib = 0; ib < 8; ++ib) Values(d * static_cast<float>(iq4_xs_scale(ib, scales_h, u8(b + 4))), u8(b + 8 + 16 * ib), y + 32 * ib);
}
void iq4_xs(const char* b, float* y) { iq4_xs_with<iq4_values>(b, y); }

// ---- the same, eight values at a time (AVX2 and FMA) ----
// Each lane computes its element with the scalar code's operations in the same order (the
// same products, the same fused multiply-adds), so the floats are the same bit for bit
// (test_weight_dtype.cpp checks it on random blocks of every type, hostile scales too).
#if defined(__AVX2__) && defined(__FMA__)
namespace simd {
using V = __m256;
using I = __m256i;
I u8x8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }  // 8 bytes, zero-extended
I i8x8(const char* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }    // 8 bytes, sign-extended
V fl(I v) { return _mm256_cvtepi32_ps(v); }
I k(int v) { return _mm256_set1_epi32(v); }
I lanes(int from) { return _mm256_setr_epi32(from, from + 1, from + 2, from + 3, from + 4, from + 5, from + 6, from + 7); }
I shr(I v, int n) { return _mm256_srl_epi32(v, _mm_cvtsi32_si128(n)); }
void put_mul(float* y, float d, I q) { _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_set1_ps(d), fl(q))); }             // d * q
void put_fma(float* y, float d, I q, float m) { _mm256_storeu_ps(y, _mm256_fmadd_ps(_mm256_set1_ps(d), fl(q), _mm256_set1_ps(m))); }  // fma(d, q, m)

void q8_0(const char* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; j += 8) put_mul(y + j, d, i8x8(b + 2 + j));
}
void q4_0(const char* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 16; j += 8) {
    const I q = u8x8(u8(b + 2 + j));
    put_mul(y + j, d, _mm256_sub_epi32(_mm256_and_si256(q, k(0xF)), k(8)));
    put_mul(y + j + 16, d, _mm256_sub_epi32(shr(q, 4), k(8)));
  }
}
void q4_1(const char* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  for (int j = 0; j < 16; j += 8) {
    const I q = u8x8(u8(b + 4 + j));
    put_fma(y + j, d, _mm256_and_si256(q, k(0xF)), m);
    put_fma(y + j + 16, d, shr(q, 4), m);
  }
}
// Elements [j, j + 8) and [j + 16, j + 24) of a Q5 block: quants with the fifth bit from qh.
void q5_quants(const uint8_t* qs, uint32_t qh, int j, I* lo, I* hi) {
  const I h = _mm256_set1_epi32(static_cast<int>(qh));
  const I q = u8x8(qs + j);
  *lo = _mm256_or_si256(_mm256_and_si256(q, k(0xF)), _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(h, lanes(j)), k(1)), 4));
  *hi = _mm256_or_si256(shr(q, 4), _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(h, lanes(j + 16)), k(1)), 4));
}
void q5_0(const char* b, float* y) {
  const float d = f16_at(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int j = 0; j < 16; j += 8) {
    I lo, hi;
    q5_quants(u8(b + 6), qh, j, &lo, &hi);
    put_mul(y + j, d, _mm256_sub_epi32(lo, k(16)));
    put_mul(y + j + 16, d, _mm256_sub_epi32(hi, k(16)));
  }
}
void q5_1(const char* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int j = 0; j < 16; j += 8) {
    I lo, hi;
    q5_quants(u8(b + 8), qh, j, &lo, &hi);
    put_fma(y + j, d, lo, m);
    put_fma(y + j + 16, d, hi, m);
  }
}
void iq4_values(float d, const uint8_t* qs, float* y) {
  alignas(32) int8_t v[32];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), iq4_values32(qs));
  for (int j = 0; j < 32; j += 8) put_mul(y + j, d, i8x8(reinterpret_cast<const char*>(v + j)));
}
void iq4_nl(const char* b, float* y) { iq4_values(f16_at(b), u8(b + 2), y); }
void iq4_xs(const char* b, float* y) { iq4_xs_with<iq4_values>(b, y); }
void q2_k(const char* b, float* y) {
  const uint8_t* sc = u8(b);
  const uint8_t* q = u8(b + 16);
  const float d = f16_at(b + 80), dmin = f16_at(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128, q += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int half = 0; half < 2; ++half, y += 16) {
        const uint8_t s = sc[is++];
        const float dl = d * static_cast<float>(s & 0xF), ml = dmin * static_cast<float>(s >> 4);
        for (int l = 0; l < 16; l += 8) put_fma(y + l, dl, _mm256_and_si256(shr(u8x8(q + l + 16 * half), shift), k(3)), -ml);
      }
}
void q3_k(const char* b, float* y) {
  const uint8_t* hm = u8(b);
  const uint8_t* q = u8(b + 32);
  const float d_all = f16_at(b + 108);
  int8_t scales[16];
  q3_k_scales(u8(b + 96), scales);
  int is = 0, bit = 0;
  for (int n = 0; n < 256; n += 128, q += 32)
    for (int shift = 0; shift < 8; shift += 2, ++bit)
      for (int half = 0; half < 2; ++half, y += 16) {
        const float dl = d_all * static_cast<float>(scales[is++]);
        for (int l = 16 * half; l < 16 * half + 16; l += 8) {
          const I low = _mm256_and_si256(shr(u8x8(q + l), shift), k(3));
          const I no_high = _mm256_cmpeq_epi32(_mm256_and_si256(u8x8(hm + l), k(1 << bit)), _mm256_setzero_si256());  // -1 where the bit is clear
          put_mul(y + l - 16 * half, dl, _mm256_sub_epi32(low, _mm256_and_si256(no_high, k(4))));
        }
      }
}
void q4_k(const char* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = u8(b + 4);
  const uint8_t* q = u8(b + 16);
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32, y += 64) {
    float d1, m1, d2, m2;
    k4_pair(d, dmin, sc, is, &d1, &m1, &d2, &m2);
    for (int l = 0; l < 32; l += 8) {
      const I v = u8x8(q + l);
      put_fma(y + l, d1, _mm256_and_si256(v, k(0xF)), -m1);
      put_fma(y + 32 + l, d2, shr(v, 4), -m2);
    }
  }
}
void q5_k(const char* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = u8(b + 4);
  const uint8_t* qh = u8(b + 16);
  const uint8_t* ql = u8(b + 48);
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32, y += 64) {
    float d1, m1, d2, m2;
    k4_pair(d, dmin, sc, is, &d1, &m1, &d2, &m2);
    for (int l = 0; l < 32; l += 8) {
      const I v = u8x8(ql + l), h = u8x8(qh + l);
      put_fma(y + l, d1, _mm256_or_si256(_mm256_and_si256(v, k(0xF)), _mm256_slli_epi32(_mm256_and_si256(shr(h, is), k(1)), 4)), -m1);
      put_fma(y + 32 + l, d2, _mm256_or_si256(shr(v, 4), _mm256_slli_epi32(_mm256_and_si256(shr(h, is + 1), k(1)), 4)), -m2);
    }
  }
}
void q6_k(const char* b, float* y) {
  const uint8_t* ql = u8(b);
  const uint8_t* qh = u8(b + 128);
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
    for (int l = 0; l < 32; l += 8) {
      const int is = l / 16;
      const I a = u8x8(ql + l), c = u8x8(ql + l + 32), h = u8x8(qh + l);
      auto high = [&](int shift) { return _mm256_slli_epi32(_mm256_and_si256(shr(h, shift), k(3)), 4); };
      put_mul(y + l, d * static_cast<float>(sc[is + 0]), _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(a, k(0xF)), high(0)), k(32)));
      put_mul(y + l + 32, d * static_cast<float>(sc[is + 2]), _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(c, k(0xF)), high(2)), k(32)));
      put_mul(y + l + 64, d * static_cast<float>(sc[is + 4]), _mm256_sub_epi32(_mm256_or_si256(shr(a, 4), high(4)), k(32)));
      put_mul(y + l + 96, d * static_cast<float>(sc[is + 6]), _mm256_sub_epi32(_mm256_or_si256(shr(c, 4), high(6)), k(32)));
    }
}
}  // namespace simd
#endif

using BlockFn = void (*)(const char*, float*);
// The scalar dequantizer of a block type (the reference), or its vectorised twin where the
// build has one.
BlockFn block_fn(WeightDtype t, bool vectorised) {
#if defined(__AVX2__) && defined(__FMA__)
  if (vectorised) {
    switch (t) {
      case WeightDtype::Q8_0: return simd::q8_0;
      case WeightDtype::Q4_0: return simd::q4_0;
      case WeightDtype::Q4_1: return simd::q4_1;
      case WeightDtype::Q5_0: return simd::q5_0;
      case WeightDtype::Q5_1: return simd::q5_1;
      case WeightDtype::IQ4_NL: return simd::iq4_nl;
      case WeightDtype::Q2_K: return simd::q2_k;
      case WeightDtype::Q3_K: return simd::q3_k;
      case WeightDtype::Q4_K: return simd::q4_k;
      case WeightDtype::Q5_K: return simd::q5_k;
      case WeightDtype::Q6_K: return simd::q6_k;
      case WeightDtype::IQ4_XS: return simd::iq4_xs;
      default: return nullptr;
    }
  }
#endif
  (void)vectorised;
  switch (t) {
    case WeightDtype::Q8_0: return q8_0;
    case WeightDtype::Q4_0: return q4_0;
    case WeightDtype::Q4_1: return q4_1;
    case WeightDtype::Q5_0: return q5_0;
    case WeightDtype::Q5_1: return q5_1;
    case WeightDtype::IQ4_NL: return iq4_nl;
    case WeightDtype::Q2_K: return q2_k;
    case WeightDtype::Q3_K: return q3_k;
    case WeightDtype::Q4_K: return q4_k;
    case WeightDtype::Q5_K: return q5_k;
    case WeightDtype::Q6_K: return q6_k;
    case WeightDtype::IQ4_XS: return iq4_xs;
    default: return nullptr;
  }
}

void widen(WeightDtype t, const uint8_t* src, int64_t n, float* out, bool vectorised) {
  const char* s = reinterpret_cast<const char*>(src);
  switch (t) {
    case WeightDtype::F32:
      std::memcpy(out, s, static_cast<size_t>(n) * 4);
      return;
    case WeightDtype::BF16:
    case WeightDtype::F16:
      for (int64_t k = 0; k < n; ++k) {
        uint16_t h;
        std::memcpy(&h, s + 2 * k, 2);
        out[k] = narrow_to_float(h, t);
      }
      return;
    default: {
      const WeightDtypeInfo& info = weight_dtype_info(t);
      const BlockFn f = block_fn(t, vectorised);
      for (int64_t k = 0; k < n / info.block; ++k) f(s + k * info.bytes, out + k * info.block);
    }
  }
}
}  // namespace

const WeightDtypeInfo& weight_dtype_info(WeightDtype t) {
  static const WeightDtypeInfo kInfo[] = {
      {"F32", 1, 4, 0},     {"BF16", 1, 2, 30},    {"F16", 1, 2, 1},      {"Q8_0", 32, 34, 8},   {"Q4_0", 32, 18, 2},
      {"Q4_1", 32, 20, 3},  {"Q5_0", 32, 22, 6},   {"Q5_1", 32, 24, 7},   {"IQ4_NL", 32, 18, 20}, {"Q2_K", 256, 84, 10},
      {"Q3_K", 256, 110, 11}, {"Q4_K", 256, 144, 12}, {"Q5_K", 256, 176, 13}, {"Q6_K", 256, 210, 14},
      {"IQ4_XS", 256, 136, 23}};
  static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == kWeightDtypes, "one row per WeightDtype, in its order");
  return kInfo[static_cast<int>(t)];
}

bool weight_dtype_of_ggml(uint32_t ggml_type, WeightDtype* out) {
  for (int i = 0; i < kWeightDtypes; ++i)
    if (weight_dtype_info(static_cast<WeightDtype>(i)).ggml_type == ggml_type) {
      *out = static_cast<WeightDtype>(i);
      return true;
    }
  return false;
}

bool widened_values_finite(WeightDtype t, const uint8_t* src, int64_t n) {
  auto all_finite16 = [](const uint8_t* p, int64_t count, size_t stride, uint16_t exp) {  // count 16-bit values, stride bytes apart
    uint16_t bad = 0;
    for (int64_t k = 0; k < count; ++k) {
      uint16_t h;
      std::memcpy(&h, p + static_cast<size_t>(k) * stride, 2);
      bad |= static_cast<uint16_t>((h & exp) == exp);  // all-ones exponent: inf or NaN
    }
    return bad == 0;
  };
  switch (t) {
    case WeightDtype::F32:
      for (int64_t k = 0; k < n; ++k) {
        float v;
        std::memcpy(&v, src + 4 * k, 4);
        if (!std::isfinite(v)) return false;
      }
      return true;
    case WeightDtype::BF16: return all_finite16(src, n, 2, 0x7F80);
    case WeightDtype::F16: return all_finite16(src, n, 2, 0x7C00);
    default: break;
  }
  // The F16 scale fields of each block (the offsets the dequantizers above read d and dmin at).
  int first = 0, second = -1;
  switch (t) {
    case WeightDtype::Q4_1: case WeightDtype::Q5_1: case WeightDtype::Q4_K: case WeightDtype::Q5_K: second = 2; break;
    case WeightDtype::Q2_K: first = 80, second = 82; break;
    case WeightDtype::Q3_K: first = 108; break;
    case WeightDtype::Q6_K: first = 208; break;
    default: break;  // Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS: d at 0
  }
  const WeightDtypeInfo& info = weight_dtype_info(t);
  const int64_t blocks = n / info.block;
  const size_t stride = static_cast<size_t>(info.bytes);
  return all_finite16(src + first, blocks, stride, 0x7C00) && (second < 0 || all_finite16(src + second, blocks, stride, 0x7C00));
}

void widen_weights(WeightDtype t, const uint8_t* src, int64_t n, float* out) { widen(t, src, n, out, true); }
void widen_weights_scalar(WeightDtype t, const uint8_t* src, int64_t n, float* out) { widen(t, src, n, out, false); }

}  // namespace headmap
