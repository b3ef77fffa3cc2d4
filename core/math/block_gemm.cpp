// block_gemm.cpp: activations against block-kept weights in dot order (block_gemm.h).
//
// A few rows (the appended tokens: 1-3, 1-4 with AVX-512's 32 registers), G columns at a time, each
// row's G accumulators in registers over the whole of K (M * G chains hide the multiply-add's latency).
// Q8_0, Q4_0, IQ4_NL, Q4_K, Q5_K, Q6_K and IQ4_XS columns are widened block by block in
// registers, 8 values at a time, where they are multiplied; the other types (Q4_1, Q5_0, Q5_1,
// Q2_K, Q3_K, F16, BF16, F32) 256 values at a time (a whole number of every type's blocks) with
// widen_weights into a scratch that stays in L1. Either way the values are multiplied along k,
// 8 at a time, by the rows of A: no transpose. More rows (the full forward) run many_rows below.
// With AVX-512 VBMI, 1-2 rows of Q4_K, Q6_K, Q8_0, IQ4_XS and IQ4_NL hold two columns in each
// 16-lane register instead ([pairs]: lane 2i + c is column c's lane i, the same chains and bits).
// BF16 products (Bf16Products, avx512_bf16; off unless asked) change the many-row kernel only
// (rows_pairs: the chunk as BF16 pairs, vdpbf16ps, A's rows as pairs from the caller, a_pairs).
// Sections: [generic] [in registers] [pairs] [many rows]
#include "core/math/block_gemm.h"

#include "core/math/half.h"
#include "core/math/packed_gemm.h"
#include "core/math/weight_dtype_scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace headmap {

namespace {
constexpr int kChunk = 256;  // values of each column widened at a time
constexpr int kLanes = 8;    // the dot order's lanes (fixed: not the ISA's width)

inline int round8(int n) { return (n + kLanes - 1) / kLanes * kLanes; }

// Values [k0, k0 + n) of the column at src in dt into w[0 .. round8(n)), zero past n (k0: whole blocks).
inline void widen_chunk(const uint8_t* src, WeightDtype dt, int k0, int n, float* w) {
  const int64_t at = dtype_bytes(dt, k0), bytes = dtype_bytes(dt, n);
  // The column's next chunk is fetched while this one is widened (a prefetch never faults).
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(src + at + bytes + off, 0, 0);
  widen_weights(dt, src + at, n, w);
  std::fill(w + n, w + round8(n), 0.0f);
}

// A's rows [0, M) over [k0, k0 + n) as rows of round8(n) values: A itself when n is a multiple
// of 8, else a copy padded with zeros (the missing values multiply the padded zeros).
inline const float* a_rows(int M, const float* A, int lda, int k0, int n, int* ld) {
  if (n % kLanes == 0) {
    *ld = lda;
    return A + k0;
  }
  thread_local std::vector<float> pad;
  const int n8 = round8(n);
  pad.assign(static_cast<size_t>(M) * n8, 0.0f);
  for (int i = 0; i < M; ++i) std::copy_n(A + static_cast<size_t>(i) * lda + k0, n, pad.data() + static_cast<size_t>(i) * n8);
  *ld = n8;
  return pad.data();
}

inline void put(float* c, float s, bool accumulate) { *c = accumulate ? *c + s : s; }

#if defined(__AVX2__) && defined(__FMA__)
using V = __m256;
using I = __m256i;
#define HM_INLINE inline __attribute__((always_inline))

// C's M rows, columns [0, cols) from C: each accumulator's eight lane sums reduced (reduce8).
template <int M, int G>
HM_INLINE void store_sums(V (&acc)[M][G], int cols, float* C, int ldc, bool accumulate) {
  for (int i = 0; i < M; ++i)
    for (int g = 0; g < cols; ++g) {
      alignas(32) float l[kLanes];
      _mm256_store_ps(l, acc[i][g]);
      put(C + static_cast<size_t>(i) * ldc + g, reduce8(l), accumulate);
    }
}

// ---- [generic] the generic path: each column widened through a scratch that stays in L1 ----

// M rows against columns [g0, g0 + G) (those below width), the accumulators in registers.
template <int M, int G>
void few_rows(int g0, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
              bool accumulate) {
  alignas(64) thread_local float w[G * kChunk];
  const int cols = std::min(G, width - g0);
  V acc[M][G];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[i][g] = _mm256_setzero_ps();
  for (int k0 = 0; k0 < K; k0 += kChunk) {
    const int n = std::min(kChunk, K - k0), n8 = round8(n);
    for (int g = 0; g < cols; ++g) widen_chunk(src[g0 + g], dt[g0 + g], k0, n, w + g * kChunk);
    for (int g = cols; g < G; ++g) std::fill_n(w + g * kChunk, n8, 0.0f);
    int ld;
    const float* a = a_rows(M, A, lda, k0, n, &ld);
    for (int k = 0; k < n8; k += kLanes) {
      V av[M];
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) av[i] = _mm256_loadu_ps(a + static_cast<size_t>(i) * ld + k);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        const V wv = _mm256_load_ps(w + g * kChunk + k);
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) acc[i][g] = _mm256_fmadd_ps(av[i], wv, acc[i][g]);
      }
    }
  }
  store_sums<M, G>(acc, cols, C + g0, ldc, accumulate);
}

// ---- [in registers] block types widened in registers, 8 values at a time where they are multiplied ----
// A block type's values come in sub-blocks of 32. `scales(b, sc)` writes the block's float
// scales (and negated minimums) to sc[0 .. kScales); `sub<S>(b, sc, use)` then calls use(l, w)
// for l = 0..3, w the values 32S + 8l .. 32S + 8l + 7. Both use the operations of
// widen_weights' vectorised twin (weight_dtype.cpp) in each lane, so the values are the same
// floats bit for bit (the scales of a loaded matrix are finite: assign_blocks, so _cvtsh_ss
// equals half_to_float; d * float(s) is the same product eight lanes at a time).
inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return half_to_float(h);
#endif
}
inline I u8x8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
inline I k32(int v) { return _mm256_set1_epi32(v); }
inline V fl(I v) { return _mm256_cvtepi32_ps(v); }
inline V bcast(const float* p) { return _mm256_broadcast_ss(p); }

// The 32 int8 of q, 8 at a time: use(l, v) for l = 0..3, v bytes 8l .. 8l + 7 as floats.
template <class Use>
HM_INLINE void int8_quarters(I q, Use&& use) {
  const __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
  const __m128i part[4] = {q0, _mm_srli_si128(q0, 8), q1, _mm_srli_si128(q1, 8)};
#pragma GCC unroll 8
  for (int l = 0; l < 4; ++l) use(l, fl(_mm256_cvtepi8_epi32(part[l])));
}

