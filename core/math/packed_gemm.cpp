// packed_gemm.cpp: packing, and the register-blocked kernel over packed panels.
#include "core/math/packed_gemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <tuple>
#include <type_traits>

#include "core/math/block_gemm.h"
#include "core/math/int8_products.h"
#include "core/math/finite_blocks.h"
#include "core/math/gemm.h"
#include "core/math/panel_kernel.h"
#include "core/math/transpose8.h"

namespace headmap {

namespace {
using namespace panel_kernel;
// Rows of a panel per pass over the tiles: the sub-panel (kKC, kNR) is re-read from L1/L2 by
// every tile of C; C is re-loaded once per pass. 384 and up measured alike (~185 GFLOP/s on
// the GPT-2 shapes); 128 lost 18%.
constexpr int kKC = 512;

// One (R, kNR) tile of C over kc rows of a panel: R rows of A broadcast against the panel's
// two registers per row, accumulated in 2R registers.
template <int R, WeightDtype DT>
inline void tile(int kc, const float* A, int lda, const Elem<DT>* Bp, float* C, int ldc, bool accumulate) {
  using namespace Eigen::internal;
  Packet lo[R], hi[R];
  for (int r = 0; r < R; ++r) {
    lo[r] = accumulate ? ploadu<Packet>(C + r * ldc) : pset1<Packet>(0.0f);
    hi[r] = accumulate ? ploadu<Packet>(C + r * ldc + kFloatLanes) : pset1<Packet>(0.0f);
  }
  for (int k = 0; k < kc; ++k) {
    Packet b0, b1;
    load_row<DT>(Bp + k * kNR, b0, b1);
    for (int r = 0; r < R; ++r) {
      const Packet a = pset1<Packet>(A[static_cast<size_t>(r) * lda + k]);
      lo[r] = pmadd(a, b0, lo[r]);
      hi[r] = pmadd(a, b1, hi[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    pstoreu(C + r * ldc, lo[r]);
    pstoreu(C + r * ldc + kFloatLanes, hi[r]);
  }
}

// The rows left after the full tiles (fewer than kMR).
template <WeightDtype DT>
void tail_tile(int rows, int kc, const float* A, int lda, const Elem<DT>* Bp, float* C, int ldc, bool accumulate) {
  using Fn = void (*)(int, const float*, int, const Elem<DT>*, float*, int, bool);
  static constexpr Fn kByRows[8] = {nullptr, tile<1, DT>, tile<2, DT>, tile<3, DT>, tile<4, DT>, tile<5, DT>, tile<6, DT>, tile<7, DT>};
  kByRows[rows](kc, A, lda, Bp, C, ldc, accumulate);
}

// Rows [0, M) of one panel over rows [k0, k0 + kc) of B. C points at the panel's first column.
template <WeightDtype DT>
void panel_pass(int M, int kc, const float* A, int lda, const Elem<DT>* Bp, float* C, int ldc, bool accumulate) {
  int i = 0;
  for (; i + kMR <= M; i += kMR)
    tile<kMR, DT>(kc, A + static_cast<size_t>(i) * lda, lda, Bp, C + static_cast<size_t>(i) * ldc, ldc, accumulate);
  if (i < M) tail_tile<DT>(M - i, kc, A + static_cast<size_t>(i) * lda, lda, Bp, C + static_cast<size_t>(i) * ldc, ldc, accumulate);
}

// Weights below this many bytes (512 KiB) are not prefetched.
constexpr size_t kPrefetchBytes = size_t(512) << 10;

// Rows of C per pass, so a pass's rows of A stay in L2 ((kMC, kKC) floats = 512 KiB).
constexpr int kMC = 256;

// Runs body(Cp, ldcp) on the columns of panel p of C (M, N): C's own, or a (M, kNR) copy of
// them when the last panel is narrower, copied back after.
template <class Body>
void on_panel_columns(int p, int M, int N, float* C, int ldc, bool accumulate, Body&& body) {
  const int n0 = p * kNR, width = std::min(kNR, N - n0);
  if (width == kNR) return body(C + n0, ldc);
  thread_local std::vector<float> edge;
  edge.assign(static_cast<size_t>(M) * kNR, 0.0f);
  if (accumulate)
    for (int i = 0; i < M; ++i) std::copy_n(C + static_cast<size_t>(i) * ldc + n0, width, edge.data() + static_cast<size_t>(i) * kNR);
  body(edge.data(), kNR);
  for (int i = 0; i < M; ++i) std::copy_n(edge.data() + static_cast<size_t>(i) * kNR, width, C + static_cast<size_t>(i) * ldc + n0);
}

// Panel p (columns [p*kNR, p*kNR + width) of C) from its packed (K, kNR) panel; `end` bounds
// the prefetch of the next sub-panel.
template <WeightDtype DT>
void run_panel(int p, int M, int K, int N, const float* A, int lda, const Elem<DT>* panel, const Elem<DT>* end, float* C, int ldc, bool accumulate) {
  using E = Elem<DT>;
  on_panel_columns(p, M, N, C, ldc, accumulate, [&](float* Cp, int ldcp) {
    for (int m0 = 0; m0 < M; m0 += kMC) {
      const int mc = std::min(kMC, M - m0);
      for (int k0 = 0; k0 < K; k0 += kKC) {
        const int kc = std::min(kKC, K - k0);
        const E* sub = panel + static_cast<size_t>(k0) * kNR;  // (kc, kNR)
        // The next sub-panel, into L2 while this one is computed: the weights come from DRAM.
        // It is the next kKC rows of this panel, or the next panel's first ones (panels are
        // contiguous); never more than one sub-panel, and never past `end`.
        // Small matrices stay in cache between calls and skip it (it cost them ~7%).
        const E* next = sub + static_cast<size_t>(kc) * kNR;
        const size_t ahead = static_cast<size_t>(K) * N * sizeof(E) < kPrefetchBytes
                                 ? 0
                                 : std::min<size_t>(static_cast<size_t>(std::min(kKC, K)) * kNR, static_cast<size_t>(end - next));
        for (size_t off = 0; off < ahead; off += 64 / sizeof(E)) __builtin_prefetch(next + off, 0, 2);
        panel_pass<DT>(mc, kc, A + static_cast<size_t>(m0) * lda + k0, lda, sub, Cp + static_cast<size_t>(m0) * ldcp, ldcp, accumulate || k0 > 0);
      }
    }
  });
}

// Unit u of C (M, N) = A B in dot order (block_gemm.h), block_unit_columns(M) columns a unit,
// B's column c at col(c) = {bytes, type}.
inline int block_units(int M, int N) { return (N + block_unit_columns(M) - 1) / block_unit_columns(M); }
// With 8-bit products (int8: A's rows rounded, int8_rows_of_a), the columns of int8_dtype run
// int8_columns; the others keep block_gemm_columns.
template <class Col>
void run_block_unit(int u, int M, int N, int K, const float* A, int lda, Col&& col, float* C, int ldc, bool accumulate,
                    const uint32_t* a_pairs, const Int8Rows* int8) {
  const int cols = block_unit_columns(M), n0 = u * cols, width = std::min(cols, N - n0);
  const uint8_t* src[std::max(kBlockRowColumns, kBlockColumns)];
  WeightDtype dt[std::max(kBlockRowColumns, kBlockColumns)];
  for (int j = 0; j < width; ++j) std::tie(src[j], dt[j]) = col(n0 + j);
  for (int j = 0, e = 0; j < width; j = e) {  // runs of columns the mode takes (int8) and leaves in F32
    const bool in8 = int8 && int8_dtype(dt[j]);
    while (e < width && (int8 && int8_dtype(dt[e])) == in8) ++e;
    if (in8) int8_columns(*int8, e - j, src + j, dt + j, C + n0 + j, ldc, accumulate);
    else block_gemm_columns(M, e - j, src + j, dt + j, K, A, lda, C + n0 + j, ldc, accumulate, a_pairs);
  }
}

// With 8-bit products (Int8Products on): A's rows rounded once, by the nt threads, into the calling
// thread's buffer that every unit reads; else null (or K no whole number of Q8_0's blocks).
const Int8Rows* int8_rows_of_a(int nt, bool on, int M, const float* A, int lda, int K) {
  if (!on || K % 32 != 0) return nullptr;
  thread_local Int8Rows store;  // kept: the next product's rows write over it
  int8_rows(M, A, lda, K, store, nt);
  return &store;
}

// With BF16 products on a product the many-row block kernel runs (block_gemm.h): A's rows as
// BF16 pairs, rounded once by the nt threads into the calling thread's buffer, which every unit
// reads (each unit of 48 columns rounded all of A itself: ~15% of the 1B shape's Q4_K_M forward
// with BF16 products, tests/bench/README.md, session 20); null otherwise.
const uint32_t* block_pairs_of_a(int nt, bool bf16, int M, const float* A, int lda, int K) {
#if defined(__AVX512BF16__)
  if (!bf16 || M < Bf16Products::kMinRows || M <= kBlockFewRows) return nullptr;
  thread_local std::vector<uint32_t> store;  // kept: the next product's rows write over it
  const int ld2 = block_a_pairs_stride(K);
  if (store.size() < static_cast<size_t>(M) * ld2) store.resize(static_cast<size_t>(M) * ld2);
  uint32_t* a2 = store.data();
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int i = 0; i < M; ++i)
    for (int c = 0; 8 * c < ld2; ++c) {  // 16 values (zero past K) -> 8 pairs
      const int left = std::clamp(K - 16 * c, 0, 16);
      const __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << left) - 1), A + static_cast<size_t>(i) * lda + 16 * c);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a2 + static_cast<size_t>(i) * ld2 + 8 * c), (__m256i)_mm512_cvtneps_pbh(v));
    }
  return a2;
