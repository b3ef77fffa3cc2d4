// hf_gpt2.h: opens a GPT-2-family model in Hugging Face's directory layout (gpt2,
// distilgpt2, gpt2-medium, any GPT2LMHeadModel fine-tune) as ModelWeights, so the one
// forward pass of core/model runs it.
//
// D = d_model (n_embd), H = heads (n_head), L = layers (n_layer), V = vocab, P = n_positions
//
// The directory holds
//   config.json                  model_type "gpt2", n_embd, n_head, n_layer, n_positions (or
//                                n_ctx), vocab_size, layer_norm_epsilon, activation_function
//   model.safetensors            or model.safetensors.index.json and the shards it names
//   vocab.json + merges.txt      or tokenizer.json: the byte-level BPE
// Tensors (with or without a "transformer." prefix; F32, F16 or BF16), GPT-2's Conv1D storing
// W as (D_in, D_out), which is headmap's convention y = x W + b:
//   wte.weight (V, D)  wpe.weight (P, D)  ln_f.{weight,bias} (D)
//   h.{l}.ln_1.{weight,bias} (D)  h.{l}.attn.c_attn.weight (D, 3D) = [W_Q | W_K | W_V],
//   h.{l}.attn.c_attn.bias (3D)  h.{l}.attn.c_proj.{weight (D, D), bias (D)}
//   h.{l}.ln_2.{weight,bias} (D)  h.{l}.mlp.c_fc.{weight (D, 4D), bias (4D)}
//   h.{l}.mlp.c_proj.{weight (4D, D), bias (D)}
//   lm_head.weight (V, D), optional: absent or equal to wte = tied; different = untied.
//   h.{l}.attn.bias and h.{l}.attn.masked_bias (the causal-mask buffers) are ignored.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/model/weights.h"

namespace headmap {

// What headmap takes from config.json.
struct Gpt2Config {
  std::string model_type;      // "gpt2"
  int n_embd = 0, n_head = 0, n_layer = 0, n_positions = 0, vocab_size = 0;
  float layer_norm_epsilon = 1e-5f;
  std::string activation;      // "gelu_new" (GELU, tanh form)
  std::string name;            // the model's name for people: the directory's name
};

// Parses and checks config.json. `origin` names the file in messages. A BERT, Llama or
// other model_type, an activation other than GELU's tanh form, or sizes outside headmap's
// limits give a message that says so.
Result<Gpt2Config> parse_gpt2_config(const std::string& text, const std::string& origin);
// model.safetensors.index.json: the shard file names of its "weight_map", each a plain
// name inside the directory, sorted and unique. (Fuzzed: tests/fuzz.)
Result<std::vector<std::string>> parse_shard_index(const std::string& text, const std::string& origin);

// Opens the directory: config, tokenizer, then every tensor, each converted to float once
// from a memory map of the file (never a second full copy), with every shape checked
// against config.json and every value checked finite. source.kind is Pretrained.
// Errors (Io for a missing file, BadFormat otherwise) name the file and what to do.
Result<ModelWeights> load_hf_gpt2(const std::string& dir);

// The number of distinct parameters (a tied unembedding counts once).
int64_t parameter_count(const ModelWeights& w);

// "124M", "1.5B": a parameter count for people.
std::string parameters_text(int64_t n);

}  // namespace headmap