struct Q8_0Block {  // d, int8 q[32]: d * q
  static constexpr int kValues = 32, kBytes = 34, kScales = 1, kUnroll = 1;
  static HM_INLINE void scales(const uint8_t* b, float* sc) { sc[0] = half_at(b); }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int, Use&& use) {
    const V d = bcast(sc);
#pragma GCC unroll 8
    for (int l = 0; l < 4; ++l) use(l, _mm256_mul_ps(d, fl(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + 8 * l))))));
  }
};
struct Q4_0Block {  // d, qs[16] (values 0-15 low nibbles, 16-31 high): d * (q - 8)
  static constexpr int kValues = 32, kBytes = 18, kScales = 1, kUnroll = 1;
  static HM_INLINE void scales(const uint8_t* b, float* sc) { sc[0] = half_at(b); }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int, Use&& use) {
    const V d = bcast(sc);
#pragma GCC unroll 8
    for (int l = 0; l < 2; ++l) use(l, _mm256_mul_ps(d, fl(_mm256_sub_epi32(_mm256_and_si256(u8x8(b + 2 + 8 * l), k32(0xF)), k32(8)))));
#pragma GCC unroll 8
    for (int l = 0; l < 2; ++l) use(2 + l, _mm256_mul_ps(d, fl(_mm256_sub_epi32(_mm256_srli_epi32(u8x8(b + 2 + 8 * l), 4), k32(8)))));
  }
};
// Q4_K's and Q5_K's eight sub-block scales d * s and negated minimums -(dmin * m) from the 12
// bytes at q (scale_min_k4, eight lanes at a time): sc[0..8) and sc[8..16).
HM_INLINE void k4_scales(float d, float dmin, const uint8_t* q, float* sc) {
  const I b0 = u8x8(q), b4 = u8x8(q + 4);  // lane j: q[j], q[j + 4]
  const I low_s = _mm256_and_si256(b0, k32(63)), low_m = _mm256_and_si256(b4, k32(63));  // j < 4
  const I top = _mm256_slli_epi32(_mm256_srli_epi32(_mm256_permutevar8x32_epi32(b0, _mm256_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3)), 6), 4);
  const I high_s = _mm256_or_si256(_mm256_and_si256(b4, k32(0xF)), top);                                         // j >= 4
  const I high_m = _mm256_or_si256(_mm256_srli_epi32(b4, 4), _mm256_slli_epi32(_mm256_srli_epi32(b0, 6), 4));  // j >= 4
  const V s = fl(_mm256_blend_epi32(low_s, high_s, 0xF0)), m = fl(_mm256_blend_epi32(low_m, high_m, 0xF0));
  _mm256_storeu_ps(sc, _mm256_mul_ps(_mm256_set1_ps(d), s));
  _mm256_storeu_ps(sc + 8, _mm256_xor_ps(_mm256_mul_ps(_mm256_set1_ps(dmin), m), _mm256_set1_ps(-0.0f)));
}
struct Q4_KBlock {  // d, dmin, scales[12], qs[128]: fma(d * s, q, -(dmin * m)) per sub-block of 32
  static constexpr int kValues = 256, kBytes = 144, kScales = 16, kUnroll = 2;
  static HM_INLINE void scales(const uint8_t* b, float* sc) { k4_scales(half_at(b), half_at(b + 2), b + 4, sc); }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int j, Use&& use) {  // sub-block 2j + S: qs[32j ..], nibble S
    const V d = bcast(sc + 2 * j + S), m = bcast(sc + 8 + 2 * j + S);
    const uint8_t* q = b + 16 + 32 * j;
#pragma GCC unroll 8
    for (int l = 0; l < 4; ++l) {
      const I v = u8x8(q + 8 * l);
      use(l, _mm256_fmadd_ps(d, fl(S % 2 ? _mm256_srli_epi32(v, 4) : _mm256_and_si256(v, k32(0xF))), m));
    }
  }
};
struct Q5_KBlock {  // d, dmin, scales[12], qh[32] (bit s: the fifth bit of sub-block s), qs[128]: as Q4_K
  static constexpr int kValues = 256, kBytes = 176, kScales = 16, kUnroll = 2;
  static HM_INLINE void scales(const uint8_t* b, float* sc) { k4_scales(half_at(b), half_at(b + 2), b + 4, sc); }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int j, Use&& use) {  // sub-block 2j + S
    const V d = bcast(sc + 2 * j + S), m = bcast(sc + 8 + 2 * j + S);
    const uint8_t *qh = b + 16, *q = b + 48 + 32 * j;
    const I bit = k32(2 * j + S);
#pragma GCC unroll 8
    for (int l = 0; l < 4; ++l) {
      const I v = u8x8(q + 8 * l), h = _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(u8x8(qh + 8 * l), bit), k32(1)), 4);
      use(l, _mm256_fmadd_ps(d, fl(_mm256_or_si256(S % 2 ? _mm256_srli_epi32(v, 4) : _mm256_and_si256(v, k32(0xF)), h)), m));
    }
  }
};
struct Q6_KBlock {  // ql[128], qh[64], int8 scales[16], d: (d * sc) * (q - 32), q six bits
  static constexpr int kValues = 256, kBytes = 210, kScales = 16, kUnroll = 4;
  static HM_INLINE void scales(const uint8_t* b, float* sc) {  // d * sc[i], one per 16 values
    const V d = _mm256_set1_ps(half_at(b + 208));
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
    _mm256_storeu_ps(sc, _mm256_mul_ps(d, fl(_mm256_cvtepi8_epi32(raw))));
    _mm256_storeu_ps(sc + 8, _mm256_mul_ps(d, fl(_mm256_cvtepi8_epi32(_mm_srli_si128(raw, 8)))));
  }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int n, Use&& use) {  // sub-block 4n + S
    // Values 128n + 32t ..: ql[64n + 32 (t % 2) ..]'s nibble t / 2 and qh[32n ..]'s bits 2t, 2t + 1,
    // the 32 six-bit quants made at once in bytes, then widened 8 at a time.
    constexpr int t = S;
    const I ql = _mm256_loadu_si256(reinterpret_cast<const I*>(b + 64 * n + 32 * (t % 2)));
    const I qh = _mm256_loadu_si256(reinterpret_cast<const I*>(b + 128 + 32 * n));
    const I nib = _mm256_set1_epi8(0xF);
    const I low = t < 2 ? _mm256_and_si256(ql, nib) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), nib);
    const I high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), _mm256_set1_epi8(3)), 4);
    const I q = _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(32));  // int8 -32 .. 31
    int8_quarters(q, [&](int l, V v) { use(l, _mm256_mul_ps(bcast(sc + 8 * n + 2 * t + l / 2), v)); });
  }
};
// IQ4_NL's block and IQ4_XS's sub-blocks: 16 bytes of nibbles looked up in kIq4nlValues (iq4_values32), times a scale.
struct IQ4_NLBlock {  // d, qs[16]: d * kIq4nlValues[q]
  static constexpr int kValues = 32, kBytes = 18, kScales = 1, kUnroll = 1;
  static HM_INLINE void scales(const uint8_t* b, float* sc) { sc[0] = half_at(b); }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int, Use&& use) {
    const V d = bcast(sc);
    int8_quarters(iq4_values32(b + 2), [&](int l, V v) { use(l, _mm256_mul_ps(d, v)); });
  }
};
struct IQ4_XSBlock {  // d, scales_h, scales_l[4], qs[128]: (d * (ls - 32)) * kIq4nlValues[q] per sub-block of 32
  static constexpr int kValues = 256, kBytes = 136, kScales = 8, kUnroll = 2;
  static HM_INLINE void scales(const uint8_t* b, float* sc) {  // d * (ls - 32), one per sub-block
    const float d = half_at(b);
    uint16_t scales_h;
    std::memcpy(&scales_h, b + 2, 2);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) sc[ib] = d * static_cast<float>(iq4_xs_scale(ib, scales_h, b + 4));
  }
  template <int S, class Use>
  static HM_INLINE void sub_at(const uint8_t* b, const float* sc, int j, Use&& use) {  // sub-block 2j + S
    const V d = bcast(sc + 2 * j + S);
    int8_quarters(iq4_values32(b + 8 + 16 * (2 * j + S)), [&](int l, V v) { use(l, _mm256_mul_ps(d, v)); });
  }
};