#else
  (void)nt, (void)bf16, (void)M, (void)A, (void)lda, (void)K;
  return nullptr;  // no BF16 products in this build
#endif
}

void run_packed_panel(int p, int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate) {
  const int K = static_cast<int>(B.rows()), N = static_cast<int>(B.cols());
  const size_t end = static_cast<size_t>(K) * kNR;  // past the last panel
  HM_ASSERT(!B.blocks(), "a matrix kept in blocks runs block_gemm_columns");
  switch (B.dtype()) {
    case WeightDtype::F32:
      return run_panel<WeightDtype::F32>(p, M, K, N, A, lda, B.panel(p), B.panel(B.panels() - 1) + end, C, ldc, accumulate);
    case WeightDtype::BF16:
      return run_panel<WeightDtype::BF16>(p, M, K, N, A, lda, B.panel16(p), B.panel16(B.panels() - 1) + end, C, ldc, accumulate);
    case WeightDtype::F16:
      return run_panel<WeightDtype::F16>(p, M, K, N, A, lda, B.panel16(p), B.panel16(B.panels() - 1) + end, C, ldc, accumulate);
    default:
      HM_ASSERT(false, "a block type is kept in blocks");
  }
}

// Fewer rows than a tile (kMR: the incremental forward's appended tokens, 1-7 with AVX-512,
// 1-5 with AVX2) stream the weights once with little arithmetic, G panels side by side so that
// 2 * M * G independent chains hide the multiply-add's latency, every accumulator in a
// register over the whole of K (few_rows_stream in headmap-bench: with the 2- and 3-row
// accumulators on the stack, as GCC left them without the unroll pragmas below, 2 and 3 rows
// read a 1B MLP matrix at 9.3-10.0 and 7.0-7.5 GB/s on one core against 11.1 for one row).
constexpr int kFewRows = kMR - 1;
template <int M>
constexpr int few_rows_g() {
  if constexpr (kFloatLanes >= 16) return M <= 3 ? 4 : M == 4 ? 3 : 2;  // 8-28 of 32 registers
  else return M == 1 ? 4 : M == 2 ? 3 : M == 3 ? 2 : 1;                 // 8-12 of 16
}

// Rows [0, M) of C, panels [0, G) (`stride` values apart from Bp), over the whole of K: one
// chain per C(i, j) over k in order, from C(i, j) when accumulating, else from 0 (as tile: the
// same bits).
template <int M, int G, WeightDtype DT>
void few_rows_panels(int K, const float* A, int lda, const Elem<DT>* Bp, size_t stride, float* C, int ldc, bool accumulate) {
  using namespace Eigen::internal;
  Packet acc[M][G][2];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        acc[i][g][h] = accumulate ? ploadu<Packet>(C + static_cast<size_t>(i) * ldc + g * kNR + h * kFloatLanes) : pset1<Packet>(0.0f);
  for (int k = 0; k < K; ++k) {
    const Elem<DT>* row = Bp + static_cast<size_t>(k) * kNR;
    // No software prefetch: the hardware prefetcher follows the G panels' streams. Asking for
    // their lines (non-temporal, 16 rows ahead) held the F32 products of GPT-2's append to
    // 16-18 GB/s on the Ice Lake VM, 22-24 without (helper gpt8); on a Zen 4 VM the 16-bit
    // ones too: the 1B shape's typing passes of 1, 3 and 6 rows took 100-112, 128-144 and
    // 142-149 ms with it, 85-89, 91-98 and 102-103 without (tests/bench/README.md, 2026-11-29).
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      Packet b0, b1;
      load_row<DT>(row + g * stride, b0, b1);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const Packet a = pset1<Packet>(A[static_cast<size_t>(i) * lda + k]);
        acc[i][g][0] = pmadd(a, b0, acc[i][g][0]);
        acc[i][g][1] = pmadd(a, b1, acc[i][g][1]);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) pstoreu(C + static_cast<size_t>(i) * ldc + g * kNR + h * kFloatLanes, acc[i][g][h]);
}

