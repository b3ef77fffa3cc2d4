// gguf_quant.h: ggml's tensor types by their GGUF ids, widened to float through the one set of
// block dequantizers (core/math/weight_dtype.h, written from ggml-common.h's block layouts).
//
// Supported: F32, F16, BF16; Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (32-element blocks with an
// F16 scale, and a minimum for _1); Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (256-element
// super-blocks with 6- or 8-bit sub-block scales). Any other type is refused by name with this list.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"

namespace headmap {

// The types gguf_dequantize reads, for messages: "F32, F16, BF16, Q8_0, ...".
const char* gguf_supported_types();
bool gguf_type_supported(uint32_t ggml_type);

// Widens n elements (a whole number of the type's blocks) of ggml type `type` at src (the
// type's bytes for n elements) into out[0 .. n). Errors: a type headmap does not read
// (named, with the supported list). Values are not checked here (a block's F16 scale may be
// infinite or NaN): the caller checks the floats.
Status gguf_dequantize(uint32_t type, const char* src, int64_t n, float* out);

}  // namespace headmap