// Sub-block S of a block (S a constant): sub_at<S % kUnroll> of unrolled group S / kUnroll.
template <class Blk, int S, class Use>
HM_INLINE void sub(const uint8_t* b, const float* sc, Use&& use) {
  Blk::template sub_at<S % Blk::kUnroll>(b, sc, S / Blk::kUnroll, static_cast<Use&&>(use));
}

// Sub-block S of column g's block at `b[g]` (its scales at sc[g]) into the accumulators of the
// M rows (A at `a`, the block's first value), then the next column's: g and S constants, so the
// accumulators stay in registers, each column's chain 4 steps at a time between the others'.
template <int M, int G, class Blk, int S, int g = 0>
HM_INLINE void columns_sub(V (&acc)[M][G], const uint8_t* const (&b)[G], const float (*sc)[Blk::kScales], const float* a, int lda, int j) {
  if constexpr (g < G) {
    // The column's bytes through a pointer the compiler cannot see is the last sub-block's (an
    // empty asm, where it is used): sub-blocks S and S + 1 may read the same bytes (Q4_K's two
    // nibbles), and without it the compiler keeps all G columns' loads for the next sub-block
    // and spills them. (A "memory" clobber did the same but sent every accumulator through the
    // stack once per sub-block.)
    const uint8_t* bg = b[g];
    asm volatile("" : "+r"(bg));
    // The scales through one base register per sub-block (an empty asm at its first column):
    // else GCC hoists all G x 16 of their addresses out of the block loop, spills them, and
    // loads one before each broadcast.
    if constexpr (g == 0) asm volatile("" : "+r"(sc));
    // From 4 rows on, A's 4 M vectors of a sub-block kept for the next column would take the
    // registers the accumulators need: each column loads them again (A stays in L1).
    const float* ag = a;
    if constexpr (M >= 4) asm volatile("" : "+r"(ag));
    Blk::template sub_at<S>(bg, sc[g], j, [&](int l, V w) {
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) acc[i][g] = _mm256_fmadd_ps(_mm256_loadu_ps(ag + static_cast<size_t>(i) * lda + 32 * S + 8 * l), w, acc[i][g]);
    });
    columns_sub<M, G, Blk, S, g + 1>(acc, b, sc, a, lda, j);
  } else if constexpr (S + 1 < Blk::kUnroll) {
    columns_sub<M, G, Blk, S + 1, 0>(acc, b, sc, a, lda, j);
  }
}

// Where to prefetch for block `blk` of a column of `nb` blocks (`col` its first byte, `n`
// columns to a group): ~512 bytes further in the column, or past its end as far into the
// column n columns on (a thread's next group: the columns of a matrix lie one after another).
// A column of the 1B shape's K = 2048 is only 8 Q4_K blocks, so prefetching only within the
// column left its first blocks to demand misses. (A prefetch never faults.) Into L2: a Q4_K_M
// row of the 1B shape 64-67 ms, 74-77 non-temporal (Zen 4 VM, tests/bench/README.md, 2026-11-29).
template <class Blk>
HM_INLINE const uint8_t* prefetch_at(const uint8_t* col, int blk, int nb, int n) {
  constexpr int kAhead = (512 + Blk::kBytes - 1) / Blk::kBytes;
  const int at = blk + kAhead;
  return at < nb ? col + static_cast<size_t>(at) * Blk::kBytes : col + static_cast<size_t>(n) * nb * Blk::kBytes + static_cast<size_t>(at - nb) * Blk::kBytes;
}

// M rows against columns [g0, g0 + G), all of the type Blk widens, each block widened in
// registers where it is multiplied (no scratch): for each block, every column's scales, then
// sub-block by sub-block, column by column. Columns past `cols` repeat the last one, not stored.
template <int M, int G, class Blk>
void few_rows_blocks(int g0, int width, const uint8_t* const* src, int K, const float* A, int lda, float* C, int ldc, bool accumulate) {
  const int cols = std::min(G, width - g0);
  const uint8_t* p[G];
  for (int g = 0; g < G; ++g) p[g] = src[g0 + std::min(g, cols - 1)];
  V acc[M][G];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[i][g] = _mm256_setzero_ps();
  alignas(32) float sc[G][Blk::kScales];
  for (int blk = 0; blk < K / Blk::kValues; ++blk) {
    const uint8_t* b[G];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      b[g] = p[g] + static_cast<size_t>(blk) * Blk::kBytes;
      const uint8_t* pf = prefetch_at<Blk>(p[g], blk, K / Blk::kValues, G);
      for (int off = 0; off < Blk::kBytes; off += 64) __builtin_prefetch(pf + off, 0, 2);  // into L2 (prefetch_at)
      Blk::scales(b[g], sc[g]);
    }
    const float* a = A + static_cast<size_t>(blk) * Blk::kValues;
    for (int j = 0; j < Blk::kValues / 32 / Blk::kUnroll; ++j) columns_sub<M, G, Blk, 0>(acc, b, sc, a + 32 * Blk::kUnroll * j, lda, j);
  }
  store_sums<M, G>(acc, cols, C + g0, ldc, accumulate);
}

// Whether columns [g0, g0 + cols) all have column g0's type (a kernel runs one type).
inline bool one_type(const WeightDtype* dt, int g0, int cols) {
  for (int g = 1; g < cols; ++g)
    if (dt[g0 + g] != dt[g0]) return false;
  return true;
}

// Columns [g0, g0 + G) of M rows in 8 lanes: in registers for the block types above, else the scratch.
template <int M, int G>
void few_rows_group(int g0, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
                    bool accumulate) {
  const bool same = one_type(dt, g0, std::min(G, width - g0));
  const WeightDtype t = dt[g0];
  if (same && t == WeightDtype::Q8_0) few_rows_blocks<M, G, Q8_0Block>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else if (same && t == WeightDtype::Q4_K) few_rows_blocks<M, G, Q4_KBlock>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else if (same && t == WeightDtype::Q6_K) few_rows_blocks<M, G, Q6_KBlock>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else if (same && t == WeightDtype::Q5_K) few_rows_blocks<M, G, Q5_KBlock>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else if (same && t == WeightDtype::Q4_0) few_rows_blocks<M, G, Q4_0Block>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else if (same && t == WeightDtype::IQ4_XS) few_rows_blocks<M, G, IQ4_XSBlock>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else if (same && t == WeightDtype::IQ4_NL) few_rows_blocks<M, G, IQ4_NLBlock>(g0, width, src, K, A, lda, C, ldc, accumulate);
  else few_rows<M, G>(g0, width, src, dt, K, A, lda, C, ldc, accumulate);
}

