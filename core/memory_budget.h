// memory_budget.h: one memory budget for everything headmap builds from a request or a
// file: the model's weights, the attention maps' exports (JSON, .npy, PNG), parsed files.
//
// Every such path estimates its peak first and asks check_memory(), which refuses with a
// message that says what to lower. A std::bad_alloc that still escapes an estimate is
// caught at the edges (headmap-cli's main, the app's workers) and becomes the same kind of
// message, so running out of memory never aborts.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"

namespace headmap {

// The budget in bytes: $HEADMAP_MEMORY_BUDGET when set (bytes, or with a K, M or G suffix),
// else half of the machine's physical memory, and never more than half of the address-space
// limit (ulimit -v) when one is set.
uint64_t memory_budget_bytes();

// OK when `bytes` fit the budget; otherwise InvalidArgument:
// "<what> would need 9,600 MiB, more than the memory budget of 2,048 MiB: <lower>."
Status check_memory(uint64_t bytes, const std::string& what, const std::string& lower);

// The bytes a model's weights take in memory (float32, with the fused Q|K|V copy), for a
// check before anything is allocated: D = d_model, L = layers, V = vocab, P = positions.
// (GPT-2's block: weights_bytes of gpt2_weights_shape.)
uint64_t model_weights_bytes(uint64_t D, uint64_t L, uint64_t V, uint64_t P);

struct Arch;
// A model's real sizes, for any family (core/model/arch.h): D = d_model, L = layers,
// V = vocab, P = learned positions (0: none), H query heads and KV K/V heads of d_head,
// F = MLP width.
struct WeightsShape {
  uint64_t D = 0, L = 0, V = 0, P = 0, H = 0, KV = 0, d_head = 0, F = 0;
  bool gated = false;        // gate, up and down: three MLP matrices
  bool untied = false;       // an lm_head (V, D) of its own
  bool qk_norm = false;      // two (d_head) norms per layer
  uint64_t norms = 4;        // (D) norm vectors per layer: g and b of two norms = 4; Gemma 2/3's two more = 6
  // Bytes per element of the weight matrices and embeddings as held in memory: 4 while
  // they are widened to float32 on load; 2 once BF16/F16 weights stay narrow
  // (held_bytes_per_weight sets it from the stored dtype).
  uint64_t bytes_per_weight = 4;
  // W_Q, W_K, W_V also plain in float32 beside the fused copy: random, shipped and trained
  // weights; a model loaded from a family's file keeps them only fused (LayerWeights::proj).
  bool plain_qkv = true;
};
// GPT-2's block (and the shipped models'): H = KV = 1 head of D, F = 4D, tied.
WeightsShape gpt2_weights_shape(uint64_t D, uint64_t L, uint64_t V, uint64_t P);
// The shape of a family's model from its Arch (head_dim, K/V heads, gated MLP, norms, q/k
// norms) and the sizes config.json gives; `stored_dtype` is the weights' dtype in the file.
WeightsShape family_weights_shape(const Arch& a, uint64_t D, uint64_t L, uint64_t V, uint64_t P, bool untied, const std::string& stored_dtype);
// How many bytes a weight stored as `dtype` ("F32", "F16", "BF16") takes once loaded: 4,
// since every loader widens to float32. The one place that changes when narrow weights stay narrow.
uint64_t held_bytes_per_weight(const std::string& dtype);
// Per layer: W_Q (D, H·d_head), W_K and W_V (D, KV·d_head), their fused copy, W_O
// (H·d_head, D), the MLP's 2 or 3 (D, F) matrices, biases, norms and q/k norms; then the
// token embedding, positions, lm_head when untied and the final norm.
uint64_t weights_bytes(const WeightsShape& s);
// "Llama: D=2048, L=16, 32 heads (8 K/V) of 64, MLP 8192 (gated), vocabulary 128,256, untied,
// held as 4 bytes a weight": what check_memory's message says the model is.
std::string weights_shape_text(const std::string& family, const WeightsShape& s);

// check_memory for random weights of d_model D and L layers with P positions (the app's
// and the CLI's random init); `lower` names the controls to lower.
Status check_random_weights_memory(int D, int L, int P, const std::string& lower);

// Memory a caller already holds while it builds more: the app's Compare tab reads model B
// while model A (and the B before) stay in memory. While one lives, every check_memory on
// its thread counts `bytes` in and names `what` in its message ("... beside the 500 MiB of
// the models already open (A and the current B), more than the memory budget ..."). Nested
// scopes add up.
class MemoryHeld {
 public:
  MemoryHeld(uint64_t bytes, std::string what);
  ~MemoryHeld();
  MemoryHeld(const MemoryHeld&) = delete;
  MemoryHeld& operator=(const MemoryHeld&) = delete;

 private:
  uint64_t bytes_;
  std::string what_before_;
};

// a * b, or UINT64_MAX when it overflows: sizes from files are multiplied safely.
uint64_t mul_sat(uint64_t a, uint64_t b);

// The message for a std::bad_alloc caught at an edge: what was being done, what to lower.
Error out_of_memory(const std::string& what);

}  // namespace headmap
