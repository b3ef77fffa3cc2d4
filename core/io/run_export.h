// run_export.h: what one run produced, written out for numpy, torch or a person: the
// --json document and the --npy directory (README: "The .npy export").
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/inspect/metrics.h"
#include "core/inspect/passport.h"
#include "core/model/model.h"

namespace headmap {

// Everything a run produced, in one place, for the exporters.
struct RunRecord {
  ModelConfig cfg;
  const ModelWeights* weights = nullptr;
  const Batch* batch = nullptr;
  const ForwardOutput* out = nullptr;   // with keep_layer_io for --npy
  const Passport* passport = nullptr;
  std::vector<HeadMetrics> metrics;     // (L, B, Hw)
  std::vector<float> induction;         // (L, H), may be empty
  std::vector<float> text_induction;    // (L, B, Hw) on the text itself (metrics.h), NaN: nothing repeats
  int top_k = 0;                        // trained: the k most likely next tokens at every position in the JSON (0: none)
};

// The --npy layout (see README): attention.npy (L,B,Hw,T,T); per layer l:
// layer{l}.attn_in.npy (B,T,D), layer{l}.w_q.npy .. w_o.npy (D,D), layer{l}.b_q.npy ..
// b_o.npy (D), layer{l}.attn_out.npy (B,T,D); meta.json (tokens, lengths, config).
// All files are staged, then renamed into dir; dir is created if missing.
Status export_npy_dir(const std::string& dir, const RunRecord& run);

// The --json document: tokens, config, passport, params, metrics, labels, and the weights
// when with_weights.
std::string run_json(const RunRecord& run, bool with_weights, int indent = 2);
// run_json checked against the memory budget first (a refusal says what to lower), then
// write_file_atomic; std::bad_alloc becomes the same kind of message.
Status write_run_json(const std::string& path, const RunRecord& run, bool with_weights);

}  // namespace headmap