// ---- [pairs] with AVX-512 VBMI, 1-2 rows: two columns in each 16-lane register ----
// Lane 2l + c of a register holds column c's lane l (so each column's eight lanes keep their
// chains: the same dot order, the same bits). One vpermb spreads 8 bytes of each of the two
// columns into the 16 dwords, so a 16-lane widening and multiply-add serve two columns: port 5
// takes the byte shuffles and half the 16-lane arithmetic, where the 8-lane kernels above left
// it idle (they sat at the two 256-bit multiply-add ports' limit: 4 operations per 8 values of
// Q4_K, 3.3-4.7 GB/s a core with the weights in L1, tests/bench/README.md).
#if defined(__AVX512VBMI__) && defined(__AVX512DQ__) && defined(__AVX512BW__)
using Z = __m512;
using ZI = __m512i;
#define HM_PAIRS 1

// kSpread.idx[r]: byte 4(2i + c) + at (i = 0..7, c = 0, 1) takes byte 32c + 8r + i (r = 0..3),
// so a register holding two columns' 32 bytes, column c at 32c, becomes 16 dwords (at = 0: the
// byte at the bottom, zero-extended under mask kLow; at = 3: at the top, for a signed shift).
// Rows kByte4 and kByteMod4 take byte 32c + 4 + i and 32c + i % 4 (Q4_K's packed scales).
constexpr int kByte4 = 4, kByteMod4 = 5;
struct Spread {
  alignas(64) uint8_t idx[6][64];
  constexpr Spread() : idx{} {
    for (int r = 0; r < 6; ++r)
      for (int d = 0; d < 16; ++d) {
        const int i = d / 2, at_byte = r < 4 ? 8 * r + i : r == kByte4 ? 4 + i : i % 4;
        for (int at = 0; at < 4; ++at) idx[r][4 * d + at] = static_cast<uint8_t>(32 * (d % 2) + at_byte);
      }
  }
};
constexpr Spread kSpread{};
constexpr __mmask64 kLow = 0x1111111111111111ull, kTop = 0x8888888888888888ull;
HM_INLINE ZI spread(int l, ZI two, __mmask64 where) {
  return _mm512_maskz_permutexvar_epi8(where, _mm512_load_si512(kSpread.idx[l]), two);
}
// Two columns' 32 bytes at p0 and p1 in one register (column c at byte 32c).
HM_INLINE ZI two_cols(const uint8_t* p0, const uint8_t* p1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)), 1);
}
HM_INLINE Z pair_of(float x0, float x1) { return _mm512_broadcast_f32x2(_mm_unpacklo_ps(_mm_set_ss(x0), _mm_set_ss(x1))); }  // (x0, x1) in every lane pair
// (x[0], x[1]) in every lane pair (__m128i loads may alias the floats; a double* load would not, and GCC reordered it).
HM_INLINE Z bcast2(const float* x) { return _mm512_broadcast_f32x2(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x)))); }

// Per type: pair_scales(b0, b1, scp) writes both columns' scales interleaved (scp[2s + c]);
// pair_subs(b0, b1, scp, j, use) calls use(S, l, w) for S < kUnroll, l = 0..3, w lane 2i + c
// column c's value 32 (kUnroll j + S) + 8l + i: the 8-lane twins' operations, the same floats.
struct Q8_0Pair {
  using Blk = Q8_0Block;
  static HM_INLINE void pair_scales(const uint8_t* b0, const uint8_t* b1, float* scp) { scp[0] = half_at(b0), scp[1] = half_at(b1); }
  template <class Use>
  static HM_INLINE void pair_subs(const uint8_t* b0, const uint8_t* b1, const float* scp, int, Use&& use) {
    const Z d = bcast2(scp);
    const ZI q = two_cols(b0 + 2, b1 + 2);  // int8
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) use(0, l, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_srai_epi32(spread(l, q, kTop), 24))));
  }
};
struct Q4_KPair {
  using Blk = Q4_KBlock;
  static HM_INLINE void pair_scales(const uint8_t* b0, const uint8_t* b1, float* scp) {
    // k4_scales for both columns at once, lane 2j + c column c's sub-block j: d * s at
    // scp[2j + c], -(dmin * m) at scp[16 + 2j + c].
    const ZI raw = two_cols(b0 + 4, b1 + 4);
    const ZI q0 = spread(0, raw, kLow), q4 = spread(kByte4, raw, kLow), qt = spread(kByteMod4, raw, kLow);  // q[j], q[j + 4], q[j % 4]
    const ZI k63 = _mm512_set1_epi32(63), k15 = _mm512_set1_epi32(0xF);
    const ZI high_s = _mm512_or_si512(_mm512_and_si512(q4, k15), _mm512_slli_epi32(_mm512_srli_epi32(qt, 6), 4));
    const ZI high_m = _mm512_or_si512(_mm512_srli_epi32(q4, 4), _mm512_slli_epi32(_mm512_srli_epi32(q0, 6), 4));
    const __mmask16 high = 0xFF00;  // sub-blocks 4-7
    const Z sv = _mm512_cvtepi32_ps(_mm512_mask_blend_epi32(high, _mm512_and_si512(q0, k63), high_s));
    const Z mv = _mm512_cvtepi32_ps(_mm512_mask_blend_epi32(high, _mm512_and_si512(q4, k63), high_m));
    _mm512_store_ps(scp, _mm512_mul_ps(pair_of(half_at(b0), half_at(b1)), sv));
    _mm512_store_ps(scp + 16, _mm512_xor_ps(_mm512_mul_ps(pair_of(half_at(b0 + 2), half_at(b1 + 2)), mv), _mm512_set1_ps(-0.0f)));
  }
  template <class Use>
  static HM_INLINE void pair_subs(const uint8_t* b0, const uint8_t* b1, const float* scp, int j, Use&& use) {
    const ZI q = two_cols(b0 + 16 + 32 * j, b1 + 16 + 32 * j), nib = _mm512_set1_epi8(0xF);
    const ZI half[2] = {_mm512_and_si512(q, nib), _mm512_and_si512(_mm512_srli_epi16(q, 4), nib)};
#pragma GCC unroll 2
    for (int S = 0; S < 2; ++S) {
      const Z d = bcast2(scp + 2 * (2 * j + S)), m = bcast2(scp + 16 + 2 * (2 * j + S));
#pragma GCC unroll 4
      for (int l = 0; l < 4; ++l) use(S, l, _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(spread(l, half[S], kLow)), m));
    }
  }
};
struct Q6_KPair {
  using Blk = Q6_KBlock;
  static HM_INLINE void pair_scales(const uint8_t* b0, const uint8_t* b1, float* scp) {
    // Q6_KBlock::scales for both columns at once: d * sc[s] at scp[2s + c].
    const ZI raw = _mm512_inserti32x4(_mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 192))),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 192)), 2);  // column c at byte 32c
    const Z d = pair_of(half_at(b0 + 208), half_at(b1 + 208));
    _mm512_store_ps(scp, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_srai_epi32(spread(0, raw, kTop), 24))));
    _mm512_store_ps(scp + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_srai_epi32(spread(1, raw, kTop), 24))));
  }
  template <class Use>
  static HM_INLINE void pair_subs(const uint8_t* b0, const uint8_t* b1, const float* scp, int n, Use&& use) {
    const ZI qh = two_cols(b0 + 128 + 32 * n, b1 + 128 + 32 * n), nib = _mm512_set1_epi8(0xF), three = _mm512_set1_epi8(3);
    const ZI ql[2] = {two_cols(b0 + 64 * n, b1 + 64 * n), two_cols(b0 + 64 * n + 32, b1 + 64 * n + 32)};
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const ZI low = t < 2 ? _mm512_and_si512(ql[t % 2], nib) : _mm512_and_si512(_mm512_srli_epi16(ql[t % 2], 4), nib);
      const ZI q = _mm512_or_si512(low, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * t), three), 4));  // 0 .. 63
