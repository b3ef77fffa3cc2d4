// block_gemm.h: activations against weights kept in a GGUF file's blocks (packed_gemm.h's
// Storage::Blocks, and the block unembedding of gemm_transposed_b), in dot order.
//
// A block type stores each column of the (K, N) weight matrix along k (the file's row of
// blocks). Summing each output C(i, n) as one multiply-add chain over k in order would need the
// columns side by side in a register (a transpose of every widened value: the old kernel,
// about 0.7 cycles a value). Here each C(i, n) is summed in dot order instead:
//
//   lane l (l = 0..7) = fma chain over k = l, l + 8, l + 16, ... < K, in order, from 0, of
//                       A(i, k) * w_n(k), w_n(k) the value widen_weights gives;
//   s = ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))        (reduce8, this order);
//   C(i, n) = s, or C(i, n) + s when accumulating.
//
// (K not a multiple of 8, possible only for F32 / F16 / BF16 columns among blocks: the last
// lanes run fma(0, 0, acc) on the missing values.) The order does not depend on the ISA,
// the number of rows, the threads or how K is cut into chunks, so the few-row kernel here (the
// appended token) and the many-row one (the full forward) give the same bits
// (QuantWeights.AnAppendedTokenOnBlocksEqualsAFullRecomputeBitForBit), and both equal the
// order written out in scalar code (QuantWeights.BlockGemmIsTheDotOrderOfItsWidenedValues).
// An F32 matrix of the same values sums in k order (the packed kernel), so the two agree to
// rounding, not bit for bit.
#pragma once
#include <cstdint>

#include "core/math/weight_dtype.h"

namespace headmap {

// Columns per call: kBlockColumns for at most kBlockFewRows rows (the appended tokens: 8, 4 or 2
// columns in flight, each widened in registers), kBlockRowColumns for more (the full forward:
// kBlockRowChunk values of each column widened once into a scratch that stays in L2, 96 KiB a
// thread, then 8 rows x 6 columns at a time with AVX-512, 4 x 3 with AVX2; a unit this wide
// reads A once per 48 columns).
constexpr int kBlockColumns = 16;
#if defined(__AVX512VL__)
// 32 vector registers: 4 rows x 2 columns of accumulators and A's 16 vectors of a sub-block (a
// typing pass's 3-4 rows; from 5 rows the many-row kernel's 16-lane products were as fast:
// tests/bench/README.md, blk8).
constexpr int kBlockFewRows = 4;
#else
constexpr int kBlockFewRows = 3;
#endif
constexpr int kBlockRowColumns = 48;
constexpr int kBlockRowChunk = 512;  // a whole number of every type's blocks
inline int block_unit_columns(int M) { return M <= kBlockFewRows ? kBlockColumns : kBlockRowColumns; }

// C (M, width) (row stride ldc; += when accumulate) = A (M, K) (row stride lda) times the
// (K, width) matrix whose column j is the K values stored at src[j] in dt[j] (any WeightDtype,
// K a whole number of its blocks), in dot order. width <= block_unit_columns(M).
// a_pairs: with BF16 products (Bf16Products::kMinRows rows or more), A's rows as BF16 pairs
// (block_a_pairs, packed_gemm.h), shared by every unit of one product; else unused.
void block_gemm_columns(int M, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
                        bool accumulate, const uint32_t* a_pairs = nullptr);
// The pairs' layout: A's row i at a_pairs + i * block_a_pairs_stride(K), pair j = values 2j and
// 2j + 1 rounded to BF16 (nearest even, vcvtneps2bf16), low half first; zero past K.
inline int block_a_pairs_stride(int K) { return (K + 15) / 16 * 8; }


// The fixed reduction of eight lane sums (lanes[0..7]) above; shared by the kernels and the
// scalar reference.
inline float reduce8(const float* l) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

}  // namespace headmap
