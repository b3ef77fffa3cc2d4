// gemm.h: the core's matrix products, and how it spends its cores.
//
// Products with a weight matrix that is packed once (W_QKV, W_O, W_fc, W_proj) run the packed
// kernel of packed_gemm.h, and so do the logits (gemm_transposed_b). The per-head products
// and the trainer run here.
//
// Large products: Eigen's GEMM, with the columns of C split across our OpenMP threads,
// each running a single-threaded Eigen GEMM. Eigen's own threading is switched off: the
// split measured faster on this 2-core machine (128 x 768 x 2304: ~140-200 vs ~115-160
// GFLOP/s, in one run).
// Small products (T = 16, D = 64 and the like): a register-blocked kernel without Eigen's
// packing and blocking, which cost more than the arithmetic at these sizes.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>

namespace headmap {

// Floats in one SIMD register of the compiled ISA (Eigen's packet): the kernels' unit.
inline constexpr int kFloatLanes = Eigen::internal::packet_traits<float>::size;

int compute_threads();            // threads the core may use (OpenMP's max); also turns Eigen's own threading off
void set_compute_threads(int n);  // n >= 1

// Threads worth using for `flops` of work: 1 below ~2 MFLOP.
int threads_for(double flops);

// c + a * b rounded as small_gemm's packets round a step: one fused multiply-add where the
// machine has them, else a product and a sum. Scalar code that must equal small_gemm bit
// for bit (its scalar columns, attention's few-row scores) chains these.
inline float madd_rounded(float a, float b, float c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return c + a * b;
#endif
}

// C (M, N) = A (M, K) B (K, N), or C += A B when accumulate. Row-major with row strides.
void small_gemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate);

// Multiply-adds below which small_gemm beats Eigen (measured at T = 16, D = 64).
inline constexpr double kSmallGemmMacs = 1 << 20;

// C = a b (+ beta C when beta != 0), with C (M, N); a and b may be .transpose() views.
// A template, so Eigen sees the concrete types (passing Eigen::Ref here measured 2x
// slower at T = 16, D = 64).
template <class Dst, class A, class B>
void gemm(Dst&& C, const A& a, const B& b, float beta = 0.0f) {
  using DstT = std::decay_t<Dst>;
  const Eigen::Index M = C.rows(), N = C.cols(), K = a.cols();
  if (beta != 0.0f && beta != 1.0f) C *= beta;
  // Small, plain row-major operands: the register-blocked kernel.
  if constexpr (std::decay_t<A>::IsRowMajor && std::decay_t<B>::IsRowMajor && DstT::IsRowMajor &&
                std::decay_t<A>::InnerStrideAtCompileTime == 1 && std::decay_t<B>::InnerStrideAtCompileTime == 1 &&
                DstT::InnerStrideAtCompileTime == 1) {
    if (static_cast<double>(M) * N * K < kSmallGemmMacs) {
      small_gemm(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), a.data(), static_cast<int>(a.outerStride()),
                 b.data(), static_cast<int>(b.outerStride()), C.data(), static_cast<int>(C.outerStride()), beta != 0.0f);
      return;
    }
  }
  const int nt = std::min<int>(threads_for(2.0 * M * N * K), static_cast<int>(std::max<Eigen::Index>(1, N / 16)));
  if (nt <= 1) {
    if (beta == 0.0f) C.noalias() = a * b;
    else C.noalias() += a * b;
    return;
  }
  // Column blocks in multiples of 16 floats (one AVX-512 register).
  const Eigen::Index step = ((N + nt - 1) / nt + 15) / 16 * 16;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int p = 0; p < nt; ++p) {
    const Eigen::Index n0 = p * step, n = std::min(N, n0 + step) - n0;
    if (n <= 0) continue;
    if (beta == 0.0f) C.middleCols(n0, n).noalias() = a * b.middleCols(n0, n);
    else C.middleCols(n0, n).noalias() += a * b.middleCols(n0, n);
  }
}

}  // namespace headmap
