// parallel.h: the passes between the GEMMs (norms, activations, the loss's rows, copies) on
// the compute threads. On 16 cores these ran on one thread and took 12 % of the 1B shape's
// forward (MLP act 20 ms, loss 15 ms, norms 5 ms of 409: tests/bench/README.md, issue 38).
// Each item is computed exactly as on one thread; only which thread runs it changes, so
// every result stays bit for bit.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/math/gemm.h"  // threads_for

namespace headmap {

// f(i) for i in [0, n) on up to threads_for(work) threads (one when the work is small).
template <class F>
void parallel_for(int64_t n, double work, F&& f) {
  const int nt = static_cast<int>(std::min<int64_t>(threads_for(work), n));
  if (nt <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < n; ++i) f(i);
}

// [dst, dst + n) = [src, src + n), or zeros when src is null: one contiguous block per thread.
// memcpy and memset stream a block this large past the caches (non-temporal stores), where an
// element-wise loop read each destination line first.
inline void parallel_copy(float* dst, const float* src, size_t n) {
  if (n == 0) return;
  const int parts = threads_for(4.0 * static_cast<double>(n));
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
  for (int i = 0; i < parts; ++i) {
    const size_t a = n * static_cast<size_t>(i) / parts, b = n * static_cast<size_t>(i + 1) / parts;
    if (src) std::memcpy(dst + a, src + a, (b - a) * sizeof(float));
    else std::memset(dst + a, 0, (b - a) * sizeof(float));
  }
}

// f(p, len) over [x, x + n) in one chunk per thread; every chunk but the first starts on a
// 64-byte boundary, so packet code (Eigen's exp, which rounds otherwise than the scalar exp it
// uses before the first aligned packet and after the last) treats each element as one pass
// over the whole block would.
template <class F>
void parallel_aligned_chunks(float* x, int64_t n, int threads, F&& f) {
  constexpr int64_t kLine = 64 / sizeof(float);
  const int64_t head = static_cast<int64_t>(((64 - reinterpret_cast<uintptr_t>(x) % 64) % 64) / sizeof(float));
  const int64_t chunk = ((n / std::max(threads, 1) + kLine - 1) / kLine) * kLine;
  if (threads <= 1 || n < 2 * kLine * threads || head >= n) {
    f(x, n);
    return;
  }
  const int pieces = static_cast<int>((n - head + chunk - 1) / chunk);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < pieces; ++i) {
    const int64_t a = i == 0 ? 0 : head + i * chunk, b = std::min(n, head + (i + 1) * chunk);
    f(x + a, b - a);
  }
}

}  // namespace headmap
