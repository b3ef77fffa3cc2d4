// source_label.h: where the weights come from, in one line for people: shown above the
// heads in the app, printed by headmap-cli and stored in its exports.
#pragma once
#include <string>

#include "core/model/config.h"
#include "core/model/weights.h"

namespace headmap {

// "random init (seed 7)", "trained (D=64, H=4, L=2, 1500 steps, loss 1.59)", and
// "re-sliced from the H=4 training: ..." when cfg runs the weights with another H.
// With kv_heads < H it adds ", kv_heads=2 (first head's K/V per group)" on trained weights.
std::string describe_source(const ModelWeights& w, const ModelConfig& cfg);
// The same without the K/V note.
std::string describe_weights(const ModelWeights& w, const ModelConfig& cfg);

}  // namespace headmap
