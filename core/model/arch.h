// arch.h: the family seam. What kind of transformer block the weights are: one plain
// description, decided once when a model is opened (core/io/hf_model.h reads it from
// config.json) and read by the forward pass, the attention options, the passport and the
// source line. The default is GPT-2's block, which random init, headmap's own checkpoints
// and GPT-2 directories keep: nothing changes for them.
//
// D = d_model, H = query heads, KV = K/V heads, d_head = head_dim, L = layers, F = MLP width
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/math/activation.h"

namespace headmap {

enum class NormKind {
  LayerNorm,  // (x - mean) / sqrt(var + eps) * g + b
  RMSNorm,    // x / sqrt(mean(x^2) + eps) * g  (Gemma's (1 + w) is folded into g at load: norm_plus_one)
};

enum class NormPlacement {
  PreNorm,   // x += attn(ln1(x)); x += mlp(ln2(x))                  (GPT-2, Llama, Qwen, Mistral, GPT-Neo)
  Parallel,  // x += attn(ln1(x)) + mlp(ln2(x)), both from the same x (GPT-NeoX / Pythia)
  Sandwich,  // x += post_attn(attn(ln1(x))); x += post_mlp(mlp(ln2(x))): four norms (Gemma 2 and 3)
  PostNorm,  // x = ln1(x + attn(x)); x = ln2(x + mlp(x)): the attention reads x itself (BERT, RoBERTa, DistilBERT)
  PostOutput,  // x += post_attn(attn(x)); x += post_mlp(mlp(x)): each sub-block reads x, its output normed (OLMo 2)
};

enum class PositionKind {
  Learned,  // a (context, D) table added to the embeddings (GPT-2, GPT-Neo); sinusoidal for random init
  Rotary,   // Q and K rotated by position, rotate-half pairs (Llama, Qwen, Mistral, Gemma, Pythia)
  None,
};

enum class RopeScaling {
  None, Linear, Llama3,
  LongRope,  // Phi-3: per-frequency factors, short ones up to rope_original_context tokens, long ones past it; cos and sin x rope_attention_factor
};

enum class MlpKind {
  GeluTanh,       // gelu_new / gelu_pytorch_tanh: W_proj gelu(x W_fc + b)          (GPT-2, GPT-Neo)
  GeluErf,        // exact GELU                                                       (Pythia)
  SiluGated,      // W_down (silu(x W_gate) * (x W_up))                               (Llama, Qwen, Mistral)
  GeluTanhGated,  // W_down (gelu_tanh(x W_gate) * (x W_up))                          (Gemma)
};

enum class ScoreScale {
  InvSqrtHeadDim,       // 1/sqrt(d_head)
  QueryPreAttnScalar,   // 1/sqrt(query_pre_attn_scalar) (Gemma 2 and 3)
  None,                 // 1 (GPT-Neo)
};

struct Arch {
  std::string family = "gpt2";  // config.json's model_type
  std::string name = "GPT-2";   // for people: "Llama", "Qwen3", "Pythia (GPT-NeoX)"

  NormKind norm = NormKind::LayerNorm;
  bool norm_plus_one = false;   // Gemma: the stored w is used as (1 + w) (folded into g when loaded)
  NormPlacement placement = NormPlacement::PreNorm;
  float norm_eps = 1e-5f;

  PositionKind positions = PositionKind::Learned;
  float rope_theta = 10000.0f;
  float rope_local_theta = 0.0f;  // sliding-window layers' theta (Gemma 3), 0 = rope_theta
  float rotary_fraction = 1.0f;   // the rotated part of each head (Pythia 0.25): the first rot dims
  RopeScaling rope_scaling = RopeScaling::None;
  float rope_factor = 1.0f;       // linear and llama3
  float rope_low_freq_factor = 1.0f, rope_high_freq_factor = 4.0f;  // llama3
  int rope_original_context = 8192;                                 // llama3, longrope
  std::vector<float> rope_short_factors, rope_long_factors;         // (rot/2) longrope: inv_freq[i] / factor[i]
  float rope_attention_factor = 1.0f;                               // longrope: cos and sin scaled by it
  std::vector<uint8_t> no_rope_layers;  // (L) 1 = this layer has no rotary position (SmolLM3's NoPE layers); empty = none
  std::vector<float> rope_freq_factors;  // (rot/2) each frequency divided by its factor (a GGUF file's rope_freqs: llama.cpp's
                                         // form of Llama 3.1's scaling); empty = none