// Panels [p0, p1) of an F32 or 16-bit B for M <= kFewRows rows, G at a time (fewer at the
// end; a narrow last panel through run_packed_panel).
template <int M, WeightDtype DT>
void few_rows_run(int p0, int p1, const float* A, int lda, const PackedMatrix& B, const Elem<DT>* base, float* C, int ldc, bool accumulate) {
  constexpr int G = few_rows_g<M>();
  const int K = static_cast<int>(B.rows()), N = static_cast<int>(B.cols());
  const size_t stride = static_cast<size_t>(K) * kNR;
  if (p1 > p0 && p1 == B.panels() && N % kNR != 0) {  // the narrow last panel: C has no room for its padding
    run_packed_panel(p1 - 1, M, A, lda, B, C, ldc, accumulate);
    --p1;
  }
  int p = p0;
  for (; p + G <= p1; p += G) few_rows_panels<M, G, DT>(K, A, lda, base + p * stride, stride, C + p * kNR, ldc, accumulate);
  for (; p < p1; ++p) few_rows_panels<M, 1, DT>(K, A, lda, base + p * stride, stride, C + p * kNR, ldc, accumulate);
}

template <int M>
void few_rows_dispatch(int p0, int p1, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate) {
  switch (B.dtype()) {
    case WeightDtype::F32: return few_rows_run<M, WeightDtype::F32>(p0, p1, A, lda, B, B.panel(0), C, ldc, accumulate);
    case WeightDtype::BF16: return few_rows_run<M, WeightDtype::BF16>(p0, p1, A, lda, B, B.panel16(0), C, ldc, accumulate);
    default: return few_rows_run<M, WeightDtype::F16>(p0, p1, A, lda, B, B.panel16(0), C, ldc, accumulate);
  }
}

void few_rows_any(int M, int p0, int p1, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate) {
  using Fn = void (*)(int, int, const float*, int, const PackedMatrix&, float*, int, bool);
  static constexpr Fn kByRows[8] = {nullptr, few_rows_dispatch<1>, few_rows_dispatch<std::min(2, kFewRows)>, few_rows_dispatch<std::min(3, kFewRows)>,
                                    few_rows_dispatch<std::min(4, kFewRows)>, few_rows_dispatch<std::min(5, kFewRows)>,
                                    few_rows_dispatch<std::min(6, kFewRows)>, few_rows_dispatch<std::min(7, kFewRows)>};
  kByRows[M](p0, p1, A, lda, B, C, ldc, accumulate);
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
template <class E>
inline __m256 load8(const E* p, WeightDtype dt);  // below, with the few-row path
#endif

// Rows [p*kNR, p*kNR + width) of Bt, transposed into a (K, kNR) panel (zero-padded, widened
// to F32 when Bt is 16-bit), then run. A whole panel is moved 8 x 8 values at a time in
// registers (widened exactly, as load_row does): the same panel, bit for bit, as the scalar
// loop below, which was a quarter of the logits' time (tests/bench/README.md, stage timers).
template <class E>
void run_transposed_panel(int p, int M, const float* A, int lda, int N, int K, const E* Bt, WeightDtype dt, int ldb, float* C, int ldc) {
  thread_local std::vector<float, Eigen::aligned_allocator<float>> panel;
  const int n0 = p * kNR, width = std::min(kNR, N - n0);
  int k_done = 0;  // rows of the panel already written for every column
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  if (width == kNR) {
    panel.resize(static_cast<size_t>(K) * kNR);  // every value is written below
    k_done = K / 8 * 8;
    for (int g = 0; g < kNR; g += 8) {
      const E* rows[8];
      for (int j = 0; j < 8; ++j) rows[j] = Bt + static_cast<size_t>(n0 + g + j) * ldb;
      for (int k = 0; k < k_done; k += 8) {
        __m256 r[8];
        for (int j = 0; j < 8; ++j) r[j] = load8(rows[j] + k, dt);
        transpose8(r);
        for (int q = 0; q < 8; ++q) _mm256_storeu_ps(panel.data() + static_cast<size_t>(k + q) * kNR + g, r[q]);
      }
    }
  } else {
    panel.assign(static_cast<size_t>(K) * kNR, 0.0f);
  }
#else
  panel.assign(static_cast<size_t>(K) * kNR, 0.0f);
#endif
  for (int j = 0; j < width; ++j) {
    const E* row = Bt + static_cast<size_t>(n0 + j) * ldb;
    if constexpr (std::is_same_v<E, float>) {
      (void)dt;
      for (int k = k_done; k < K; ++k) panel[static_cast<size_t>(k) * kNR + j] = row[k];
    } else if (dt == WeightDtype::BF16) {
      for (int k = k_done; k < K; ++k) panel[static_cast<size_t>(k) * kNR + j] = bf16_to_float(row[k]);
    } else {
      for (int k = k_done; k < K; ++k) panel[static_cast<size_t>(k) * kNR + j] = half_to_float(row[k]);
    }
  }
  run_panel<WeightDtype::F32>(p, M, K, N, A, lda, panel.data(), panel.data() + panel.size(), C, ldc, false);
}

// Weights below this many bytes (64 MiB) are not split over threads for fewer than
// kFewRowSplitRows rows, unless the calling thread holds a FewRowSplit(true).
constexpr size_t kSmallRowsSplitBytes = size_t(64) << 20;
// A FewRowSplit(true) scope streams a matrix of at least this many bytes (1 MiB) on the whole
// team whatever its flops: a thread's half then takes ~50 us against the region's ~5 us.
constexpr size_t kFewRowTeamBytes = size_t(1) << 20;
thread_local bool t_few_row_split = false;
thread_local FewRowSplit* t_few_row_scope = nullptr;  // the innermost scope, which times the products it decides

// Below this many rows of A the transposed product skips the panels: transposing all of Bt
// (the whole unembedding for one appended token) cost more than the product itself.
// With AVX-512's 32 registers (16 ymm for a step's values, 2 per row for the sums) up to 7
// rows (the few-row product's) read Bt in place; with AVX2's 16, 3.
constexpr int kDirectRows = kFloatLanes >= 16 ? kMR : 4;

// Columns [n0, n1) of C (M, N) = A (M, K) Bt^T straight from the rows of Bt, kCols columns
// at a time in independent chains. Each C(i, n) is the same fused multiply-add chain over k
// = 0..K-1 from 0 that the panel kernel computes for its column, so the result is bit for
// bit the panels' one.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// Eight values of a row of Bt, widened to F32 (exactly, as load_row does).
template <class E>
inline __m256 load8(const E* p, WeightDtype dt) {
  if constexpr (std::is_same_v<E, float>) {
    (void)dt;
    return _mm256_loadu_ps(p);
  } else {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return dt == WeightDtype::BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)) : _mm256_cvtph_ps(v);
  }
}

