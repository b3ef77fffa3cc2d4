// hf_model.h: the one dispatcher that opens a Hugging Face model directory of any supported
// family as ModelWeights with its Arch (core/model/arch.h), and the one function that reads
// a family's architecture from config.json.
//
// Every family is one entry of the table in hf_families.h: its config keys, tensor names and
// layouts; parse_hf_config (hf_config.cpp) and load_family_tensors (hf_model.cpp) read it for
// GPT-2, every decoder family and the encoders (BERT, RoBERTa, DistilBERT: their embeddings'
// LayerNorm, token types and masked-LM head are fields of the same entry).
//
// D = hidden_size, H = query heads, KV = K/V heads, d_head = head_dim, L = layers, V = vocab,
// F = intermediate_size. Hugging Face stores Linear weights (out, in); headmap keeps (in, out).
#pragma once
#include <functional>
#include <string>

#include "core/error.h"
#include "core/io/hf_families.h"
#include "core/model/arch.h"
#include "core/model/weights.h"

namespace headmap {

// What config.json says, for any family.
struct HfModelConfig {
  Arch arch;
  int d_model = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0, num_layers = 0, vocab_size = 0, positions = 0, mlp_width = 0;
  std::string tensor_names;  // the family entry whose tensor names the source uses; "" = arch.family's (a GGUF gpt2: "gpt_neo")
};

// Parses config.json for any supported family into the architecture and sizes. An
// unsupported model_type, a vision tower or sizes outside headmap's limits give a message
// that names the family and what to do. (gpt2 is read into GPT-2's default Arch.)
Result<HfModelConfig> parse_hf_config(const std::string& text, const std::string& origin);

// Opens a directory of any supported family.
Result<ModelWeights> load_hf_model(const std::string& dir);

// The one loader of a family's tensors, named as Hugging Face names them (a directory's
// safetensors, or a GGUF file's tensors renamed by core/io/gguf_model.h), checked against c
// (every shape first, then the memory budget) and packed; `tokenizer` fills w.hf_tokenizer
// (and w.bpe) before the tensors are read. `origin` names the source in messages and in
// w.source.path.
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

}  // namespace headmap
