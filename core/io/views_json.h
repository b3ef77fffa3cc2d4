// views_json.h: the views researchers ask of heads (issue 39) as JSON, one writer each for
// headmap-cli (under "contrib") and the app's Export of the view (its own document): the logit
// lens (core/inspect/logit_lens.h) and the head overview (core/inspect/head_overview.h).
//
// P = 2L + 1 points, T = tokens, K = top-k, L = layers, Hw = heads in the maps, N = L*Hw
#pragma once
#include <nlohmann/json.hpp>

#include "core/inspect/circuits.h"
#include "core/inspect/corpus_search.h"
#include "core/inspect/head_overview.h"
#include "core/inspect/logit_lens.h"
#include "core/inspect/offset_profile.h"

namespace headmap {

// {"target": "final"|"text", "points": [P names], "targets": [T {id, text, settled} or null],
//  "target_probs": (P, T) (null where a position has no target), "target_ranks": (P, T),
//  "top": (P, T, K) {id, text, prob}}. Token texts as the chips spell them (token_name).
nlohmann::json logit_lens_json(const LogitLens& lens, const ModelWeights& w);

// {"stats": {key: (L, Hw)}, "definitions": {key: {name, definition}} (metrics.h's table),
//  "similarity": (N, N), "layout": (N, 2), "near_duplicates": [{"a": [l, h], "b": [l, h],
//  "similarity": s}], "near_duplicate_threshold": kNearDuplicate}.
nlohmann::json head_overview_json(const HeadOverview& o);

// A (rows, cols) row-major grid as nested arrays: rows of columns.
nlohmann::json grid_json(const std::vector<float>& v, int rows, int cols);

// {"len", "causal", "offsets": [O] d = t - s, "rows_at": [O], "by_offset": (L, Hw, O),
//  "frequencies": null (with "no_frequencies": why) or {"pairs": [L], "wavelength": (L, P),
//  "share": (L, H, P + 1), the last column the unrotated dims}}.
nlohmann::json offset_profile_json(const OffsetProfile& p);

// {"q", "k", "v": (L*H, L*H) row = the reading head, column = the writer, "L", "H"}.
nlohmann::json composition_json(const Composition& c);
// {"layer", "head", "lines", "rows", "hits": [{"line" (from 0), "text", "query", "key", "weight",
//  "token_ids", "tokens": their texts}], "offset_profile": {"len", "offsets": [O] d = t - s,
//  "rows_at": [O], "by_offset": [O] the head's mean weight at d over every line}}.
nlohmann::json corpus_search_json(const CorpusSearch& c, const std::vector<std::string>& lines, const ModelWeights& w);
// {"layer", "head", "L", "H", "q", "k", "v": (L, H) each earlier head's score into this one}.
nlohmann::json composition_row_json(const CompositionRow& c);
// {"layer", "head", "tokens": [n {id, text}], "ov": (n, n), "qk": (n, n), "qk_positions": (P, P)
//  or null, "copying", "directions": [{"sigma", "reads": [ids], "writes": [ids]}]}.
nlohmann::json head_circuit_json(const HeadCircuit& h, const ModelWeights& w);

}  // namespace headmap
