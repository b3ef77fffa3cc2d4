// checkpoint.h: trained weights in the safetensors format, saved atomically, loaded with
// every field validated.
//
// D = d_model, L = layers, V = vocab, P = context (learned positions)
//
// The file (https://github.com/huggingface/safetensors, "format"):
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a JSON object: for every tensor
//               "name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}
//             plus "__metadata__": {string: string}; padded with spaces to 8 bytes
//   the rest  the tensors' bytes, little-endian, row-major, offsets relative to here;
//             together they cover the buffer exactly, without overlap
//
// Tensors (all F32, or all F16), with the convention y = x W + b, W stored (D_in, D_out):
//   tok_emb (V, D)  pos_emb (P, D)  lnf_g, lnf_b (D)
//   layers.{l}.ln1_g, ln1_b (D)  w_q, w_k, w_v, w_o (D, D)  b_q, b_k, b_v, b_o (D)
//   layers.{l}.ln2_g, ln2_b (D)  w_fc (D, 4D)  b_fc (4D)  w_proj (4D, D)  b_proj (D)
//   logits = LN_f(x) tok_emb^T (tied unembedding); GELU in its tanh form; LayerNorm eps 1e-5.
//
// Metadata (strings only, as the format requires):
//   format "headmap-checkpoint", format_version "2", d_model, num_heads (trained with),
//   num_layers, context, vocab_size, vocab and merges (JSON arrays: the byte-level BPE of
//   bpe.h, tokens in id order and merges in rank order, in GPT-2's byte-to-unicode
//   spelling, as GPT-2's vocab.json and merges.txt), tokenizer, steps, train_loss, val_loss,
//   corpus, seed, no_w_o ("true": trained without W_O, stored as w_o = I, b_o = 0),
//   reproduce (the command that made the file), train_options (JSON),
//   check_tokens (a JSON array of ids) and check_loss: forward()'s mean next-token loss on
//   those tokens when the file was written, so any reader can test its implementation.
#pragma once
#include <string>

#include "core/error.h"
#include "core/model/weights.h"

namespace headmap {

// The file's bytes for trained weights (w.trained() must hold); metadata from w.source.
// Errors: weights that are not trained or not finite.
// F16 halves the file; the weights are rounded before the check loss is computed, so the
// file's check holds for what a reader gets back.
enum class StoreDtype { F32, F16 };
Result<std::string> checkpoint_bytes(const ModelWeights& w, StoreDtype dtype = StoreDtype::F32);
// checkpoint_bytes, then write_file_atomic: a failure leaves any previous file intact.
Status save_checkpoint(const std::string& path, const ModelWeights& w, StoreDtype dtype = StoreDtype::F32);

// Parses and validates a whole file. `origin` names it in messages. On success the weights
// are fused and ready for forward(), with source.kind = Trained and source.path = origin.
// Errors (BadFormat) say what is wrong: truncated, not safetensors, corrupt header, a
// tensor missing or of the wrong dtype, shape or size, a non-finite value, a vocabulary
// that does not match tok_emb, or a model that does not compute its own check_loss.
Result<ModelWeights> parse_checkpoint(const std::string& bytes, const std::string& origin);
// read_file + parse_checkpoint. Errors: Io when the file cannot be read.
Result<ModelWeights> load_checkpoint(const std::string& path);

// Limits on what a checkpoint may claim, so a corrupt header cannot ask for absurd sizes.
inline constexpr uint64_t kMaxCheckpointHeaderBytes = uint64_t(64) << 20;  // vocab lists are large
inline constexpr size_t kMaxCheckpointBytes = size_t(2) << 30;
inline constexpr int kMaxCheckpointVocab = 1 << 20;

}  // namespace headmap
