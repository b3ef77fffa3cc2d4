// packed_gemm_rows.cpp: the many-row product C (M, N) = A (M, K) B against F32 or 16-bit
// PackedMatrix panels (M >= kMR: a forward's tokens), the loop nest of GotoBLAS with B
// already packed. On each team thread:
//   rows of A in blocks of kMC: the block packed once by the whole team into micro-panels
//     (K, kTR) (one stream a tile, not kTR rows lda apart), shared;
//   the thread's contiguous run of panels, kGroup at a time, their columns of C summed in a
//     thread-local buffer ((mc, kNR) a panel, contiguous: C's rows are 8-32 KiB apart, and
//     reloading them every pass thrashed one cache set);
//   K in blocks of kKC: each panel's (kKC, kNR) sub-panel widened to F32 once (16-bit
//     panels) into a 16 KiB scratch that stays in L1, then every kTR-row tile against it,
//     A's micro-panel streamed from L2; the next sub-panel prefetched into L2 a slice a tile.
// Each C(i, j) is still one fused multiply-add chain over k = 0..K-1 in order, from C(i, j)
// when accumulating, else from 0: the same bits as before, as the few-row paths, as the F32
// matrix of the same values (tests/test_gemm.cpp).
//
// BF16 products (Bf16Products, packed_gemm.h; off unless asked): on a CPU with avx512_bf16,
// A's block is packed as BF16 pairs (A(i, 2j), A(i, 2j + 1)) rounded to nearest even, each
// sub-panel is interleaved into pairs of rows (BF16 values moved; F32 and F16 ones rounded to
// BF16 as they are), and the tile runs vdpbf16ps: each C(i, j)
// accumulates two products a step in F32. Same loop nest, half the instructions; the result
// differs from the F32 chain by the rounding to 8 significant bits.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/math/half.h"
#include "core/math/panel_kernel.h"
#include "core/math/transpose8.h"

