// test_gemm.cpp: the packed GEMM (core/math/packed_gemm.h) against a double-precision
// product written out here, on shapes that hit every edge: rows that are not a whole tile,
// columns that are not a whole panel, K below and above one sub-panel, row strides,
// accumulation, and one and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/math/gemm.h"
#include "core/math/half.h"
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

// ---- weights kept in a file's 16-bit precision -------------------------------------------
namespace {
// A random matrix whose values are all BF16 / F16 values (what such a file holds), with the
// corner cases of each format: subnormals, -0, the largest finite values.
Plain narrow_valued(int rows, int cols, uint64_t key, WeightDtype dt) {
  Plain m = random_matrix(rows, cols, key);
  const float tiny = dt == WeightDtype::F16 ? 3.0e-6f : 1.0e-39f;  // subnormal in the 16-bit format
  const float big = dt == WeightDtype::F16 ? 65504.0f : 3.0e38f;
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    float& v = m.data()[i];
    if (i % 97 == 3) v = tiny * (i % 2 ? 1.0f : -3.0f);
    if (i % 101 == 5) v = -0.0f;
    if (i % 211 == 7) v = dt == WeightDtype::F16 ? big / 64.0f : big * 1e-30f;
    v = narrow_to_float(float_to_narrow(v, dt), dt);
  }
  if (m.size() > 9) m.data()[9] = big * (dt == WeightDtype::F16 ? 1.0f : 1e-37f);  // the format's extremes, finite products
  return m;
}
bool same_bits(const Plain& a, const Plain& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}
// One product's case and its scalar reference: A (M, K), B (K, N) in dt's values, C0 (M, N),
// and the fused multiply-add chain over k in order, from 0 (want) and from C0 (want_acc).
struct ChainCase {
  Plain A, B, C0, want, want_acc;
};
ChainCase chain_case(int M, int K, int N, WeightDtype dt, uint64_t key) {
  ChainCase c{random_matrix(M, K, key), dt == WeightDtype::F32 ? random_matrix(K, N, key + 1) : narrow_valued(K, N, key + 1, dt),
              random_matrix(M, N, key + 2), Plain(M, N), Plain(M, N)};
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f, t = c.C0(i, j);
      for (int k = 0; k < K; ++k) s = std::fma(c.A(i, k), c.B(k, j), s), t = std::fma(c.A(i, k), c.B(k, j), t);
      c.want(i, j) = s, c.want_acc(i, j) = t;
    }
  return c;
}
}  // namespace

TEST(PackedGemm, NarrowWeightsAreStoredInSixteenBitsAndUnpackExactly) {
  for (WeightDtype dt : {WeightDtype::BF16, WeightDtype::F16})
    for (auto [rows, cols] : {std::pair{1, 1}, {5, 31}, {7, 32}, {3, 33}, {64, 100}, {203, 45}}) {
      const Plain m = narrow_valued(rows, cols, 61 + rows + cols, dt);
      const PackedMatrix wide(m), p(m, dt);
      EXPECT_TRUE(p.narrow());
      EXPECT_EQ(p.dtype(), dt);
      EXPECT_EQ(p.bytes() * 2, wide.bytes()) << "half the bytes of the F32 packing";
      EXPECT_TRUE(same_bits(p.plain(), m)) << dtype_name(dt) << " " << rows << "x" << cols;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) ASSERT_EQ(float_to_bits(p(r, c)), float_to_bits(m(r, c)));
      // Straight from a file's (out, in) 16-bit layout: the same matrix.
      std::vector<uint16_t> file(static_cast<size_t>(rows) * cols);  // (cols, rows) = (out, in)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) file[static_cast<size_t>(c) * rows + r] = float_to_narrow(m(r, c), dt);
      PackedMatrix q;
      ASSERT_TRUE(q.assign_transposed_narrow(file.data(), rows, cols, dt));
      EXPECT_TRUE(q == p) << dtype_name(dt) << " " << rows << "x" << cols;
      // A value that is not finite is refused, wherever it is (the 8 x 8 moves and the rest).
      for (size_t at : {file.size() / 2, size_t{0}, file.size() - 1, static_cast<size_t>(rows) * (cols / 2) + 9 % rows}) {
        std::vector<uint16_t> bad = file;
        bad[at] = dt == WeightDtype::BF16 ? 0x7F80 : 0x7C00;  // +inf
        EXPECT_FALSE(q.assign_transposed_narrow(bad.data(), rows, cols, dt)) << rows << "x" << cols << ", +inf at " << at;
        bad[at] = dt == WeightDtype::BF16 ? 0xFFC1 : 0xFE01;  // a NaN
        EXPECT_FALSE(q.assign_transposed_narrow(bad.data(), rows, cols, dt)) << rows << "x" << cols << ", NaN at " << at;
      }
    }
}

