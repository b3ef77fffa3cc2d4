// gguf_model.h: a GGUF file (core/io/gguf.h) opened as ModelWeights through the family seam:
// its metadata mapped onto the same Arch and HfModelConfig a config.json gives
// (core/io/hf_model.h), its tensors renamed to Hugging Face's names and handed to the one
// family loader (load_family_tensors), its tokenizer built from tokenizer.ggml.* as a
// tokenizer.json pipeline (core/text/hf_tokenizer.h).
//
// D = embedding_length, H = attention.head_count, KV = attention.head_count_kv, dh = head
// dim, L = block_count, V = token_embd rows, F = feed_forward_length.
//
// Architectures (general.architecture): llama (Llama 2/3, Mistral, SmolLM, TinyLlama),
// qwen2, qwen3, gemma, gemma2, gemma3, phi3 (4k: fused attn_qkv and gate|up, split), gpt2.
// Sliding windows only where llama.cpp applies them (Gemma 2 and 3). llama.cpp's conventions,
// undone here:
//   - llama's attn_q / attn_k rows are permuted per head for its rope type (adjacent pairs):
//     convert_hf_to_gguf.py's permute(); un-permuted back to rotate-half order. The other
//     architectures are NEOX-style and stored as Hugging Face stores them.
//   - Gemma's norms are stored as used, (1 + w) already added by the converter, so
//     Arch::norm_plus_one is off.
//   - output.weight absent = tied to token_embd; rope_freqs.weight (Llama 3.1/3.2's scaling,
//     one factor per frequency) becomes Arch::rope_freq_factors.
//   - gpt2's attn_qkv (3D, D) is [q | k | v] by rows; it is split.
// Types: gguf_quant.h. A file with matrices in a block type keeps every matrix in its blocks
// in memory (copied once from the map, widened inside the GEMM: packed_gemm.h), so the
// weights take the file's bytes; an F16 / BF16 file stays 16-bit; norms are widened.
#pragma once
#include <string>

#include "core/error.h"
#include "core/io/gguf.h"
#include "core/io/hf_model.h"
#include "core/model/weights.h"

namespace headmap {

// The file's architecture and sizes, as parse_hf_config gives them for a directory.
Result<HfModelConfig> gguf_config(const GgufFile& f);

// tokenizer.ggml.* as a tokenizer.json text (core/text/hf_tokenizer.h's format):
// model "llama" (SentencePiece-style BPE by scores, byte fallback, "▁" for spaces) or "gpt2"
// (byte-level BPE, its tokenizer.ggml.pre named by llama.cpp mapped onto pre-tokenizer rules:
// llama-bpe, llama3, qwen2, gpt-2, smollm, ...); control tokens become special added tokens;
// add_bos_token a template that prepends BOS. An unknown model or pre name is refused by name.
Result<std::string> gguf_tokenizer_json(const GgufFile& f);

// A GGUF file's tokenizer alone (headmap-cli tokenize --tokenizer FILE.gguf).
Result<HfTokenizer> load_gguf_tokenizer(const std::string& path);
// The file begins with GGUF's magic ("GGUF").
bool is_gguf_file(const std::string& path);

// The architectures read, for messages: "llama, qwen2, ...".
const char* gguf_supported_architectures();

// Opens a .gguf file (open_model_path's file branch calls it for the GGUF magic).
Result<ModelWeights> load_gguf_model(const std::string& path);

}  // namespace headmap