// Columns [n, n + 16) of up to kDirectRows - 1 rows: two groups of 8 columns, each group's
// rows of Bt read 8 values at a time, widened, transposed in registers, and accumulated as 8
// columns side by side. Each column is still one fused multiply-add chain over k = 0..K-1
// from 0 (the last K % 8 values in scalar), so the result is the scalar loop's bit for bit.
template <int M, class E>
void direct_16_columns(int n, const float* A, int lda, int K, const E* Bt, WeightDtype dt, int ldb, float* C, int ldc) {
  constexpr int kMaxRows = M;
  const E* b[16];
  for (int j = 0; j < 16; ++j) b[j] = Bt + static_cast<size_t>(n + j) * ldb;
  __m256 acc[kMaxRows][2];
  for (int i = 0; i < kMaxRows; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const int K8 = K / 8 * 8;
  for (int k = 0; k < K8; k += 8) {
    // F32 rows: each row's line 512 bytes ahead, one row in 16 a step (GPT-2's tied table, one
    // row: 8.8-9.6 ms without, 7.0-8.2 with, 10.2-10.6 at 2 KB ahead; tests/bench/README.md, gpt8);
    // and the next 16 rows, one contiguous block when ldb == K, 8 lines a step into L2: the
    // table's 16 short streams (3 KB each on GPT-2) then find their lines there (GPT-2's logits
    // 3.8-4.8 ms against 7.3-8.1 on the Zen 4 VM, session 19; into L1, or two blocks ahead, less).
    if constexpr (std::is_same_v<E, float>) {
      if ((k & 8) == 0)
        for (int j = 0; j < 16; ++j) __builtin_prefetch(b[j] + k + 128, 0, 3);
      const uintptr_t next = reinterpret_cast<uintptr_t>(b[0]) + (static_cast<size_t>(16) * ldb + static_cast<size_t>(k) * 16) * sizeof(float);  // past the table: a hint, never a read
      for (int t = 0; t < 8; ++t) __builtin_prefetch(reinterpret_cast<const void*>(next + t * 64), 0, 2);
    }
    __m256 lo[8], hi[8];
    for (int j = 0; j < 8; ++j) lo[j] = load8(b[j] + k, dt), hi[j] = load8(b[j + 8] + k, dt);
    transpose8(lo);
    transpose8(hi);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const float* a = A + static_cast<size_t>(i) * lda + k;
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const __m256 av = _mm256_set1_ps(a[q]);
        acc[i][0] = _mm256_fmadd_ps(av, lo[q], acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(av, hi[q], acc[i][1]);
      }
    }
  }
  for (int i = 0; i < M; ++i) {
    alignas(32) float s[16];
    _mm256_store_ps(s, acc[i][0]);
    _mm256_store_ps(s + 8, acc[i][1]);
    const float* a = A + static_cast<size_t>(i) * lda;
    for (int j = 0; j < 16; ++j) {
      for (int k = K8; k < K; ++k) {
        float v;
        if constexpr (std::is_same_v<E, float>) v = b[j][k];
        else v = dt == WeightDtype::BF16 ? bf16_to_float(b[j][k]) : half_to_float(b[j][k]);
        s[j] = std::fma(a[k], v, s[j]);
      }
      C[static_cast<size_t>(i) * ldc + n + j] = s[j];
    }
  }
}
#endif

// Columns [0, width) of a (kc, kNR) F32 panel widened from blocks (vectorised where the
// build allows): column j's kc values at src[j] in dt[j], a whole number of its blocks;
// columns [width, kNR) zero (PackedMatrix::widen_panel).
void widen_columns(int width, const uint8_t* const* src, const WeightDtype* dt, int kc, float* wide) {
  // 256 values of each column at a time (a whole number of every type's blocks), widened
  // into a (kNR, 256) scratch in L1, then transposed into the panel 8 x 8 at a time.
  constexpr int kChunk = 256;
  alignas(64) thread_local float cols[kNR * kChunk];
  for (int k0 = 0; k0 < kc; k0 += kChunk) {
    const int n = std::min(kChunk, kc - k0);
    for (int j = 0; j < width; ++j) {
      // Each column's next bytes (this call's next chunk, or the next call's) are fetched
      // while these are widened: the columns are strided streams from DRAM. (A prefetch
      // never faults, past the matrix too.)
      const int64_t at = dtype_bytes(dt[j], k0), next = dtype_bytes(dt[j], k0 + n), ahead = dtype_bytes(dt[j], n);
      for (int64_t off = 0; off < ahead; off += 64) __builtin_prefetch(src[j] + next + off, 0, 0);
      widen_weights(dt[j], src[j] + at, n, cols + j * kChunk);
    }
    for (int j = width; j < kNR; ++j) std::fill_n(cols + j * kChunk, n, 0.0f);
    float* out = wide + static_cast<size_t>(k0) * kNR;  // (n, kNR)
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    if (n % 8 == 0) {
      for (int g = 0; g < kNR; g += 8)
        for (int k = 0; k < n; k += 8) {
          __m256 r[8];
          for (int i = 0; i < 8; ++i) r[i] = _mm256_load_ps(cols + (g + i) * kChunk + k);
          transpose8(r);
          for (int i = 0; i < 8; ++i) _mm256_storeu_ps(out + static_cast<size_t>(k + i) * kNR + g, r[i]);
        }
      continue;
    }
#endif
    for (int j = 0; j < kNR; ++j)
      for (int k = 0; k < n; ++k) out[static_cast<size_t>(k) * kNR + j] = cols[j * kChunk + k];
  }
}

