// few_rows_blocks.h: a few rows of activations against weights kept in a GGUF file's blocks
// (packed_gemm.h's Storage::Blocks, and the block unembedding of gemm_transposed_b), with the
// dequantization fused into the multiply-adds: no widened panel is written to memory.
//
// The incremental forward's appended token multiplies one row of A by every weight once.
// Widening each sub-panel into an F32 panel and reading it back (packed_gemm.cpp's
// few_rows_group) took about three quarters of an append on the block types. Here each
// column's next 256 values are widened into a 16 KiB scratch that stays in L1, read back 8 x 8
// at a time, transposed in registers, and multiplied straight into the accumulators.
//
// Each C(i, n) is still the one fused multiply-add chain over k = 0..K-1 in order, from C(i, n)
// (accumulate) or 0, on the values widen_weights gives: the full path's bits
// (QuantWeights.AnAppendedTokenOnBlocksEqualsAFullRecomputeBitForBit, test_gemm.cpp).
#pragma once
#include <cstdint>

#include "core/math/weight_dtype.h"

namespace headmap {

// Columns per call: one panel of the packed kernel (packed_gemm.h's kPanel).
constexpr int kFusedColumns = 16;

// Whether the fused kernel serves M rows in this build (AVX2 and FMA; M <= 3).
bool few_rows_fused_available(int M);

// C (M, width) (row stride ldc; += when accumulate) = A (M, K) (row stride lda) times the
// (K, width) matrix whose column j is the K values stored at src[j] in dt[j] (a block type,
// K a whole number of its blocks). width <= kFusedColumns. Requires few_rows_fused_available(M).
void few_rows_fused(int M, int width, const uint8_t* const* src, const WeightDtype* dt, int K, const float* A, int lda, float* C, int ldc,
                    bool accumulate);

}  // namespace headmap