#pragma GCC unroll 4
      for (int l = 0; l < 4; ++l) {
        const ZI v = _mm512_sub_epi32(spread(l, q, kLow), _mm512_set1_epi32(32));
        use(t, l, _mm512_mul_ps(bcast2(scp + 2 * (8 * n + 2 * t + l / 2)), _mm512_cvtepi32_ps(v)));
      }
    }
  }
};

// IQ4_NL's and IQ4_XS's values by nibble: kIq4nlValues as floats (exact), looked up with vpermps,
// which reads an index's low 4 bits. iq4_pair_value(q, r, l): values 8l .. 8l + 7 of the 32
// whose 16 bytes of nibbles lie at byte 32c + 16r of q[0] (column c; q[1] the same bytes shifted
// right by 4): kSpread's row 2r + l % 2 of q[l / 2] (low nibbles for l < 2, then high).
struct Iq4Floats {
  alignas(64) float v[16];
  constexpr Iq4Floats() : v{} {
    for (int i = 0; i < 16; ++i) v[i] = kIq4nlValues[i];
  }
};
constexpr Iq4Floats kIq4Floats{};
HM_INLINE Z iq4_pair_value(const ZI (&q)[2], int r, int l) {
  return _mm512_permutexvar_ps(spread(2 * r + l % 2, q[l / 2], kLow), _mm512_load_ps(kIq4Floats.v));
}
struct IQ4_NLPair {
  using Blk = IQ4_NLBlock;
  static HM_INLINE void pair_scales(const uint8_t* b0, const uint8_t* b1, float* scp) { scp[0] = half_at(b0), scp[1] = half_at(b1); }
  template <class Use>
  static HM_INLINE void pair_subs(const uint8_t* b0, const uint8_t* b1, const float* scp, int, Use&& use) {
    const Z d = bcast2(scp);
    const ZI q = _mm512_inserti32x4(_mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 2))),
                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 2)), 2);  // column c at byte 32c
    const ZI qs[2] = {q, _mm512_srli_epi16(q, 4)};
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) use(0, l, _mm512_mul_ps(d, iq4_pair_value(qs, 0, l)));
  }
};
struct IQ4_XSPair {
  using Blk = IQ4_XSBlock;
  static HM_INLINE void pair_scales(const uint8_t* b0, const uint8_t* b1, float* scp) {
    // IQ4_XSBlock::scales for both columns at once, d * (ls - 32) at scp[2ib + c]: ls's low 4
    // bits at bit 4 ib of scales_l (the 32 bits at b + 4), its high 2 at bit 16 + 2 ib of the
    // 32 bits at b (d, then scales_h).
    uint32_t w[4];
    std::memcpy(&w[0], b0, 4), std::memcpy(&w[1], b1, 4), std::memcpy(&w[2], b0 + 4, 4), std::memcpy(&w[3], b1 + 4, 4);
    const ZI h = _mm512_broadcast_i32x2(_mm_setr_epi32(static_cast<int>(w[0]), static_cast<int>(w[1]), 0, 0));
    const ZI lo = _mm512_broadcast_i32x2(_mm_setr_epi32(static_cast<int>(w[2]), static_cast<int>(w[3]), 0, 0));
    const ZI ib = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const ZI ls_low = _mm512_and_si512(_mm512_srlv_epi32(lo, _mm512_slli_epi32(ib, 2)), _mm512_set1_epi32(0xF));
    const ZI ls_high = _mm512_and_si512(_mm512_srlv_epi32(h, _mm512_add_epi32(_mm512_slli_epi32(ib, 1), _mm512_set1_epi32(16))), _mm512_set1_epi32(3));
    const ZI ls = _mm512_sub_epi32(_mm512_or_si512(ls_low, _mm512_slli_epi32(ls_high, 4)), _mm512_set1_epi32(32));
    _mm512_store_ps(scp, _mm512_mul_ps(pair_of(half_at(b0), half_at(b1)), _mm512_cvtepi32_ps(ls)));
  }
  template <class Use>
  static HM_INLINE void pair_subs(const uint8_t* b0, const uint8_t* b1, const float* scp, int j, Use&& use) {
    const ZI q = two_cols(b0 + 8 + 32 * j, b1 + 8 + 32 * j);  // sub-blocks 2j and 2j + 1: column c's qs at 32c and 32c + 16
    const ZI qs[2] = {q, _mm512_srli_epi16(q, 4)};
#pragma GCC unroll 2
    for (int S = 0; S < 2; ++S) {
      const Z d = bcast2(scp + 2 * (2 * j + S));
#pragma GCC unroll 4
      for (int l = 0; l < 4; ++l) use(S, l, _mm512_mul_ps(d, iq4_pair_value(qs, S, l)));
    }
  }
};

// M rows (1-2) against columns [g0, g0 + 2P) (those below width), all of Pair's type: P pairs,
// M * P accumulators of 16 lanes. Columns past `cols` repeat the last one and are not stored.
template <int M, int P, class Pair>
void few_rows_pairs(int g0, int width, const uint8_t* const* src, int K, const float* A, int lda, float* C, int ldc, bool accumulate) {
  using Blk = typename Pair::Blk;
  constexpr int U = Blk::kUnroll, kScp = 2 * Blk::kScales;
  const int cols = std::min(2 * P, width - g0);
  const uint8_t* p[2 * P];
  for (int g = 0; g < 2 * P; ++g) p[g] = src[g0 + std::min(g, cols - 1)];
  Z acc[M][P];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) acc[i][q] = _mm512_setzero_ps();
  const ZI dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  alignas(64) float scp[P][kScp];
  alignas(64) float ad[M][U][4][16];  // A's values of a group, each twice (lanes 2l, 2l + 1)
  for (int blk = 0; blk < K / Blk::kValues; ++blk) {
    const uint8_t* b[2 * P];
#pragma GCC unroll 16
    for (int g = 0; g < 2 * P; ++g) {
      b[g] = p[g] + static_cast<size_t>(blk) * Blk::kBytes;
      const uint8_t* pf = prefetch_at<Blk>(p[g], blk, K / Blk::kValues, 2 * P);
      for (int off = 0; off < Blk::kBytes; off += 64) __builtin_prefetch(pf + off, 0, 2);  // into L2 (prefetch_at)
    }
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) Pair::pair_scales(b[2 * q], b[2 * q + 1], scp[q]);
    for (int j = 0; j < Blk::kValues / 32 / U; ++j) {
      const float* a = A + static_cast<size_t>(blk) * Blk::kValues + 32 * U * j;
      for (int i = 0; i < M; ++i)
        for (int S = 0; S < U; ++S)
          for (int l = 0; l < 4; ++l)
            _mm512_store_ps(ad[i][S][l], _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(a + static_cast<size_t>(i) * lda + 32 * S + 8 * l))));