TEST(PackedGemm, NarrowWeightsGiveTheF32ResultBitForBit) {
  // The same values packed as F32 and as BF16 / F16: every edge of the kernel (rows not a
  // whole tile, columns not a whole panel, K below and above a sub-panel), with and without
  // accumulation, one and two threads. Not close: equal in every bit.
  const int threads = compute_threads();
  for (WeightDtype dt : {WeightDtype::BF16, WeightDtype::F16})
    for (int M : {1, 5, 8, 13, 130})
      for (int K : {1, 7, 300, 600})
        for (int N : {1, 17, 32, 33, 100}) {
          const uint64_t key = 7000u + M * 7 + K * 13 + N;
          const Plain A = random_matrix(M, K, key), B = narrow_valued(K, N, key + 1, dt), C0 = random_matrix(M, N, key + 2);
          const PackedMatrix wide(B), narrow(B, dt);
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            Plain cw = Plain::Constant(M, N, std::nanf("")), cn = cw;
            packed_gemm(cw, A, wide);
            packed_gemm(cn, A, narrow);
            ASSERT_TRUE(same_bits(cw, cn)) << dtype_name(dt) << " " << M << "x" << K << "x" << N << ", " << nt << " threads";
            Plain aw = C0, an = C0;
            packed_gemm(aw, A, wide, true);
            packed_gemm(an, A, narrow, true);
            ASSERT_TRUE(same_bits(aw, an)) << dtype_name(dt) << " " << M << "x" << K << "x" << N << " accumulating, " << nt << " threads";
          }
        }
  set_compute_threads(threads);
}

TEST(PackedGemm, NarrowTransposedBGivesTheF32ResultBitForBit) {
  // The tied unembedding kept 16-bit: (M, N) = A (M, K) Bt^T with Bt (N, K) of BF16 / F16.
  const int threads = compute_threads();
  for (WeightDtype dt : {WeightDtype::BF16, WeightDtype::F16})
    for (int M : {1, 9, 128})
      for (int K : {5, 64, 700})
        for (int N : {1, 31, 32, 1000}) {
          const uint64_t key = 9000u + M * 7 + K * 13 + N;
          const Plain A = random_matrix(M, K, key), Bt = narrow_valued(N, K, key + 1, dt);
          std::vector<uint16_t> bt16(static_cast<size_t>(Bt.size()));
          for (Eigen::Index i = 0; i < Bt.size(); ++i) bt16[static_cast<size_t>(i)] = float_to_narrow(Bt.data()[i], dt);
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            Plain cw = Plain::Constant(M, N, std::nanf("")), cn = cw;
            gemm_transposed_b(M, A.data(), K, N, K, Bt.data(), K, cw.data(), N);
            gemm_transposed_b(M, A.data(), K, N, K, bt16.data(), dt, K, cn.data(), N);
            ASSERT_TRUE(same_bits(cw, cn)) << dtype_name(dt) << " " << M << "x" << K << "x" << N << ", " << nt << " threads";
          }
        }
  set_compute_threads(threads);
}