namespace headmap::panel_kernel {

namespace {
// Rows per tile: 12 x 2 accumulators of the 32 registers (AVX-512; 8 x 2 measured alike or
// a little slower, 14 x 2 slower), 6 x 2 of 16 (AVX2). Rows past M are zero padding.
constexpr int kTR = kFloatLanes >= 16 ? 12 : 6;
// Rows of a sub-panel: (kKC, kNR) F32 = 16 KiB and A's (kKC, kTR) 6 KiB stay in L1 (256:
// 32 + 12 KiB, ~10 % slower on the 1B shapes; tests/bench/README.md, helper gemm9).
constexpr int kKC = 128;
constexpr int kMC = 252;   // rows of A packed at once ((kMC, K) floats): 21 tiles of 12, 42 of 6
constexpr int kGroup = 8;  // panels whose columns of C one buffer holds: (kMC, kGroup * kNR), 252 KiB
constexpr size_t kPrefetchBytes = size_t(512) << 10;  // smaller matrices stay in cache: not prefetched

inline int round_up(int n, int m) { return (n + m - 1) / m * m; }

// Tiles [t0, t1) of rows [m0, m0 + mc) of A (M, K) as micro-panels: tile t at Ap + t * K *
// kTR, (K, kTR) row-major (value (k, r) = A(m0 + t * kTR + r, k)); rows past M are zero.
void pack_a(int t0, int t1, int m0, int M, int K, const float* A, int lda, float* Ap) {
  for (int t = t0; t < t1; ++t) {
    float* d = Ap + static_cast<size_t>(t) * K * kTR;
    const int i0 = m0 + t * kTR, rows = std::min(kTR, M - i0);
    int r0 = 0;  // rows [0, r0) already moved for k < K8
    const int K8 = K / 8 * 8;
#if defined(__AVX__)
    if constexpr (kTR >= 8)
      if (rows >= 8) {  // rows 0..7, 8 values at a time, transposed in registers
        for (int k = 0; k < K8; k += 8) {
          __m256 r[8];
          for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(A + static_cast<size_t>(i0 + j) * lda + k);
          transpose8(r);  // r[q] = rows 0..7 at k + q
          for (int q = 0; q < 8; ++q) _mm256_storeu_ps(d + static_cast<size_t>(k + q) * kTR, r[q]);
        }
        r0 = 8;
      }
#endif
    for (int k = 0; k < K; ++k)
      for (int r = k < K8 ? r0 : 0; r < kTR; ++r) d[static_cast<size_t>(k) * kTR + r] = r < rows ? A[static_cast<size_t>(i0 + r) * lda + k] : 0.0f;
  }
}

#if defined(__AVX512BF16__)
constexpr bool kBf16Kernel = kFloatLanes == 16;
#else
constexpr bool kBf16Kernel = false;
#endif

// BF16 products: tiles [t0, t1) as micro-panels of BF16 pairs, tile t at Ap2 + t * K2 * kTR
// (K2 = K rounded up to pairs), (K2, kTR) 32-bit values: value (j, r) holds A(i, 2j) in its
// low half and A(i, 2j + 1) in its high half (i = m0 + t * kTR + r), each rounded to nearest
// even; past K or M: zero.
void pack_a_pairs(int t0, int t1, int m0, int M, int K, const float* A, int lda, uint32_t* Ap2) {
  const int K2 = (K + 1) / 2;
  for (int t = t0; t < t1; ++t) {
    uint32_t* d = Ap2 + static_cast<size_t>(t) * K2 * kTR;
    const int i0 = m0 + t * kTR, rows = std::min(kTR, M - i0);
    for (int r = 0; r < kTR; ++r) {
      const float* a = A + static_cast<size_t>(i0 + r) * lda;
      for (int j = 0; j < K2; ++j) {
        const int k = 2 * j;
        const uint32_t lo = r < rows ? float_to_bf16(a[k]) : 0, hi = r < rows && k + 1 < K ? float_to_bf16(a[k + 1]) : 0;
        d[static_cast<size_t>(j) * kTR + r] = lo | hi << 16;
      }
    }
  }
}

// Rows [0, kc) of a BF16 panel as kc / 2 (rounded up) pairs of rows, interleaved: pair j is
// kNR 32-bit values, column n's holding row 2j in its low half, row 2j + 1 (or zero past kc)
// in its high half: vdpbf16ps's operand. The same 16-bit values, moved.
void interleave_sub(const uint16_t* sub, int kc, uint32_t* pairs) {
  for (int j = 0; 2 * j < kc; ++j) {
    const uint16_t* r0 = sub + static_cast<size_t>(2 * j) * kNR;
    const uint16_t* r1 = 2 * j + 1 < kc ? r0 + kNR : nullptr;
    uint32_t* d = pairs + static_cast<size_t>(j) * kNR;
#if defined(__AVX512BW__)
    if constexpr (kFloatLanes == 16) {
      for (int h = 0; h < 2; ++h) {
        const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + 16 * h)));
        const __m512i hi = r1 ? _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + 16 * h))), 16)
                              : _mm512_setzero_si512();
        _mm512_store_si512(d + 16 * h, _mm512_or_si512(lo, hi));
      }
      continue;
    }
#endif
    for (int n = 0; n < kNR; ++n) d[n] = uint32_t(r0[n]) | (r1 ? uint32_t(r1[n]) << 16 : 0u);
  }
}

// The same from an F32 or F16 panel, each value (F16: widened exactly, load_row) rounded to
// BF16 (nearest even) on the way.
template <WeightDtype DT>
void interleave_wide(const Elem<DT>* sub, int kc, uint32_t* pairs) {
  for (int j = 0; 2 * j < kc; ++j) {
    const Elem<DT>* r0 = sub + static_cast<size_t>(2 * j) * kNR;
    const Elem<DT>* r1 = 2 * j + 1 < kc ? r0 + kNR : nullptr;
    uint32_t* d = pairs + static_cast<size_t>(j) * kNR;
#if defined(__AVX512BF16__)
    if constexpr (kFloatLanes == 16) {
      Packet a[2], b[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
      load_row<DT>(r0, a[0], a[1]);
      if (r1) load_row<DT>(r1, b[0], b[1]);
      for (int h = 0; h < 2; ++h) {
        const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(a[h]));
        const __m512i hi = _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(b[h])), 16);
        _mm512_store_si512(d + 16 * h, _mm512_or_si512(lo, hi));
      }
      continue;
    }
