// npy.h: numpy's .npy files, float32 only, in memory.
#pragma once
#include <string>

#include "core/error.h"
#include "core/math/tensor.h"

namespace headmap {

// A .npy (format 1.0, little-endian float32, C order) in memory.
std::string npy_bytes(const float* data, const Shape& shape);
// Parses a float32 .npy (for tests and for reading back). Errors name what is wrong.
Result<Tensor> parse_npy(const std::string& bytes);

}  // namespace headmap