template <class E>
void direct_columns(int n0, int n1, int M, const float* A, int lda, int K, const E* Bt, WeightDtype dt, int ldb, float* C, int ldc) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  static_assert(kDirectRows - 1 <= 7, "direct_16_columns keeps at most 7 rows' accumulators");
  using Fn = void (*)(int, const float*, int, int, const E*, WeightDtype, int, float*, int);
  static constexpr Fn kByRows[8] = {nullptr, direct_16_columns<1, E>, direct_16_columns<2, E>, direct_16_columns<3, E>, direct_16_columns<4, E>,
                                    direct_16_columns<5, E>, direct_16_columns<6, E>, direct_16_columns<7, E>};
  for (; n0 + 16 <= n1; n0 += 16) kByRows[M](n0, A, lda, K, Bt, dt, ldb, C, ldc);
#endif
  constexpr int kCols = 8;
  auto widen = [dt](E v) -> float {
    if constexpr (std::is_same_v<E, float>) {
      (void)dt;
      return v;
    } else {
      return dt == WeightDtype::BF16 ? bf16_to_float(v) : half_to_float(v);
    }
  };
  for (int i = 0; i < M; ++i) {
    const float* a = A + static_cast<size_t>(i) * lda;
    float* c = C + static_cast<size_t>(i) * ldc;
    int n = n0;
    for (; n + kCols <= n1; n += kCols) {
      const E* b[kCols];
      float acc[kCols];
      for (int j = 0; j < kCols; ++j) b[j] = Bt + static_cast<size_t>(n + j) * ldb, acc[j] = 0.0f;
      for (int k = 0; k < K; ++k)
        for (int j = 0; j < kCols; ++j) acc[j] = std::fma(a[k], widen(b[j][k]), acc[j]);
      for (int j = 0; j < kCols; ++j) c[n + j] = acc[j];
    }
    for (; n < n1; ++n) {
      const E* b = Bt + static_cast<size_t>(n) * ldb;
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc = std::fma(a[k], widen(b[k]), acc);
      c[n] = acc;
    }
  }
}

template <class E>
void transposed_b(int M, const float* A, int lda, int N, int K, const E* Bt, WeightDtype dt, int ldb, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    for (int i = 0; i < M; ++i) std::fill_n(C + static_cast<size_t>(i) * ldc, N, 0.0f);
    return;
  }
  const int P = (N + kNR - 1) / kNR;
  if (M < kDirectRows) {  // a few rows: one read of Bt, no panels
    const int nt = std::min(threads_for(2.0 * M * N * static_cast<double>(K)), P);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int p = 0; p < P; ++p) direct_columns(p * kNR, std::min(N, (p + 1) * kNR), M, A, lda, K, Bt, dt, ldb, C, ldc);
    return;
  }
  const int nt = std::min(threads_for(2.0 * M * N * static_cast<double>(K)), P);
  if (nt <= 1) {
    for (int p = 0; p < P; ++p) run_transposed_panel(p, M, A, lda, N, K, Bt, dt, ldb, C, ldc);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int p = 0; p < P; ++p) run_transposed_panel(p, M, A, lda, N, K, Bt, dt, ldb, C, ldc);
}
}  // namespace

void PackedMatrix::free_other_storage() {
  if (storage_ != Storage::F32) std::vector<float, UninitialisedAllocator<float>>().swap(data_);
  if (storage_ != Storage::Narrow16) std::vector<uint16_t, UninitialisedAllocator<uint16_t>>().swap(data16_);
  if (storage_ != Storage::Blocks) {
    std::vector<uint8_t, UninitialisedAllocator<uint8_t>>().swap(data8_);
    std::vector<Run>().swap(runs_);
  }
}

void PackedMatrix::resize(Eigen::Index rows, Eigen::Index cols, WeightDtype dtype) {
  HM_ASSERT(!is_block_dtype(dtype), "resize: a block type is kept by assign_blocks");
  rows_ = rows;
  cols_ = cols;
  dtype_ = dtype;
  storage_ = dtype == WeightDtype::F32 ? Storage::F32 : Storage::Narrow16;
  free_other_storage();
  const size_t n = static_cast<size_t>(panels()) * rows * kPanel;
  // values zero (the allocator does not)
  if (narrow()) data16_.assign(n, 0);
  else data_.assign(n, 0.0f);
}

void PackedMatrix::set_rows(Eigen::Index r0, Eigen::Index n, const float* block) {
  HM_ASSERT(r0 >= 0 && n >= 0 && r0 + n <= rows_ && !blocks(), "set_rows: rows out of range; resize() first");
  for (int p = 0; p < panels(); ++p) {
    const Eigen::Index c0 = static_cast<Eigen::Index>(p) * kPanel, width = std::min<Eigen::Index>(kPanel, cols_ - c0);
    if (narrow()) {
      uint16_t* dst = data16_.data() + (static_cast<size_t>(p) * rows_ + r0) * kPanel;
      for (Eigen::Index r = 0; r < n; ++r)
        for (Eigen::Index j = 0; j < kPanel; ++j) dst[r * kPanel + j] = j < width ? float_to_narrow(block[r * cols_ + c0 + j], dtype_) : 0;
      continue;
    }
    float* dst = data_.data() + (static_cast<size_t>(p) * rows_ + r0) * kPanel;
    for (Eigen::Index r = 0; r < n; ++r) {
      std::copy_n(block + r * cols_ + c0, width, dst + r * kPanel);
      std::fill(dst + r * kPanel + width, dst + (r + 1) * kPanel, 0.0f);  // the last panel's padding
    }
  }
}

void PackedMatrix::assign_by_rows_parallel(Eigen::Index rows, Eigen::Index cols, const BlockFill& fill, double flops_per_element) {
  // Not zeroed first: every row is written below, padding included, by the thread that
  // draws it (so the pages are also first touched on both threads).
  rows_ = rows;
  cols_ = cols;
  dtype_ = WeightDtype::F32;
  storage_ = Storage::F32;
  free_other_storage();
  data_.clear();
  data_.resize(static_cast<size_t>(panels()) * rows * kPanel);
  const Eigen::Index blocks = (rows + kBlockRows - 1) / kBlockRows;
  const int nt = static_cast<int>(std::min<Eigen::Index>(threads_for(flops_per_element * static_cast<double>(rows * cols)), blocks));
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    thread_local std::vector<float> block;  // the team's threads live on: reused, no page faults
    block.resize(static_cast<size_t>(std::min(kBlockRows, rows) * cols));
#pragma omp for schedule(static)
    for (Eigen::Index b = 0; b < blocks; ++b) {
      const Eigen::Index r0 = b * kBlockRows, n = std::min(kBlockRows, rows - r0);
      fill(r0, n, block.data());  // a nested parallel region inside runs on this thread alone
      set_rows(r0, n, block.data());
    }
  }
}

