// weights.h: the parameters of the transformer stack, and their deterministic random init.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, V = vocab size
// Convention: y = x * W + b with W stored (D_in, D_out), x a row per token.
//
// Nothing here depends on H. The heads are a view of W_Q, W_K and W_V (columns
// h*d_head .. (h+1)*d_head), so changing num_heads at the same D keeps every weight.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/math/packed_gemm.h"
#include <memory>

#include "core/model/arch.h"
#include "core/text/bpe.h"
#include "core/text/hf_tokenizer.h"
#include "core/text/tokenizer.h"

namespace headmap {

using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

struct LayerWeights {
  RowVec ln1_g, ln1_b;      // (D), LayerNorm before attention
  MatR w_q, w_k, w_v;       // (D, D) each; W_K, W_V (D, kv_heads·d_head) once grouped (kv_grouped)
  PackedMatrix w_o;         // (D, D), packed (packed_gemm.h): .plain() unpacks a copy
  RowVec b_q, b_k, b_v, b_o;// (D) each (b_K, b_V: kv_heads·d_head once grouped), stored even when zero
  RowVec ln2_g, ln2_b;      // (D), LayerNorm before the MLP
  // The MLP's weights also live only packed.
  PackedMatrix w_fc;        // (D, 4D)
  RowVec b_fc;              // (4D)
  PackedMatrix w_proj;      // (4D, D)
  RowVec b_proj;            // (D)
  // Other families (arch.h); empty for GPT-2's block. With d_head independent of D, W_Q is
  // (D, H·d_head) and W_O (H·d_head, D); a gated MLP's W_fc is W_up (D, F), W_proj W_down (F, D).
  PackedMatrix w_gate;      // (D, F) the gate of a gated MLP
  RowVec q_norm, k_norm;    // (d_head) RMSNorm weights of each head's q and k (Qwen3, Gemma 3); (H·d_head), (KV·d_head) over all heads (OLMo 2)
  RowVec post_attn_g, post_mlp_g;  // (D) the norms after attention and after the MLP (Gemma 2 and 3, OLMo 2)

  // Derived, rebuilt by fuse(): the three projections side by side for one GEMM, packed.
  PackedMatrix w_qkv;  // (D, 3D) = [w_q | w_k | w_v]; (D, D + 2·kv_heads·d_head) once grouped
  RowVec b_qkv;  // (3D), or (D + 2·kv_heads·d_head)
  void fuse();  // a no-op on W_QKV once the plain copies are released (it is their only home)

  // A model loaded from a file keeps W_Q, W_K and W_V only in w_qkv (release_plain_qkv()
  // after fuse(): one home, in the file's precision, no F32 copy beside it); w_q, w_k, w_v
  // are then empty. These read the three from whichever home holds them, exactly: a reader
  // that needs a head's columns unpacks only those.
  enum Proj { kQ = 0, kK = 1, kV = 2 };
  bool plain_qkv() const { return w_q.size() > 0 || w_qkv.size() == 0; }
  Eigen::Index d_in() const { return plain_qkv() ? w_q.rows() : w_qkv.rows(); }  // D
  Eigen::Index proj_width(int which) const;  // W_Q's columns (H·d_head), or W_K's / W_V's
  MatR proj(int which) const { return proj_cols(which, 0, proj_width(which)); }  // (D, width)
  MatR proj_cols(int which, Eigen::Index c0, Eigen::Index n) const;  // (D, n): columns [c0, c0 + n)
  float proj_at(int which, Eigen::Index r, Eigen::Index c) const;   // one value
  int64_t qkv_size() const { return plain_qkv() ? w_q.size() + w_k.size() + w_v.size() : w_qkv.size(); }
  void release_plain_qkv();  // after fuse(): w_q, w_k, w_v freed
};

// Where the weights came from, for the UI and the passport.
struct WeightsSource {
  // Pretrained: a model opened from a Hugging Face directory or a GGUF file (core/io/hf_model.h).
  enum class Kind { RandomInit, Trained, Pretrained } kind = Kind::RandomInit;
  uint64_t seed = 7;          // random init: the weights' seed; trained: the training seed
  int trained_heads = 0;      // trained: the H it was trained with
  long steps = 0;             // trained: optimiser steps
  double final_loss = 0.0;    // trained: final training loss (nats/token)
  double val_loss = 0.0;      // trained: validation loss (nats/token), 0 if unknown
  std::string corpus;         // trained: corpus name
  std::string path;           // trained: checkpoint file, if loaded from one
  std::string opened_as;      // pretrained: the cache name it was opened by ("qwen3:8b", "Qwen/Qwen3-0.6B"), shown in place of path
  bool no_w_o = false;        // trained without W_O: w_o = I and b_o = 0 (the same function)
  std::string reproduce;      // trained: the command that made it ("headmap-cli train ...")
  std::string train_options;  // trained: every training option, as JSON
  std::string model_name;     // pretrained: "gpt2", "distilgpt2", ... (the directory's name)
  std::string model_type;     // pretrained: config.json's model_type ("gpt2")
  int64_t parameters = 0;     // pretrained: distinct parameters (a tied unembedding counts once)
  std::string tokenizer_files;  // pretrained: "vocab.json + merges.txt" or "tokenizer.json"
  std::string dtype;          // pretrained, other families: the file's dtype ("BF16", "F16", "F32")
};

struct ModelWeights {
  int d_model = 0;  // D
  int context = 0;  // trained: positions covered by pos_emb; random init: unused
  std::vector<LayerWeights> layers;  // L

