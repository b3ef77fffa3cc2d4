// bench_bandwidth.cpp: this machine's two limits, measured in one run.
//  - Memory read bandwidth, the floor of the incremental forward (one appended token streams
//    every layer's weights once: 1.9 GB of BF16 on the Llama-3.2-1B shape, + 0.5 GB of tied
//    unembedding when the logits are computed). A STREAM-like read: a buffer far larger than
//    the caches (default 1 GiB, touched first), summed with vector loads, each thread a
//    contiguous share, best of several passes. On 2 MB pages, as the weights are kept
//    (core/math/huge_pages.h); read_GBps_4k_pages is the same read on 4 KB pages.
//  - FP32 peak: each thread runs independent chains of vector fused multiply-adds (12
//    accumulators, as many as the GEMM kernel's tile keeps), the ceiling of any F32 GEMM.
// Both on 1, 2, ... threads up to the compute threads (OMP_NUM_THREADS, default all cores:
// no fixed count). Prints one JSON line per thread count: GB/s (1e9 bytes) and GFLOP/s.
//
//   headmap-bench-bandwidth [MiB=1024] [passes=5]
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/math/huge_pages.h"
#include "tests/bench/fp32_peak.h"

using headmap::bench::fma_chains;
using headmap::bench::kFlopsPerIter;

