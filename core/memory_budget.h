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
uint64_t model_weights_bytes(uint64_t D, uint64_t L, uint64_t V, uint64_t P);

// check_memory for random weights of d_model D and L layers with P positions (the app's
// and the CLI's random init); `lower` names the controls to lower.
Status check_random_weights_memory(int D, int L, int P, const std::string& lower);

// a * b, or UINT64_MAX when it overflows: sizes from files are multiplied safely.
uint64_t mul_sat(uint64_t a, uint64_t b);

// The message for a std::bad_alloc caught at an edge: what was being done, what to lower.
Error out_of_memory(const std::string& what);

}  // namespace headmap
