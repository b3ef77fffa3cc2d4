// precision.h: how far a forward with BF16 products (packed_gemm.h, Bf16Products) or 8-bit
// products (int8_products.h) lands from
// the F32 forward on the same text: the largest difference of any attention weight (and
// where), of any logit, and the two losses. The app's View > BF16 products and headmap-cli
// --bf16-products show it beside the faster pass; one rule for both.
#pragma once
#include <string>

#include "core/model/model.h"

namespace headmap {

struct PrecisionDiff {
  float attention = 0;                    // max |approx - exact| over every (L, B, Hw, T, T) weight
  int layer = -1, sentence = -1, head = -1;  // the map it is in (-1: no maps)
  bool has_logits = false;                // both passes kept (B*T, V) logits
  float logits = 0;                       // max |approx - exact| over them
  bool has_loss = false;
  double loss_approx = 0, loss_exact = 0;  // nats per token
};

// approx and exact: the same request's outputs (the same shapes). Shapes that differ give an
// empty diff (layer -1), never a read past either.
PrecisionDiff precision_diff(const ForwardOutput& approx, const ForwardOutput& exact);

// What a run asking for BF16 products gets, in words, or "" when they run: this CPU or build
// has no avx512_bf16 (then the pass is F32). Every kind of weight takes them.
std::string bf16_products_refusal(const ModelWeights& w);

// The same for 8-bit products (int8_products.h): "" when they run; else this build has no
// AVX2, or the model keeps no weights in Q4_K, Q5_K, Q6_K or Q8_0 (a GGUF file's), and the
// pass is F32.
std::string int8_products_refusal(const ModelWeights& w);

// One line: "largest difference from F32: attention 0.0021 (layer 4, head 7), logits 0.052, loss
// 3.412 vs 3.410 nats". Layers and heads numbered from 0, as everywhere.
std::string precision_diff_text(const PrecisionDiff& d);

}  // namespace headmap