  // Trained language models only; all empty in random-init mode, where token vectors come
  // from a hash of the token text and positions from the sinusoidal encoding.
  Bpe bpe;      // (V) the byte-level BPE the model was trained with
  // The model's tokenizer as a tokenizer.json pipeline (core/text/hf_tokenizer.h): a
  // pretrained directory's tokenizer.json (or vocab.json + merges.txt, or vocab.txt), and a
  // checkpoint's bpe written out as one. The text is split by it, special tokens included, as
  // the model's own tokenizer splits it. Null for weights fresh from training (bpe splits).
  std::shared_ptr<const HfTokenizer> hf_tokenizer;
  MatR tok_emb;   // (V, D)
  MatR pos_emb;   // (context, D), learned positions
  RowVec lnf_g, lnf_b;  // (D), final LayerNorm before the unembedding
  // The unembedding is tied, logits = LN_f(x) * tok_emb^T (B*T, V), unless lm_head is set.
  MatR lm_head;   // (V, D) an untied unembedding (a pretrained model's own lm_head), else empty
  // A BF16 / F16 file's tables kept in its 16 bits (packed_gemm.h), tok_emb and lm_head then
  // empty: each kept as its transpose's panels, the unembedding's B of packed_gemm, a row
  // gathered down one panel (a GGUF file's block-typed table: its rows of blocks).
  // Read through embedding_row / unembedding_row / vocab_size, which serve both.
  NarrowRows tok_emb16;  // (V, D)
  NarrowRows lm_head16;  // (V, D) untied
  RowVec lm_head_b;      // (V) the lm_head's bias (Phi-1.5, Phi-2), added to the logits; empty = none
  // Encoders (arch.h: BERT, RoBERTa, DistilBERT); empty otherwise.
  MatR type_emb;                // (token_types, D) added by each token's type (sentence A 0, B 1)
  RowVec emb_ln_g, emb_ln_b;    // (D) the LayerNorm of the summed embeddings
  MatR mlm_dense;               // (D, D) the masked-LM head's transform, then GELU (erf) and mlm_ln
  RowVec mlm_dense_b, mlm_ln_g, mlm_ln_b;  // (D)
  RowVec mlm_bias;              // (V) the decoder's bias; the decoder is unembedding()
  float ln_eps = 1e-5f;  // every LayerNorm's epsilon (GPT-2's config.json: layer_norm_epsilon)
  Arch arch;             // the family's block (arch.h): GPT-2's unless a loader says otherwise

  WeightsSource source;

  bool trained() const { return tok_emb.size() > 0 || !tok_emb16.empty(); }
  int num_layers() const { return static_cast<int>(layers.size()); }
  int vocab_size() const { return static_cast<int>(tok_emb16.empty() ? tok_emb.rows() : tok_emb16.rows); }
  // The F32 unembedding; empty when it is kept 16-bit (unembedding_row reads both).
  const MatR& unembedding() const { return lm_head.size() > 0 ? lm_head : tok_emb; }  // (V, D)
  bool untied() const { return lm_head.size() > 0 || !lm_head16.empty(); }
  void embedding_row(int id, float* out /* (D) */) const {
    if (tok_emb16.empty()) std::copy_n(tok_emb.row(id).data(), tok_emb.cols(), out);
    else tok_emb16.row(id, out);
  }
  RowVec unembedding_row(int id) const {  // (D)
    const NarrowRows& u16 = lm_head16.empty() ? tok_emb16 : lm_head16;
    if (u16.empty()) return unembedding().row(id);
    RowVec r(u16.cols);
    u16.row(id, r.data());
    return r;
  }
};

// Random init: every tensor is a pure function of (seed, D, layer, tensor name), never of H.
// W ~ N(0, 1/D) so projections keep unit scale; W_proj ~ N(0, 1/(4D)); biases 0; LN g=1, b=0.
ModelWeights random_weights(int d_model, int num_layers, uint64_t seed);
// Appends layers w.num_layers() .. num_layers - 1 of random_weights(w.d_model, num_layers,
// seed) to w, which holds its first layers (each layer is drawn from its own keys): a model
// whose first layers were drawn to be shown first is completed without drawing them again.
void extend_random_weights(ModelWeights& w, int num_layers, uint64_t seed);

// The embedding of a token in random-init mode: (D) normals from a hash of (text, seed, D).
// The same word has the same vector in every sentence and every run.
void hashed_embedding(std::string_view token, uint64_t seed, int d_model, float* out /* (D) */);
// The stream key of that embedding: equal keys, equal rows.
uint64_t hashed_embedding_key(std::string_view token, uint64_t seed, int d_model);

// Sinusoidal positional encoding (Vaswani et al. 2017, 3.5), added in place:
// PE(t, 2i) = sin(t / 10000^(2i/D)), PE(t, 2i+1) = cos(t / 10000^(2i/D)).
void add_sinusoidal(int t, int d_model, float* row /* (D) */);

// Parameter counts per component, for the passport.
struct ParamCount {
  std::string name;     // "W_Q + b_Q"
  std::string formula;  // "D·D + D"
  int64_t count;
  bool attention;       // part of the attention block (the total that must not move with H)
};
// If `no_w_o` the W_O row counts 0 (the pitfall removes it). kv_dim = kv_heads·d_head, the
// width of W_K and W_V (D for multi-head attention).
std::vector<ParamCount> param_counts(int d_model, int kv_dim, int num_layers, int vocab, int context_rows, bool no_w_o);

}  // namespace headmap
