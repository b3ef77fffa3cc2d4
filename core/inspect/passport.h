// passport.h: the shape passport. Every tensor from the tokens to the output, derived from
// the config alone: name, formula, symbolic shape, concrete shape, FLOPs and bytes, plus
// parameter counts per component.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, V = vocab
// FLOPs count a multiply-add as 2; LayerNorm ~8 per element, softmax ~5, GELU ~10.
// Bytes are the float32 size of the tensor a step produces; a view produces no bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/math/tensor.h"
#include "core/model/weights.h"

namespace headmap {

struct PassportStep {
  std::string id;        // stable key, e.g. "q_view"; tests hold it against the computed tensor
  std::string section;   // "input", "attention (per layer)", "MLP (per layer)", "output"
  std::string name;      // "split heads"
  std::string formula;   // "Q.view(B, T, H, d_head)"
  std::vector<std::string> symbolic;  // {"B", "T", "H", "d_head"}
  Shape concrete;        // {2, 10, 8, 64}
  int64_t flops = 0;     // for one layer where the section is per layer
  int64_t bytes = 0;     // float32 bytes produced; 0 for a view
  bool view = false;     // reinterprets or re-strides existing memory, no copy
  std::string note;      // pitfalls and remarks, may be empty

  std::string symbolic_str() const;  // "(B, H, T, d_head)"
  std::string concrete_str() const;  // "(2, 8, 10, 64)"
};

// How one group of weight matrices is kept in memory, all layers together: in the file's
// types (F32, BF16, F16, or a GGUF file's blocks: Q8_0, Q4_K, ...), bits per weight and bytes.
struct WeightStorage {
  std::string name;     // "W_Q | W_K | W_V", "W_O", "MLP in", "MLP out", "embedding", "unembedding"
  std::string type;     // "Q4_K", "Q4_K+Q6_K" (types mixed within the group), "F32"
  int64_t weights = 0;  // values held
  int64_t bytes = 0;    // bytes they take
  double bits_per_weight() const { return weights > 0 ? 8.0 * static_cast<double>(bytes) / static_cast<double>(weights) : 0.0; }
};
// The groups of a model's weights (the matrices and tables; norms and biases, F32 and small,
// left out). Empty groups are left out.
std::vector<WeightStorage> weight_storage(const ModelWeights& w);

struct Passport {
  ModelConfig cfg;
  int B = 0, T = 0, V = 0;
  std::vector<PassportStep> steps;
  std::vector<ParamCount> params;
  int64_t attention_params = 0;  // W_Q..W_O with biases, all layers: 4·L·(D² + D), any H
  std::string attention_formula; // what attention_params is, e.g. "3·L·(D² + D) without W_O: the same for every H"
  int64_t kv_saved = 0;          // parameters grouped-query attention saves against full multi-head (0 for MHA)
  int64_t total_params = 0;
  int64_t total_flops = 0;       // all layers
  std::string family;            // a family's steps in words (arch_steps), empty for GPT-2's block
  int64_t kv_cache_bytes_per_token = 0;  // float32 K and V of every layer for one token: 2·L·kv_heads·d_head·4
  // The K/V cache as a lesson, for every model: bytes per token and for the context, K/V heads
  // against query heads and what sharing saves: "K/V cache: 2·L·KV·d_head·4 = 4.1k bytes per
  // token, 1.05M for 256 tokens; 2 K/V heads instead of 8: 4x smaller cache".
  std::string kv_cache_line;
  // The weights as they are held (weight_storage); empty unless the caller adds them.
  std::vector<WeightStorage> storage;

  const PassportStep* find(const std::string& id) const;
};

// vocab = 0 and context_rows = 0 for random init; a trained model passes its V and context.
// arch: the weights' family (core/model/arch.h); null or GPT-2's block = the steps above. A
// family adds its own steps (RMSNorm, q/k norm, RoPE, soft-cap, sliding window, gated MLP),
// its shapes (H·d_head, F), its parameter table and the K/V cache per token.
Passport make_passport(const ModelConfig& cfg, int B, int T, int vocab = 0, int context_rows = 0, const Arch* arch = nullptr);

// A count for people: 704, 90.8k, 10.50M, 1.52G.
std::string human_count(int64_t v);

// The passport as an aligned text table (for headmap-cli --passport).
std::string passport_table(const Passport& p);

}  // namespace headmap
