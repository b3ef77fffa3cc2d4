// test_gemm.cpp: the packed GEMM (core/math/packed_gemm.h) against a double-precision
// product written out here, on shapes that hit every edge: rows that are not a whole tile,
// columns that are not a whole panel, K below and above one sub-panel, row strides,
// accumulation, and one and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/math/gemm.h"
#include "core/math/packed_gemm.h"
#include "core/math/rng.h"

using namespace headmap;
using Plain = PackedMatrix::Plain;

namespace {
Plain random_matrix(int rows, int cols, uint64_t key) {
  Plain m(rows, cols);
  fill_normals(key, m.data(), m.size(), 1.0f);
  return m;
}

// C[i][j] (+)= sum_k A[i][k] B[k][j], in double.
Plain reference(const Plain& A, const Plain& B, const Plain* C0) {
  Plain C(A.rows(), B.cols());
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < B.cols(); ++j) {
      double s = C0 ? (*C0)(i, j) : 0.0;
      for (Eigen::Index k = 0; k < A.cols(); ++k) s += static_cast<double>(A(i, k)) * B(k, j);
      C(i, j) = static_cast<float>(s);
    }
  return C;
}

double max_error(const Plain& a, const Plain& b) { return (a - b).cwiseAbs().maxCoeff(); }
}  // namespace

TEST(PackedGemm, PackingKeepsEveryValueInPlace) {
  for (auto [rows, cols] : {std::pair{1, 1}, {5, 31}, {7, 32}, {3, 33}, {64, 100}}) {
    const Plain m = random_matrix(rows, cols, 11 + rows * 100 + cols);
    const PackedMatrix p(m);
    EXPECT_EQ(p.rows(), rows);
    EXPECT_EQ(p.cols(), cols);
    EXPECT_EQ(p.size(), static_cast<Eigen::Index>(rows) * cols);
    EXPECT_TRUE(p.plain() == m) << rows << "x" << cols;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) ASSERT_EQ(p(r, c), m(r, c)) << r << "," << c;
    // Row blocks give the same packing as the whole matrix.
    PackedMatrix q;
    q.resize(rows, cols);
    for (int r0 = 0; r0 < rows; r0 += 3) {
      const int n = std::min(3, rows - r0);
      q.set_rows(r0, n, m.data() + static_cast<size_t>(r0) * cols);
    }
    EXPECT_TRUE(q == p) << rows << "x" << cols;
  }
  const Plain m = random_matrix(4, 40, 3);
  Plain changed = m;
  changed(3, 39) += 1.0f;
  EXPECT_TRUE(PackedMatrix(m) != PackedMatrix(changed));
}

TEST(PackedGemm, MatchesADoublePrecisionProductOnEveryEdge) {
  const int threads = compute_threads();
  for (int M : {1, 5, 8, 13, 130})
    for (int K : {1, 7, 300, 600})
      for (int N : {1, 17, 32, 33, 100}) {
        const Plain A = random_matrix(M, K, 1000u + M * 7 + K * 13 + N);
        const Plain B = random_matrix(K, N, 2000u + M * 7 + K * 13 + N);
        const Plain C0 = random_matrix(M, N, 3000u + M * 7 + K * 13 + N);
        const PackedMatrix Bp(B);
        const double tol = 1e-5 * std::sqrt(static_cast<double>(K)) * 4;
        for (int nt : {1, 2}) {
          set_compute_threads(nt);
          Plain C = Plain::Constant(M, N, std::nanf(""));
          packed_gemm(C, A, Bp);
          EXPECT_LT(max_error(C, reference(A, B, nullptr)), tol) << M << "x" << K << "x" << N << ", " << nt << " threads";
          Plain acc = C0;
          packed_gemm(acc, A, Bp, true);
          EXPECT_LT(max_error(acc, reference(A, B, &C0)), tol) << M << "x" << K << "x" << N << " accumulating, " << nt << " threads";
        }
      }
  set_compute_threads(threads);
}

TEST(PackedGemm, BlocksPackedInParallelGiveTheSameMatrix) {
  // assign_by_rows_parallel writes every row, the last panel's padding included, without
  // zeroing first: a matrix reusing the storage of a bigger, fully nonzero one must still
  // equal the plain packing (operator== compares the padding too). One and two threads.
  const int threads = compute_threads();
  for (int nt : {1, 2}) {
    set_compute_threads(nt);
    PackedMatrix q;
    for (auto [rows, cols] : {std::pair{1000, 2112}, {5, 31}, {130, 33}, {200, 100}, {1, 1}, {64, 64}}) {
      const Plain m = random_matrix(rows, cols, 7 + rows + cols);
      q.assign_by_rows_parallel(
          rows, cols, [&m](Eigen::Index r0, Eigen::Index n, float* block) { std::copy_n(m.data() + r0 * m.cols(), n * m.cols(), block); },
          1e6);
      EXPECT_TRUE(q == PackedMatrix(m)) << rows << "x" << cols << ", " << nt << " threads";
      EXPECT_TRUE(q.plain() == m) << rows << "x" << cols << ", " << nt << " threads";
    }
  }
  set_compute_threads(threads);
}

TEST(PackedGemm, ReadsAndWritesRowBlocksOfWiderMatrices) {
  // A and C as middle rows of wider matrices (row stride > width); columns outside C untouched.
  const int M = 19, K = 45, N = 37;
  const Plain wideA = random_matrix(M + 4, K, 41), B = random_matrix(K, N, 42);
  Plain wideC = Plain::Constant(M + 6, N, -7.0f);
  packed_gemm(wideC.middleRows(3, M), wideA.middleRows(2, M), PackedMatrix(B));
  EXPECT_LT(max_error(wideC.middleRows(3, M), reference(wideA.middleRows(2, M), B, nullptr)), 1e-4);
  EXPECT_TRUE((wideC.topRows(3).array() == -7.0f).all());
  EXPECT_TRUE((wideC.bottomRows(3).array() == -7.0f).all());
}

TEST(PackedGemm, ThreadCountDoesNotChangeAnyBit) {
  // Each panel is computed whole by one thread, in the same order: the split cannot change a bit.
  const int threads = compute_threads();
  const Plain A = random_matrix(128, 768, 51), B = random_matrix(768, 320, 52);
  const PackedMatrix Bp(B);
  Plain one(128, 320), two(128, 320);
  set_compute_threads(1);
  packed_gemm(one, A, Bp);
  set_compute_threads(2);
  packed_gemm(two, A, Bp);
  set_compute_threads(threads);
  EXPECT_TRUE(one == two);
}

TEST(PackedGemm, TransposedBMatchesADoublePrecisionProduct) {
  // The unembedding's shape: C (M, N) = A (M, K) Bt^T, Bt (N, K) read in place.
  const int threads = compute_threads();
  for (int M : {1, 9, 128})
    for (int K : {5, 64, 700})
      for (int N : {1, 31, 32, 1000}) {
        const Plain A = random_matrix(M, K, 4000u + M * 7 + K * 13 + N);
        const Plain Bt = random_matrix(N, K, 5000u + M * 7 + K * 13 + N);
        const Plain want = reference(A, Bt.transpose(), nullptr);
        for (int nt : {1, 2}) {
          set_compute_threads(nt);
          Plain C = Plain::Constant(M, N, std::nanf(""));
          gemm_transposed_b(M, A.data(), K, N, K, Bt.data(), K, C.data(), N);
          EXPECT_LT(max_error(C, want), 4e-5 * std::sqrt(static_cast<double>(K))) << M << "x" << K << "x" << N << ", " << nt << " threads";
        }
      }
  set_compute_threads(threads);
}
