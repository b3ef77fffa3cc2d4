// patch_positions.h: one head patched at one position at a time (issue 28's per-position
// view of activation patching, next to contrib.h's patch_heads, which patches every head).
//
// T = tokens, D = d_model, L = layers, H = heads
#pragma once
#include <functional>
#include <vector>

#include "core/error.h"
#include "core/inspect/contrib.h"

namespace headmap {

// For each position t of sentence 0 of `corrupted`: the corrupted run from layer `layer` on
// (its residual entering the layer, kept) with head (layer, head)'s output at t alone taken
// from the clean run, and the normalised recovery of target's logit difference,
// (patched - corrupted) / (clean - corrupted); NaN when clean and corrupted agree. (T)
// Same requirements and errors as patch_heads (same token count, a difference A - B,
// trained weights), and `corrupted` one unpadded sentence (make_batch of one line); a head
// outside the model is InvalidArgument. progress(done, T) after
// each position; cancelled() stops with ErrorKind::Cancelled.
Result<std::vector<float>> patch_head_positions(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean,
                                                const Batch& corrupted, const LogitTarget& target, int layer, int head,
                                                const std::function<bool()>& cancelled = {},
                                                const std::function<void(int, int)>& progress = {});

}  // namespace headmap
