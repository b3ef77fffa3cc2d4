// finite_blocks.h: whether a stored weight row widens to finite values, read without widening
// it (a loader checks every matrix it keeps in a file's blocks; widening 1.2e9 values only to
// look at them was most of a Q8_0 GGUF load).
#pragma once
#include <cstdint>

#include "core/math/weight_dtype.h"

namespace headmap {

// True when every value widen_weights(t, src, n, ...) gives is finite. A block type's values
// are finite exactly when its F16 scales (and minimums) are: the quants are small whole numbers
// (|q| <= 128, sub-block scales <= 128), so a finite scale's products stay far below FLT_MAX
// (65504 x 128 x 32 < 3e8). F32, BF16 and F16 look at each value's exponent.
bool widened_values_finite(WeightDtype t, const uint8_t* src, int64_t n);

}  // namespace headmap
