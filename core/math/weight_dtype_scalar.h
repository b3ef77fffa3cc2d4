// weight_dtype_scalar.h: the scalar dequantizers behind widen_weights (weight_dtype.h), one
// value at a time as ggml's reference dequantize_row_* writes them. widen_weights runs their
// vectorised twins where the build has them (AVX2); the floats are the same bit for bit, which
// test_weight_dtype.cpp checks against this reference.
#pragma once
#include <cstdint>

#include "core/math/weight_dtype.h"

namespace headmap {

// widen_weights' contract, always scalar.
void widen_weights_scalar(WeightDtype t, const uint8_t* src, int64_t n, float* out);

}  // namespace headmap