#endif
    auto wide = [](const Elem<DT>* r, int n) { return DT == WeightDtype::F32 ? static_cast<float>(r[n]) : narrow_to_float(static_cast<uint16_t>(r[n]), DT); };
    for (int n = 0; n < kNR; ++n) d[n] = uint32_t(float_to_bf16(wide(r0, n))) | (r1 ? uint32_t(float_to_bf16(wide(r1, n))) << 16 : 0u);
  }
}

#if defined(__AVX512BF16__)
// C (kTR, kNR) over kc2 pairs of k: Ap2 (kc2, kTR) pairs against Bp2 (kc2, kNR) pairs, two
// products a step per accumulator (vdpbf16ps); from C when `from_c`, else from 0. Prefetches
// as micro_tile does.
inline void micro_tile_pairs(int kc2, const uint32_t* Ap2, const uint32_t* Bp2, float* C, bool from_c, const char* pf, int pf_bytes) {
  for (int off = 0; off < pf_bytes; off += 64) __builtin_prefetch(pf + off, 0, 2);
  __m512 lo[kTR], hi[kTR];
#pragma GCC unroll 16
  for (int r = 0; r < kTR; ++r) {
    lo[r] = from_c ? _mm512_load_ps(C + r * kNR) : _mm512_setzero_ps();
    hi[r] = from_c ? _mm512_load_ps(C + r * kNR + 16) : _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int j = 0; j < kc2; ++j) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(Bp2 + j * kNR), b1 = (__m512bh)_mm512_load_si512(Bp2 + j * kNR + 16);
#pragma GCC unroll 16
    for (int r = 0; r < kTR; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(Ap2[j * kTR + r]));
      lo[r] = _mm512_dpbf16_ps(lo[r], a, b0);
      hi[r] = _mm512_dpbf16_ps(hi[r], a, b1);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kTR; ++r) {
    _mm512_store_ps(C + r * kNR, lo[r]);
    _mm512_store_ps(C + r * kNR + 16, hi[r]);
  }
}
#endif

// Rows [0, kc) of a panel widened to F32 into wide (kc, kNR) (exact: load_row).
template <WeightDtype DT>
void widen_sub(const Elem<DT>* sub, int kc, float* wide) {
  using namespace Eigen::internal;
  for (int k = 0; k < kc; ++k) {
    Packet b0, b1;
    load_row<DT>(sub + static_cast<size_t>(k) * kNR, b0, b1);
    pstore(wide + static_cast<size_t>(k) * kNR, b0);
    pstore(wide + static_cast<size_t>(k) * kNR + kFloatLanes, b1);
  }
}