#pragma GCC unroll 8
      for (int q = 0; q < P; ++q) {
        const uint8_t *b0 = b[2 * q], *b1 = b[2 * q + 1];
        asm volatile("" : "+r"(b0), "+r"(b1));  // as columns_sub: no loads hoisted out for the next group
        Pair::pair_subs(b0, b1, scp[q], j, [&](int S, int l, Z w) {
#pragma GCC unroll 2
          for (int i = 0; i < M; ++i) acc[i][q] = _mm512_fmadd_ps(_mm512_load_ps(ad[i][S][l]), w, acc[i][q]);
        });
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int q = 0; q < P; ++q) {
      alignas(64) float s[16];
      _mm512_store_ps(s, acc[i][q]);
      for (int c = 0; c < 2; ++c) {
        if (2 * q + c >= cols) break;
        const float l8[kLanes] = {s[c], s[2 + c], s[4 + c], s[6 + c], s[8 + c], s[10 + c], s[12 + c], s[14 + c]};
        put(C + static_cast<size_t>(i) * ldc + g0 + 2 * q + c, reduce8(l8), accumulate);
      }
    }
}
#endif

template <int M>
void few_rows_all(int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc, bool accumulate) {
  // M * G chains: 8, 8, 12, and 8 for 4 rows (AVX-512: 32 registers); G divides kBlockColumns.
  constexpr int G = M == 1 ? 8 : M <= 3 ? 4 : 2;
#if defined(HM_PAIRS)
  // 1-2 rows: two columns a register, 8 columns (4 pairs) at a time: 4 or 8 chains. (8 pairs for
  // one row were faster with the weights in L1 but slower streaming them from memory: 16
  // columns' streams at once; tests/bench/README.md, q4k9.)
  constexpr int P = 4;
  if constexpr (M <= 2) {
    for (int g0 = 0; g0 < width; g0 += 2 * P) {
      const int cols = std::min(2 * P, width - g0);
      const bool same = one_type(dt, g0, cols);
      const WeightDtype t = dt[g0];
      if (same && t == WeightDtype::Q4_K) few_rows_pairs<M, P, Q4_KPair>(g0, width, src, K, A, lda, C, ldc, accumulate);
      else if (same && t == WeightDtype::Q6_K) few_rows_pairs<M, P, Q6_KPair>(g0, width, src, K, A, lda, C, ldc, accumulate);
      else if (same && t == WeightDtype::Q8_0) few_rows_pairs<M, P, Q8_0Pair>(g0, width, src, K, A, lda, C, ldc, accumulate);
      else if (same && t == WeightDtype::IQ4_XS) few_rows_pairs<M, P, IQ4_XSPair>(g0, width, src, K, A, lda, C, ldc, accumulate);
      else if (same && t == WeightDtype::IQ4_NL) few_rows_pairs<M, P, IQ4_NLPair>(g0, width, src, K, A, lda, C, ldc, accumulate);
      else
        for (int h0 = g0; h0 < g0 + cols; h0 += G) few_rows_group<M, G>(h0, width, src, dt, K, A, lda, C, ldc, accumulate);
    }
    return;
  }
#endif
  for (int g0 = 0; g0 < width; g0 += G) few_rows_group<M, G>(g0, width, src, dt, K, A, lda, C, ldc, accumulate);
}
// ---- [many rows] the full forward: a unit's chunk widened once, 8 rows x 6 columns (AVX2: 4 x 3) in registers ----
// A unit of kBlockRowColumns columns, kRowsChunk values of each at a time: the chunk's columns
// widened once into `w` (block types in registers, as the few-row kernels do; the others
// through widen_chunk), tile by tile (kTileCols columns, each k-step's kTileCols x 8 values side
// by side: one stream a tile), 96 KiB in L2. Then every band of kTileRows rows of A (16 KiB of
// A, in L1) against every tile: kTileRows x kTileCols accumulators of 8 lane sums in registers
// over the chunk. Between chunks the lane sums wait in `lanes` ((M, kBlockRowColumns, 8));
// after the last they are reduced (reduce8) into C. Each lane is the same fma chain over
// k = l mod 8 in order as the few-row kernels': the same bits (tests/bench/README.md, blocks6).
constexpr int kRowsChunk = kBlockRowChunk;
#if defined(__AVX512F__)
// With AVX-512 a register holds two columns' lane sums (columns 2p and 2p + 1 of a tile): 8 rows
// x 3 pairs, 24 accumulators, 3 loads of the columns and 8 broadcasts of A's 8 values a step.
constexpr int kTileRows = 8, kTileCols = 6;
#else
constexpr int kTileRows = 4, kTileCols = 3;
#endif
constexpr int kStep = kTileCols * kLanes;  // floats of a tile's k-step in w
static_assert(kBlockRowColumns % kTileCols == 0, "a unit is whole tiles of columns");
static_assert(kRowsChunk % 256 == 0, "a chunk is whole blocks of every type");
// Where column j's values k .. k + 7 (k a multiple of 8) sit in w: (tiles, kRowsChunk / 8, kTileCols, 8).
inline float* w_at(float* w, int j, int k) { return w + (j / kTileCols) * kTileCols * kRowsChunk + (k / kLanes) * kStep + (j % kTileCols) * kLanes; }

// The blocks of one column over a chunk, widened in registers into w (out: the column's slot at
// the chunk's first k-step, each next k-step kStep floats further).
template <class Blk, int S = 0>
HM_INLINE void widen_block_subs(const uint8_t* b, const float* sc, float* out) {
  if constexpr (S < Blk::kValues / 32) {
    sub<Blk, S>(b, sc, [&](int l, V v) { _mm256_store_ps(out + (4 * S + l) * kStep, v); });
    widen_block_subs<Blk, S + 1>(b, sc, out);
  }
}
template <class Blk>
void widen_blocks(const uint8_t* src, int nblocks, float* out) {
  alignas(32) float sc[Blk::kScales];
  for (int blk = 0; blk < nblocks; ++blk) {
    const uint8_t* b = src + static_cast<size_t>(blk) * Blk::kBytes;
    Blk::scales(b, sc);
    widen_block_subs<Blk>(b, sc, out + blk * (Blk::kValues / kLanes) * kStep);
  }
}

