// rng.cpp: fill_normals, the vectorised counter-based normal stream (see rng.h).
#include "core/math/rng.h"

#include <Eigen/Core>
#include <algorithm>

#include "core/error.h"
#include "core/math/gemm.h"

namespace headmap {

namespace {
// Pairs per block: the uniforms, radii and angles of one block stay in L1.
constexpr int64_t kBlockPairs = 512;

// out[2*p0 .. 2*p1) (clipped to n) from pairs [p0, p1).
void fill_block(uint64_t key, float* out, int64_t n, int64_t p0, int64_t p1, float scale) {
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
  const int64_t first = 2 * p0;
  const int64_t full = std::min<int64_t>(m, (n - first) / 2);
  float* o = out + first;
  for (int64_t i = 0; i < full; ++i) {
    o[2 * i] = R[i] * C[i];
    o[2 * i + 1] = R[i] * S[i];
  }
  if (full < m && first + 2 * full < n) o[2 * full] = R[full] * C[full];  // odd n: the last pair's first output
}
}  // namespace

void fill_normals(uint64_t key, float* out, int64_t n, float scale) {
  if (n <= 0) return;
  const int64_t pairs = (n + 1) / 2;
  HM_ASSERT(pairs <= (int64_t(1) << 32), "fill_normals draws at most 2^33 numbers per stream: use another key for more");
  const int64_t blocks = (pairs + kBlockPairs - 1) / kBlockPairs;
  // ~30 flops per number: below ~70k numbers one thread is faster than waking the team.
  const int nt = static_cast<int>(std::min<int64_t>(threads_for(30.0 * static_cast<double>(n)), blocks));
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
  for (int64_t k = 0; k < blocks; ++k)
    fill_block(key, out, n, k * kBlockPairs, std::min(pairs, (k + 1) * kBlockPairs), scale);
}

}  // namespace headmap
