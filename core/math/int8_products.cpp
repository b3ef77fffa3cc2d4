// int8_products.cpp: 8-bit products on Q4_K, Q5_K, Q6_K and Q8_0 blocks (int8_products.h).
//
// Each column is read one block at a time and its block's integers are made once for up to 4
// rows (kRows; the row groups outermost across a unit's columns, int8_columns): for the
// K-quants vpmaddubsw multiplies the weights' unsigned integers by the rows' int8 values into
// 16-bit pairs (at most 2 * 63 * 127, no saturation), and vpdpwssd (vpmaddwd + vpaddd without
// AVX-512 VNNI) multiplies the pairs by the 16-bit scales and adds them into lanes of 4 values;
// Q8_0 (scale 1) takes vpdpbusd on the weights' absolute values and the activations with their
// signs. Lane l of a run of 32 values holds values 4l .. 4l + 3, the order int8_products.h
// writes out.
// Sections: [rounding] [blocks] [columns] [reference]
#include "core/math/int8_products.h"

#include "core/math/block_gemm.h"
#include "core/math/half.h"
#include "core/math/weight_dtype_scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace headmap {

namespace {
thread_local bool t_int8_products = false;
}  // namespace

Int8Products::Int8Products(bool on) : previous_(t_int8_products) { t_int8_products = on && available(); }
Int8Products::~Int8Products() { t_int8_products = previous_; }
bool Int8Products::available() {
#if defined(__AVX2__) && defined(__FMA__)
  return true;
#else
  return false;
#endif
}
bool Int8Products::active() { return t_int8_products; }

// ---- [rounding] --------------------------------------------------------------------------

namespace {
// One row: n (a multiple of 32) values of x, both roundings (int8_products.h).
void round_row(const float* x, int n, bool k_quants, int8_t* qk, float* dk, float* t16, float* t32, int8_t* q0, float* d0) {
  if (k_quants)
    for (int b = 0; b < n / 256; ++b) {
      const float* v = x + 256 * b;
      float amax = 0, vmax = 0;
      bool finite = true;
      for (int j = 0; j < 256; ++j) {
        finite = finite && std::isfinite(v[j]);
        if (std::fabs(v[j]) > amax) amax = std::fabs(v[j]), vmax = v[j];
      }
      int8_t* q = qk + 256 * b;
      if (amax == 0 || !finite) {  // a NaN or infinity makes the products NaN, as F32's would be
        dk[b] = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
        std::fill_n(q, 256, int8_t(0));
      } else {
        const float iscale = -127.0f / vmax;
        for (int j = 0; j < 256; ++j) q[j] = static_cast<int8_t>(std::min(127, static_cast<int>(std::nearbyint(iscale * v[j]))));
        dk[b] = 1.0f / iscale;
      }
      int s16[16];
      for (int g = 0; g < 16; ++g) {
        s16[g] = 0;
        for (int j = 0; j < 16; ++j) s16[g] += q[16 * g + j];
        t16[16 * b + g] = dk[b] * static_cast<float>(s16[g]);
      }
      for (int g = 0; g < 8; ++g) t32[8 * b + g] = dk[b] * static_cast<float>(s16[2 * g] + s16[2 * g + 1]);
    }
  for (int b = 0; b < n / 32; ++b) {
    const float* v = x + 32 * b;
    float amax = 0;
    bool finite = true;
    for (int j = 0; j < 32; ++j) finite = finite && std::isfinite(v[j]), amax = std::max(amax, std::fabs(v[j]));
    d0[b] = finite ? half_to_float(float_to_half(amax / 127.0f)) : std::numeric_limits<float>::quiet_NaN();
    const float id = amax != 0 && finite ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; ++j) q0[32 * b + j] = static_cast<int8_t>(std::nearbyint(v[j] * id));
  }
}
}  // namespace

