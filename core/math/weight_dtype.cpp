// weight_dtype.cpp: the block dequantizers (weight_dtype.h). Within a block, element j of the
// output is written as ggml's reference dequantize_row_* writes it; the arithmetic is float.
// QK = elements per block; d, dmin = F16 scale and minimum; qs = packed quants.
#include "core/math/weight_dtype.h"

#include <cstring>

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
    y[j] = d * static_cast<float>(qs[j] & 0xF) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
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
    y[j] = d * static_cast<float>((qs[j] & 0xF) | h0) + m;
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) | h1) + m;
  }
}
// IQ4_NL (18): d, qs[16] as Q4_0, each nibble an index into a fixed non-linear table.
void iq4_nl(const char* b, float* y) {
  static const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  const float d = f16_at(b);
  const uint8_t* qs = u8(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kv[qs[j] & 0xF]);
    y[j + 16] = d * static_cast<float>(kv[qs[j] >> 4]);
  }
}

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
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
      }
    }
    q += 32;
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
  for (int j = 0; j < 16; ++j) {
    // low 4 bits: byte j (j < 8: low nibble of raw[j], else high nibble of raw[j - 8]);
    // high 2 bits: raw[8 + j % 4], bits 2 * (j / 4).
    const int lo = j < 8 ? (raw[j] & 0xF) : (raw[j - 8] >> 4);
    const int hi = (raw[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
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
// The 6-bit scale and min of sub-block j (0-7) from Q4_K's and Q5_K's 12 bytes.
void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}
// Q4_K (144): d, dmin, scales[12], qs[128]; 8 sub-blocks of 32, x = d * sc * q - dmin * m.
void q4_k(const char* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = u8(b + 4);
  const uint8_t* q = u8(b + 16);
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    uint8_t s, m;
    scale_min_k4(is, sc, &s, &m);
    const float d1 = d * s, m1 = dmin * m;
    scale_min_k4(is + 1, sc, &s, &m);
    const float d2 = d * s, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
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
    uint8_t s, m;
    scale_min_k4(is, sc, &s, &m);
    const float d1 = d * s, m1 = dmin * m;
    scale_min_k4(is + 1, sc, &s, &m);
    const float d2 = d * s, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
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


using BlockFn = void (*)(const char*, float*);
BlockFn block_fn(WeightDtype t) {
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
    default: return nullptr;
  }
}
}  // namespace

const WeightDtypeInfo& weight_dtype_info(WeightDtype t) {
  static const WeightDtypeInfo kInfo[] = {
      {"F32", 1, 4, 0},     {"BF16", 1, 2, 30},    {"F16", 1, 2, 1},      {"Q8_0", 32, 34, 8},   {"Q4_0", 32, 18, 2},
      {"Q4_1", 32, 20, 3},  {"Q5_0", 32, 22, 6},   {"Q5_1", 32, 24, 7},   {"IQ4_NL", 32, 18, 20}, {"Q2_K", 256, 84, 10},
      {"Q3_K", 256, 110, 11}, {"Q4_K", 256, 144, 12}, {"Q5_K", 256, 176, 13}, {"Q6_K", 256, 210, 14}};
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

void widen_weights(WeightDtype t, const uint8_t* src, int64_t n, float* out) {
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
      const BlockFn f = block_fn(t);
      for (int64_t k = 0; k < n / info.block; ++k) f(s + k * info.bytes, out + k * info.block);
    }
  }
}

}  // namespace headmap
