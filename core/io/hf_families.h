// hf_families.h: every family headmap opens, one table entry each (llama.cpp's
// LLM_ARCH_NAMES + LLM_TENSOR_NAMES, TransformerLens's per-family converters): which config.json
// keys give the sizes, the defaults its Hugging Face config class has, the block it is (norms,
// positions, MLP, quirks), its tensor names and their layout. parse_hf_config (hf_model.h) and
// the one loader (load_family_tensors) read the entry; no family is code anywhere else.
//
// D = hidden_size, H = query heads, KV = K/V heads, dh = head_dim, F = intermediate_size
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/model/arch.h"

namespace headmap {

// How Q, K and V are stored.
enum class QkvLayout {
  Separate,  // q_proj (H·dh, D), k_proj (KV·dh, D), v_proj (KV·dh, D)
  Fused,     // qkv_proj (H·dh + 2·KV·dh, D) = [q; k; v] rows (Phi-3)
  PerHead,   // query_key_value (3·H·dh, D), rows per head [q | k | v] (GPT-NeoX)
  Conv1D,    // c_attn (D, 3D) = [W_Q | W_K | W_V], stored (in, out) (GPT-2)
};
// How the MLP's input side is stored.
enum class MlpLayout {
  Separate,     // [gate_proj (F, D)] up_proj (F, D), down_proj (D, F)
  FusedGateUp,  // gate_up_proj (2F, D) = [gate; up] rows (Phi-3)
  Conv1D,       // c_fc (D, F), c_proj (F, D), stored (in, out) (GPT-2)
};
// Which layers slide a window, from the config.
enum class WindowRule {
  None,
  All,          // sliding_window on every layer (Mistral, Phi-3)
  UseSliding,   // use_sliding_window: layers from max_window_layers on (Qwen2, Qwen3)
  EvenLayers,   // layers 0, 2, 4, ... (Gemma 2)
  Pattern,      // every layer but each sliding_window_pattern-th (Gemma 3)
  NeoTypes,     // attention_types [[["global", "local"], n]] with window_size (GPT-Neo)
  LayerTypes,   // layer_types only, when use_sliding_window (SmolLM3)
};

// The tensor names, relative to the prefix found; "" = the family has none.
struct HfTensorNames {
  std::vector<const char*> prefixes;           // tried in order before the names
  const char* embed = "embed_tokens.weight";
  const char* pos = "";                        // learned positions (P, D)
  const char* token_types = "";                // token type (segment) embeddings (Y, D) (BERT, RoBERTa)
  const char* embed_norm = "";                 // the LayerNorm of the summed embeddings (encoders)
  const char* final_norm = "norm";             // + ".weight" [".bias"]; "" = none (encoders)
  const char* unembed = "lm_head.weight";      // beside the prefix; its ".bias" too when lm_head_bias; an encoder's MLM decoder
  // An encoder's masked-LM head, beside the prefix: dense (D, D) + bias, its LayerNorm, the
  // decoder's bias (V) (else unembed's ".bias"); the decoder itself is `unembed`, tied or not.
  const char* mlm_dense = "";
  const char* mlm_norm = "";
  const char* mlm_bias = "";
  std::vector<const char*> ignored;            // what nothing reads, anywhere in a name (buffers, the pooler, other heads)
  const char* layer = "layers.";
  const char* ln1 = "input_layernorm";         // "" = none (OLMo 2 norms outputs only)
  const char* ln2 = "post_attention_layernorm";  // "" = ln1 serves both (Phi's one LayerNorm)
  const char* post_attn = "";                  // the norms after each sub-block (Gemma 2/3, OLMo 2)
  const char* post_mlp = "";
  const char* q = "self_attn.q_proj";
  const char* k = "self_attn.k_proj";
  const char* v = "self_attn.v_proj";
  const char* qkv = "";                        // Fused / PerHead / Conv1D
  const char* o = "self_attn.o_proj";
  const char* q_norm = "self_attn.q_norm";
  const char* k_norm = "self_attn.k_norm";
  const char* gate = "mlp.gate_proj";
  const char* up = "mlp.up_proj";              // FusedGateUp: the fused tensor
  const char* down = "mlp.down_proj";
};

// config.json's keys for the sizes.
struct HfConfigKeys {
  const char* d_model = "hidden_size";
  const char* heads = "num_attention_heads";
  const char* layers = "num_hidden_layers";
  const char* mlp_width = "intermediate_size";  // "" = 4D unless n_inner says otherwise (GPT-2)
  const char* positions = "max_position_embeddings";
  const char* positions_alt = "";               // read when `positions` is absent (GPT-2's n_ctx)
  const char* eps = "rms_norm_eps";
  const char* act = "hidden_act";
  const char* window = "sliding_window";
};

struct HfFamily {
  const char* model_type;     // config.json's
  const char* name;           // for people
  HfConfigKeys keys;
  // defaults, as the family's Hugging Face config class has them
  double eps = 1e-6;
  const char* act = "silu";
  int head_dim = 0;                // 0: D/H
  double rotary_fraction = 1.0;    // partial_rotary_factor's default
  bool tied = false;               // tie_word_embeddings's default
  bool attention_bias = false;     // attention_bias's default: b_Q, b_K, b_V and b_O
  bool qkv_bias = false;           // b_Q, b_K, b_V whatever attention_bias says (Qwen2, Phi, GPT-2)
  bool out_bias = false;           // b_O whatever attention_bias says (GPT-Neo, Phi, GPT-2)
  bool mlp_bias = false;           // mlp_bias's default
  bool positions_required = false; // learned positions need the table's size
  bool mlp_width_required = true;  // else 4D
  bool gelu_is_tanh = false;       // "gelu" means its tanh form (Gemma's reference code)
  const char* parallel_key = "";   // a boolean key choosing the parallel block, default true (GPT-NeoX's use_parallel_residual)
  std::vector<std::pair<const char*, bool>> refused;  // (key, value) a config may not hold: what headmap does not compute
  // BERT-style encoders: bidirectional, post-norm, a LayerNorm of the embeddings, a masked-LM head
  bool encoder = false;
  const char* token_types_key = "";  // config.json's count of token types (default 2); "" = none
  int pad_token = -1;              // >= 0: positions start past pad_token_id (this its default) (RoBERTa)
  bool needs_tokenizer_json = false;  // its pairs' special tokens come only from tokenizer.json (RoBERTa)
  // the block
  NormKind norm = NormKind::RMSNorm;
  bool norm_plus_one = false;
  NormPlacement placement = NormPlacement::PreNorm;
  PositionKind positions = PositionKind::Rotary;
  bool gated = true;               // gate x up (else one projection)
  bool qk_norm = false;
  bool qk_norm_whole = false;      // OLMo 2
  bool softcaps = false;           // query_pre_attn_scalar and the soft-caps (Gemma 2, 3)
  bool embed_scale = false;        // embeddings x sqrt(D) (Gemma)
  bool no_score_scale = false;     // GPT-Neo
  bool fixed_heads = true;         // the weights fix H (else H may re-slice them when dh·H = D: GPT-2, GPT-Neo)
  bool no_rope_layers = false;     // SmolLM3's no_rope_layers
  bool lm_head_bias = false;       // Phi
  WindowRule windows = WindowRule::None;
  QkvLayout qkv = QkvLayout::Separate;
  MlpLayout mlp = MlpLayout::Separate;
  HfTensorNames names;
};

// The family of a model_type, or null.
const HfFamily* hf_family(const std::string& model_type);

// The supported model_types, for messages and --help: "gpt2, llama, mistral, ...".
const char* supported_families();

}  // namespace headmap
