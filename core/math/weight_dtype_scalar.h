// weight_dtype_scalar.h: the scalar dequantizers behind widen_weights (weight_dtype.h), one
// value at a time as ggml's reference dequantize_row_* writes them. widen_weights runs their
// vectorised twins where the build has them (AVX2); the floats are the same bit for bit, which
// test_weight_dtype.cpp checks against this reference. Also the sub-block scales of Q4_K and
// Q5_K, which block_gemm.cpp's few-row kernel reads as widen_weights does.
#pragma once
#include <cstdint>

#include "core/math/weight_dtype.h"

namespace headmap {

// widen_weights' contract, always scalar.
void widen_weights_scalar(WeightDtype t, const uint8_t* src, int64_t n, float* out);

// The 6-bit scale and min of sub-block j (0-7) from Q4_K's and Q5_K's 12 bytes.
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}
// The scales and minimums of Q4_K's and Q5_K's sub-blocks is and is + 1, times d and dmin.
inline void k4_pair(float d, float dmin, const uint8_t* sc, int is, float* d1, float* m1, float* d2, float* m2) {
  uint8_t s, m;
  scale_min_k4(is, sc, &s, &m);
  *d1 = d * s, *m1 = dmin * m;
  scale_min_k4(is + 1, sc, &s, &m);
  *d2 = d * s, *m2 = dmin * m;
}

}  // namespace headmap
