// config.h: the model's configuration, its validation, and the pitfall switches.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/text/tokenizer.h"

namespace headmap {

// One switch per classic multi-head bug from the chapters. All off = the correct model.
struct Pitfalls {
  bool scale_by_d_model = false;     // scores / sqrt(D) instead of / sqrt(d_head): flatter weights
  bool interleaved_reshape = false;  // view(B,T,d_head,H): head h reads features h, h+H, h+2H, ...
  bool reversed_mask = false;        // causal mask polarity flipped: queries see only the future
  bool no_w_o = false;               // concat(heads) is returned without the W_O projection
  bool head_averaged = false;        // weights returned as (B,T,T), the mean over heads

  bool any() const { return scale_by_d_model || interleaved_reshape || reversed_mask || no_w_o || head_averaged; }
  bool operator==(const Pitfalls&) const = default;
};

// The list of pitfalls with their CLI flag, label and one-line explanation, for UIs.
struct PitfallInfo {
  bool Pitfalls::*flag;
  const char* cli;      // "--pitfall-scale-d-model"
  const char* label;    // "scale by sqrt(D)"
  const char* explain;  // what goes wrong, in one sentence
};
const std::vector<PitfallInfo>& pitfall_list();

struct ModelConfig {
  int d_model = 64;         // D
  int num_heads = 4;        // H
  int num_layers = 2;       // L, 1..12 for random init, up to 48 for loaded weights
  int context = 256;        // maximum tokens per sentence, 1..2048
  bool causal = true;       // mask keys after the query
  bool positional = true;   // add sinusoidal positional encoding (Vaswani et al. 3.5)
  uint64_t seed = 7;        // random-init weights and hashed embeddings
  TokenizerKind tokenizer = TokenizerKind::Word;
  Pitfalls pitfalls;

  int d_head() const { return num_heads > 0 ? d_model / num_heads : 0; }
  bool operator==(const ModelConfig&) const = default;
};

inline constexpr int kMaxLayers = 12;        // random init and the layers slider
inline constexpr int kMaxModelLayers = 48;   // any weights: gpt2-xl has 48 layers
inline constexpr int kMaxContext = 2048;
inline constexpr int kMaxDModel = 4096;

// Checks every field. The error message names the fix, e.g.
// "d_model 256 is not divisible by 3 heads: try 2 or 4".
Status validate(const ModelConfig& cfg);

// Nearest valid head counts below and above h for this d_model (divisors of D).
// Either may be absent (no divisor below 1, none above D).
struct HeadNeighbours {
  std::optional<int> below, above;
};
HeadNeighbours nearest_valid_heads(int d_model, int h);

// The valid head count closest to h (ties go to the smaller), for "use nearest valid".
int nearest_valid_head_count(int d_model, int h);

// All divisors of d_model in increasing order: the valid head counts.
std::vector<int> valid_head_counts(int d_model);

}  // namespace headmap
