// test_int8_products.cpp: the 8-bit products (int8_products.h) on Q4_K, Q5_K, Q6_K and Q8_0
// blocks. The kernels equal the order the header writes out, in plain scalar code, bit for bit
// (every row count the kernels take, the packed matrix and the unembedding's transposed form,
// accumulating, one and two threads, a matrix that mixes them with a type the mode leaves in
// F32); and the result lands within the activations' rounding of the exact product in float64
// on the widened weights (a wrong scale, block or row lands far outside it). The models' maps
// and logits against llama.cpp's own 8-bit products: gguf_matches_llama_cpp (--int8-products).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/math/block_gemm.h"
#include "core/math/gemm.h"
#include "core/math/int8_products.h"
#include "core/math/packed_gemm.h"
#include "core/math/rng.h"
#include "core/math/weight_dtype_scalar.h"
#include "gguf_writer.h"
#include "test_util.h"

using namespace headmap;

namespace {
struct Columns {
  std::vector<std::string> rows;  // column c's K values in its type's blocks
  std::vector<WeightDtype> types;
  PackedMatrix packed;            // (K, N)
  MatR wide;                      // (N, K): the values the blocks stand for
};
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
Columns columns(const std::vector<WeightDtype>& types, int K, uint64_t seed) {
  Columns c;
  c.types = types;
  const int N = static_cast<int>(types.size());
  c.rows.resize(static_cast<size_t>(N));
  c.wide.resize(N, K);
  std::vector<const uint8_t*> src;
  for (int n = 0; n < N; ++n) {
    test::gguf_writer_detail::random_weights(types[static_cast<size_t>(n)], K, seed + static_cast<uint64_t>(n), c.rows[static_cast<size_t>(n)]);
    src.push_back(reinterpret_cast<const uint8_t*>(c.rows[static_cast<size_t>(n)].data()));
    widen_weights_scalar(types[static_cast<size_t>(n)], src.back(), K, c.wide.data() + static_cast<size_t>(n) * K);
  }
  EXPECT_TRUE(c.packed.assign_blocks(src, types, K));
  return c;
}
// Activations with a spread like a transformer's: mostly small, a few large ones (the 8-bit
// rounding of a block is set by its largest value).
MatR activations(int M, int K, uint64_t key) {
  MatR A(M, K);
  fill_normals(key, A.data(), A.size(), 1.0f);
  for (Eigen::Index i = 0; i < A.size(); i += 97) A.data()[i] *= 12.0f;
  return A;
}
}  // namespace

TEST(Int8Products, EqualTheirOrderWrittenOutBitForBit) {
  if (!Int8Products::available()) GTEST_SKIP() << "this build has no AVX2: the mode is refused";
  const int threads = compute_threads();
  using W = WeightDtype;
  const std::vector<std::vector<W>> sets = {
      std::vector<W>(21, W::Q4_K), std::vector<W>(21, W::Q5_K), std::vector<W>(21, W::Q6_K), std::vector<W>(21, W::Q8_0),
      // A Q4_K_M-like mix, with a type the mode keeps in F32 (Q4_0) between them.
      {W::Q4_K, W::Q6_K, W::Q4_0, W::Q4_0, W::Q8_0, W::Q4_K, W::Q4_0, W::Q5_K, W::Q6_K, W::Q4_K, W::Q4_0, W::Q4_K, W::Q8_0, W::Q6_K, W::Q4_K, W::Q4_K,
       W::Q4_K, W::Q4_0, W::Q6_K, W::Q4_K, W::Q5_K, W::Q4_0, W::Q4_K}};
  for (const auto& types : sets)
    for (int K : {256, 3 * 512 + 256}) {
      const Columns c = columns(types, K, 17);
      const int N = static_cast<int>(types.size());
      for (int M : {1, 2, 3, 4, 5, 7, 9, 130}) {
        const MatR A = activations(M, K, 5 + M);
        MatR C0(M, N);
        fill_normals(6, C0.data(), C0.size(), 1.0f);
        MatR f32(M, N);  // the same product without the mode: the columns it leaves in F32
        packed_gemm(f32, A, c.packed);
        Int8Rows rows;
        int8_rows(M, A.data(), K, K, rows, 1);
        for (int nt : {1, 2}) {
          set_compute_threads(nt);
          SCOPED_TRACE(std::string(dtype_name(types[0])) + (types.size() == 23 ? " mix" : "") + " " + std::to_string(M) + "x" + std::to_string(K) +
                       ", " + std::to_string(nt) + " threads");
          MatR got(M, N), acc = C0, tr(M, N);
          {
            Int8Products on(true);
            packed_gemm(got, A, c.packed);
            packed_gemm(acc, A, c.packed, true);
            if (types.size() == 21)  // the unembedding's form: the columns as rows of blocks
              gemm_transposed_b(M, A.data(), K, N, K, reinterpret_cast<const uint8_t*>(c.rows[0].data()), types[0], 0, tr.data(), N);
          }
          int wrong = 0, wrong_acc = 0;
          for (int i = 0; i < M; ++i)
            for (int n = 0; n < N; ++n) {
              const W t = types[static_cast<size_t>(n)];
              const float want = int8_dtype(t) ? int8_dot_reference(rows, i, reinterpret_cast<const uint8_t*>(c.rows[static_cast<size_t>(n)].data()), t)
                                               : f32(i, n);
              wrong += !same_bits(got(i, n), want);
              wrong_acc += !same_bits(acc(i, n), C0(i, n) + want);
            }
          EXPECT_EQ(wrong, 0);
          EXPECT_EQ(wrong_acc, 0) << "accumulating";
          if (types.size() == 21) {  // row stride 0: every row of the table is column 0's
            int wrong_tr = 0;
            for (int i = 0; i < M; ++i)
              for (int n = 0; n < N; ++n)
                wrong_tr += !same_bits(tr(i, n), int8_dot_reference(rows, i, reinterpret_cast<const uint8_t*>(c.rows[0].data()), types[0]));
            EXPECT_EQ(wrong_tr, 0) << "transposed";
          }
        }
      }
    }
  set_compute_threads(threads);
}

