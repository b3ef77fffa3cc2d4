// export.h: files out of the core. Every write goes to a temporary name in the same
// directory and is renamed into place, so a failure never leaves half a file behind and
// never destroys the previous one.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/inspect/metrics.h"
#include "core/model/model.h"
#include "core/inspect/passport.h"
#include "core/math/tensor.h"

namespace headmap {

// Writes bytes to path atomically (temp file, fsync, rename).
Status write_file_atomic(const std::string& path, const std::string& bytes);
Result<std::string> read_file(const std::string& path, size_t max_bytes = size_t(1) << 31);

// A .npy (format 1.0, little-endian float32, C order) in memory.
std::string npy_bytes(const float* data, const Shape& shape);
// Parses a float32 .npy (for tests and for reading back). Errors name what is wrong.
Result<Tensor> parse_npy(const std::string& bytes);

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
};

// The --npy layout (see README): attention.npy (L,B,Hw,T,T); per layer l:
// layer{l}.attn_in.npy (B,T,D), layer{l}.w_q.npy .. w_o.npy (D,D), layer{l}.b_q.npy ..
// b_o.npy (D), layer{l}.attn_out.npy (B,T,D); meta.json (tokens, lengths, config).
// All files are staged, then renamed into dir; dir is created if missing.
Status export_npy_dir(const std::string& dir, const RunRecord& run);

// The --json document: tokens, config, passport, params, metrics, labels, and the weights
// when with_weights.
std::string run_json(const RunRecord& run, bool with_weights, int indent = 2);
// Config as JSON and back (view files, checkpoints, meta.json).
std::string config_json(const ModelConfig& cfg);
Result<ModelConfig> config_from_json(const std::string& text);

// The weights' source in one line: "random init (seed 7)", "trained (D=64, H=4, ...)".
std::string describe_source(const ModelWeights& w, const ModelConfig& cfg);

}  // namespace headmap