// Columns [0, padded) of the unit over values [k0, k0 + n) into w (columns past width zero).
void widen_unit(int width, int padded, const uint8_t* const* src, const WeightDtype* dt, int k0, int n, float* w) {
  const int n8 = round8(n);
  for (int j = 0; j < padded; ++j) {
    float* out = w_at(w, j, 0);
    if (j >= width) {
      for (int k = 0; k < n8; k += kLanes) _mm256_store_ps(out + (k / kLanes) * kStep, _mm256_setzero_ps());
      continue;
    }
    const uint8_t* at = src[j] + dtype_bytes(dt[j], k0);
    const int64_t bytes = dtype_bytes(dt[j], n);
    // The column's next chunk, into L2 for the next pass (a prefetch never faults).
    for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(at + bytes + off, 0, 2);
    const int nb = n / weight_dtype_info(dt[j]).block;
    switch (dt[j]) {
      case WeightDtype::Q8_0: widen_blocks<Q8_0Block>(at, nb, out); break;
      case WeightDtype::Q4_K: widen_blocks<Q4_KBlock>(at, nb, out); break;
      case WeightDtype::Q6_K: widen_blocks<Q6_KBlock>(at, nb, out); break;
      case WeightDtype::Q5_K: widen_blocks<Q5_KBlock>(at, nb, out); break;
      case WeightDtype::Q4_0: widen_blocks<Q4_0Block>(at, nb, out); break;
      case WeightDtype::IQ4_XS: widen_blocks<IQ4_XSBlock>(at, nb, out); break;
      case WeightDtype::IQ4_NL: widen_blocks<IQ4_NLBlock>(at, nb, out); break;
      default: {
        alignas(64) float col[kRowsChunk];
        widen_chunk(src[j], dt[j], k0, n, col);
        for (int k = 0; k < n8; k += kLanes) _mm256_store_ps(out + (k / kLanes) * kStep, _mm256_load_ps(col + k));
      }
    }
  }
}

#if defined(__AVX512F__)
constexpr int kTilePairs = kTileCols / 2;  // registers a tile's row: two columns' 8 lane sums each

// A band's lane sums of one tile: kept in l (rows kBlockRowColumns x 8 apart) unless `last`,
// then reduced (reduce8) into c's rows, columns below cols.
template <int R>
HM_INLINE void finish_tile(__m512 (&acc)[R][kTilePairs], float* l, bool last, int cols, float* c, int ldc, bool accumulate) {
  constexpr int P = kTilePairs;
  if (!last) {
    for (int i = 0; i < R; ++i)
      for (int p = 0; p < P; ++p) _mm512_store_ps(l + (i * kBlockRowColumns + 2 * p) * kLanes, acc[i][p]);
    return;
  }
  for (int i = 0; i < R; ++i)
    for (int p = 0; p < P; ++p) {
      alignas(64) float s[2 * kLanes];
      _mm512_store_ps(s, acc[i][p]);
      for (int h = 0; h < 2 && 2 * p + h < cols; ++h) put(c + static_cast<size_t>(i) * ldc + 2 * p + h, reduce8(s + h * kLanes), accumulate);
    }
}

#if defined(__AVX512BF16__)
// BF16 products (packed_gemm.h, Bf16Products): the chunk and A's rows rounded to BF16 (nearest
// even) as pairs, multiplied by vdpbf16ps and summed in F32, each C(i, j) one chain over the
// pairs in k order (not the F32 kernel's bits: callers show the difference). w2: the chunk as
// rows of pairs, pair p of column j (values 2p, 2p + 1) at w2[p * kBlockRowColumns + j] (zero
// past `padded`): a k-step is three 16-column registers and one 32-bit broadcast of A's pair.
void pairs_of_unit(int padded, int n8, float* w, uint32_t* w2) {
  const int np = (n8 + 15) / 16 * 8;
  for (int j = 0; j < padded; ++j)
    for (int s = 0; 16 * s < n8; ++s) {
      const __m512 v = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_load_ps(w_at(w, j, 16 * s))),
                                          16 * s + 8 < n8 ? _mm256_load_ps(w_at(w, j, 16 * s + 8)) : _mm256_setzero_ps(), 1);
      alignas(32) uint32_t q[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), (__m256i)_mm512_cvtneps_pbh(v));  // pairs 8s .. 8s + 7 in order
      for (int i = 0; i < 8; ++i) w2[(8 * s + i) * kBlockRowColumns + j] = q[i];
    }
  for (int p = 0; padded < kBlockRowColumns && p < np; ++p) std::fill(w2 + p * kBlockRowColumns + padded, w2 + (p + 1) * kBlockRowColumns, 0u);
}

// Rows [0, R) of a band x the unit over np pairs: a2 (R rows of pairs, lda2 apart), l the band's
// sums ((R, kBlockRowColumns)). first: from 0; last: into c's rows below width, else kept in l.
template <int R>
HM_INLINE void rows_pairs(int np, const uint32_t* a2, int lda2, const uint32_t* w2, float* l, bool first, bool last, int width, float* c,
                          int ldc, bool accumulate) {
  constexpr int P = kBlockRowColumns / 16;
  __m512 acc[R][P];
  for (int i = 0; i < R; ++i)
    for (int p = 0; p < P; ++p) acc[i][p] = first ? _mm512_setzero_ps() : _mm512_load_ps(l + i * kBlockRowColumns + 16 * p);
  for (int k = 0; k < np; ++k) {
    __m512bh wv[P];
    for (int p = 0; p < P; ++p) wv[p] = (__m512bh)_mm512_load_si512(w2 + k * kBlockRowColumns + 16 * p);
    for (int i = 0; i < R; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a2[static_cast<size_t>(i) * lda2 + k]));
      for (int p = 0; p < P; ++p) acc[i][p] = _mm512_dpbf16_ps(acc[i][p], av, wv[p]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int p = 0; p < P; ++p) {
      alignas(64) float v[16];
      _mm512_store_ps(last ? v : l + i * kBlockRowColumns + 16 * p, acc[i][p]);
      for (int h = 0; last && h < 16 && 16 * p + h < width; ++h) put(c + static_cast<size_t>(i) * ldc + 16 * p + h, v[h], accumulate);
    }
}
#endif

// Rows [0, R) of a band x one tile over n8 values: a (R rows, lda apart), w the tile's values, l
// the band's lane sums at the tile's first column (rows kBlockRowColumns x 8 apart). first: from
// 0; last: reduced into c's rows below cols, else kept.
template <int R>
HM_INLINE void rows_tile(int n8, const float* af, int lda, const float* wf, float* l, bool first, bool last, int cols, float* c, int ldc,
                         bool accumulate) {
  constexpr int P = kTilePairs;
  __m512 acc[R][P];
  for (int i = 0; i < R; ++i)
    for (int p = 0; p < P; ++p) acc[i][p] = first ? _mm512_setzero_ps() : _mm512_load_ps(l + (i * kBlockRowColumns + 2 * p) * kLanes);
  for (int k = 0; k < n8; k += kLanes) {
    __m512 wv[P];
    for (int p = 0; p < P; ++p) wv[p] = _mm512_load_ps(wf + (k / kLanes) * kStep + 2 * p * kLanes);
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(af + static_cast<size_t>(i) * lda + k));
      for (int p = 0; p < P; ++p) acc[i][p] = _mm512_fmadd_ps(av, wv[p], acc[i][p]);
    }
  }
  finish_tile<R>(acc, l, last, cols, c, ldc, accumulate);
}
#else
template <int R>
HM_INLINE void rows_tile(int n8, const float* a, int lda, const float* w, float* l, bool first, bool last, int cols, float* c, int ldc,
                         bool accumulate) {
  constexpr int G = kTileCols;
  V acc[R][G];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < G; ++j) acc[i][j] = first ? _mm256_setzero_ps() : _mm256_load_ps(l + (i * kBlockRowColumns + j) * kLanes);
  for (int k = 0; k < n8; k += kLanes) {
    const float* wk = w + (k / kLanes) * kStep;
    V wv[G];
    for (int j = 0; j < G; ++j) wv[j] = _mm256_load_ps(wk + j * kLanes);
    for (int i = 0; i < R; ++i) {
      const V av = _mm256_loadu_ps(a + static_cast<size_t>(i) * lda + k);
      for (int j = 0; j < G; ++j) acc[i][j] = _mm256_fmadd_ps(av, wv[j], acc[i][j]);
    }
  }
  if (!last) {
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < G; ++j) _mm256_store_ps(l + (i * kBlockRowColumns + j) * kLanes, acc[i][j]);
    return;
  }
  store_sums<R, G>(acc, cols, c, ldc, accumulate);
}
#endif