TEST(PackedGemm, EachValueIsOneFusedMultiplyAddChainOverKInOrder) {
  // What makes the incremental forward equal the full one, and the F32 results of every
  // kernel change equal the last: C(i, j) = fma(A(i, K-1), B(K-1, j), ... fma(A(i, 0), B(0, j),
  // C0(i, j) or 0)), whatever the rows' tiling (1 row alone, a tail, whole tiles, more rows
  // than one pass: 300), the panels, A packed or not, the thread count. Checked against that
  // chain written out in scalar std::fma, bit for bit; the unembedding's transposed product too.
#if !defined(__FMA__)
  GTEST_SKIP() << "no fused multiply-add instructions: the kernel rounds each product";
#endif
  const int threads = compute_threads();
  for (WeightDtype dt : {WeightDtype::F32, WeightDtype::BF16, WeightDtype::F16})
    for (int M : {1, 2, 3, 4, 5, 6, 7, 9, 12, 13, 25, 128, 300})
      for (int K : {13, 700})
        for (int N : {31, 64, 200}) {
          const ChainCase c = chain_case(M, K, N, dt, 9900u + M * 7 + K * 13 + N);
          const Plain &A = c.A, &B = c.B, &C0 = c.C0, &want = c.want, &want_acc = c.want_acc;
          const PackedMatrix Bp(B, dt);
          const Plain Bt = B.transpose();
          std::vector<uint16_t> bt16(static_cast<size_t>(Bt.size()));
          for (Eigen::Index i = 0; i < Bt.size(); ++i) bt16[static_cast<size_t>(i)] = float_to_narrow(Bt.data()[i], dt);
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            const std::string what = std::string(dtype_name(dt)) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
                                     ", " + std::to_string(nt) + " threads";
            Plain C = Plain::Constant(M, N, std::nanf("")), Cacc = C0, Ct = C;
            packed_gemm(M, A.data(), K, Bp, C.data(), N, false);
            packed_gemm(M, A.data(), K, Bp, Cacc.data(), N, true);
            if (dt == WeightDtype::F32) gemm_transposed_b(M, A.data(), K, N, K, Bt.data(), K, Ct.data(), N);
            else gemm_transposed_b(M, A.data(), K, N, K, bt16.data(), dt, K, Ct.data(), N);
            ASSERT_TRUE(same_bits(C, want)) << what;
            ASSERT_TRUE(same_bits(Cacc, want_acc)) << what << ", accumulating";
            ASSERT_TRUE(same_bits(Ct, want)) << what << ", transposed B";
          }
        }
  set_compute_threads(threads);
}

TEST(PackedGemm, TransposedBEqualsThePackedProductOfItsTransposeBitForBit) {
  // The unembedding's panels are made on the fly (transposed 8 x 8 in registers, widened from
  // 16 bits) and run through the packed kernel: the result must be bit for bit the product
  // with Bt^T packed ahead (PackedMatrix), the path every other weight takes. K = 700 and 13
  // leave rows past a multiple of 8; N = 1000 ends on a narrow panel; M = 9 and 128 are
  // whole tiles with a tail.
  const int threads = compute_threads();
  for (WeightDtype dt : {WeightDtype::F32, WeightDtype::BF16, WeightDtype::F16})
    for (int M : {9, 128})
      for (int K : {13, 700})
        for (int N : {31, 1000}) {
          const uint64_t key = 9700u + M * 7 + K * 13 + N;
          const Plain A = random_matrix(M, K, key);
          const Plain Bt = dt == WeightDtype::F32 ? random_matrix(N, K, key + 1) : narrow_valued(N, K, key + 1, dt);
          std::vector<uint16_t> bt16(static_cast<size_t>(Bt.size()));
          for (Eigen::Index i = 0; i < Bt.size(); ++i) bt16[static_cast<size_t>(i)] = float_to_narrow(Bt.data()[i], dt);
          const Plain B = Bt.transpose();
          const PackedMatrix Bp(B);
          Plain want(M, N);
          packed_gemm(M, A.data(), K, Bp, want.data(), N, false);
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            Plain C = Plain::Constant(M, N, std::nanf(""));
            if (dt == WeightDtype::F32) gemm_transposed_b(M, A.data(), K, N, K, Bt.data(), K, C.data(), N);
            else gemm_transposed_b(M, A.data(), K, N, K, bt16.data(), dt, K, C.data(), N);
            ASSERT_TRUE(same_bits(C, want)) << dtype_name(dt) << " " << M << "x" << K << "x" << N << ", " << nt << " threads";
          }
        }
  set_compute_threads(threads);
}

