// rng.cpp: fill_normals, the vectorised counter-based normal stream (see rng.h).
#include "core/math/rng.h"

#include <Eigen/Core>
#include <omp.h>
#include <algorithm>

#include "core/error.h"
#include "core/math/gemm.h"

namespace headmap {

namespace {
// Pairs per block: the uniforms, radii and angles of one block stay in L1.
constexpr int64_t kBlockPairs = 512;

// Stream elements [2*p0, 2*p1), clipped to [first, end), into out[element - first].
void fill_block(uint64_t key, float* out, int64_t first, int64_t end, int64_t p0, int64_t p1, float scale) {
  alignas(64) uint32_t a[kBlockPairs], b[kBlockPairs];
  alignas(64) float r[kBlockPairs], c[kBlockPairs], s[kBlockPairs];
  const int m = static_cast<int>(p1 - p0);
  // Whole SIMD packets only, the short last block included: Eigen's scalar tail path rounds
  // differently from its packet path, and every pair must give the same number wherever
  // it falls (a prefix of a stream is the same stream).
  const int padded = (m + 15) / 16 * 16;
  // pass 1: the hashes, 16 lanes at a time (the compiler vectorises this plain loop).
  for (int i = 0; i < padded; ++i) normal_pair_bits(key, static_cast<uint32_t>(p0 + i), &a[i], &b[i]);
  // pass 2: Box-Muller with Eigen's vectorised log, sqrt, sin and cos.
  constexpr float kInv23 = 1.0f / 8388608.0f, kInv24 = 1.0f / 16777216.0f, kTwoPi = 6.283185307179586f;
  for (int i = 0; i < padded; ++i) {
    r[i] = (static_cast<float>(a[i]) + 0.5f) * kInv23;                  // u1 in (0, 1)
    c[i] = kTwoPi * (static_cast<float>(b[i]) * kInv24 - 0.5f);         // theta in [-pi, pi)
  }
  using Block = Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>;
  Block R(r, padded), C(c, padded), S(s, padded);
  R = (-2.0f * R.log()).sqrt() * scale;
  S = C.sin();
  C = C.cos();
  // pass 3: interleave both outputs.
  const int64_t e0 = 2 * p0;  // the block's first element; first is even, so e0 >= first
  const int64_t full = std::min<int64_t>(m, (end - e0) / 2);
  float* o = out + (e0 - first);
  for (int64_t i = 0; i < full; ++i) {
    o[2 * i] = R[i] * C[i];
    o[2 * i + 1] = R[i] * S[i];
  }
  if (full < m && e0 + 2 * full < end) o[2 * full] = R[full] * C[full];  // an odd end: the last pair's first output
}
}  // namespace

void fill_normals(uint64_t key, float* out, int64_t n, float scale) { fill_normals_slice(key, 0, out, n, scale); }

void fill_normals_slice(uint64_t key, int64_t first, float* out, int64_t n, float scale) {
  if (n <= 0) return;
  HM_ASSERT(first >= 0 && first % 2 == 0, "fill_normals_slice starts on a pair: `first` must be even");
  const int64_t end = first + n, p_begin = first / 2, p_end = (end + 1) / 2;
  HM_ASSERT(p_end <= (int64_t(1) << 32), "fill_normals draws at most 2^33 numbers per stream: use another key for more");
  const int64_t blocks = (p_end - p_begin + kBlockPairs - 1) / kBlockPairs;
  // ~30 flops per number: below ~70k numbers one thread is faster than waking the team.
  // Inside a parallel region (a matrix drawn in blocks by the team) this thread draws alone.
  const int nt = omp_in_parallel() ? 1 : static_cast<int>(std::min<int64_t>(threads_for(30.0 * static_cast<double>(n)), blocks));
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
  for (int64_t k = 0; k < blocks; ++k)
    fill_block(key, out, first, end, p_begin + k * kBlockPairs, std::min(p_end, p_begin + (k + 1) * kBlockPairs), scale);
}

}  // namespace headmap