void int8_rows(int M, const float* A, int lda, int K, Int8Rows& r, int nt) {
  r.M = M, r.K = K, r.ld = (K + 255) / 256 * 256;
  r.k_quants = K % 256 == 0;
  const size_t n = static_cast<size_t>(M) * r.ld;
  if (r.qk.size() < n) r.qk.resize(n), r.q0.resize(n);
  if (r.dk.size() < n / 256) r.dk.resize(n / 256);
  if (r.t16.size() < n / 16) r.t16.resize(n / 16), r.t32.resize(n / 32), r.d0.resize(n / 32);
  const int ld = r.ld;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && M > 1)
  for (int i = 0; i < M; ++i)
    round_row(A + static_cast<size_t>(i) * lda, K, r.k_quants, r.qk.data() + static_cast<size_t>(i) * ld, r.dk.data() + static_cast<size_t>(i) * (ld / 256),
              r.t16.data() + static_cast<size_t>(i) * (ld / 16), r.t32.data() + static_cast<size_t>(i) * (ld / 32),
              r.q0.data() + static_cast<size_t>(i) * ld, r.d0.data() + static_cast<size_t>(i) * (ld / 32));
}

// ---- [blocks] ----------------------------------------------------------------------------

#if defined(__AVX2__) && defined(__FMA__)
namespace {
#define HM_INLINE inline __attribute__((always_inline))
using I = __m256i;
using V = __m256;
constexpr int kRows = 4;  // rows per pass over a column's blocks

HM_INLINE I load32(const void* p) { return _mm256_loadu_si256(static_cast<const I*>(p)); }
// A block's F16 scale: F16C's conversion, the same floats as half_at for the finite scales a
// loaded matrix holds (assign_blocks checks them).
HM_INLINE float f16_at(const uint8_t* p) {
#if defined(__F16C__)
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
#else
  return half_at(p);
#endif
}
// Q4_K's and Q5_K's 12 bytes of 6-bit scales and minimums (scale_min_k4's packing, four
// sub-blocks a 32-bit word) in a register: bytes 0-7 the scales, 8-15 the minimums.
HM_INLINE __m128i k4_scales_mins_v(const uint8_t* q) {
  uint32_t u[3];
  std::memcpy(u, q, 12);
  const uint32_t m1 = 0x3f3f3f3fu, m2 = 0x0f0f0f0fu, m3 = 0x03030303u;
  return _mm_setr_epi32(static_cast<int>(u[0] & m1), static_cast<int>((u[2] & m2) | (((u[0] >> 6) & m3) << 4)), static_cast<int>(u[1] & m1),
                        static_cast<int>(((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4)));
}
HM_INLINE I dpw(I acc, I p16, I s16) {  // acc + pairs of p16 times s16, in 32-bit lanes
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, p16, s16);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, s16));
#endif
}

// 16-bit lanes all of sub-block j's scale, from 8 scales as 16-bit values in both halves.
alignas(32) constexpr uint8_t kPick16[8][32] = {
#define HM_P(j) {2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, \
              2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1, 2 * j, 2 * j + 1}
    HM_P(0), HM_P(1), HM_P(2), HM_P(3), HM_P(4), HM_P(5), HM_P(6), HM_P(7)};
#undef HM_P
// Bytes g (8 times) then g + 1 (8 times): Q6_K's scales of the groups g, g + 1 of 16 values.
alignas(16) constexpr uint8_t kPick8[8][16] = {
#define HM_P(g) {g, g, g, g, g, g, g, g, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1}
    HM_P(0), HM_P(2), HM_P(4), HM_P(6), HM_P(8), HM_P(10), HM_P(12), HM_P(14)};
#undef HM_P

// Integer sums in kChains<R> chains a row (exact: any split gives the same lanes), so that a
// row's multiply-adds do not wait on each other (vpdpwssd's latency): 4 for 1-2 rows, 2 for more.
template <int R>
constexpr int kChains = R <= 2 ? 4 : 2;
template <int C>
HM_INLINE I join(const I (&s)[C]) {
  if constexpr (C == 4) return _mm256_add_epi32(_mm256_add_epi32(s[0], s[1]), _mm256_add_epi32(s[2], s[3]));
  else return _mm256_add_epi32(s[0], s[1]);
}

// The rows r < R of one column: acc (8 lanes) and m chains, as int8_products.h writes them.
template <int R>
struct Chains {
  V acc[R], m[R];
  Chains() {
    for (int r = 0; r < R; ++r) acc[r] = m[r] = _mm256_setzero_ps();
  }
};

