// gemm.cpp: thread policy and the small register-blocked kernel.
#include "core/math/gemm.h"

#include <cmath>

#include <omp.h>

#include <mutex>

namespace headmap {

static void init_once() {
  static std::once_flag once;
  std::call_once(once, [] { Eigen::setNbThreads(1); });
}

int compute_threads() {
  init_once();
  return std::max(1, omp_get_max_threads());
}

void set_compute_threads(int n) {
  init_once();
  omp_set_num_threads(std::max(1, n));
}

int threads_for(double flops) {
  const int n = compute_threads();  // always: it also turns Eigen's own threading off
  return flops < 2.0e6 ? 1 : n;
}

namespace {
using Packet = Eigen::internal::packet_traits<float>::type;

// One R x (P packets) tile of C: R rows of A broadcast against P packets of each row of B,
// accumulated in R*P registers over all of K.
template <int R, int P>
inline void tile(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
  using namespace Eigen::internal;
  Packet acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = accumulate ? ploadu<Packet>(C + r * ldc + p * kFloatLanes) : pset1<Packet>(0.0f);
  for (int k = 0; k < K; ++k) {
    Packet b[P];
    for (int p = 0; p < P; ++p) b[p] = ploadu<Packet>(B + static_cast<size_t>(k) * ldb + p * kFloatLanes);
    for (int r = 0; r < R; ++r) {
      const Packet a = pset1<Packet>(A[static_cast<size_t>(r) * lda + k]);
      for (int p = 0; p < P; ++p) acc[r][p] = pmadd(a, b[p], acc[r][p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) pstoreu(C + r * ldc + p * kFloatLanes, acc[r][p]);
}

// Rows [i, i+R): full two-packet tiles, then one-packet tiles, then scalar columns.
template <int R>
inline void row_block(int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
  int j = 0;
  for (; j + 2 * kFloatLanes <= N; j += 2 * kFloatLanes) tile<R, 2>(K, A, lda, B + j, ldb, C + j, ldc, accumulate);
  for (; j + kFloatLanes <= N; j += kFloatLanes) tile<R, 1>(K, A, lda, B + j, ldb, C + j, ldc, accumulate);
  // The scalar columns round as the packets do (one fused multiply-add per k, where the
  // machine has them): a column's value does not depend on whether N put it in a packet, so
  // a row computed at T keys equals the same row computed at T + 1 (the incremental forward,
  // core/model/kv_cache.h, reuses rows across lengths).
  for (; j < N; ++j)
    for (int r = 0; r < R; ++r) {
      float s = accumulate ? C[r * ldc + j] : 0.0f;
      for (int k = 0; k < K; ++k) s = madd_rounded(A[static_cast<size_t>(r) * lda + k], B[static_cast<size_t>(k) * ldb + j], s);
      C[r * ldc + j] = s;
    }
}
}  // namespace

void small_gemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
  int i = 0;
  // 8 x 2 tiles keep 16 accumulators in flight: enough to cover FMA latency on two ports.
  for (; i + 8 <= M; i += 8)
    row_block<8>(N, K, A + static_cast<size_t>(i) * lda, lda, B, ldb, C + static_cast<size_t>(i) * ldc, ldc, accumulate);
  for (; i + 4 <= M; i += 4)
    row_block<4>(N, K, A + static_cast<size_t>(i) * lda, lda, B, ldb, C + static_cast<size_t>(i) * ldc, ldc, accumulate);
  for (; i < M; ++i)
    row_block<1>(N, K, A + static_cast<size_t>(i) * lda, lda, B, ldb, C + static_cast<size_t>(i) * ldc, ldc, accumulate);
}

}  // namespace headmap
