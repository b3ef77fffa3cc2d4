// params.h: the trainer's parameters: layout, a fresh init, and conversion to and from the
// fused ModelWeights that forward() runs.
//
// B = batch, T = tokens (seq), D = d_model, H = heads, d_head = D/H, L = layers, V = vocab
// Convention: y = x * W + b, W stored (D_in, D_out).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/weights.h"
#include "core/text/bpe.h"

namespace headmap {

// One layer's trainable tensors in the layout the trainer computes with: Q, K and V fused
// in one (D, 3D) matrix, so the head h of each is columns h*d_head .. of its third.
struct LayerParams {
  RowVec ln1_g, ln1_b;  // (D)
  MatR w_qkv;           // (D, 3D) = [W_Q | W_K | W_V]
  RowVec b_qkv;         // (3D)
  MatR w_o;             // (D, D); unused (and never updated) when training without W_O
  RowVec b_o;           // (D)
  RowVec ln2_g, ln2_b;  // (D)
  MatR w_fc;            // (D, 4D)
  RowVec b_fc;          // (4D)
  MatR w_proj;          // (4D, D)
  RowVec b_proj;        // (D)
};

struct ModelParams {
  MatR tok_emb;                     // (V, D), also the unembedding (tied)
  MatR pos_emb;                     // (context, D), learned positions
  std::vector<LayerParams> layers;  // L
  RowVec lnf_g, lnf_b;              // (D)

  int d_model() const { return static_cast<int>(tok_emb.cols()); }
  int vocab_size() const { return static_cast<int>(tok_emb.rows()); }
  int context() const { return static_cast<int>(pos_emb.rows()); }
  int num_layers() const { return static_cast<int>(layers.size()); }
};

// A named view of one tensor of a ModelParams, for loops over all of them (zeroing,
// AdamW, clipping). Names follow the checkpoint's ("layers.0.w_qkv", ...).
struct ParamRef {
  std::string name;
  float* data;
  int64_t size;
  bool decay;  // AdamW weight decay applies: the (in, out) matrices only
};
// Every tensor in a fixed order. Without W_O, w_o and b_o are left out.
std::vector<ParamRef> param_refs(ModelParams& p, bool no_w_o);
ModelParams zeros_like(const ModelParams& p);

// A fresh model, a pure function of (seed, shapes). GPT-2's init: weights ~ N(0, 0.02),
// the projections into the residual stream (W_O, W_proj) scaled by 1/sqrt(2L), position
// embeddings ~ N(0, 0.01), biases 0, LayerNorm gains 1.
// PosInit::Sinusoid starts the (learned) position table from the sinusoids of "Attention is
// all you need", scaled to the token embeddings' size: pos[p, 2i] = a sin(p w_i),
// pos[p, 2i+1] = a cos(p w_i), w_i = 10000^(-2i/D). A shift by one position is then a fixed
// rotation that W_Q and W_K can learn at once (assets/checkpoints/README.md has what it did).
enum class PosInit { Normal, Sinusoid };
ModelParams init_params(int d_model, int num_layers, int vocab, int context, uint64_t seed,
                        PosInit pos_init = PosInit::Normal);

// Conversions. to_model_weights splits w_qkv into w_q/w_k/w_v and fuses again, so forward()
// can run the result at once. Without W_O, w_o = I and b_o = 0: the same function, so the
// weights run correctly with or without the no-W_O switch.
ModelWeights to_model_weights(const ModelParams& p, const Bpe& bpe, bool no_w_o);
ModelParams from_model_weights(const ModelWeights& w);  // w.trained() must hold

}  // namespace headmap
