// few_rows_blocks.cpp: the fused few-row kernel on blocks (few_rows_blocks.h).
#include "core/math/few_rows_blocks.h"

#include <algorithm>
#include <cstring>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "core/math/transpose8.h"
#endif

namespace headmap {

#if defined(__AVX2__) && defined(__FMA__)
namespace {
constexpr int kChunk = 256;  // values of each column widened at a time: a whole number of every type's blocks
// Scratch row stride: a column's chunk is 1 KiB, and 16 rows 1 KiB apart alias each other in
// L1's store-to-load checks (4 KiB apart); 64 bytes more each keeps them apart.
constexpr int kStride = kChunk + 16;

// Values k..k+7 of 8 columns (scratch rows `cols`, kStride apart), transposed into r[q] =
// value k + q of the 8 columns, times each row of A into its accumulator, in k order.
template <int M>
inline void fma_8x8(const float* cols, int k, const float* const* a, __m256* acc) {
  __m256 r[8];
  for (int q = 0; q < 8; ++q) r[q] = _mm256_load_ps(cols + q * kStride + k);
  transpose8(r);
  for (int i = 0; i < M; ++i)
    for (int q = 0; q < 8; ++q) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a[i] + k + q), r[q], acc[i]);
}

// M rows against 16 columns; see few_rows_fused.
template <int M>
void fused(int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc, bool accumulate) {
  alignas(64) thread_local float cols[kFusedColumns * kStride];  // (16, kChunk): column j's values at j * kStride
  __m256 lo[M], hi[M];  // columns 0-7 and 8-15 of each row
  for (int i = 0; i < M; ++i) {
    alignas(32) float c[kFusedColumns] = {};
    if (accumulate) std::copy_n(C + static_cast<size_t>(i) * ldc, width, c);
    lo[i] = _mm256_load_ps(c);
    hi[i] = _mm256_load_ps(c + 8);
  }
  int64_t chunk_bytes[kFusedColumns];  // a chunk of each column (whole blocks)
  for (int j = 0; j < width; ++j) chunk_bytes[j] = dtype_bytes(dt[j], kChunk);
  for (int j = width; j < kFusedColumns; ++j) std::fill_n(cols + j * kStride, kChunk, 0.0f);
  for (int k0 = 0, c = 0; k0 < K; k0 += kChunk, ++c) {
    const int n = std::min(kChunk, K - k0);  // a whole number of blocks: a multiple of 32
    for (int j = 0; j < width; ++j) {
      // Each column's next chunk is fetched while this one is widened: the columns are
      // strided streams from DRAM (a prefetch never faults, past the matrix too).
      const uint8_t* at = src[j] + c * chunk_bytes[j];
      for (int64_t off = 0; off < chunk_bytes[j]; off += 64) __builtin_prefetch(at + chunk_bytes[j] + off, 0, 3);
      widen_weights(dt[j], at, n, cols + j * kStride);
    }
    const float* a[M];
    for (int i = 0; i < M; ++i) a[i] = A + static_cast<size_t>(i) * lda + k0;
    for (int k = 0; k < n; k += 8) {
      fma_8x8<M>(cols, k, a, lo);
      fma_8x8<M>(cols + 8 * kStride, k, a, hi);
    }
  }
  for (int i = 0; i < M; ++i) {
    alignas(32) float c[kFusedColumns];
    _mm256_store_ps(c, lo[i]);
    _mm256_store_ps(c + 8, hi[i]);
    std::copy_n(c, width, C + static_cast<size_t>(i) * ldc);
  }
}
}  // namespace

bool few_rows_fused_available(int M) { return M >= 1 && M <= 3; }

void few_rows_fused(int M, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
                    bool accumulate) {
  if (M == 1) return fused<1>(width, src, dt, K, A, lda, C, ldc, accumulate);
  if (M == 2) return fused<2>(width, src, dt, K, A, lda, C, ldc, accumulate);
  return fused<3>(width, src, dt, K, A, lda, C, ldc, accumulate);
}
#else
bool few_rows_fused_available(int) { return false; }
void few_rows_fused(int, int, const uint8_t* const*, const WeightDtype*, int, const float*, int, float*, int, bool) {}
#endif

}  // namespace headmap
