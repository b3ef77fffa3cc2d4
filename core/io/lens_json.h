// lens_json.h: the logit lens (core/inspect/logit_lens.h) as JSON, one writer for headmap-cli's
// --logit-lens (under "contrib") and the app's Export logit lens (its own document).
//
// P = 2L + 1 points, T = tokens, K = top-k
#pragma once
#include <nlohmann/json.hpp>

#include "core/inspect/logit_lens.h"

namespace headmap {

// {"target": "final"|"text", "points": [P names], "targets": [T {id, text, settled} or null],
//  "target_probs": (P, T) (null where a position has no target), "target_ranks": (P, T),
//  "top": (P, T, K) {id, text, prob}}. Token texts as the chips spell them (token_name).
nlohmann::json logit_lens_json(const LogitLens& lens, const ModelWeights& w);

}  // namespace headmap