  int head_dim = 0;               // d_head when it is not D/H (Qwen3, Gemma); 0 = D/H
  int num_heads = 0;              // the weights' own H (0: not fixed, GPT-2-style re-slicing allowed)
  int num_kv_heads = 0;           // native K/V heads (0 = H)
  bool attn_bias = true;          // b_Q, b_K, b_V stored (else zeros)
  bool out_bias = true;           // b_O stored
  bool qk_norm = false;           // RMSNorm of each head's q and k over d_head before RoPE (Qwen3, Gemma 3)
  bool qk_norm_whole = false;     // ...over the whole projected q (H·d_head) and k (KV·d_head) instead (OLMo 2)
  ScoreScale score_scale = ScoreScale::InvSqrtHeadDim;
  float query_pre_attn_scalar = 0.0f;
  float attn_softcap = 0.0f;      // scores -> c tanh(scores / c) after scaling (Gemma 2), 0 = none
  std::vector<int> windows;       // (L) keys within W of the query (sliding window), 0 = global; empty = all global

  MlpKind mlp = MlpKind::GeluTanh;
  int mlp_width = 0;              // F; 0 = 4D
  bool mlp_bias = true;

  bool embed_scale = false;       // embeddings times sqrt(D) (Gemma)
  // Encoders (BERT, RoBERTa, DistilBERT): every real key visible, padding keys hidden.
  bool bidirectional = false;     // no causal mask (config_for_weights sets causal off)
  bool embed_norm = false;        // a LayerNorm of the summed embeddings (ModelWeights::emb_ln_g, emb_ln_b)
  int token_types = 0;            // rows of the token-type table added to the embeddings (BERT 2, RoBERTa 1); 0 = none
  int position_offset = 0;        // position ids start here (RoBERTa: padding_idx + 1 = 2)
  bool mlm_head = false;          // a masked-LM head (dense + GELU + LayerNorm + decoder + bias) was loaded
  bool tied = true;               // logits from the token embedding (else lm_head)
  float final_softcap = 0.0f;     // logits -> c tanh(logits / c) (Gemma 2), 0 = none

  // GPT-2's block (and the shipped models'): every choice above at its default.
  bool is_gpt2_block() const;
  // The weights fix H (and so d_head): rotary models, q/k norms, d_head independent of D,
  // native K/V heads. Otherwise another H re-slices the same weights (GPT-2, GPT-Neo).
  bool fixed_heads() const { return num_heads > 0; }
  bool rotary() const { return positions == PositionKind::Rotary; }
  bool rope_on(int layer) const {  // this layer rotates q and k
    return rotary() && !(layer >= 0 && layer < static_cast<int>(no_rope_layers.size()) && no_rope_layers[static_cast<size_t>(layer)]);
  }
  bool encoder() const { return bidirectional; }
  bool gated() const { return mlp == MlpKind::SiluGated || mlp == MlpKind::GeluTanhGated; }
  // The MLP's activation (of the gate when gated), from the one table (core/math/activation.h).
  Activation activation() const {
    return mlp == MlpKind::SiluGated ? Activation::Silu : mlp == MlpKind::GeluErf ? Activation::GeluErf : Activation::GeluTanh;
  }
  int window(int layer) const { return layer >= 0 && layer < static_cast<int>(windows.size()) ? windows[static_cast<size_t>(layer)] : 0; }
  // The rotated dimensions of a head of d_head (even).
  int rotary_dims(int d_head) const;
  // The score scale for heads of d_head.
  float score_scale_for(int d_head) const;
  bool operator==(const Arch&) const = default;
};

// RoPE's inverse frequencies (rot/2) for heads of d_head, with the arch's scaling; `local`
// picks the sliding-window layers' theta; `long_factors` longrope's long factors (a text
// past rope_original_context). inv_freq[i] = theta^(-2i/rot), then scaled.
std::vector<double> rope_inv_freq(const Arch& a, int d_head, bool local, bool long_factors = false);

// The family's steps in words, for the passport and the source line: "RMSNorm, RoPE
// (theta 10000), K/V repeat x4, SiLU-gated MLP (F = 1536)".
std::string arch_steps(const Arch& a, int H, int d_head);

}  // namespace headmap