TEST(PackedGemm, FewRowTransposedBEqualsTheRowsOfAPanelProductBitForBit) {
  // The incremental forward's logits (1..3 rows) skip the panels; each row must still be bit
  // for bit that row of the panel kernel's product (here 9 rows: a full tile and a tail),
  // the full forward's logits. K > 512 crosses a sub-panel; N = 1000 ends on a narrow panel.
  const int threads = compute_threads();
  for (int K : {5, 700})
    for (int N : {31, 1000}) {
      const Plain A = random_matrix(9, K, 9500u + K + N), Bt = random_matrix(N, K, 9600u + K + N);
      Plain whole(9, N);
      gemm_transposed_b(9, A.data(), K, N, K, Bt.data(), K, whole.data(), N);
      for (int nt : {1, 2}) {
        set_compute_threads(nt);
        for (int M : {1, 2, 3})
          for (int r0 = 0; r0 + M <= 9; r0 += 4) {
            Plain few = Plain::Constant(M, N, std::nanf(""));
            gemm_transposed_b(M, A.data() + static_cast<size_t>(r0) * K, K, N, K, Bt.data(), K, few.data(), N);
            const Plain want = whole.middleRows(r0, M);
            ASSERT_TRUE(same_bits(few, want)) << M << " rows from " << r0 << ", K " << K << ", N " << N << ", " << nt << " threads";
          }
      }
    }
  set_compute_threads(threads);
}

TEST(PackedGemm, FewRowsSplitOverTheTeamGiveTheSameBits) {
  // The incremental forward may stream a layer's weights for 1-3 rows on the whole team
  // (FewRowSplit) or on one thread; the result must not change a bit either way.
  const int threads = compute_threads();
  set_compute_threads(2);
  // B (K, N) from seed, A (M, K) from seed + 1 + M: one thread and the team give the same bits.
  auto check = [](int K, int N, uint64_t seed, std::initializer_list<int> rows) {
    const Plain B = random_matrix(K, N, seed);
    const PackedMatrix Bp(B);
    for (int M : rows) {
      const std::string what = std::to_string(M) + " rows against " + std::to_string(K) + " x " + std::to_string(N);
      const Plain A = random_matrix(M, K, seed + 1 + M);
      Plain one = Plain::Constant(M, N, std::nanf("")), team = one, by_flops = one;
      set_compute_threads(1);  // from kFewRowSplitRows rows on, packed_gemm splits by the flops
      packed_gemm(one, A, Bp);
      set_compute_threads(2);
      packed_gemm(by_flops, A, Bp);
      {
        FewRowSplit split(true);
        packed_gemm(team, A, Bp);
      }
      EXPECT_TRUE(same_bits(one, team)) << what;
      EXPECT_TRUE(same_bits(one, by_flops)) << what;
      const Plain want = (A.cast<double>() * B.cast<double>()).cast<float>();
      EXPECT_LT((team - want).cwiseAbs().maxCoeff(), 1e-3f) << what << ": the product itself";
    }
  };
  check(1024, 1040, 61, {1, 2, 3});  // 2 MFLOP per row: the team is worth waking
  // Split, a matrix of 1 MiB and more goes to the team by its bytes, though a row is under
  // threads_for's 2 MFLOP (GPT-2 small's W_O, 768 x 768: 2.4 MB, 1.2 MFLOP): here 720 x 712
  // (2 MB, 1.0 MFLOP a row; 712 = 22 panels and a narrow one), 1 to 7 rows.
  check(720, 712, 63, {1, 2, 3, 4, 5, 6, 7});
  set_compute_threads(threads);
}

