// precision.cpp: see precision.h.
#include "core/inspect/precision.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/inspect/passport.h"
#include "core/math/int8_products.h"
#include "core/math/packed_gemm.h"

namespace headmap {

PrecisionDiff precision_diff(const ForwardOutput& approx, const ForwardOutput& exact) {
  PrecisionDiff d;
  const bool same_shape = approx.L == exact.L && approx.B == exact.B && approx.Hw == exact.Hw && approx.T == exact.T &&
                          approx.attention.size() == exact.attention.size();
  if (!same_shape) return d;
  const size_t map = static_cast<size_t>(approx.T) * approx.T;  // (T, T)
  for (size_t i = 0; i < approx.attention.size(); ++i) {
    const float e = std::fabs(approx.attention[i] - exact.attention[i]);
    if (e > d.attention || d.layer < 0) {
      const size_t m = i / map;  // (l * B + b) * Hw + h
      d.attention = e;
      d.head = static_cast<int>(m % approx.Hw);
      d.sentence = static_cast<int>(m / approx.Hw % approx.B);
      d.layer = static_cast<int>(m / approx.Hw / approx.B);
    }
  }
  if (approx.logits.size() > 0 && approx.logits.rows() == exact.logits.rows() && approx.logits.cols() == exact.logits.cols()) {
    d.has_logits = true;
    d.logits = (approx.logits - exact.logits).cwiseAbs().maxCoeff();
  }
  if (approx.loss_tokens > 0 && exact.loss_tokens == approx.loss_tokens) {
    d.has_loss = true;
    d.loss_approx = approx.loss;
    d.loss_exact = exact.loss;
  }
  return d;
}

std::string bf16_products_refusal(const ModelWeights&) {
  if (!Bf16Products::available())
    return "BF16 products need a CPU with avx512_bf16 and a build for it (HEADMAP_NATIVE on such a CPU); this one has none, so the pass is F32";
  return "";  // every kind of weight takes them (BF16, F16, F32 panels; a GGUF file's blocks)
}

std::string int8_products_refusal(const ModelWeights& w) {
  if (!Int8Products::available()) return "8-bit products need a build for AVX2 or later; this one has none, so the pass is F32";
  for (const WeightStorage& g : weight_storage(w)) {
    size_t at = 0;
    while (at <= g.type.size()) {  // "Q4_K+Q6_K": each type of the group
      const size_t end = std::min(g.type.find('+', at), g.type.size());
      for (int t = 0; t < kWeightDtypes; ++t)  // the types the mode takes (int8_dtype)
        if (int8_dtype(static_cast<WeightDtype>(t)) && g.type.compare(at, end - at, dtype_name(static_cast<WeightDtype>(t))) == 0) return "";
      at = end + 1;
    }
  }
  return "8-bit products multiply Q4_K, Q5_K, Q6_K and Q8_0 weights (a GGUF file's); this model has none, so the pass is F32";
}

std::string precision_diff_text(const PrecisionDiff& d) {
  if (d.layer < 0) return "no attention to compare";
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "largest difference from F32: attention %.3g (layer %d, head %d)", d.attention, d.layer, d.head);
  if (d.has_logits) n += std::snprintf(buf + n, sizeof buf - n, ", logits %.3g", d.logits);
  if (d.has_loss) std::snprintf(buf + n, sizeof buf - n, ", loss %.4f vs %.4f nats", d.loss_approx, d.loss_exact);
  return buf;
}

}  // namespace headmap