void PackedMatrix::assign(const float* plain, Eigen::Index rows, Eigen::Index cols, WeightDtype dtype) {
  resize(rows, cols, dtype);
  set_rows(0, rows, plain);
}

PackedMatrix::Plain PackedMatrix::plain() const { return middle_cols(0, cols_); }

PackedMatrix::Plain PackedMatrix::middle_cols(Eigen::Index c0, Eigen::Index n) const {
  HM_ASSERT(c0 >= 0 && n >= 0 && c0 + n <= cols_, "middle_cols: columns out of range");
  Plain m(rows_, n);  // (K, n)
  if (blocks()) {
    std::vector<float> col(static_cast<size_t>(rows_));
    for (Eigen::Index c = c0; c < c0 + n; ++c) {
      widen_weights(column_dtype(c), column_blocks(c), rows_, col.data());
      for (Eigen::Index r = 0; r < rows_; ++r) m(r, c - c0) = col[static_cast<size_t>(r)];
    }
    return m;
  }
  for (Eigen::Index c = c0; c < c0 + n;) {
    const int p = static_cast<int>(c / kPanel);
    const Eigen::Index j0 = c % kPanel, width = std::min<Eigen::Index>(kPanel - j0, c0 + n - c);
    for (Eigen::Index r = 0; r < rows_; ++r)
      if (narrow())
        for (Eigen::Index j = 0; j < width; ++j) m(r, c - c0 + j) = narrow_to_float(panel16(p)[r * kPanel + j0 + j], dtype_);
      else
        std::copy_n(panel(p) + r * kPanel + j0, width, m.data() + r * n + (c - c0));
    c += width;
  }
  return m;
}

bool PackedMatrix::assign_transposed_narrow(const uint16_t* src, Eigen::Index rows, Eigen::Index cols, WeightDtype src_dtype) {
  std::vector<const uint16_t*> col_src(static_cast<size_t>(cols));
  for (Eigen::Index c = 0; c < cols; ++c) col_src[static_cast<size_t>(c)] = src + static_cast<size_t>(c) * rows;
  return assign_transposed_narrow(col_src, rows, src_dtype);
}

bool PackedMatrix::assign_transposed_narrow(const std::vector<const uint16_t*>& col_src, Eigen::Index rows, WeightDtype src_dtype) {
  const Eigen::Index cols = static_cast<Eigen::Index>(col_src.size());
  begin_narrow(rows, cols, src_dtype);
  const int P = panels();
  const int nt = std::min(threads_for(static_cast<double>(rows) * cols), P);
  int bad = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if (nt > 1)
  for (int p = 0; p < P; ++p) bad |= !pack_transposed_panels(col_src.data(), p, p + 1);
  return bad == 0;
}

void PackedMatrix::begin_narrow(Eigen::Index rows, Eigen::Index cols, WeightDtype src_dtype) {
  HM_ASSERT(src_dtype == WeightDtype::BF16 || src_dtype == WeightDtype::F16, "begin_narrow packs 16-bit data");
  rows_ = rows;
  cols_ = cols;
  dtype_ = src_dtype;
  storage_ = Storage::Narrow16;
  free_other_storage();
  data16_.clear();
  data16_.resize(static_cast<size_t>(panels()) * rows * kPanel);  // every value written by pack_transposed_panels
}

bool PackedMatrix::pack_transposed_panels(const uint16_t* const* col_src, int p0, int p1) {
  HM_ASSERT(narrow() && p0 >= 0 && p0 <= p1 && p1 <= panels(), "pack_transposed_panels: panels out of range; begin_narrow() first");
  const Eigen::Index rows = rows_, cols = cols_;
  const uint16_t inf_exp = dtype_ == WeightDtype::BF16 ? 0x7F80u : 0x7C00u;  // all-ones exponent: inf or NaN
  int bad = 0;
  for (int p = p0; p < p1; ++p) {
    const Eigen::Index c0 = static_cast<Eigen::Index>(p) * kPanel, width = std::min<Eigen::Index>(kPanel, cols - c0);
    uint16_t* dst = data16_.data() + static_cast<size_t>(p) * rows * kPanel;  // (K, kPanel)
    const uint16_t* col[kPanel];  // the source rows of this panel's columns: (in) each
    for (Eigen::Index j = 0; j < width; ++j) col[j] = col_src[static_cast<size_t>(c0 + j)];
    // Blocks of kRows rows of the panel (kRows * kPanel * 2 bytes, in L1): each source row's
    // kRows values read as one run, while the same run two blocks ahead is prefetched (the
    // width streams from the page cache would otherwise each wait on memory).
    constexpr Eigen::Index kRows = 128;
    uint16_t acc = 0;
    for (Eigen::Index r0 = 0; r0 < rows; r0 += kRows) {
      const Eigen::Index n = std::min(kRows, rows - r0);
      uint16_t* d = dst + r0 * kPanel;
      for (Eigen::Index j = 0; j < width; ++j) {
        const uint16_t* s = col[j] + r0;
        if (r0 + 3 * kRows <= rows)
          for (Eigen::Index off = 2 * kRows; off < 3 * kRows; off += 32) __builtin_prefetch(s + off, 0, 0);
      }
      Eigen::Index j_done = 0, r_done = 0;  // columns and rows moved 8 x 8 below
#if defined(__SSE2__)
      // 8 columns x 8 rows at a time, transposed in registers (the scalar loop below, one
      // 2-byte store 2 * kPanel bytes from the last, took a quarter of a BF16 GGUF load).
      j_done = width / 8 * 8, r_done = n / 8 * 8;
      const __m128i exp_mask = _mm_set1_epi16(static_cast<short>(inf_exp));
      __m128i bad8 = _mm_setzero_si128();
      for (Eigen::Index j = 0; j < j_done; j += 8)
        for (Eigen::Index r = 0; r < r_done; r += 8) {
          __m128i a[8];
          for (int q = 0; q < 8; ++q) {
            a[q] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[j + q] + r0 + r));
            bad8 = _mm_or_si128(bad8, _mm_cmpeq_epi16(_mm_and_si128(a[q], exp_mask), exp_mask));
          }
          __m128i t[8], u[8];
          for (int q = 0; q < 4; ++q) t[2 * q] = _mm_unpacklo_epi16(a[2 * q], a[2 * q + 1]), t[2 * q + 1] = _mm_unpackhi_epi16(a[2 * q], a[2 * q + 1]);
          for (int q = 0; q < 2; ++q) {
            u[4 * q + 0] = _mm_unpacklo_epi32(t[4 * q], t[4 * q + 2]);
            u[4 * q + 1] = _mm_unpackhi_epi32(t[4 * q], t[4 * q + 2]);
            u[4 * q + 2] = _mm_unpacklo_epi32(t[4 * q + 1], t[4 * q + 3]);
            u[4 * q + 3] = _mm_unpackhi_epi32(t[4 * q + 1], t[4 * q + 3]);
          }
          for (int q = 0; q < 4; ++q) {  // row r + i: the 8 columns' values
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (r + 2 * q) * kPanel + j), _mm_unpacklo_epi64(u[q], u[q + 4]));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (r + 2 * q + 1) * kPanel + j), _mm_unpackhi_epi64(u[q], u[q + 4]));
          }
        }
      acc |= static_cast<uint16_t>(_mm_movemask_epi8(bad8) != 0);
