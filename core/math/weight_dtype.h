// weight_dtype.h: the types a weight may be stored in, and their widening to F32.
//
// F32; BF16 and F16 (16-bit, widened exactly); and ggml's block types as a GGUF file holds
// them (ggml-common.h's block_q8_0 ... block_q6_K): Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL
// (32-element blocks with an F16 scale, and a minimum for _1), Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS (256-element super-blocks with 6- or 8-bit sub-block scales). A block type's weights stay
// in their blocks in memory and are widened a block at a time where they are used (the GEMM's
// packing, packed_gemm.h): the floats are exactly those widen_weights gives, so a product on
// blocks equals the same product on the widened matrix bit for bit.
#pragma once
#include <cstdint>

#include "core/math/half.h"

namespace headmap {

enum class WeightDtype : uint8_t { F32, BF16, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS };
constexpr int kWeightDtypes = 15;

struct WeightDtypeInfo {
  const char* name;    // "Q4_K"
  int block;           // elements per block (1 for F32, BF16, F16)
  int bytes;           // bytes per block
  uint32_t ggml_type;  // ggml's type id (GGUF's tensor infos)
};
const WeightDtypeInfo& weight_dtype_info(WeightDtype t);
inline const char* dtype_name(WeightDtype d) { return weight_dtype_info(d).name; }
inline bool is_block_dtype(WeightDtype d) { return d > WeightDtype::F16; }
// Bits a weight takes in memory: 32, 16, or a block's bytes over its elements (Q8_0 8.5, Q4_K 4.5).
inline double bits_per_weight(WeightDtype d) { return 8.0 * weight_dtype_info(d).bytes / weight_dtype_info(d).block; }
// Bytes of n elements (n a whole number of blocks).
inline int64_t dtype_bytes(WeightDtype d, int64_t n) { return n / weight_dtype_info(d).block * weight_dtype_info(d).bytes; }
// The WeightDtype of ggml type id `ggml_type`; false for a type headmap does not read.
bool weight_dtype_of_ggml(uint32_t ggml_type, WeightDtype* out);

// One 16-bit value to float (exact), and a float to the nearest 16-bit value (ties to even;
// exact for a float that came from one).
inline float narrow_to_float(uint16_t v, WeightDtype d) { return d == WeightDtype::BF16 ? bf16_to_float(v) : half_to_float(v); }
inline uint16_t float_to_narrow(float f, WeightDtype d) { return d == WeightDtype::BF16 ? float_to_bf16(f) : float_to_half(f); }

// Widens n elements (a whole number of t's blocks) stored at src (dtype_bytes(t, n) bytes,
// little-endian) into out[0 .. n). Values are not checked: a block's F16 scale may be
// infinite or NaN, and the caller checks the floats.
void widen_weights(WeightDtype t, const uint8_t* src, int64_t n, float* out);

}  // namespace headmap