TEST(PackedGemm, FromFourRowsTheThreadsGoByTheFlopsNotByTheFewRowScope) {
  // Only 1-3 rows (kFewRowSplitRows) against a matrix below 64 MiB are the FewRowSplit scope's
  // to put on one thread or the team (and it times them: products_ms); 4-7 rows take the
  // threads their flops ask whatever the scope says. (A typing pass of 4-7 rows ran every
  // layer's products on one thread: neither the scope's rows nor the panel tile's 8.)
  const int threads = compute_threads();
  set_compute_threads(2);
  const Plain B = random_matrix(720, 712, 71);  // 2 MB: below 64 MiB, above the team's 1 MiB
  const PackedMatrix Bp(B);
  for (int M = 1; M <= 8; ++M)
    for (bool split : {false, true}) {
      const Plain A = random_matrix(M, 720, 72 + M);
      Plain C = Plain::Constant(M, 712, std::nanf(""));
      FewRowSplit scope(split);
      packed_gemm(C, A, Bp);
      if (M < kFewRowSplitRows) EXPECT_GT(scope.products_ms(), 0.0) << M << " rows: the scope decides and times them";
      else EXPECT_EQ(scope.products_ms(), 0.0) << M << " rows: not the scope's (split " << split << ")";
    }
  set_compute_threads(threads);
}

TEST(PackedGemm, ManyRowBlocksGroupsAndSubPanelsKeepTheChain) {
  // The many-row kernel (packed_gemm_rows.cpp) cuts the product four ways: A's rows in blocks
  // of 252 packed 12 at a time (tail rows padded), each thread's panels 8 at a time into one
  // buffer (a narrow last panel), K in sub-panels of 128 (one short at the end), the next one
  // prefetched (matrices from 512 KiB on). Shapes across every cut, F32 and 16-bit, 1 and 2
  // threads, against the scalar chain std::fma(A(i, k), B(k, j), ...) over k in order.
#if !defined(__FMA__)
  GTEST_SKIP() << "no fused multiply-add instructions: the kernel rounds each product";
#endif
  const int threads = compute_threads();
  struct Shape {
    int M, K, N;
  };
  for (WeightDtype dt : {WeightDtype::F32, WeightDtype::BF16, WeightDtype::F16})
    for (Shape sh : {Shape{8, 256, 520}, Shape{9, 257, 600}, Shape{263, 511, 257}, Shape{16, 1100, 1056}}) {
      const int M = sh.M, K = sh.K, N = sh.N;
      const ChainCase c = chain_case(M, K, N, dt, 12000u + M * 7 + K * 13 + N);
      const Plain &A = c.A, &B = c.B, &C0 = c.C0, &want = c.want, &want_acc = c.want_acc;
      const PackedMatrix Bp(B, dt);
      for (int nt : {1, 2}) {
        set_compute_threads(nt);
        const std::string what = std::string(dtype_name(dt)) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + ", " +
                                 std::to_string(nt) + " threads";
        Plain C = Plain::Constant(M, N, std::nanf("")), Cacc = C0;
        packed_gemm(C, A, Bp);
        packed_gemm(Cacc, A, Bp, true);
        ASSERT_TRUE(same_bits(C, want)) << what;
        ASSERT_TRUE(same_bits(Cacc, want_acc)) << what << ", accumulating";
      }
    }
  set_compute_threads(threads);
}

TEST(PackedGemm, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3F808000u)), 0x3F80) << "a tie goes to the even value";
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3F818000u)), 0x3F82) << "a tie goes to the even value";
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3F808001u)), 0x3F81);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  for (uint32_t b = 0; b < 0x10000u; ++b)
    if ((b & 0x7F80u) != 0x7F80u) ASSERT_EQ(float_to_bf16(bf16_to_float(static_cast<uint16_t>(b))), b) << "every finite BF16 round-trips";
}