// Each activation x of a block rounded to q * d lands within d / 2 of x (Q8_0's d, rounded to
// F16 after q was made, adds at most 127 d 2^-11 more): the product within the sum of |w| times
// that, plus F32's rounding of the sums. A wrong scale, nibble, block or row would be off by
// the size of the product itself.
TEST(Int8Products, LandWithinTheActivationsRoundingOfTheExactProduct) {
  if (!Int8Products::available()) GTEST_SKIP() << "this build has no AVX2: the mode is refused";
  const int K = 2048, M = 3;
  for (WeightDtype t : {WeightDtype::Q4_K, WeightDtype::Q5_K, WeightDtype::Q6_K, WeightDtype::Q8_0}) {
    SCOPED_TRACE(dtype_name(t));
    const Columns c = columns(std::vector<WeightDtype>(40, t), K, 3);
    const MatR A = activations(M, K, 11);
    MatR got(M, 40);
    {
      Int8Products on(true);
      packed_gemm(got, A, c.packed);
    }
    const int run = t == WeightDtype::Q8_0 ? 32 : 256;
    double worst = 0;  // the largest error over its bound
    for (int i = 0; i < M; ++i)
      for (int n = 0; n < 40; ++n) {
        double exact = 0, bound = 0, mag = 0;
        for (int b = 0; b < K / run; ++b) {
          double amax = 0;
          for (int k = b * run; k < (b + 1) * run; ++k) amax = std::max(amax, std::fabs(static_cast<double>(A(i, k))));
          const double d = amax / 127.0;
          for (int k = b * run; k < (b + 1) * run; ++k) {
            const double w = c.wide(n, k);
            exact += static_cast<double>(A(i, k)) * w;
            bound += std::fabs(w) * d * (0.5 + 127.0 / 2048.0);
            mag += std::fabs(static_cast<double>(A(i, k)) * w);
          }
        }
        bound += 1e-5 * mag;  // F32's sums
        worst = std::max(worst, std::fabs(got(i, n) - exact) / bound);
      }
    EXPECT_LE(worst, 1.0);
    EXPECT_GT(worst, 0.01) << "the activations were rounded at all";
  }
}

// A NaN or an infinity among the activations makes the products it meets NaN, as in F32 (the
// app and headmap-cli then say the weights are corrupt), never a finite number or an int8
// cast of NaN; the other rows stay as they were.
TEST(Int8Products, ANonFiniteActivationGivesNaNNotANumber) {
  if (!Int8Products::available()) GTEST_SKIP() << "this build has no AVX2: the mode is refused";
  const int K = 512;
  for (WeightDtype t : {WeightDtype::Q4_K, WeightDtype::Q6_K, WeightDtype::Q8_0}) {
    SCOPED_TRACE(dtype_name(t));
    const Columns c = columns(std::vector<WeightDtype>(5, t), K, 9);
    MatR A = activations(3, K, 13), clean(3, 5), got(3, 5);
    {
      Int8Products on(true);
      packed_gemm(clean, A, c.packed);
      A(1, 300) = std::numeric_limits<float>::quiet_NaN();
      A(2, 7) = std::numeric_limits<float>::infinity();
      packed_gemm(got, A, c.packed);
    }
    for (int n = 0; n < 5; ++n) {
      EXPECT_TRUE(same_bits(got(0, n), clean(0, n)));
      EXPECT_TRUE(std::isnan(got(1, n))) << got(1, n);
      EXPECT_TRUE(std::isnan(got(2, n))) << got(2, n);
    }
  }
}