// Rows row0 .. row0 + R of an Int8Rows: each row's first value, scale and sum, found once a
// column (not at each block).
template <int R>
struct RowsAt {
  const int8_t* q[R];        // qk, or q0 for Q8_0
  const float* d[R];         // dk, or d0
  const float* t[R];         // t32 (Q4_K, Q5_K) or t16 (Q6_K)
  RowsAt(const Int8Rows& a, int row0, WeightDtype dt) {
    for (int r = 0; r < R; ++r) {
      const size_t i = static_cast<size_t>(row0 + r);
      const bool q80 = dt == WeightDtype::Q8_0, q6 = dt == WeightDtype::Q6_K;
      q[r] = (q80 ? a.q0.data() : a.qk.data()) + i * a.ld;
      d[r] = q80 ? a.d0.data() + i * (a.ld / 32) : a.dk.data() + i * (a.ld / 256);
      t[r] = q6 ? a.t16.data() + i * (a.ld / 16) : a.t32.data() + i * (a.ld / 32);
    }
  }
};

// Q4_K (as Q5_K with no fifth bits) and Q5_K: block b of the column for the rows at a.
template <int R, bool kFive>
HM_INLINE void k4_block(const uint8_t* blk, const RowsAt<R>& a, int b, Chains<R>& c) {
  const float d = f16_at(blk), dmin = f16_at(blk + 2);
  const __m128i smv = k4_scales_mins_v(blk + 4);
  const I sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smv));  // 8 scales, both halves
  const V mins = _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(smv, 8))));  // dmin * min_l
  const uint8_t* qs = blk + (kFive ? 48 : 16);
  const I nib = _mm256_set1_epi8(0x0F);
  I isum[R][kChains<R>];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < kChains<R>; ++k) isum[r][k] = _mm256_setzero_si256();
  const I qh = kFive ? load32(blk + 16) : _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const I v = load32(qs + 32 * j);
    I lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
    if constexpr (kFive) {  // bit 2j (2j + 1) of each qh byte, as 16
      const I one = _mm256_set1_epi8(1);
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
    }
    const I s_lo = _mm256_shuffle_epi8(sc16, load32(kPick16[2 * j])), s_hi = _mm256_shuffle_epi8(sc16, load32(kPick16[2 * j + 1]));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int8_t* q = a.q[r] + 256 * b + 64 * j;
      I& s0 = isum[r][(2 * j) % kChains<R>];
      I& s1 = isum[r][(2 * j + 1) % kChains<R>];
      s0 = dpw(s0, _mm256_maddubs_epi16(lo, load32(q)), s_lo);
      s1 = dpw(s1, _mm256_maddubs_epi16(hi, load32(q + 32)), s_hi);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const float da = a.d[r][b];
    c.acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * da), _mm256_cvtepi32_ps(join(isum[r])), c.acc[r]);
    c.m[r] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(a.t[r] + 8 * b), c.m[r]);
  }
}

// Q6_K: ql[128], qh[64], int8 scales[16], d.
template <int R>
HM_INLINE void q6k_block(const uint8_t* blk, const RowsAt<R>& a, int b, Chains<R>& c) {
  const float d = f16_at(blk + 208);
  const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
  const I nib = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
  I isum[R][kChains<R>];
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < kChains<R>; ++k) isum[r][k] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int n = 0; n < 2; ++n) {
    const I qh = load32(blk + 128 + 32 * n);
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {  // values 128n + 32t ..: ql's nibble t / 2, qh's bits 2t, 2t + 1
      const I ql = load32(blk + 64 * n + 32 * (t % 2));
      const I low = t < 2 ? _mm256_and_si256(ql, nib) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), nib);
      const I q = _mm256_or_si256(low, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), three), 4));  // 0 .. 63
      const I s16 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, _mm_load_si128(reinterpret_cast<const __m128i*>(kPick8[4 * n + t]))));
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const int8_t* qa = a.q[r] + 256 * b + 128 * n + 32 * t;
        I& s = isum[r][t % kChains<R>];
        s = dpw(s, _mm256_maddubs_epi16(q, load32(qa)), s16);
      }
    }
  }
  const V d32 = _mm256_set1_ps(32.0f * d);  // (32 d) * scale_g: groups 0-7, then 8-15
  const V s_lo = _mm256_mul_ps(d32, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
  const V s_hi = _mm256_mul_ps(d32, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc8, 8))));
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const float dd = d * a.d[r][b];
    c.acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(join(isum[r])), c.acc[r]);
    c.m[r] = _mm256_fmadd_ps(s_hi, _mm256_loadu_ps(a.t[r] + 16 * b + 8), _mm256_fmadd_ps(s_lo, _mm256_loadu_ps(a.t[r] + 16 * b), c.m[r]));
  }
}