#endif
      for (Eigen::Index j = 0; j < width; ++j) {
        const uint16_t* s = col[j] + r0;
        for (Eigen::Index r = j < j_done ? r_done : 0; r < n; ++r) {
          const uint16_t v = s[r];
          acc |= static_cast<uint16_t>((v & inf_exp) == inf_exp);
          d[r * kPanel + j] = v;
        }
      }
      for (Eigen::Index j = width; j < kPanel; ++j)
        for (Eigen::Index r = 0; r < n; ++r) d[r * kPanel + j] = 0;
    }
    bad |= acc;
  }
  return bad == 0;
}

float PackedMatrix::operator()(Eigen::Index r, Eigen::Index c) const {
  if (blocks()) {  // the block holding (r, c), widened
    const WeightDtype dt = column_dtype(c);
    const int blk = weight_dtype_info(dt).block;
    float v[256];
    widen_weights(dt, column_blocks(c) + dtype_bytes(dt, r / blk * blk), blk, v);
    return v[r % blk];
  }
  const size_t i = (static_cast<size_t>(c / kPanel) * rows_ + r) * kPanel + c % kPanel;
  return narrow() ? narrow_to_float(data16_[i], dtype_) : data_[i];
}

void PackedMatrix::column(Eigen::Index c, float* out) const {
  HM_ASSERT(c >= 0 && c < cols_, "column: out of range");
  if (blocks()) return widen_weights(column_dtype(c), column_blocks(c), rows_, out);
  const size_t j = static_cast<size_t>(c % kPanel), p = static_cast<size_t>(c / kPanel);
  if (!narrow()) {
    const float* s = data_.data() + p * rows_ * kPanel + j;
    for (Eigen::Index r = 0; r < rows_; ++r) out[r] = s[static_cast<size_t>(r) * kPanel];
    return;
  }
  const uint16_t* s = data16_.data() + p * rows_ * kPanel + j;
  if (dtype_ == WeightDtype::BF16)
    for (Eigen::Index r = 0; r < rows_; ++r) out[r] = bf16_to_float(s[static_cast<size_t>(r) * kPanel]);
  else
    for (Eigen::Index r = 0; r < rows_; ++r) out[r] = half_to_float(s[static_cast<size_t>(r) * kPanel]);
}

std::string PackedMatrix::dtype_text() const {
  if (!blocks()) return dtype_name(dtype_);
  bool seen[kWeightDtypes] = {};
  for (const Run& r : runs_) seen[static_cast<int>(r.dt)] = true;
  std::string s;
  for (int i = 0; i < kWeightDtypes; ++i)
    if (seen[i]) s += (s.empty() ? "" : "+") + std::string(dtype_name(static_cast<WeightDtype>(i)));
  return s;
}

bool PackedMatrix::assign_blocks(const std::vector<const uint8_t*>& col_src, const std::vector<WeightDtype>& col_dtype, Eigen::Index rows) {
  HM_ASSERT(col_src.size() == col_dtype.size() && !col_src.empty(), "assign_blocks: one source and one type per column");
  const Eigen::Index cols = static_cast<Eigen::Index>(col_src.size());
  rows_ = rows;
  cols_ = cols;
  dtype_ = col_dtype[0];
  storage_ = Storage::Blocks;
  free_other_storage();
  runs_.clear();
  size_t total = 0;
  for (size_t c = 0; c < col_src.size(); ++c) {
    HM_ASSERT(rows % weight_dtype_info(col_dtype[c]).block == 0, "assign_blocks: rows a whole number of blocks");
    if (runs_.empty() || runs_.back().dt != col_dtype[c]) runs_.push_back(Run{static_cast<Eigen::Index>(c), col_dtype[c], total});
    total += static_cast<size_t>(dtype_bytes(col_dtype[c], rows));
  }
  data8_.clear();
  data8_.resize(total);  // every byte written below
  const int P = panels();
  const int nt = std::min(threads_for(static_cast<double>(rows) * cols), P);
  int bad = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if (nt > 1)
  for (int p = 0; p < P; ++p) {
    // Each column's row copied, then checked (the file's scales may not be finite).
    const size_t c1 = std::min<size_t>(static_cast<size_t>(p + 1) * kPanel, static_cast<size_t>(cols));
    for (size_t c = static_cast<size_t>(p) * kPanel; c < c1; ++c) {
      const size_t n = static_cast<size_t>(dtype_bytes(col_dtype[c], rows));
      uint8_t* dst = const_cast<uint8_t*>(column_blocks(static_cast<Eigen::Index>(c)));
      std::memcpy(dst, col_src[c], n);
      bad |= !widened_values_finite(col_dtype[c], dst, rows);
    }
  }
  return bad == 0;
}

void PackedMatrix::widen_panel(int p, Eigen::Index k0, Eigen::Index kc, float* wide) const {
  const Eigen::Index c0 = static_cast<Eigen::Index>(p) * kPanel;
  const int width = static_cast<int>(std::min<Eigen::Index>(kPanel, cols_ - c0));
  const uint8_t* src[kPanel];
  WeightDtype dt[kPanel];
  for (int j = 0; j < width; ++j) dt[j] = column_dtype(c0 + j), src[j] = column_blocks(c0 + j) + dtype_bytes(dt[j], k0);
  widen_columns(width, src, dt, static_cast<int>(kc), wide);
}