// BF16 products (packed_gemm.h, Bf16Products): C = bf16(A) bf16(B), A (and F32 or F16 weights)
// rounded to BF16 (nearest even) and two products summed a step in F32 (vdpbf16ps). Against a
// float64 product of the rounded A and B: within F32 accumulation's error, on every edge of
// the loop nest (rows not a whole tile, rows past one packed block of 252, K odd, below and
// past a sub-panel, columns not a whole panel), from 0 and accumulating, one and two threads,
// BF16, F32 and F16 panels. And the rounding is real (the F32 product differs), while fewer
// than 8 rows keep F32's bits.
TEST(PackedGemm, Bf16ProductsRoundAToBf16AndSumInF32) {
  if (!Bf16Products::available()) GTEST_SKIP() << "no avx512_bf16 in this CPU or build: the scope changes nothing there (NarrowWeights.Bf16Products*)";
  const int threads = compute_threads();
  for (int M : {8, 13, 130, 300})
    for (int K : {1, 7, 129, 300})
      for (int N : {17, 33, 100}) {
        const uint64_t key = 9100u + M * 7 + K * 13 + N;
        const Plain A = random_matrix(M, K, key), C0 = random_matrix(M, N, key + 2), B32 = random_matrix(K, N, key + 1);
        Plain Ar = A, B16 = B32;  // B16: F16 values, as an F16 file holds
        for (Eigen::Index i = 0; i < B16.size(); ++i) B16.data()[i] = half_to_float(float_to_half(B16.data()[i]));
        for (Eigen::Index i = 0; i < Ar.size(); ++i) Ar.data()[i] = bf16_to_float(float_to_bf16(Ar.data()[i]));
        auto rounded = [](Plain m) {
          for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = bf16_to_float(float_to_bf16(m.data()[i]));
          return m;
        };
        const Plain B = rounded(B32);  // what BF16 and F32 panels multiply by
        const PackedMatrix narrow(B, WeightDtype::BF16), wide(B32), half(B16, WeightDtype::F16);
        for (const PackedMatrix* m : {&narrow, &wide, &half}) {
          const Plain Bm = m == &half ? rounded(B16) : B;
          const Plain want = reference(Ar, Bm, nullptr), want_acc = reference(Ar, Bm, &C0);
          const Plain size = reference(Ar.cwiseAbs(), Bm.cwiseAbs(), nullptr);  // sum |a b|: the error's scale
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            Plain c = Plain::Constant(M, N, std::nanf("")), acc = C0, exact(M, N);
            {
              Bf16Products on(true);
              ASSERT_TRUE(Bf16Products::active());
              packed_gemm(c, A, *m);
              packed_gemm(acc, A, *m, true);
            }
            EXPECT_FALSE(Bf16Products::active()) << "the scope ends";
            packed_gemm(exact, A, *m);
            const std::string what = std::string(dtype_name(m->dtype())) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" +
                                     std::to_string(N) + ", " + std::to_string(nt) + " threads";
            for (Eigen::Index i = 0; i < c.size(); ++i) {
              const double tol = 4e-7 * (K + 2) * (size.data()[i] + std::fabs(C0.data()[i])) + 1e-30;
              ASSERT_NEAR(c.data()[i], want.data()[i], tol) << what << ", element " << i;
              ASSERT_NEAR(acc.data()[i], want_acc.data()[i], tol) << what << " accumulating, element " << i;
            }
            if (K >= 7) {
              EXPECT_GT(max_error(c, exact), 0.0) << what << ": A was not rounded to BF16";
            }
          }
        }
      }
  // Untouched: a few rows (an appended token's), against every kind of panel.
  const Plain A5 = random_matrix(5, 300, 6), B = narrow_valued(300, 70, 7, WeightDtype::BF16);
  const PackedMatrix wide(B), half(narrow_valued(300, 70, 8, WeightDtype::F16), WeightDtype::F16), narrow(B, WeightDtype::BF16);
  for (const PackedMatrix* m : {&wide, &half, &narrow}) {
    const Plain& a = A5;
    Plain off(a.rows(), 70), on(a.rows(), 70);
    packed_gemm(off, a, *m);
    {
      Bf16Products scope(true);
      packed_gemm(on, a, *m);
    }
    EXPECT_TRUE(same_bits(off, on)) << dtype_name(m->dtype()) << ", " << a.rows() << " rows";
  }
  set_compute_threads(threads);
}
