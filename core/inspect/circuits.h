// circuits.h: what a head reads and writes, from the weights alone, without any text
// (issue 39, point 3): TransformerLens's FactoredMatrix views of a head (its OV and QK
// circuits through the embeddings), the OV circuit's copying score and singular directions,
// and the Q, K and V composition scores between heads.
//
// D = d_model, dh = d_head, H = query heads, L = layers, V = vocabulary, n = tokens shown
// Row vectors, as the forward: head h of layer l has
//   W_OV = W_V^h W_O^h (D, D)      what a key position holds -> what the head writes;
//   W_QK = W_Q^h (W_K^g)^T (D, D)  a query row against a key row (g: its K/V head).
// Each layer's input norm gain (ln1_g; Gemma's 1 + w as loaded) is folded into W_Q, W_K and
// W_V, as TransformerLens's fold_ln does; biases and the norms' centring are left out. A
// block whose attention reads the stream unnormed (BERT's post-norm, OLMo 2) folds nothing.
// E (V, D) is the embedding (times sqrt(D) where the family scales it), U (V, D) the
// unembedding (logits = x U^T).
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/model/model.h"

namespace headmap {

// composition(A -> B) = ||W_OV^A X^B||_F / (||W_OV^A||_F ||X^B||_F) for an earlier head A and
// a later head B: X = W_QK^B (Q: A's output read by B's queries), (W_QK^B)^T (K: by its keys),
// W_OV^B (V: by its values). 1 when A's output lies in what B reads, about 1/sqrt(D) for
// random ones (two random rank-dh maps: E||AB||^2 = ||A||^2 ||B||^2 / D, whatever dh).
struct Composition {
  int L = 0, H = 0;
  std::vector<float> q, k, v;  // (L*H, L*H) row = the reading head B = l*H + h, column = the writer A; 0 unless l_A < l_B
  float at(const std::vector<float>& m, int b, int a) const { return m[static_cast<size_t>(b) * L * H + a]; }
};
Composition composition_scores(const ModelWeights& w, const ModelConfig& cfg);
// Row b = (layer, head) of composition_scores' matrices alone: every earlier head into this
// one (N*D*dh^2 work, where the whole matrix takes N^2/2 times that). Errors: no such head.
struct CompositionRow {
  int L = 0, H = 0, layer = 0, head = 0;
  std::vector<float> q, k, v;  // (L*H) column = the writer A = l*H + h; 0 unless l_A < layer
};
Result<CompositionRow> composition_into(const ModelWeights& w, const ModelConfig& cfg, int layer, int head);

struct HeadCircuit {
  int layer = 0, head = 0;
  std::vector<int> tokens;  // (n) the rows and columns: the given tokens (distinct, in order), then the directions' tokens
  std::vector<float> ov;    // (n, n) row = the token a key holds, column = the token written: E[a] W_OV U[b]^T
  std::vector<float> qk;    // (n, n) row = query token, column = key token: E[a] W_QK E[b]^T
  std::vector<float> qk_pos;  // (P, P) learned positions only (GPT-2's block): pos[a] W_QK pos[b]^T; empty otherwise
  // The full OV circuit E W_OV U^T (V, V) through its dh nonzero eigenvalues (those of
  // W_O U^T E W_V, dh x dh): sum(lambda) / sum(|lambda|), TransformerLens's copying score
  // (positive: the head copies the token it attends to into the output).
  double copying = 0;
  struct Direction {
    float sigma = 0;         // a singular value of W_OV
    std::vector<int> reads;  // the tokens whose embedding lies most along its input direction
    std::vector<int> writes; // the tokens its output direction raises most in the unembedding
  };
  std::vector<Direction> directions;  // the top singular directions of W_OV, largest first
};

// Errors: random init (no vocabulary), a layer or head out of range.
// tokens: the text's ids (duplicates dropped); k_directions, k_tokens: how many directions, and
// tokens per direction; positions: how many learned positions the positional QK shows.
// The same as circuit_on_tokens(head_circuit_weights(..., vocab_gram(w), ...), tokens).
Result<HeadCircuit> head_circuit(const ModelWeights& w, const ModelConfig& cfg, int layer, int head, const std::vector<int>& tokens,
                                 int k_directions = 3, int k_tokens = 5, int positions = 16);

// The parts without any text, for a cache per model (the app's Circuits view):
// U^T E (D, D) over the whole vocabulary, which every head's copying score reads (V*D*D work,
// once per model); random init: an empty matrix.
Eigen::MatrixXd vocab_gram(const ModelWeights& w);
// A head's text-free circuits: copying, directions and qk_pos; tokens, ov and qk left empty.
// ute: vocab_gram(w). Errors as head_circuit's.
Result<HeadCircuit> head_circuit_weights(const ModelWeights& w, const ModelConfig& cfg, int layer, int head, const Eigen::MatrixXd& ute,
                                         int k_directions = 3, int k_tokens = 5, int positions = 16);
// `base` (head_circuit_weights') over the given tokens, then its directions': tokens, ov and qk
// filled (D*dh work per token).
HeadCircuit circuit_on_tokens(HeadCircuit base, const ModelWeights& w, const ModelConfig& cfg, const std::vector<int>& tokens);

}  // namespace headmap
