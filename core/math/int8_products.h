// int8_products.h: 8-bit products, llama.cpp's way, for weights kept in Q4_K, Q5_K, Q6_K and
// Q8_0 blocks: a faster mode that is off unless asked (the app's View > 8-bit products,
// headmap-cli --int8-products; issues 37 and 38).
//
// In F32 (the default) a block is widened to floats and multiplied by the F32 activations
// (block_gemm.h). Here the activations are rounded to 8 bits first, as llama.cpp does for every
// quantized product, and the weights' small integers multiply them in integer arithmetic
// (vpmaddubsw, then vpdpwssd with the block's scales): about a third of the instructions per
// weight, which is what a typing pass on a Q4_K model is bound by on a desktop's few cores.
//
// The rounding of the activations (each row of A, at each product):
//   for K-quants (Q4_K, Q5_K, Q6_K), per 256 values (Q8_K): x_max = the value of largest |x|
//     (the first one); iscale = -127 / x_max; q = min(127, nearest_even(iscale * x)); d = 1 / iscale
//     (all zero: d = 0, q = 0);
//   for Q8_0, per 32 values: amax = max |x|; d = amax / 127 rounded to F16; q =
//     nearest_even(x * (127 / amax)) (amax = 0: q = 0).
// Then each C(i, n) (the column's weights w = integer q_w times its block's scales):
//   per block, lane l (0..7) = the integer sum over the block's runs of 32 values of
//     scale(v) * q_w(v) * q_a(v) for the 4 values v = 4l .. 4l + 3 of each run (scale(v): Q4_K's
//     and Q5_K's 6-bit sub-block scale, Q6_K's int8 scale of 16 values, 1 for Q8_0), exact;
//   acc_l = fma(d_w * d_a, float(lane l), acc_l), block after block from 0;
//   m_l   = fma(dmin_w * min_l, t32_l, m_l)        (Q4_K, Q5_K: sub-block l's minimum)
//   m_l   = fma((32 d_w) * scale_g, t16_g, m_l)    (Q6_K's -32: groups g = l, then g = 8 + l)
//     with t32 / t16 = d_a * the sum of the sub-block's / group's q_a (Int8Rows), 0 for Q8_0;
//   C(i, n) = reduce8(acc) - reduce8(m)  (block_gemm.h's reduce8), or C + that when accumulating.
// Each row is its own: an appended token's row equals its row in a full pass bit for bit, so
// the K/V cache keeps serving the mode. Any other type (Q4_0, Q2_K, F16, ...) keeps its F32
// products in the mode. The rounding is the difference from F32: callers show it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/math/weight_dtype.h"

namespace headmap {

class Int8Products {
 public:
  explicit Int8Products(bool on);
  ~Int8Products();
  Int8Products(const Int8Products&) = delete;
  Int8Products& operator=(const Int8Products&) = delete;
  static bool available();  // a build for AVX2 or later (the kernels' integer products)
  static bool active();     // on in the calling thread's innermost scope, and available

 private:
  bool previous_;
};

// The types the mode multiplies in 8 bits.
inline bool int8_dtype(WeightDtype t) {
  return t == WeightDtype::Q4_K || t == WeightDtype::Q5_K || t == WeightDtype::Q6_K || t == WeightDtype::Q8_0;
}

// A's M rows of K values rounded to 8 bits, both ways (above), row i at i * ld etc.
struct Int8Rows {
  int M = 0, K = 0, ld = 0;       // ld: K rounded up to 256 (zeros past K)
  bool k_quants = false;          // K a multiple of 256: the Q8_K rounding is there
  std::vector<int8_t> qk;         // (M, ld)      Q8_K values, -127 .. 127
  std::vector<float> dk;          // (M, ld/256)  their scales
  std::vector<float> t16;         // (M, ld/16)   dk times the sum of each 16 of qk (exact sums)
  std::vector<float> t32;         // (M, ld/32)   dk times the sum of each 32
  std::vector<int8_t> q0;         // (M, ld)      Q8_0 values
  std::vector<float> d0;          // (M, ld/32)   their scales (F16 values)
};
// Rounds A (M, K), row stride lda, into r with nt threads (K a multiple of 32).
void int8_rows(int M, const float* A, int lda, int K, Int8Rows& r, int nt);

// C (M, width) (row stride ldc) = the rows times the columns of K values at src[j] in dt[j]
// (each int8_dtype), in the order above; += when accumulate.
void int8_columns(const Int8Rows& a, int width, const uint8_t* const* src, const WeightDtype* dt, float* C, int ldc, bool accumulate);

// The same for one row, in plain scalar code: the order above, written out (tests).
float int8_dot_reference(const Int8Rows& a, int row, const uint8_t* src, WeightDtype dt);

}  // namespace headmap
