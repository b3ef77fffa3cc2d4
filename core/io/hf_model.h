// hf_model.h: the one dispatcher that opens a Hugging Face model directory of any supported
// family as ModelWeights with its Arch (core/model/arch.h), and the one function that reads
// a family's architecture from config.json.
//
// D = hidden_size, H = query heads, KV = K/V heads, d_head = head_dim, L = layers, V = vocab,
// F = intermediate_size. Hugging Face stores Linear weights (out, in); headmap keeps (in, out).
//
// Families (config.json's model_type):
//   gpt2                          core/io/hf_gpt2.h
//   llama (Llama 2/3/3.1/3.2, SmolLM, SmolLM2, TinyLlama), mistral, qwen2, qwen3:
//     model.embed_tokens.weight (V, D); model.layers.{l}.input_layernorm.weight (D),
//     self_attn.{q,k,v}_proj.weight (H·d_head | KV·d_head, D) [+ .bias: qwen2, attention_bias],
//     self_attn.o_proj.weight (D, H·d_head), self_attn.{q,k}_norm.weight (d_head) (qwen3),
//     post_attention_layernorm.weight (D), mlp.{gate,up}_proj.weight (F, D),
//     mlp.down_proj.weight (D, F); model.norm.weight (D); lm_head.weight (V, D) unless tied.
//   gemma, gemma2, gemma3_text: the same names, (1 + w) RMSNorms, embeddings x sqrt(D), GELU-tanh
//     gate; gemma2/3 add pre_feedforward_layernorm and post_feedforward_layernorm (four norms).
//   gpt_neox (Pythia): gpt_neox.embed_in.weight, layers.{l}.attention.query_key_value (3D, D)
//     laid out per head [q | k | v], attention.dense, mlp.dense_h_to_4h / dense_4h_to_h,
//     input_layernorm / post_attention_layernorm with biases, final_layer_norm, embed_out.
//   gpt_neo (TinyStories): transformer.h.{l}.attn.attention.{q,k,v}_proj (no bias), out_proj,
//     mlp.c_fc / c_proj (Linear), local layers from attention_types with window_size.
// Buffers ignored: attention.bias, masked_bias, rotary_emb.inv_freq.
#pragma once
#include <functional>
#include <string>

#include "core/error.h"
#include "core/model/arch.h"
#include "core/model/weights.h"

namespace headmap {

// What config.json says, for any family.
struct HfModelConfig {
  Arch arch;
  int d_model = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0, num_layers = 0, vocab_size = 0, positions = 0, mlp_width = 0;
};

// Parses config.json for any supported family into the architecture and sizes. An
// unsupported model_type, a vision tower or sizes outside headmap's limits give a message
// that names the family and what to do. (gpt2 is read too, into GPT-2's default Arch.)
Result<HfModelConfig> parse_hf_config(const std::string& text, const std::string& origin);

// Opens a directory of any supported family: gpt2 through load_hf_gpt2, the others here.
Result<ModelWeights> load_hf_model(const std::string& dir);

// The one loader of a family's tensors, named as Hugging Face names them (a directory's
// safetensors, or a GGUF file's tensors renamed by core/io/gguf_model.h), checked against c
// (every shape first, then the memory budget) and packed; `tokenizer` fills w.hf_tokenizer
// (and w.bpe) before the tensors are read. `origin` names the source in messages and in
// w.source.path. (gpt2 here means GPT-Neo's tensor names with GPT-2's block: GGUF only.)
struct TensorSource;
Result<ModelWeights> load_family_tensors(const TensorSource& src, const std::string& origin, const HfModelConfig& c,
                                         const std::function<Status(ModelWeights&)>& tokenizer);

// The one dispatcher for a path, used by headmap-cli (--model, --checkpoint) and the app
// (--model, --checkpoint, File > Open model / Open checkpoint): a directory with config.json
// is a Hugging Face model of any supported family, GPT-2 included (load_hf_model); a file is
// one of headmap's checkpoints (core/io/checkpoint.h; the shipped ones are such files), or,
// when it is not one and its directory has config.json, a file of that Hugging Face
// directory, which opens the directory. Anything else is refused with a message that names
// what it saw and what to do: a path that does not exist, a directory without config.json
// (listing what it holds), an unsupported model_type (listing the supported ones), a
// multimodal config with a vision tower, a directory without tokenizer.json.
// source.kind tells what opened: Trained (a checkpoint) or Pretrained (a directory).
Result<ModelWeights> open_model_path(const std::string& path);

// The supported model_types, for messages and --help: "gpt2, llama, mistral, ...".
const char* supported_families();

}  // namespace headmap
