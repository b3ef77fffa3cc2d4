// gguf_quant.cpp: ggml's tensor types read through the one set of block dequantizers
// (core/math/weight_dtype.h), with GGUF's messages.
#include "core/io/gguf_quant.h"

#include "core/io/gguf.h"
#include "core/math/weight_dtype.h"

namespace headmap {

const char* gguf_supported_types() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS"; }

bool gguf_type_supported(uint32_t t) {
  WeightDtype d;
  return weight_dtype_of_ggml(t, &d);
}

Status gguf_dequantize(uint32_t type, const char* src, int64_t n, float* out) {
  const GgmlTypeInfo* info = ggml_type_info(type);
  WeightDtype d;
  if (!weight_dtype_of_ggml(type, &d) || !info)
    return Error{ErrorKind::BadFormat, std::string("ggml type ") + (info ? info->name : std::to_string(type).c_str()) +
                                           " is not supported; headmap reads " + gguf_supported_types() + "."};
  widen_weights(d, reinterpret_cast<const uint8_t*>(src), n, out);
  return Status();
}

}  // namespace headmap