// packed_gemm with nt threads at most.
static void packed_gemm_on(int nt, int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate) {
  const int N = static_cast<int>(B.cols()), P = B.panels();
  if (M <= kFewRows && !B.blocks()) {  // G panels side by side (few_rows_panels)
    auto run = [&](int p0, int p1) { few_rows_any(M, p0, p1, A, lda, B, C, ldc, accumulate); };
    if (nt <= 1) return run(0, P);
    // Each thread one contiguous run of panels, a multiple of 4 (of few_rows_run's groups of G).
    const int per = (P / nt + 3) / 4 * 4;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; ++t) run(std::min(P, t * per), t == nt - 1 ? P : std::min(P, (t + 1) * per));
    return;
  }
  // More rows against F32 / 16-bit panels: A packed, B widened once a sub-panel (packed_gemm_rows.cpp).
  if (!B.blocks()) return many_rows(std::max(1, std::min(nt, P)), M, A, lda, B, C, ldc, accumulate);
  // A matrix kept in blocks: in dot order (block_gemm.h, run_block_unit). The calling thread's
  // BF16 products (a thread-local scope) are carried onto the team's threads.
  const bool blocks = B.blocks(), bf16 = Bf16Products::active();
  const int K = static_cast<int>(B.rows()), units = blocks ? block_units(M, N) : P;
  auto col = [&B](int c) { return std::make_pair(B.column_blocks(c), B.column_dtype(c)); };
  nt = std::min(nt, units);
  const uint32_t* a_pairs = blocks ? block_pairs_of_a(nt, bf16, M, A, lda, K) : nullptr;
  const Int8Rows* int8 = blocks ? int8_rows_of_a(nt, Int8Products::active(), M, A, lda, K) : nullptr;
  auto run = [&](int u) {
    Bf16Products products(bf16);
    if (blocks) run_block_unit(u, M, N, K, A, lda, col, C, ldc, accumulate, a_pairs, int8);
    else run_packed_panel(u, M, A, lda, B, C, ldc, accumulate);
  };
  if (nt <= 1) {
    for (int u = 0; u < units; ++u) run(u);
    return;
  }
  // Contiguous runs of panels per thread: each thread streams one region of B.
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int u = 0; u < units; ++u) run(u);
}

void packed_gemm(int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate) {
  const int N = static_cast<int>(B.cols()), P = B.panels();
  if (M <= 0 || N <= 0) return;
  if (B.rows() == 0) {  // an empty sum
    if (!accumulate)
      for (int i = 0; i < M; ++i) std::fill_n(C + static_cast<size_t>(i) * ldc, N, 0.0f);
    return;
  }
  const int nt = std::min(threads_for(2.0 * M * N * static_cast<double>(B.rows())), P);
  // A few rows (the incremental forward's appended tokens) stream the weights once with
  // little arithmetic: one layer's matrix takes a thread a millisecond or so, less than a
  // parallel region's join costs when the cores are shared (3.8x slower appends on a loaded
  // 2-core machine). Only a large matrix is split, or any when a FewRowSplit scope asks.
  if (M >= kFewRowSplitRows || B.bytes() >= kSmallRowsSplitBytes) return packed_gemm_on(nt, M, A, lda, B, C, ldc, accumulate);
  FewRowSplit* scope = t_few_row_scope;
  if (!scope) return packed_gemm_on(1, M, A, lda, B, C, ldc, accumulate);
  // Split, a few rows are sized by their bytes, not their flops: GPT-2 small's W_O (2.4 MB,
  // 1.2 MFLOP a row, under threads_for's 2) ran on one thread at half the team's rate, 3.3 of
  // an append's 34 ms (tests/bench/README.md, helper gpt8).
  const int team = B.bytes() >= kFewRowTeamBytes ? std::min(compute_threads(), P) : nt;
  const auto t0 = std::chrono::steady_clock::now();
  packed_gemm_on(t_few_row_split ? team : 1, M, A, lda, B, C, ldc, accumulate);
  scope->products_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const uint8_t* Bt, WeightDtype dtype, size_t row_bytes, float* C, int ldc) {
  HM_ASSERT(is_block_dtype(dtype), "the block gemm_transposed_b takes a block type");
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    for (int i = 0; i < M; ++i) std::fill_n(C + static_cast<size_t>(i) * ldc, N, 0.0f);
    return;
  }
  // Bt's rows are the columns, in dot order (block_gemm.h, run_block_unit).
  const int units = block_units(M, N);
  auto col = [&](int c) { return std::make_pair(Bt + static_cast<size_t>(c) * row_bytes, dtype); };
  const bool bf16 = Bf16Products::active();  // carried onto the team's threads
  const int nt = std::min(threads_for(2.0 * M * N * static_cast<double>(K)), units);
  const uint32_t* a_pairs = block_pairs_of_a(nt, bf16, M, A, lda, K);
  const Int8Rows* int8 = int8_rows_of_a(nt, Int8Products::active(), M, A, lda, K);
  auto run = [&](int u) {
    Bf16Products products(bf16);
    run_block_unit(u, M, N, K, A, lda, col, C, ldc, false, a_pairs, int8);
  };
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int u = 0; u < units; ++u) run(u);
}

FewRowSplit::FewRowSplit(bool split) : previous_(t_few_row_split), previous_scope_(t_few_row_scope) {
  t_few_row_split = split;
  t_few_row_scope = this;
}
FewRowSplit::~FewRowSplit() {
  t_few_row_split = previous_;
  t_few_row_scope = previous_scope_;
}

thread_local bool t_bf16_products = false;
Bf16Products::Bf16Products(bool on) : previous_(t_bf16_products) { t_bf16_products = on && available(); }
Bf16Products::~Bf16Products() { t_bf16_products = previous_; }
bool Bf16Products::available() {
#if defined(__AVX512BF16__)
  return kFloatLanes == 16;
#else
  return false;
#endif
}
bool Bf16Products::active() { return t_bf16_products; }

void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const float* Bt, int ldb, float* C, int ldc) {
  transposed_b(M, A, lda, N, K, Bt, WeightDtype::F32, ldb, C, ldc);
}

void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const uint16_t* Bt, WeightDtype dtype, int ldb, float* C, int ldc) {
  HM_ASSERT(dtype != WeightDtype::F32, "the 16-bit gemm_transposed_b takes BF16 or F16");
  transposed_b(M, A, lda, N, K, Bt, dtype, ldb, C, ldc);
}

}  // namespace headmap
