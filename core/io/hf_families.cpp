// hf_families.cpp: the family table (see hf_families.h). One entry per model_type; an entry
// names only what differs from HfFamily's defaults (a Llama-style decoder).
#include "core/io/hf_families.h"

#include <map>

namespace headmap {

namespace {
HfFamily llama_like(const char* type, const char* name) {
  HfFamily f;
  f.model_type = type, f.name = name;
  f.names.prefixes = {"model.", ""};
  return f;
}

HfFamily gemma_like(const char* type, const char* name) {
  HfFamily f = llama_like(type, name);
  f.keys.act = "hidden_activation";
  f.act = "gelu_pytorch_tanh", f.gelu_is_tanh = true;
  f.head_dim = 256, f.tied = true, f.norm_plus_one = true, f.embed_scale = true;
  return f;
}

// BERT's block (RoBERTa's too): learned absolute positions, token types, a LayerNorm of the
// embeddings, post-norm layers with every bias, GELU (erf), no final norm, a masked-LM head.
HfFamily bert_like(const char* type, const char* name) {
  HfFamily f;
  f.model_type = type, f.name = name, f.encoder = true;
  f.keys.eps = "layer_norm_eps", f.keys.window = "";
  f.eps = 1e-12, f.act = "gelu", f.tied = true, f.qkv_bias = f.out_bias = f.mlp_bias = true;
  f.positions_required = true, f.fixed_heads = false;
  f.token_types_key = "type_vocab_size";
  f.norm = NormKind::LayerNorm, f.placement = NormPlacement::PostNorm, f.positions = PositionKind::Learned, f.gated = false;
  HfTensorNames& n = f.names;
  n.prefixes = {std::string(type) == "roberta" ? "roberta." : "bert.", ""};
  n.embed = "embeddings.word_embeddings.weight", n.pos = "embeddings.position_embeddings.weight";
  n.token_types = "embeddings.token_type_embeddings.weight", n.embed_norm = "embeddings.LayerNorm", n.final_norm = "";
  n.layer = "encoder.layer.", n.ln1 = "attention.output.LayerNorm", n.ln2 = "output.LayerNorm";
  n.q = "attention.self.query", n.k = "attention.self.key", n.v = "attention.self.value", n.o = "attention.output.dense";
  n.up = "intermediate.dense", n.down = "output.dense";
  n.unembed = "cls.predictions.decoder.weight", n.mlm_dense = "cls.predictions.transform.dense";
  n.mlm_norm = "cls.predictions.transform.LayerNorm", n.mlm_bias = "cls.predictions.bias";
  // buffers, the pooler and the next-sentence head: nothing of them reaches a map or a masked word
  n.ignored = {"embeddings.position_ids", "embeddings.token_type_ids", "pooler.", "cls.seq_relationship.", "qa_outputs.", "classifier."};
  return f;
}

std::vector<HfFamily> make_table() {
  std::vector<HfFamily> t;
  {  // GPT-2: Conv1D weights (in, out), learned positions, every bias
    HfFamily f;
    f.model_type = "gpt2", f.name = "GPT-2";
    HfConfigKeys& k = f.keys;
    k.d_model = "n_embd", k.heads = "n_head", k.layers = "n_layer", k.mlp_width = "n_inner", k.positions = "n_positions",
    k.positions_alt = "n_ctx", k.eps = "layer_norm_epsilon", k.act = "activation_function", k.window = "";
    f.eps = 1e-5, f.act = "gelu_new", f.tied = true, f.qkv_bias = f.out_bias = f.mlp_bias = true;
    f.positions_required = true, f.mlp_width_required = false, f.fixed_heads = false;
    f.norm = NormKind::LayerNorm, f.positions = PositionKind::Learned, f.gated = false;
    f.refused = {{"scale_attn_weights", false}, {"scale_attn_by_inverse_layer_idx", true}, {"add_cross_attention", true}};
    f.qkv = QkvLayout::Conv1D, f.mlp = MlpLayout::Conv1D;
    HfTensorNames& n = f.names;
    n.prefixes = {"transformer.", ""};
    n.embed = "wte.weight", n.pos = "wpe.weight", n.final_norm = "ln_f", n.layer = "h.", n.ln1 = "ln_1", n.ln2 = "ln_2";
    n.qkv = "attn.c_attn", n.o = "attn.c_proj", n.up = "mlp.c_fc", n.down = "mlp.c_proj";
    t.push_back(f);
  }
  t.push_back(llama_like("llama", "Llama"));
  {
    HfFamily f = llama_like("mistral", "Mistral");
    f.windows = WindowRule::All;
    t.push_back(f);
  }
  {
    HfFamily f = llama_like("qwen2", "Qwen2");
    f.qkv_bias = true, f.windows = WindowRule::UseSliding;
    t.push_back(f);
  }
  {
    HfFamily f = llama_like("qwen3", "Qwen3");
    f.head_dim = 128, f.qk_norm = true, f.windows = WindowRule::UseSliding;
    t.push_back(f);
  }
  t.push_back(gemma_like("gemma", "Gemma"));
  for (auto [type, name] : {std::pair<const char*, const char*>{"gemma2", "Gemma 2"}, {"gemma3_text", "Gemma 3"}}) {
    HfFamily f = gemma_like(type, name);
    f.placement = NormPlacement::Sandwich, f.softcaps = true;
    f.qk_norm = f.model_type == std::string("gemma3_text");
    f.windows = f.qk_norm ? WindowRule::Pattern : WindowRule::EvenLayers;
    f.names.ln2 = "pre_feedforward_layernorm", f.names.post_attn = "post_attention_layernorm", f.names.post_mlp = "post_feedforward_layernorm";
    t.push_back(f);
  }
  {  // Pythia: fused per-head query_key_value, partial rotary, parallel residual
    HfFamily f;
    f.model_type = "gpt_neox", f.name = "Pythia (GPT-NeoX)";
    f.keys.eps = "layer_norm_eps";
    f.eps = 1e-5, f.act = "gelu", f.rotary_fraction = 0.25, f.attention_bias = true, f.mlp_bias = true;
    f.norm = NormKind::LayerNorm, f.placement = NormPlacement::Parallel, f.parallel_key = "use_parallel_residual", f.gated = false;
    f.qkv = QkvLayout::PerHead;
    HfTensorNames& n = f.names;
    n.prefixes = {"gpt_neox.", ""};
    n.embed = "embed_in.weight", n.final_norm = "final_layer_norm", n.unembed = "embed_out.weight";
    n.qkv = "attention.query_key_value", n.o = "attention.dense", n.up = "mlp.dense_h_to_4h", n.down = "mlp.dense_4h_to_h";
    t.push_back(f);
  }
  {  // GPT-Neo (TinyStories): learned positions, no score scale, local layers
    HfFamily f;
    f.model_type = "gpt_neo", f.name = "GPT-Neo";
    HfConfigKeys& k = f.keys;
    k.heads = "num_heads", k.layers = "num_layers", k.eps = "layer_norm_epsilon", k.act = "activation_function", k.window = "window_size";
    f.eps = 1e-5, f.act = "gelu_new", f.tied = true, f.out_bias = true, f.mlp_bias = true;
    f.positions_required = true, f.mlp_width_required = false, f.fixed_heads = false;
    f.norm = NormKind::LayerNorm, f.positions = PositionKind::Learned, f.gated = false, f.no_score_scale = true;
    f.windows = WindowRule::NeoTypes;
    HfTensorNames& n = f.names;
    n.prefixes = {"transformer.", ""};
    n.embed = "wte.weight", n.pos = "wpe.weight", n.final_norm = "ln_f", n.layer = "h.", n.ln1 = "ln_1", n.ln2 = "ln_2";
    n.q = "attn.attention.q_proj", n.k = "attn.attention.k_proj", n.v = "attn.attention.v_proj", n.o = "attn.attention.out_proj";
    n.up = "mlp.c_fc", n.down = "mlp.c_proj";
    t.push_back(f);
  }
  {  // Phi-3 / Phi-3.5 / Phi-4-mini: fused [q; k; v] and [gate; up], longrope
    HfFamily f = llama_like("phi3", "Phi-3");
    f.eps = 1e-5, f.windows = WindowRule::All;
    f.qkv = QkvLayout::Fused, f.mlp = MlpLayout::FusedGateUp;
    f.names.qkv = "self_attn.qkv_proj", f.names.up = "mlp.gate_up_proj";
    t.push_back(f);
  }
  {  // Phi-1.5 / Phi-2: one LayerNorm for attention and MLP in parallel, partial rotary, biases everywhere
    HfFamily f = llama_like("phi", "Phi");
    f.keys.eps = "layer_norm_eps";
    f.eps = 1e-5, f.act = "gelu_new", f.rotary_fraction = 0.5, f.qkv_bias = f.out_bias = f.mlp_bias = true, f.lm_head_bias = true;
    f.norm = NormKind::LayerNorm, f.placement = NormPlacement::Parallel, f.gated = false;
    f.refused = {{"qk_layernorm", true}};
    HfTensorNames& n = f.names;
    n.final_norm = "final_layernorm", n.ln2 = "", n.o = "self_attn.dense", n.up = "mlp.fc1", n.down = "mlp.fc2";
    t.push_back(f);
  }
  {  // OLMo 2: each sub-block's output normed before the residual; q/k norm over all heads
    HfFamily f = llama_like("olmo2", "OLMo 2");
    f.eps = 1e-5, f.placement = NormPlacement::PostOutput, f.qk_norm = f.qk_norm_whole = true;
    HfTensorNames& n = f.names;
    n.ln1 = "", n.ln2 = "", n.post_attn = "post_attention_layernorm", n.post_mlp = "post_feedforward_layernorm";
    t.push_back(f);
  }
  {  // SmolLM3: no rotary position on the layers no_rope_layers marks 0
    HfFamily f = llama_like("smollm3", "SmolLM3");
    f.tied = true, f.no_rope_layers = true, f.windows = WindowRule::LayerTypes;
    t.push_back(f);
  }
  t.push_back(bert_like("bert", "BERT"));
  {  // RoBERTa: BERT's block, positions past the padding index, lm_head's names
    HfFamily f = bert_like("roberta", "RoBERTa");
    f.pad_token = 1;
    f.needs_tokenizer_json = true;
    HfTensorNames& n = f.names;
    n.unembed = "lm_head.decoder.weight", n.mlm_dense = "lm_head.dense", n.mlm_norm = "lm_head.layer_norm", n.mlm_bias = "lm_head.bias";
    t.push_back(f);
  }
  {  // DistilBERT: BERT's block under other names and keys, no token types
    HfFamily f = bert_like("distilbert", "DistilBERT");
    HfConfigKeys& k = f.keys;
    k.d_model = "dim", k.heads = "n_heads", k.layers = "n_layers", k.mlp_width = "hidden_dim", k.eps = "", k.act = "activation";
    f.token_types_key = "";
    HfTensorNames& n = f.names;
    n.prefixes = {"distilbert.", ""};
    n.token_types = "", n.layer = "transformer.layer.", n.ln1 = "sa_layer_norm", n.ln2 = "output_layer_norm";
    n.q = "attention.q_lin", n.k = "attention.k_lin", n.v = "attention.v_lin", n.o = "attention.out_lin", n.up = "ffn.lin1", n.down = "ffn.lin2";
    n.unembed = "vocab_projector.weight", n.mlm_dense = "vocab_transform", n.mlm_norm = "vocab_layer_norm", n.mlm_bias = "vocab_projector.bias";
    t.push_back(f);
  }
  return t;
}

const std::vector<HfFamily>& table() {
  static const std::vector<HfFamily> t = make_table();
  return t;
}
}  // namespace

const HfFamily* hf_family(const std::string& model_type) {
  for (const HfFamily& f : table())
    if (model_type == f.model_type) return &f;
  return nullptr;
}

const char* supported_families() {
  static const std::string list = [] {
    std::string s;
    for (const HfFamily& f : table()) s += (s.empty() ? "" : ", ") + std::string(f.model_type);
    return s;
  }();
  return list.c_str();
}

}  // namespace headmap
