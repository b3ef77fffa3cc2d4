// config.h: the model's configuration, its validation, and the pitfall switches.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, kv_heads = K/V heads
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
  bool no_transpose = false;         // view(B,T,H,d_head) without .transpose(1,2), read as (B,H,T,d_head)

  bool any() const { return scale_by_d_model || interleaved_reshape || reversed_mask || no_w_o || head_averaged || no_transpose; }
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
  int num_heads = 4;        // H, the query heads
  // K/V heads: 0 = num_heads (multi-head attention); 1 = multi-query; a divisor of H in
  // between = grouped-query. W_K and W_V are (D, kv_heads·d_head); K/V head g serves the
  // H/kv_heads query heads g·G .. (g+1)·G-1, G = H/kv_heads.
  int num_kv_heads = 0;
  int head_dim = 0;         // d_head fixed by a family's weights (core/model/arch.h), 0 = D/H
  int num_layers = 2;       // L, 1..12 for random init, up to 48 for loaded weights
  int context = 256;        // maximum tokens per sentence, 1..2048
  bool causal = true;       // mask keys after the query
  bool positional = true;   // add sinusoidal positional encoding (Vaswani et al. 3.5)
  uint64_t seed = 7;        // random-init weights and hashed embeddings
  TokenizerKind tokenizer = TokenizerKind::Word;
  Pitfalls pitfalls;

  int d_head() const { return head_dim > 0 ? head_dim : num_heads > 0 ? d_model / num_heads : 0; }
  int kv_heads() const { return num_kv_heads > 0 ? num_kv_heads : num_heads; }
  bool operator==(const ModelConfig&) const = default;
};

inline constexpr int kMaxLayers = 12;        // random init and the layers slider
inline constexpr int kMaxModelLayers = 48;   // any weights: gpt2-xl has 48 layers
inline constexpr int kMaxContext = 2048;
inline constexpr int kMaxDModel = 4096;

// Checks every field. The error message names the fix, e.g.
// "d_model 256 is not divisible by 3 heads: try 2 or 4".
Status validate(const ModelConfig& cfg);

// The trainer trains multi-head attention only: kv_heads (0 = num_heads) must equal num_heads.
// The message says how to look at grouped-query attention on trained weights instead.
Status trainable_kv_heads(int num_heads, int kv_heads);

// Nearest valid head counts below and above h for this d_model (divisors of D).
// Either may be absent (no divisor below 1, none above D).
struct HeadNeighbours {
  std::optional<int> below, above;
};
HeadNeighbours nearest_valid_heads(int d_model, int h);

// The valid head count closest to h (ties go to the smaller), for "use nearest valid".
int nearest_valid_head_count(int d_model, int h);

// The valid K/V head counts for H query heads: the divisors of H (1 = multi-query, H = MHA).
std::vector<int> valid_kv_head_counts(int num_heads);
// The valid K/V head count for H closest to kv (ties to the smaller); kv = 0 stays 0.
int nearest_valid_kv_heads(int num_heads, int kv);

// All divisors of d_model in increasing order: the valid head counts.
std::vector<int> valid_head_counts(int d_model);

}  // namespace headmap
