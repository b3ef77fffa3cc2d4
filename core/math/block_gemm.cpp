// block_gemm.cpp: activations against block-kept weights in dot order (block_gemm.h).
//
// A few rows (1-3: the appended tokens), G columns at a time, each row's G accumulators in
// registers over the whole of K (M * G independent chains hide the multiply-add's latency).
// Each column is widened 256 values at a time (a whole number of every type's blocks) with
// widen_weights into a scratch that stays in L1, or, for Q8_0, block by block in registers,
// and multiplied along k, 8 values at a time, by the rows of A: no transpose. Many rows run
// packed_gemm.cpp's run_block_lanes instead (the F32 kernel, lane by lane).
#include "core/math/block_gemm.h"

#include "core/math/half.h"

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

// Values [k0, k0 + n) of the column at src in dt into w[0 .. round8(n)), zero past n. k0 is a
// multiple of kChunk, so a whole number of blocks.
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

// M rows against columns [g0, g0 + G) (those below width), the accumulators in registers.
template <int M, int G>
void few_rows(int g0, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
              bool accumulate) {
  alignas(64) thread_local float w[G * kChunk];
  const int cols = std::min(G, width - g0);
  V acc[M][G];
  for (int i = 0; i < M; ++i)
    for (int g = 0; g < G; ++g) acc[i][g] = _mm256_setzero_ps();
  for (int k0 = 0; k0 < K; k0 += kChunk) {
    const int n = std::min(kChunk, K - k0), n8 = round8(n);
    for (int g = 0; g < cols; ++g) widen_chunk(src[g0 + g], dt[g0 + g], k0, n, w + g * kChunk);
    for (int g = cols; g < G; ++g) std::fill_n(w + g * kChunk, n8, 0.0f);
    int ld;
    const float* a = a_rows(M, A, lda, k0, n, &ld);
    for (int k = 0; k < n8; k += kLanes) {
      V av[M];
      for (int i = 0; i < M; ++i) av[i] = _mm256_loadu_ps(a + static_cast<size_t>(i) * ld + k);
      for (int g = 0; g < G; ++g) {
        const V wv = _mm256_load_ps(w + g * kChunk + k);
        for (int i = 0; i < M; ++i) acc[i][g] = _mm256_fmadd_ps(av[i], wv, acc[i][g]);
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int g = 0; g < cols; ++g) {
      alignas(32) float l[kLanes];
      _mm256_store_ps(l, acc[i][g]);
      put(C + static_cast<size_t>(i) * ldc + g0 + g, reduce8(l), accumulate);
    }
}

// The same for Q8_0 columns, each block widened in registers where it is multiplied (no
// scratch): w = d * float(q), the operations of widen_weights' Q8_0, then fma(a, w, acc) as
// above. Columns past `cols` repeat the last one and are not stored.
template <int M, int G>
void few_rows_q8_0(int g0, int width, const uint8_t* const* src, int K, const float* A, int lda, float* C, int ldc, bool accumulate) {
  constexpr int kBytes = 34;  // a block: F16 scale, 32 int8
  const int cols = std::min(G, width - g0);
  const uint8_t* p[G];
  for (int g = 0; g < G; ++g) p[g] = src[g0 + std::min(g, cols - 1)];
  V acc[M][G];
  for (int i = 0; i < M; ++i)
    for (int g = 0; g < G; ++g) acc[i][g] = _mm256_setzero_ps();
  for (int b = 0; b < K / 32; ++b) {
    const float* a = A + b * 32;
    for (int g = 0; g < G; ++g) {
      const uint8_t* q = p[g] + b * kBytes;
      __builtin_prefetch(q + 8 * 64, 0, 0);
      uint16_t h;
      std::memcpy(&h, q, 2);
#if defined(__F16C__)
      const V d = _mm256_set1_ps(_cvtsh_ss(h));  // exact, as half_to_float (a loaded matrix's scales are finite: assign_blocks)
#else
      const V d = _mm256_set1_ps(half_to_float(h));
#endif
      for (int j = 0; j < 32; j += kLanes) {
        const V w = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 2 + j)))));
        for (int i = 0; i < M; ++i) acc[i][g] = _mm256_fmadd_ps(_mm256_loadu_ps(a + static_cast<size_t>(i) * lda + j), w, acc[i][g]);
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int g = 0; g < cols; ++g) {
      alignas(32) float l[kLanes];
      _mm256_store_ps(l, acc[i][g]);
      put(C + static_cast<size_t>(i) * ldc + g0 + g, reduce8(l), accumulate);
    }
}

template <int M>
void few_rows_all(int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc, bool accumulate) {
  constexpr int G = M == 1 ? 8 : 4;  // M * G chains: 8, 8, 12
  for (int g0 = 0; g0 < width; g0 += G) {
    const int cols = std::min(G, width - g0);
    bool q8 = true;
    for (int g = 0; g < cols; ++g) q8 = q8 && dt[g0 + g] == WeightDtype::Q8_0;
    if (q8) few_rows_q8_0<M, G>(g0, width, src, K, A, lda, C, ldc, accumulate);
    else few_rows<M, G>(g0, width, src, dt, K, A, lda, C, ldc, accumulate);
  }
}

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
                        bool accumulate) {
  if (M <= 0 || width <= 0) return;
  if (K <= 0) {  // an empty sum
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < width; ++j) put(C + static_cast<size_t>(i) * ldc + j, 0.0f, accumulate);
    return;
  }
#if defined(__AVX2__) && defined(__FMA__)
  if (M == 1) return few_rows_all<1>(width, src, dt, K, A, lda, C, ldc, accumulate);
  if (M == 2) return few_rows_all<2>(width, src, dt, K, A, lda, C, ldc, accumulate);
  for (int i = 0; i < M; i += 3) {  // more rows: three at a time (packed_gemm runs many rows through its own kernel)
    const float* a = A + static_cast<size_t>(i) * lda;
    float* c = C + static_cast<size_t>(i) * ldc;
    if (M - i == 1) few_rows_all<1>(width, src, dt, K, a, lda, c, ldc, accumulate);
    else if (M - i == 2) few_rows_all<2>(width, src, dt, K, a, lda, c, ldc, accumulate);
    else few_rows_all<3>(width, src, dt, K, a, lda, c, ldc, accumulate);
  }
#else
  scalar_rows(M, width, src, dt, K, A, lda, C, ldc, accumulate);
#endif
}

}  // namespace headmap