// A band of R rows against every tile of the unit (Pairs: BF16 products, a and w as pairs).
template <int R, bool Pairs = false>
HM_INLINE void rows_band(int width, int n8, const void* a, int lda, const void* w, float* l, bool first, bool last, float* c, int ldc,
                         bool accumulate) {
#if defined(__AVX512BF16__)
  if constexpr (Pairs)
    return rows_pairs<R>((n8 + 15) / 16 * 8, static_cast<const uint32_t*>(a), lda, static_cast<const uint32_t*>(w), l, first, last, width, c, ldc,
                         accumulate);
#endif
  for (int j0 = 0; j0 < width; j0 += kTileCols)
    rows_tile<R>(n8, static_cast<const float*>(a), lda, static_cast<const float*>(w) + j0 * kRowsChunk, l + j0 * kLanes, first, last,
                 std::min(kTileCols, width - j0), c + j0, ldc, accumulate);
}

template <bool Pairs>
void many_rows(int M, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
               bool accumulate, const uint32_t* a_pairs = nullptr) {
  alignas(64) thread_local float w[kBlockRowColumns * kRowsChunk];  // (tiles, kRowsChunk / 8, kTileCols, 8)
  alignas(64) thread_local uint32_t w2[Pairs ? kBlockRowColumns * kRowsChunk / 2 : 1];  // BF16 products: w as rows of pairs (pairs_of_unit)
  thread_local std::vector<float> lanes_store;                      // every value written by the first chunk
  lanes_store.resize(static_cast<size_t>(M) * kBlockRowColumns * kLanes + 16);
  float* lanes = lanes_store.data() + (16 - reinterpret_cast<uintptr_t>(lanes_store.data()) / sizeof(float) % 16) % 16;  // on a cache line
  const int padded = (width + kTileCols - 1) / kTileCols * kTileCols;
  for (int k0 = 0; k0 < K; k0 += kRowsChunk) {
    const int n = std::min(kRowsChunk, K - k0), n8 = round8(n);
    widen_unit(width, padded, src, dt, k0, n, w);
    int ld;
    const float* a = a_rows(M, A, lda, k0, n, &ld);
    const void *wu = w, *au = a;
#if defined(__AVX512BF16__)
    if constexpr (Pairs) {
      pairs_of_unit(padded, n8, w, w2);
      wu = w2, au = a_pairs + k0 / 2, ld = block_a_pairs_stride(K);  // A rounded once a product (block_a_pairs)
    }
#endif
    const bool first = k0 == 0, last = k0 + n >= K;
    for (int i0 = 0; i0 < M; i0 += kTileRows) {
      const void* ai = static_cast<const char*>(au) + static_cast<size_t>(i0) * ld * 4;  // floats or pairs: 4 bytes
      float* li = lanes + static_cast<size_t>(i0) * kBlockRowColumns * (Pairs ? 1 : kLanes);  // BF16 products: sums, not lanes
      float* ci = C + static_cast<size_t>(i0) * ldc;
      using Band = void (*)(int, int, const void*, int, const void*, float*, bool, bool, float*, int, bool);
      static constexpr Band kBand[8] = {rows_band<1, Pairs>, rows_band<2, Pairs>, rows_band<3, Pairs>, rows_band<4, Pairs>,
                                        rows_band<std::min(5, kTileRows), Pairs>, rows_band<std::min(6, kTileRows), Pairs>,
                                        rows_band<std::min(7, kTileRows), Pairs>, rows_band<kTileRows, Pairs>};  // by rows - 1
      kBand[std::min(kTileRows, M - i0) - 1](width, n8, ai, ld, wu, li, first, last, ci, ldc, accumulate);
    }
  }
}
#undef HM_INLINE
#else
// Without AVX2 and FMA: the same order in scalar code.
void scalar_rows(int M, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
                 bool accumulate) {
  std::vector<float> w(static_cast<size_t>(kChunk));
  std::vector<float> part(static_cast<size_t>(M) * width * kLanes, 0.0f);  // (M, width, 8)
  for (int k0 = 0; k0 < K; k0 += kChunk) {
    const int n = std::min(kChunk, K - k0), n8 = round8(n);
    int ld;
    const float* a = a_rows(M, A, lda, k0, n, &ld);
    for (int j = 0; j < width; ++j) {
      widen_chunk(src[j], dt[j], k0, n, w.data());
      for (int i = 0; i < M; ++i) {
        float* l = part.data() + (static_cast<size_t>(i) * width + j) * kLanes;
        for (int k = 0; k < n8; ++k) l[k % kLanes] = std::fma(a[static_cast<size_t>(i) * ld + k], w[static_cast<size_t>(k)], l[k % kLanes]);
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < width; ++j) put(C + static_cast<size_t>(i) * ldc + j, reduce8(part.data() + (static_cast<size_t>(i) * width + j) * kLanes), accumulate);
}
#endif
}  // namespace

void block_gemm_columns(int M, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
                        bool accumulate, const uint32_t* a_pairs) {
  if (M <= 0 || width <= 0) return;
  if (K <= 0) {  // an empty sum
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < width; ++j) put(C + static_cast<size_t>(i) * ldc + j, 0.0f, accumulate);
    return;
  }
#if defined(__AVX2__) && defined(__FMA__)
  if (M > kBlockFewRows) {
#if defined(__AVX512BF16__)
    if (M >= Bf16Products::kMinRows && Bf16Products::active()) {
      HM_ASSERT(a_pairs, "block_gemm_columns: BF16 products take A's rows as pairs (block_a_pairs)");
      return many_rows<true>(M, width, src, dt, K, A, lda, C, ldc, accumulate, a_pairs);
    }
#endif
    return many_rows<false>(M, width, src, dt, K, A, lda, C, ldc, accumulate);
  }
  using Fn = void (*)(int, const uint8_t* const*, const WeightDtype*, int, const float*, int, float*, int, bool);
  static constexpr Fn kByRows[8] = {nullptr,
                                    few_rows_all<1>,
                                    few_rows_all<std::min(2, kBlockFewRows)>,
                                    few_rows_all<std::min(3, kBlockFewRows)>,
                                    few_rows_all<std::min(4, kBlockFewRows)>,
                                    few_rows_all<std::min(5, kBlockFewRows)>,
                                    few_rows_all<std::min(6, kBlockFewRows)>,
                                    few_rows_all<std::min(7, kBlockFewRows)>};
  static_assert(kBlockFewRows <= 7, "kByRows holds 1-7 rows");
  kByRows[M](width, src, dt, K, A, lda, C, ldc, accumulate);
#else
  scalar_rows(M, width, src, dt, K, A, lda, C, ldc, accumulate);
#endif
}

}  // namespace headmap
