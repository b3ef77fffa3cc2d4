// fp32_peak.h: the FP32 fused multiply-add peak of one thread, the ceiling of any F32 GEMM
// (headmap-bench-bandwidth prints it per thread count; headmap-bench's packed_gemm_shapes
// divides its rates by it).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace headmap::bench {

// FLOPs of `iters` rounds of 12 independent vector FMA chains (2 FLOPs a lane); returns a
// value that depends on every chain, so none is optimised away.
#if defined(__AVX512F__)
using PeakVec = __m512;
constexpr int kPeakLanes = 16;
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) { return _mm512_fmadd_ps(a, b, c); }
inline PeakVec peak_splat(float x) { return _mm512_set1_ps(x); }
inline float peak_first(PeakVec v) { return _mm512_cvtss_f32(v); }
#elif defined(__FMA__)
using PeakVec = __m256;
constexpr int kPeakLanes = 8;
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) { return _mm256_fmadd_ps(a, b, c); }
inline PeakVec peak_splat(float x) { return _mm256_set1_ps(x); }
inline float peak_first(PeakVec v) { return _mm256_cvtss_f32(v); }
#endif

#if defined(__AVX512F__) || defined(__FMA__)
inline float fma_chains(long iters, float seed) {
  PeakVec acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = peak_splat(seed + i);
  const PeakVec a = peak_splat(0.999999f), b = peak_splat(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = peak_fma(acc[i], a, b);
  float s = 0;
  for (int i = 0; i < 12; ++i) s += peak_first(acc[i]);
  return s;
}
constexpr double kFlopsPerIter = 12.0 * kPeakLanes * 2.0;
#else
inline float fma_chains(long, float seed) { return seed; }
constexpr double kFlopsPerIter = 0;
#endif

// One thread's peak in GFLOP/s: the best of `passes` runs of `iters` rounds (0 without FMA).
inline double one_thread_peak_gflops(long iters = 20'000'000, int passes = 3) {
  double best = 1e30;
  volatile float sink = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + fma_chains(iters, static_cast<float>(pass));
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return kFlopsPerIter * static_cast<double>(iters) / best / 1e9;
}

}  // namespace headmap::bench