namespace {
// The sum of n floats (n a multiple of 64), four independent vector chains.
float read_sum(const float* p, size_t n) {
#if defined(__AVX512F__)
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_load_ps(p + i));
    s1 = _mm512_add_ps(s1, _mm512_load_ps(p + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_load_ps(p + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
#elif defined(__AVX2__)
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float s[8];
  _mm256_store_ps(s, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  float t = 0;
  for (float v : s) t += v;
  return t;
#else
  float s[8] = {};
  for (size_t i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += p[i + j];
  float t = 0;
  for (float v : s) t += v;
  return t;
#endif
}

// The same sum read as S streams side by side (S a power of two up to 16): the n floats as S
// equal parts, one 64-byte line of each a step, as a product of few rows reads G panels at
// once. One stream a thread can leave memory-level parallelism unused: on a Zen 4 VM a BF16
// append read the 1B shape's weights at about 41 GB/s against 31.5 for one stream
// (tests/bench/README.md, 2026-11-29).
float read_sum_streams(const float* p, size_t n, int S) {
  const size_t part = n / S / 16 * 16;
  float t = 0;
#if defined(__AVX512F__)
  __m512 acc[16];  // a chain per stream
  for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
  for (size_t i = 0; i < part; i += 16)
    for (int s = 0; s < S; ++s) acc[s] = _mm512_add_ps(acc[s], _mm512_load_ps(p + s * part + i));
  for (int s = 0; s < S; ++s) t += _mm512_reduce_add_ps(acc[s]);
#else
  float acc[16][16] = {};
  for (size_t i = 0; i < part; i += 16)
    for (int s = 0; s < S; ++s)
      for (int j = 0; j < 16; ++j) acc[s][j] += p[s * part + i + j];
  for (int s = 0; s < S; ++s)
    for (float v : acc[s]) t += v;
#endif
  return t;
}

// The best read rates of n floats at buf on `threads` threads over `passes` passes: one stream
// a thread (each a contiguous share), then 4, 8 and 16 streams a thread.
struct ReadRates {
  double one_stream_s = 1e30, streams_s[3] = {1e30, 1e30, 1e30};
};
constexpr int kStreams[3] = {4, 8, 16};
ReadRates measure_reads(const float* buf, size_t n, int threads, int passes, volatile float& sink) {
  ReadRates r;
  for (int pass = 0; pass < passes; ++pass) {
    auto t0 = std::chrono::steady_clock::now();
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const size_t chunk = n / nt / 64 * 64, b = chunk * t, e = t == nt - 1 ? n : b + chunk;
      total += read_sum(buf + b, e - b);
    }
    sink = sink + total;
    r.one_stream_s = std::min(r.one_stream_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (int v = 0; v < 3; ++v) {
      t0 = std::chrono::steady_clock::now();
      total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
      {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const size_t chunk = n / nt / 1024 * 1024;
        total += read_sum_streams(buf + chunk * t, chunk, kStreams[v]);
      }
      sink = sink + total;
      r.streams_s[v] = std::min(r.streams_s[v], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return r;
}

// The best of the four ways, GB/s; by_streams gets the 4, 8 and 16 streams' rates.
double best_rate(const ReadRates& r, size_t n, int threads, double* by_streams) {
  double gbs = static_cast<double>(n * sizeof(float)) / r.one_stream_s / 1e9;
  for (int v = 0; v < 3; ++v) {  // each stream variant reads chunk * nt floats (a few lines short of n)
    const size_t read = n / threads / 1024 * 1024 * threads / kStreams[v] / 16 * 16 * kStreams[v];
    by_streams[v] = static_cast<double>(read * sizeof(float)) / r.streams_s[v] / 1e9;
    gbs = std::max(gbs, by_streams[v]);
  }
  return gbs;
}
}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? static_cast<size_t>(std::atol(argv[1])) : 1024;
  const int passes = argc > 2 ? std::atoi(argv[2]) : 5;
  const int all = omp_get_max_threads();  // OMP_NUM_THREADS, or every core
  const size_t n = mib * (size_t(1) << 20) / sizeof(float) / 128 * 128;
  // The buffer read as the weights are read: on 2 MB pages (core/math/huge_pages.h, where the
  // kernel gives them); and the same bytes on 4 KB pages beside it, for the difference.
  float* buf = static_cast<float*>(headmap::huge_alloc(n * sizeof(float)));
  float* small = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  if (!buf || !small) return 1;
#pragma omp parallel for num_threads(all) schedule(static)
  for (long i = 0; i < static_cast<long>(n); ++i) buf[i] = small[i] = 1e-9f * static_cast<float>(i & 1023);
  std::vector<int> counts;  // 1, 2, 4, ... and all
  for (int t = 1; t < all; t *= 2) counts.push_back(t);
  counts.push_back(all);
  volatile float sink = 0;
  for (int threads : counts) {
    const long iters = 50'000'000;
    const ReadRates huge = measure_reads(buf, n, threads, passes, sink), pages4k = measure_reads(small, n, threads, passes, sink);
    double best_fma = 1e30;
    for (int pass = 0; pass < passes; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
      total += fma_chains(iters, static_cast<float>(omp_get_thread_num()));
      sink = sink + total;
      best_fma = std::min(best_fma, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    double by_streams[3], by_streams_4k[3];
    const double gbs = best_rate(huge, n, threads, by_streams), gbs_4k = best_rate(pages4k, n, threads, by_streams_4k);
    const double one_stream = static_cast<double>(n * sizeof(float)) / huge.one_stream_s / 1e9;
    const double gflops = kFlopsPerIter * static_cast<double>(iters) * threads / best_fma / 1e9;
    std::printf("{\"threads\":%d,\"mib\":%zu,\"best_s\":%.4f,\"read_GBps\":%.2f,\"read_GBps_one_stream\":%.2f,"
                "\"read_GBps_4_8_16_streams\":[%.2f,%.2f,%.2f],\"read_GBps_4k_pages\":%.2f,\"floor_ms_1p9GB\":%.1f,\"floor_ms_2p4GB\":%.1f,\"fp32_peak_GFLOPs\":%.1f}\n",
                threads, mib, huge.one_stream_s, gbs, one_stream, by_streams[0], by_streams[1], by_streams[2], gbs_4k, 1.9 / gbs * 1e3, 2.4 / gbs * 1e3, gflops);
  }
  headmap::huge_free(buf, n * sizeof(float));
  std::free(small);
  return 0;
}