// Q8_0: d, int8 qs[32].
template <int R>
HM_INLINE void q80_block(const uint8_t* blk, const RowsAt<R>& a, int b, Chains<R>& c) {
  const V d = _mm256_set1_ps(f16_at(blk));
  const I w = load32(blk + 2), aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const I qa = _mm256_sign_epi8(load32(a.q[r] + 32 * b), w);  // |w| * (a with w's sign) = w * a
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    const I lanes = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, qa);  // 4 products a lane at once
#else
    const I lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, qa), _mm256_set1_epi16(1));
#endif
    c.acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_broadcast_ss(a.d[r] + b)), _mm256_cvtepi32_ps(lanes), c.acc[r]);
  }
}

// ---- [columns] ---------------------------------------------------------------------------

template <int R>
void column_rows(const Int8Rows& rows, int row0, const uint8_t* src, WeightDtype dt, float* C, int ldc, bool accumulate) {
  Chains<R> c;
  const RowsAt<R> a(rows, row0, dt);
  const int bytes = weight_dtype_info(dt).bytes, nb = rows.K / weight_dtype_info(dt).block;
  // The column's next bytes into L2 as its blocks are read (a prefetch never faults).
  constexpr int kAhead = 512;
  switch (dt) {
    case WeightDtype::Q4_K:
      for (int b = 0; b < nb; ++b) __builtin_prefetch(src + b * bytes + kAhead, 0, 2), k4_block<R, false>(src + static_cast<size_t>(b) * bytes, a, b, c);
      break;
    case WeightDtype::Q5_K:
      for (int b = 0; b < nb; ++b) __builtin_prefetch(src + b * bytes + kAhead, 0, 2), k4_block<R, true>(src + static_cast<size_t>(b) * bytes, a, b, c);
      break;
    case WeightDtype::Q6_K:
      for (int b = 0; b < nb; ++b) __builtin_prefetch(src + b * bytes + kAhead, 0, 2), q6k_block<R>(src + static_cast<size_t>(b) * bytes, a, b, c);
      break;
    default:  // Q8_0
      for (int b = 0; b < nb; ++b) {
        if (b % 8 == 0) __builtin_prefetch(src + b * bytes + kAhead, 0, 2);
        q80_block<R>(src + static_cast<size_t>(b) * bytes, a, b, c);
      }
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) float l[8], m[8];
    _mm256_store_ps(l, c.acc[r]);
    _mm256_store_ps(m, c.m[r]);
    const float s = reduce8(l) - reduce8(m);
    float& out = C[static_cast<size_t>(row0 + r) * ldc];
    out = accumulate ? out + s : s;
  }
}
}  // namespace

// Rows in groups of kRows, outermost: a group's activations stay in L1 / L2 while it runs every
// column (a unit's columns stay in L2 between groups). Column by column, all rows each, the
// 1B shape's MLP out re-read its 128 rows' 1 MB of activations for each of 2,048 columns.
void int8_columns(const Int8Rows& a, int width, const uint8_t* const* src, const WeightDtype* dt, float* C, int ldc, bool accumulate) {
  int i = 0;
  for (; i + kRows <= a.M; i += kRows)
    for (int j = 0; j < width; ++j) column_rows<kRows>(a, i, src[j], dt[j], C + j, ldc, accumulate);
  for (int j = 0; j < width; ++j) switch (a.M - i) {
      case 3: column_rows<3>(a, i, src[j], dt[j], C + j, ldc, accumulate); break;
      case 2: column_rows<2>(a, i, src[j], dt[j], C + j, ldc, accumulate); break;
      case 1: column_rows<1>(a, i, src[j], dt[j], C + j, ldc, accumulate); break;
      default: break;
    }
}
#else
void int8_columns(const Int8Rows& a, int width, const uint8_t* const* src, const WeightDtype* dt, float* C, int ldc, bool accumulate) {
  for (int j = 0; j < width; ++j)
    for (int i = 0; i < a.M; ++i) {
      const float s = int8_dot_reference(a, i, src[j], dt[j]);
      float& out = C[static_cast<size_t>(i) * ldc + j];
      out = accumulate ? out + s : s;
    }
}
#endif