// C (kTR, kNR) (the buffer, rows kNR apart) over kc rows: Ap (kc, kTR) against Bp (kc, kNR),
// from C when `from_c`, else from 0. Prefetches [pf, pf + pf_bytes) into L2 first.
inline void micro_tile(int kc, const float* Ap, const float* Bp, float* C, bool from_c, const char* pf, int pf_bytes) {
  using namespace Eigen::internal;
  for (int off = 0; off < pf_bytes; off += 64) __builtin_prefetch(pf + off, 0, 2);
  Packet lo[kTR], hi[kTR];
#pragma GCC unroll 16
  for (int r = 0; r < kTR; ++r) {
    lo[r] = from_c ? pload<Packet>(C + r * kNR) : pset1<Packet>(0.0f);
    hi[r] = from_c ? pload<Packet>(C + r * kNR + kFloatLanes) : pset1<Packet>(0.0f);
  }
#pragma GCC unroll 2
  for (int k = 0; k < kc; ++k) {
    const Packet b0 = pload<Packet>(Bp + k * kNR), b1 = pload<Packet>(Bp + k * kNR + kFloatLanes);
#pragma GCC unroll 16
    for (int r = 0; r < kTR; ++r) {
      const Packet a = pset1<Packet>(Ap[k * kTR + r]);
      lo[r] = pmadd(a, b0, lo[r]);
      hi[r] = pmadd(a, b1, hi[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kTR; ++r) {
    pstore(C + r * kNR, lo[r]);
    pstore(C + r * kNR + kFloatLanes, hi[r]);
  }
}

// Panels [p0, p1) of C's rows [m0, m0 + mc), A's block packed at Ap (pack_a; Pairs: BF16
// products, pack_a_pairs's uint32_t).
template <WeightDtype DT, bool Pairs = false>
void run_panels(int p0, int p1, int m0, int mc, const void* Ap, int K, int N, const Elem<DT>* base, bool prefetch, float* C, int ldc,
                bool accumulate) {
  using E = Elem<DT>;
  using Buffer = std::vector<float, Eigen::aligned_allocator<float>>;
  thread_local Buffer wide, sums;
  thread_local std::vector<uint32_t, Eigen::aligned_allocator<uint32_t>> pairs;
  const int tiles = (mc + kTR - 1) / kTR, rows = tiles * kTR;  // the buffer's rows: whole tiles
  const int K2 = (K + 1) / 2;
  if constexpr (Pairs) pairs.resize(static_cast<size_t>(kKC / 2) * kNR);
  else wide.resize(static_cast<size_t>(kKC) * kNR);
  sums.resize(static_cast<size_t>(rows) * kNR * kGroup);
  const size_t stride = static_cast<size_t>(K) * kNR;  // a panel
  for (int g0 = p0; g0 < p1; g0 += kGroup) {
    const int ng = std::min(kGroup, p1 - g0);
    if (accumulate)  // C's values start the chains (padding: zero, never written back)
      for (int q = 0; q < ng; ++q) {
        const int n0 = (g0 + q) * kNR, width = std::min(kNR, N - n0);
        float* s = sums.data() + static_cast<size_t>(q) * rows * kNR;
        std::fill_n(s, static_cast<size_t>(rows) * kNR, 0.0f);
        for (int i = 0; i < mc; ++i) std::copy_n(C + static_cast<size_t>(m0 + i) * ldc + n0, width, s + static_cast<size_t>(i) * kNR);
      }
    for (int k0 = 0; k0 < K; k0 += kKC) {
      const int kc = std::min(kKC, K - k0);
      for (int q = 0; q < ng; ++q) {
        const E* sub = base + (g0 + q) * stride + static_cast<size_t>(k0) * kNR;  // (kc, kNR)
        const float* Bw = nullptr;
        if constexpr (Pairs && DT == WeightDtype::BF16) interleave_sub(sub, kc, pairs.data());
        else if constexpr (Pairs) interleave_wide<DT>(sub, kc, pairs.data());
        else if constexpr (DT == WeightDtype::F32) Bw = sub;
        else widen_sub<DT>(sub, kc, wide.data()), Bw = wide.data();
        // The sub-panel after this one (the group's next panel, the group's first at the
        // next k0, the next group's first), a slice of it each tile.
        const E* next = nullptr;
        int next_rows = 0;
        if (q + 1 < ng) next = sub + stride, next_rows = kc;
        else if (k0 + kc < K) next = base + g0 * stride + static_cast<size_t>(k0 + kc) * kNR, next_rows = std::min(kKC, K - k0 - kc);
        else if (g0 + kGroup < p1) next = base + (g0 + kGroup) * stride, next_rows = std::min(kKC, K);
        const int next_bytes = prefetch ? next_rows * kNR * static_cast<int>(sizeof(E)) : 0;
        const int slice = round_up((next_bytes + tiles - 1) / tiles, 64);
        float* s = sums.data() + static_cast<size_t>(q) * rows * kNR;
        for (int t = 0; t < tiles; ++t) {
          const int at = std::min(next_bytes, t * slice);
          const char* pf = reinterpret_cast<const char*>(next) + at;
          const bool from_c = accumulate || k0 > 0;
          float* tile = s + static_cast<size_t>(t) * kTR * kNR;
          if constexpr (Pairs) {
#if defined(__AVX512BF16__)
            const uint32_t* a2 = static_cast<const uint32_t*>(Ap) + static_cast<size_t>(t) * K2 * kTR + static_cast<size_t>(k0 / 2) * kTR;
            micro_tile_pairs((kc + 1) / 2, a2, pairs.data(), tile, from_c, pf, std::min(slice, next_bytes - at));
#endif
          } else {
            const float* a = static_cast<const float*>(Ap) + static_cast<size_t>(t) * K * kTR + static_cast<size_t>(k0) * kTR;
            micro_tile(kc, a, Bw, tile, from_c, pf, std::min(slice, next_bytes - at));
          }
        }
      }
    }
    for (int q = 0; q < ng; ++q) {
      const int n0 = (g0 + q) * kNR, width = std::min(kNR, N - n0);
      const float* s = sums.data() + static_cast<size_t>(q) * rows * kNR;
      for (int i = 0; i < mc; ++i) std::copy_n(s + static_cast<size_t>(i) * kNR, width, C + static_cast<size_t>(m0 + i) * ldc + n0);
    }
  }
}

template <WeightDtype DT, bool Pairs = false>
void run_rows(int nt, int M, const float* A, int lda, const PackedMatrix& B, const Elem<DT>* base, float* C, int ldc, bool accumulate) {
  const int K = static_cast<int>(B.rows()), N = static_cast<int>(B.cols()), P = B.panels();
  const bool prefetch = static_cast<size_t>(K) * N * sizeof(Elem<DT>) >= kPrefetchBytes;
  // A's block, on the calling thread: (tiles, K, kTR) floats, or (tiles, K2, kTR) pairs.
  thread_local std::vector<float, Eigen::aligned_allocator<float>> packed;
  packed.resize(static_cast<size_t>(round_up(std::min(kMC, M), kTR)) * (Pairs ? (K + 1) / 2 : K));
  float* Ap = packed.data();
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    for (int m0 = 0; m0 < M; m0 += kMC) {
      const int mc = std::min(kMC, M - m0), tiles = (mc + kTR - 1) / kTR;
      if constexpr (Pairs) pack_a_pairs(tiles * t / n, tiles * (t + 1) / n, m0, M, K, A, lda, reinterpret_cast<uint32_t*>(Ap));
      else pack_a(tiles * t / n, tiles * (t + 1) / n, m0, M, K, A, lda, Ap);
#pragma omp barrier
      run_panels<DT, Pairs>(P * t / n, P * (t + 1) / n, m0, mc, Ap, K, N, base, prefetch, C, ldc, accumulate);
#pragma omp barrier
    }
  }
}
}  // namespace

void many_rows(int nt, int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate) {
  switch (B.dtype()) {
    case WeightDtype::F32:
      if (kBf16Kernel && Bf16Products::active()) return run_rows<WeightDtype::F32, true>(nt, M, A, lda, B, B.panel(0), C, ldc, accumulate);
      return run_rows<WeightDtype::F32>(nt, M, A, lda, B, B.panel(0), C, ldc, accumulate);
    case WeightDtype::BF16:
      if (kBf16Kernel && Bf16Products::active()) return run_rows<WeightDtype::BF16, true>(nt, M, A, lda, B, B.panel16(0), C, ldc, accumulate);
      return run_rows<WeightDtype::BF16>(nt, M, A, lda, B, B.panel16(0), C, ldc, accumulate);
    default:
      if (kBf16Kernel && Bf16Products::active()) return run_rows<WeightDtype::F16, true>(nt, M, A, lda, B, B.panel16(0), C, ldc, accumulate);
      return run_rows<WeightDtype::F16>(nt, M, A, lda, B, B.panel16(0), C, ldc, accumulate);
  }
}

}  // namespace headmap::panel_kernel