// ---- [reference] -------------------------------------------------------------------------

float int8_dot_reference(const Int8Rows& a, int row, const uint8_t* src, WeightDtype dt) {
  const int bytes = weight_dtype_info(dt).bytes, block = weight_dtype_info(dt).block, nb = a.K / block;
  const int8_t* q8 = (dt == WeightDtype::Q8_0 ? a.q0.data() : a.qk.data()) + static_cast<size_t>(row) * a.ld;
  const float* t32 = a.t32.data() + static_cast<size_t>(row) * (a.ld / 32);
  const float* t16 = a.t16.data() + static_cast<size_t>(row) * (a.ld / 16);
  float acc[8] = {}, m[8] = {};
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = src + static_cast<size_t>(b) * bytes;
    int qw[256], scale[256];  // the block's integers and each value's integer scale
    float dd = 0;
    if (dt == WeightDtype::Q8_0) {
      dd = half_at(blk) * a.d0[static_cast<size_t>(row) * (a.ld / 32) + b];
      for (int v = 0; v < 32; ++v) qw[v] = static_cast<int8_t>(blk[2 + v]), scale[v] = 1;
    } else if (dt == WeightDtype::Q6_K) {
      const float d = half_at(blk + 208);
      dd = d * a.dk[static_cast<size_t>(row) * (a.ld / 256) + b];
      for (int v = 0; v < 256; ++v) {
        const int n = v / 128, t = (v % 128) / 32, l = v % 32;
        const int low = (blk[64 * n + 32 * (t % 2) + l] >> (4 * (t / 2))) & 0xF, high = (blk[128 + 32 * n + l] >> (2 * t)) & 3;
        qw[v] = low | (high << 4), scale[v] = static_cast<int8_t>(blk[192 + v / 16]);
      }
      for (int g = 0; g < 16; ++g)  // the -32: groups 0-7, then 8-15, in lanes g % 8
        m[g % 8] = std::fma((32.0f * d) * static_cast<float>(static_cast<int8_t>(blk[192 + g])), t16[16 * b + g], m[g % 8]);
    } else {  // Q4_K, Q5_K
      const bool five = dt == WeightDtype::Q5_K;
      dd = half_at(blk) * a.dk[static_cast<size_t>(row) * (a.ld / 256) + b];
      uint8_t sm[16];  // sub-block j's scale and minimum: sm[j], sm[8 + j]
      for (int j = 0; j < 8; ++j) scale_min_k4(j, blk + 4, sm + j, sm + 8 + j);
      for (int v = 0; v < 256; ++v) {
        const int sub = v / 32, l = v % 32;
        const int q = (blk[(five ? 48 : 16) + 32 * (sub / 2) + l] >> (4 * (sub % 2))) & 0xF;
        qw[v] = q | (five ? ((blk[16 + l] >> sub) & 1) << 4 : 0), scale[v] = sm[sub];
      }
      for (int j = 0; j < 8; ++j) m[j] = std::fma(half_at(blk + 2) * static_cast<float>(sm[8 + j]), t32[8 * b + j], m[j]);
    }
    int lane[8] = {};
    for (int v = 0; v < block; ++v) lane[(v % 32) / 4] += scale[v] * qw[v] * q8[static_cast<size_t>(b) * block + v];
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(dd, static_cast<float>(lane[l]), acc[l]);
  }
  return reduce8(acc) - reduce8(m);
}

}  // namespace headmap
